// The third-party kernel corpus on zex-cpu (tests/corpus/README.md; issue 24): the time of one pass
// over the corpus, every kernel launched once and the stream synchronized, with the checked copies
// through zex::Stream (BM_Checked/<level>) against the unchanged kernels on the same stream's list
// (BM_Unchecked, raw Level Zero modules of the plain SPIR-V). Buffers are refilled before each pass,
// outside the timed region, so every pass computes the same thing. main() prints checked/unchecked
// of the fastest and of the median repetition, of the wall time and of the process's CPU time. Kernels with an open issue in the corpus table
// (a module zex refuses, a checked copy zex-cpu runs wrongly) are left out, and named.
//
// Issue 27's memory checks on the same corpus: BM_Memory/1 launches the unchanged SPIR-V built as a
// zex::Module with ModuleOptions{check_memory} (bounds and a zex_state_t added by zex, no
// ZEX_CHECK_BOUNDS in the source) through zex::Stream at level 1; BM_Memory/0 is BM_Unchecked's pass
// (zex refuses a kernel without a zex_state_t, so the unchanged kernels launch raw on the stream's list;
// the stream's own cost is within 1-3 % of that, see the level-0 figures above). BM_MemoryOne per
// kernel.
#include "corpus_runner.hpp"

#include "cpu_timing.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>

namespace {

using zex_bench_timing::Collector;
using zex_bench_timing::median_of;
using zex_bench_timing::min_of;

constexpr uint32_t kScale = 16;  // PolyBench 320 x 320, Rodinia problems x 16 (the tests: 1)

struct Entry {
  corpus::Case c;
  std::unique_ptr<corpus::Buffers> bufs;
  std::vector<std::vector<uint8_t>> pristine;
  std::unique_ptr<corpus::RawKernel> raw;
  std::vector<zex::Kernel> checked;  // by level
  std::vector<uint32_t> lengths;
  std::vector<zex::KernelArg> plain_args, checked_args;
  std::unique_ptr<zex::Module> memory_checked;  // the unchanged SPIR-V with check_memory
  std::vector<zex::Kernel> memory;              // its kernel
};

struct Env {
  zex::Context ctx;
  zex::Device dev{ctx.device(0)};
  corpus::Modules mods{dev};
  std::vector<std::unique_ptr<Entry>> entries;
  std::vector<std::string> left_out;
};
Env* g_env = nullptr;

void setup() {
  g_env = new Env();
  const corpus::Paths paths{ZEX_CORPUS_SPV_DIR};
  for (corpus::Case& c : corpus::cases(kScale)) {
    if (!c.known_issue.empty() || !c.checked_issue.empty() || !c.raw_issue.empty()) {
      g_env->left_out.push_back(c.name());
      continue;
    }
    auto e = std::make_unique<Entry>();
    e->bufs = std::make_unique<corpus::Buffers>(g_env->ctx, g_env->dev, c);
    for (size_t i = 0; i < e->bufs->size(); ++i) {
      const auto* p = static_cast<const uint8_t*>((*e->bufs)[i]);
      e->pristine.emplace_back(p, p + corpus::bytes(c.buffers[i]));
    }
    e->raw = std::make_unique<corpus::RawKernel>(g_env->ctx, g_env->dev, paths.plain(c), c.kernel);
    zex::Module& m = g_env->mods.get(paths.checked(c));
    for (int level = 0; level <= 2; ++level) {
      e->checked.push_back(m.kernel(c.kernel));
      e->checked.back().handle(level);  // build every level before timing
    }
    const std::vector<uint8_t> spv = corpus::read_bytes(paths.plain(c));
    zex::ModuleOptions on;
    on.check_memory = true;
    e->memory_checked = std::make_unique<zex::Module>(g_env->dev, spv, on);
    e->memory.push_back(e->memory_checked->kernel(c.kernel));
    e->lengths = corpus::lengths(c);
    e->plain_args = corpus::plain_args(c, *e->bufs);
    e->checked_args = corpus::checked_args(c, *e->bufs, e->lengths);
    e->c = std::move(c);
    g_env->entries.push_back(std::move(e));
  }
}

void refill() {
  for (auto& e : g_env->entries)
    for (size_t i = 0; i < e->bufs->size(); ++i) std::memcpy((*e->bufs)[i], e->pristine[i].data(), e->pristine[i].size());
}



void pass_unchecked(zex::Stream& s) {
  for (auto& e : g_env->entries) corpus::append_launch(s.handle(), e->raw->handle(), e->c, e->plain_args);
  s.record().synchronize();  // a barrier and an event: waits for everything on the list
}

void pass_checked(zex::Stream& s, int level) {
  for (auto& e : g_env->entries)
    s.launch_args(e->checked[static_cast<size_t>(level)], corpus::config(e->c, level), e->checked_args.data(),
                  e->checked_args.size(), __FILE__, __LINE__);
  s.record().synchronize();  // the same wait as pass_unchecked's
}

// The unchanged kernel raw on the stream's list (0), or built with check_memory through zex::Stream at
// level 1 (1).
void launch_memory(zex::Stream& s, Entry& e, int checked) {
  if (checked)
    s.launch_args(e.memory[0], corpus::config(e.c, 1), e.plain_args.data(), e.plain_args.size(), __FILE__, __LINE__);
  else
    corpus::append_launch(s.handle(), e.raw->handle(), e.c, e.plain_args);
}
void pass_memory(zex::Stream& s, int checked) {
  for (auto& e : g_env->entries) launch_memory(s, *e, checked);
  s.record().synchronize();
}

// zex-cpu compiles a kernel for PoCL at its first launch: one untimed pass of each variant first.
void warm_up() {
  zex::Stream s(g_env->dev);
  pass_unchecked(s);
  for (int level = 0; level <= 2; ++level) pass_checked(s, level);
  pass_memory(s, 0);
  pass_memory(s, 1);
}

// Every benchmark here: a stream of its own, the buffers refilled before each timed `run(s)`.
template <class Run>
void timed(benchmark::State& state, Run run) {
  zex::Stream s(g_env->dev);
  zex_bench_timing::time_passes(state, refill, [&] { run(s); });
}

// The entry a per-kernel benchmark's range 0 names, or null (the benchmark then skips).
Entry* entry_of(benchmark::State& state) {
  const auto i = static_cast<size_t>(state.range(0));
  if (i < g_env->entries.size()) return g_env->entries[i].get();
  state.SkipWithError("no such kernel");
  return nullptr;
}

void BM_Unchecked(benchmark::State& state) {
  timed(state, [](zex::Stream& s) { pass_unchecked(s); });
  state.counters["kernels"] = static_cast<double>(g_env->entries.size());
}

void BM_Checked(benchmark::State& state) {
  const int level = static_cast<int>(state.range(0));
  timed(state, [&](zex::Stream& s) { pass_checked(s, level); });
  state.counters["kernels"] = static_cast<double>(g_env->entries.size());
}

// One kernel of the corpus (range 0: its index) unchecked (range 1 = 0) or checked at level 1 (= 1),
// to see which kernels a pass's ratio comes from: `--benchmark_filter=BM_One`.
void BM_One(benchmark::State& state) {
  Entry* e = entry_of(state);
  if (!e) return;
  const bool checked = state.range(1) != 0;
  timed(state, [&](zex::Stream& s) {
    if (checked)
      s.launch_args(e->checked[1], corpus::config(e->c, 1), e->checked_args.data(), e->checked_args.size(), __FILE__,
                    __LINE__);
    else
      corpus::append_launch(s.handle(), e->raw->handle(), e->c, e->plain_args);
    s.record().synchronize();
  });
  state.SetLabel(e->c.name());
}

void BM_Memory(benchmark::State& state) {
  const int checked = static_cast<int>(state.range(0));
  timed(state, [&](zex::Stream& s) { pass_memory(s, checked); });
  state.counters["kernels"] = static_cast<double>(g_env->entries.size());
}

// One kernel (range 0) of BM_Memory's pass, raw (range 1 = 0) or with check_memory (= 1).
void BM_MemoryOne(benchmark::State& state) {
  Entry* e = entry_of(state);
  if (!e) return;
  const int checked = static_cast<int>(state.range(1));
  timed(state, [&](zex::Stream& s) {
    launch_memory(s, *e, checked);
    s.record().synchronize();
  });
  state.SetLabel(e->c.name());
}

BENCHMARK(BM_Unchecked)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Checked)->Arg(0)->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_One)->ArgsProduct({benchmark::CreateDenseRange(0, 20, 1), {0, 1}})->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Memory)->Arg(0)->Arg(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_MemoryOne)->ArgsProduct({benchmark::CreateDenseRange(0, 20, 1), {0, 1}})->UseManualTime()->Unit(benchmark::kMillisecond);



}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  setup();
  warm_up();
  std::printf("corpus: %zu kernels at scale %u; left out (open issues in tests/corpus/corpus_cases.hpp):",
              g_env->entries.size(), kScale);
  for (const auto& n : g_env->left_out) std::printf(" %s", n.c_str());
  std::printf("\n");
  Collector rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  for (auto* m : {&rep.wall, &rep.cpu}) {
    const auto& base = (*m)["BM_Unchecked"];
    for (int level = 0; level <= 2; ++level) {
      const auto& c = (*m)["BM_Checked/" + std::to_string(level)];
      if (base.empty() || c.empty()) continue;
      std::printf("checked/unchecked, level %d, %s: fastest %.3f (%.3f / %.3f ms), median %.3f (%.3f / %.3f ms), %zu runs\n",
                  level, m == &rep.wall ? "wall time" : "process CPU time", min_of(c) / min_of(base), min_of(c),
                  min_of(base), median_of(c) / median_of(base), median_of(c), median_of(base), c.size());
    }
  }
  for (auto* m : {&rep.wall, &rep.cpu}) {
    const auto& u = (*m)["BM_Memory/0"];
    const auto& c = (*m)["BM_Memory/1"];
    if (u.empty() || c.empty()) continue;
    std::printf("memory checks, check_memory/unchanged, %s: fastest %.3f (%.3f / %.3f ms), median %.3f (%.3f / %.3f ms), %zu runs\n",
                m == &rep.wall ? "wall time" : "process CPU time", min_of(c) / min_of(u), min_of(c), min_of(u),
                median_of(c) / median_of(u), median_of(c), median_of(u), c.size());
  }
  double log_sum = 0;
  size_t logged = 0;
  for (size_t i = 0; i < g_env->entries.size(); ++i) {
    const auto& u = rep.cpu["BM_MemoryOne/" + std::to_string(i) + "/0"];
    const auto& c = rep.cpu["BM_MemoryOne/" + std::to_string(i) + "/1"];
    if (u.empty() || c.empty()) continue;
    const double r = median_of(c) / median_of(u);
    log_sum += std::log(r);
    ++logged;
    std::printf("%-40s check_memory/unchanged, process CPU time: median %.3f (%.3f / %.3f ms)\n",
                g_env->entries[i]->c.name().c_str(), r, median_of(c), median_of(u));
  }
  if (logged) std::printf("memory checks per kernel, geometric mean of %zu: %.3f\n", logged, std::exp(log_sum / static_cast<double>(logged)));
  for (size_t i = 0; i < g_env->entries.size(); ++i) {
    const auto& u = rep.cpu["BM_One/" + std::to_string(i) + "/0"];
    const auto& c = rep.cpu["BM_One/" + std::to_string(i) + "/1"];
    if (u.empty() || c.empty()) continue;
    std::printf("%-40s checked (level 1)/unchecked, process CPU time: median %.3f (%.3f / %.3f ms)\n",
                g_env->entries[i]->c.name().c_str(), median_of(c) / median_of(u), median_of(c), median_of(u));
  }
  benchmark::Shutdown();
  return 0;
}
