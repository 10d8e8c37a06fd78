// The memory checks' costs on zex-cpu (issue 27; docs/benchmarks.md, "Memory checks"), in one run:
//  - BM_Kernel/<k>/<checked>: one launch of a kernel shape (bench/memory/kernels/memory_kernels.cl:
//    saxpy, stencil2d, gemm, reduce, histogram, nbody) and synchronize, the module built without
//    (0) and with (1) ModuleOptions{check_memory}, the same zex::Stream path, 64-item groups;
//  - BM_Launch/<pointers>/<mode>: 100 one-item launches of a kernel with 1, 8 or 32 pointer arguments
//    per synchronize: unchecked (0), checked with the same pointers every launch (1: the bounds come
//    from the per-argument cache), checked with the pointers alternating between two buffer sets (2:
//    every launch looks each pointer up with zeMemGetAddressRange);
//  - BM_LaunchCall/<pointers>/<mode>: the same 100 launch calls alone (mode 3: each launch's pointers
//    8-byte-aligned offsets into the same allocations, a caching allocator's shape), the stream held at an event
//    until they are made (wall time, and the calling thread's CPU time as call_cpu_us): the host's
//    share of a launch, where the lookup is, without the kernels running beside it;
//  - BM_Graph/<k>/<checked>: the shape's launch recorded kGraphLaunches times in a zex::Graph once,
//    the graph executed kGraphExecutions times per synchronize on a zex::Queue (the bounds are looked
//    up at recording, so a replay is the kernels alone): what a framework replaying a step pays.
// Buffers are refilled outside the timed region. main() prints checked/unchecked (median of the
// repetitions, process CPU time and wall time) per kernel, their geometric mean, and per launch.
//
//   ZE_ENABLE_ALT_DRIVERS=<build>/driver/libze_zex_cpu.so zex_memory_bench <memory_kernels.spv>
//     --benchmark_repetitions=9 --benchmark_enable_random_interleaving=true
//   (or: cmake --build <build> --target run-bench-memory; memory_kernels_g.spv beside it: the same with -g)
#include <zex/zex.hpp>

#include "cpu_timing.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using zex_bench_timing::Collector;
using zex_bench_timing::median_of;



struct Env {
  zex::Context ctx;
  zex::Device dev;
  zex::Module plain, checked;
  Env(const std::vector<char>& spv, const zex::ModuleOptions& on)
      : ctx(), dev(ctx.device(0)), plain(dev, spv), checked(dev, spv, on) {}
};
Env* g_env = nullptr;

class Usm {
 public:
  explicit Usm(size_t bytes) : bytes_(bytes) {
    ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    zex::check(zeMemAllocShared(g_env->ctx.handle(), &dd, &hd, bytes, 64, g_env->dev.handle(), &p_), "zeMemAllocShared");
    std::memset(p_, 0, bytes);
  }
  ~Usm() { zeMemFree(g_env->ctx.handle(), p_); }
  Usm(const Usm&) = delete;
  Usm& operator=(const Usm&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  size_t bytes_;
};

// One kernel shape: its buffers (with their first contents, restored before each launch), arguments
// and grid.
struct Shape {
  std::string kernel;
  std::vector<std::unique_ptr<Usm>> bufs;
  std::vector<std::vector<uint8_t>> pristine;
  std::vector<uint32_t> scalars;  // after the pointers, each a uint (saxpy's a is a float's bits)
  zex::LaunchConfig cfg;
  Usm& add(size_t bytes) {
    bufs.push_back(std::make_unique<Usm>(bytes));
    return *bufs.back();
  }
  void keep() {
    for (auto& b : bufs) pristine.emplace_back(b->as<uint8_t>(), b->as<uint8_t>() + b->bytes());
  }
  void refill() {
    for (size_t i = 0; i < bufs.size(); ++i) std::memcpy(bufs[i]->as<uint8_t>(), pristine[i].data(), pristine[i].size());
  }
  std::vector<zex::KernelArg> args() {
    std::vector<zex::KernelArg> a;
    ptrs.clear();
    for (auto& b : bufs) ptrs.push_back(b->as<void>());
    for (void*& p : ptrs) a.push_back({sizeof(void*), &p});
    for (uint32_t& s : scalars) a.push_back({sizeof(uint32_t), &s});
    return a;
  }
  std::vector<void*> ptrs;
};

zex::LaunchConfig grid(uint32_t gx, uint32_t gy, uint32_t lx, uint32_t ly) {
  zex::LaunchConfig c;
  c.groups = {gx, gy, 1};
  c.group_size = {lx, ly, 1};
  c.debug_level = 1;
  return c;
}

std::vector<std::unique_ptr<Shape>> make_shapes() {
  std::vector<std::unique_ptr<Shape>> out;
  auto fill = [](Usm& u, float scale) {
    float* f = u.as<float>();
    for (size_t i = 0; i < u.bytes() / 4; ++i) f[i] = scale * float((i * 37) % 101) / 101.0f;
  };
  {
    auto s = std::make_unique<Shape>();
    const uint32_t n = 1u << 20;
    s->kernel = "saxpy";
    fill(s->add(n * 4), 1.0f);
    fill(s->add(n * 4), 2.0f);
    float a = 1.5f;
    uint32_t bits;
    std::memcpy(&bits, &a, 4);
    s->scalars = {bits, n};
    s->cfg = grid(n / 64, 1, 64, 1);
    out.push_back(std::move(s));
  }
  {
    auto s = std::make_unique<Shape>();
    const uint32_t w = 1024, h = 1024;
    s->kernel = "stencil2d";
    s->add(w * h * 4);
    fill(s->add(w * h * 4), 1.0f);
    s->scalars = {w, h};
    s->cfg = grid(w / 16, h / 4, 16, 4);
    out.push_back(std::move(s));
  }
  {
    auto s = std::make_unique<Shape>();
    const uint32_t n = 256;
    s->kernel = "gemm";
    s->add(n * n * 4);
    fill(s->add(n * n * 4), 1.0f);
    fill(s->add(n * n * 4), 0.5f);
    s->scalars = {n};
    s->cfg = grid(n / 16, n / 4, 16, 4);
    out.push_back(std::move(s));
  }
  {
    auto s = std::make_unique<Shape>();
    const uint32_t n = 1u << 20;
    s->kernel = "reduce";
    s->add(n / 64 * 4);
    fill(s->add(n * 4), 1.0f);
    s->scalars = {n};
    s->cfg = grid(n / 64, 1, 64, 1);
    out.push_back(std::move(s));
  }
  {
    auto s = std::make_unique<Shape>();
    const uint32_t n = 1u << 20, nbins = 256;
    s->kernel = "histogram";
    s->add(nbins * 4);
    Usm& v = s->add(n * 4);
    for (uint32_t i = 0; i < n; ++i) v.as<uint32_t>()[i] = (i * 2654435761u) >> 7;
    s->scalars = {n, nbins};
    s->cfg = grid(n / 64, 1, 64, 1);
    out.push_back(std::move(s));
  }
  {
    auto s = std::make_unique<Shape>();
    const uint32_t n = 2048;
    s->kernel = "nbody";
    s->add(n * 16);
    fill(s->add(n * 16), 1.0f);
    s->scalars = {n};
    s->cfg = grid(n / 64, 1, 64, 1);
    out.push_back(std::move(s));
  }
  for (auto& s : out) s->keep();
  return out;
}
std::vector<std::unique_ptr<Shape>>* g_shapes = nullptr;

void BM_Kernel(benchmark::State& state) {
  Shape& sh = *(*g_shapes)[static_cast<size_t>(state.range(0))];
  const bool checked = state.range(1) != 0;
  zex::Kernel k = (checked ? g_env->checked : g_env->plain).kernel(sh.kernel);
  zex::Stream s(g_env->dev);
  std::vector<zex::KernelArg> args = sh.args();
  s.launch_args(k, sh.cfg, args.data(), args.size(), __FILE__, __LINE__);  // PoCL builds at the first launch
  s.synchronize();
  zex_bench_timing::time_passes(state, [&] { sh.refill(); }, [&] {
    s.launch_args(k, sh.cfg, args.data(), args.size(), __FILE__, __LINE__);
    s.synchronize();
  });
  state.SetLabel(sh.kernel);
}

constexpr int kLaunches = 100;
constexpr int kGraphLaunches = 4, kGraphExecutions = 5;

void BM_Graph(benchmark::State& state) {
  Shape& sh = *(*g_shapes)[static_cast<size_t>(state.range(0))];
  const bool checked = state.range(1) != 0;
  zex::Kernel k = (checked ? g_env->checked : g_env->plain).kernel(sh.kernel);
  std::vector<zex::KernelArg> args = sh.args();
  zex::Graph graph(g_env->dev, sh.kernel);
  for (int i = 0; i < kGraphLaunches; ++i) graph.launch_args(k, sh.cfg, args.data(), args.size(), __FILE__, __LINE__);
  graph.close();
  zex::Queue q(g_env->dev);
  q.execute(graph);  // PoCL builds at the first launch
  q.synchronize();
  zex_bench_timing::time_passes(state, [&] { sh.refill(); }, [&] {
    for (int i = 0; i < kGraphExecutions; ++i) q.execute(graph);
    q.synchronize();
  });
  state.SetLabel(sh.kernel);
}

// BM_Launch's and BM_LaunchCall's arguments: two sets of `pointers` 64-byte buffers, as launch_args takes them.
struct PointerSets {
  std::vector<std::unique_ptr<Usm>> sets[2];
  std::vector<void*> ptrs[2];
  std::vector<zex::KernelArg> args[2];
  explicit PointerSets(size_t pointers) {
    for (int set = 0; set < 2; ++set) {
      for (size_t p = 0; p < pointers; ++p) sets[set].push_back(std::make_unique<Usm>(64));
      for (auto& u : sets[set]) ptrs[set].push_back(u->as<void>());
      for (void*& p : ptrs[set]) args[set].push_back({sizeof(void*), &p});
    }
  }
  PointerSets(const PointerSets&) = delete;
  PointerSets& operator=(const PointerSets&) = delete;
};

void BM_Launch(benchmark::State& state) {
  const auto pointers = static_cast<size_t>(state.range(0));
  const int mode = static_cast<int>(state.range(1));
  const std::string name = "ptr" + std::to_string(pointers);
  zex::Kernel k = (mode ? g_env->checked : g_env->plain).kernel(name);
  PointerSets ps(pointers);
  std::vector<zex::KernelArg>(&args)[2] = ps.args;
  const zex::LaunchConfig cfg = grid(1, 1, 1, 1);
  zex::Stream s(g_env->dev);
  s.launch_args(k, cfg, args[0].data(), pointers, __FILE__, __LINE__);
  s.launch_args(k, cfg, args[1].data(), pointers, __FILE__, __LINE__);
  s.synchronize();
  zex_bench_timing::time_passes(state, [] {}, [&] {
    for (int i = 0; i < kLaunches; ++i) {
      const int set = mode == 2 ? i & 1 : 0;
      s.launch_args(k, cfg, args[set].data(), pointers, __FILE__, __LINE__);
    }
    s.synchronize();
  });
  state.SetItemsProcessed(state.iterations() * kLaunches);
}

// BM_Launch's launches with the stream held at an event the host signals after them: the 100 launch
// calls alone (wall time, and the calling thread's CPU time as counter call_cpu_us), with the driver's
// threads idle, so what is timed is the host's share of a launch (the lookup, the arguments, the
// append), not the kernels' run or its contention with them.
void BM_LaunchCall(benchmark::State& state) {
  const auto pointers = static_cast<size_t>(state.range(0));
  const int mode = static_cast<int>(state.range(1));
  zex::Kernel k = (mode ? g_env->checked : g_env->plain).kernel("ptr" + std::to_string(pointers));
  PointerSets ps(pointers);
  std::vector<void*>(&ptrs)[2] = ps.ptrs;
  std::vector<zex::KernelArg>(&args)[2] = ps.args;
  std::vector<void*> moved(pointers);
  std::vector<zex::KernelArg> moved_args;
  for (void*& p : moved) moved_args.push_back({sizeof(void*), &p});
  ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
  ze_device_handle_t dev = g_env->dev.handle();
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t gate = nullptr;
  zex::check(zeEventPoolCreate(g_env->ctx.handle(), &pd, 1, &dev, &pool), "zeEventPoolCreate");
  ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST, 0};
  zex::check(zeEventCreate(pool, &ed, &gate), "zeEventCreate");
  const zex::LaunchConfig cfg = grid(1, 1, 1, 1);
  zex::Stream s(g_env->dev);
  s.launch_args(k, cfg, args[0].data(), pointers, __FILE__, __LINE__);
  s.launch_args(k, cfg, args[1].data(), pointers, __FILE__, __LINE__);
  s.synchronize();
  double call = 0;
  for (auto _ : state) {
    s.wait(gate);
    const double c0 = zex_bench_timing::thread_cpu();
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kLaunches; ++i) {
      const int set = mode == 2 ? i & 1 : 0;
      if (mode == 3)  // a new pointer every launch, inside the same allocations
        for (size_t p = 0; p < pointers; ++p) moved[p] = static_cast<char*>(ptrs[0][p]) + 4 * (i & 7);
      s.launch_args(k, cfg, (mode == 3 ? moved_args : args[set]).data(), pointers, __FILE__, __LINE__);
    }
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    call += zex_bench_timing::thread_cpu() - c0;
    zex::check(zeEventHostSignal(gate), "zeEventHostSignal");
    s.synchronize();
    zex::check(zeEventHostReset(gate), "zeEventHostReset");
  }
  state.counters["call_cpu_us"] = 1e6 * call / static_cast<double>(state.iterations()) / kLaunches;
  state.SetItemsProcessed(state.iterations() * kLaunches);
  zeEventDestroy(gate);
  zeEventPoolDestroy(pool);
}



std::vector<char> read_all(const char* path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <memory_kernels.spv> [benchmark flags]\n", argv[0]);
    return 2;
  }
  const std::vector<char> spv = read_all(argv[1]);
  if (spv.empty()) {
    std::fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
    return 2;
  }
  zex::ModuleOptions on;
  on.check_memory = true;
  g_env = new Env(spv, on);  // never destroyed: see tests/runtime/zex_fixture.hpp
  g_shapes = new std::vector<std::unique_ptr<Shape>>(make_shapes());
  const int shapes = static_cast<int>(g_shapes->size());
  benchmark::RegisterBenchmark("BM_Kernel", BM_Kernel)
      ->ArgsProduct({benchmark::CreateDenseRange(0, shapes - 1, 1), {0, 1}})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Graph", BM_Graph)
      ->ArgsProduct({benchmark::CreateDenseRange(0, shapes - 1, 1), {0, 1}})
      ->UseManualTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_Launch", BM_Launch)
      ->ArgsProduct({{1, 8, 32}, {0, 1, 2}})
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_LaunchCall", BM_LaunchCall)
      ->ArgsProduct({{1, 8, 32}, {0, 1, 2, 3}})
      ->UseManualTime()
      ->Unit(benchmark::kMicrosecond);
  Collector rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  const zex::MemoryCheckCounts& mc = g_env->checked.memory_checks();
  std::printf("module: %zu accesses checked, %zu __local unchecked\n", mc.checked, mc.local);
  for (auto* m : {&rep.cpu, &rep.wall}) {
    const char* what = m == &rep.cpu ? "process CPU time" : "wall time";
    for (const char* bench : {"BM_Kernel", "BM_Graph"}) {
      double log_sum = 0;
      int n = 0;
      for (int i = 0; i < shapes; ++i) {
        const std::string b = std::string(bench) + "/" + std::to_string(i);
        const double u = median_of((*m)[b + "/0"]), c = median_of((*m)[b + "/1"]);
        if (u <= 0 || c <= 0) continue;
        std::printf("%-9s %-10s checked/unchecked, %s: %.3f (%.3f / %.3f ms, median of %zu)\n", bench,
                    (*g_shapes)[i]->kernel.c_str(), what, c / u, c, u, (*m)[b + "/1"].size());
        log_sum += std::log(c / u);
        ++n;
      }
      if (n) std::printf("%s: geometric mean over %d kernels, %s: %.3f\n", bench, n, what, std::exp(log_sum / n));
    }
    for (int p : {1, 8, 32}) {
      const std::string b = "BM_Launch/" + std::to_string(p);
      const double u = median_of((*m)[b + "/0"]), hit = median_of((*m)[b + "/1"]), miss = median_of((*m)[b + "/2"]);
      if (u <= 0) continue;
      const double per = m == &rep.cpu ? 1e3 / kLaunches : 1.0 / kLaunches;  // us per launch (CPU in ms, wall in us)
      std::printf("%2d pointers, %s per launch: unchecked %.2f us, checked %.3fx (cached), %.3fx (looked up every launch)\n",
                  p, what, u * per, hit / u, miss / u);
    }
  }
  for (int p : {1, 8, 32}) {  // BM_LaunchCall: wall time per launch call (us) and the caller's CPU time
    const std::string b = "BM_LaunchCall/" + std::to_string(p);
    for (auto* m : {&rep.wall, &rep.call}) {
      const double u = median_of((*m)[b + "/0"]), hit = median_of((*m)[b + "/1"]), miss = median_of((*m)[b + "/2"]),
                   moved = median_of((*m)[b + "/3"]);
      if (u <= 0) continue;
      const double per = m == &rep.wall ? 1.0 / kLaunches : 1.0;
      std::printf("%2d pointers, the launch call alone (stream held), %s: unchecked %.2f us, checked %.3fx (cached), "
                  "%.3fx (looked up every launch), %.3fx (new pointers inside the same allocations)\n",
                  p, m == &rep.wall ? "wall time" : "calling thread's CPU time", u * per, hit / u, miss / u, moved / u);
    }
  }
  benchmark::Shutdown();
  return 0;
}
