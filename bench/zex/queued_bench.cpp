// zex_bench: many launches per synchronize (2000 empty launches in 1-item and 64-item groups, spread
// over busy streams, and 200 saxpy launches), zex vs the cheapest correct raw program.
#include "bench_env.hpp"

namespace zex_bench {

// --- many launches per synchronize: 2000 empty launches, one wait -----------------------------------
//
// The shape runtimes have (a training step, an array expression: hundreds of launches, one wait).
// The raw baseline is the cheapest correct raw program: plain launches on one immediate list, an
// event on the last launch only, one host wait; it sets the kernel's one argument per launch, as zex
// does (a runtime sets arguments per launch).


class RawQueue {
 public:
  explicit RawQueue(const char* kernel) : p_(kernel, 1) {}
  ze_kernel_handle_t kernel() const { return p_.k; }

  // The arguments before the zex_state_t are the caller's (set_prefix), set per launch as well.
  template <class F>
  void run(int launches, const ze_group_count_t& g, F&& set_prefix, uint32_t state_index) {
    launch(launches, g, set_prefix, state_index);
    wait();
  }
  // The launches of run(), without the wait: the last one signals the event wait() waits for.
  template <class F>
  void launch(int launches, const ze_group_count_t& g, F&& set_prefix, uint32_t state_index) {
    for (int i = 0; i < launches; ++i) {
      set_prefix();
      zex_state_t st = zex::SlabPool::state(p_.slot, ++p_.id);
      zex::check(zeKernelSetArgumentValue(p_.k, state_index, sizeof st, &st), "zeKernelSetArgumentValue");
      zex::check(zeCommandListAppendLaunchKernel(p_.list, p_.k, &g, i + 1 == launches ? p_.ev[0] : nullptr, 0, nullptr),
                 "zeCommandListAppendLaunchKernel");
    }
  }
  void wait() {
    zex::check(zeEventHostSynchronize(p_.ev[0], UINT64_MAX), "zeEventHostSynchronize");
    zex::check(zeEventHostReset(p_.ev[0]), "zeEventHostReset");
  }

 private:
  RawParts p_;
};

void BM_Queued_Raw(benchmark::State& state) {
  set_live_raw(int(state.range(0)));
  RawQueue raw("empty");
  zex::check(zeKernelSetGroupSize(raw.kernel(), 1, 1, 1), "zeKernelSetGroupSize");
  const ze_group_count_t g{1, 1, 1};
  raw.run(1, g, [] {}, 0);
  for (auto _ : state) raw.run(kQueued, g, [] {}, 0);
  state.SetItemsProcessed(state.iterations() * kQueued);
  state.counters["streams"] = double(state.range(0));
}

void BM_Queued_Zex(benchmark::State& state) {
  set_live_zex(int(state.range(0)));
  zex::Kernel k = g_env->mod.kernel("empty");
  zex::Stream s(g_env->dev);
  const auto cfg = one_item();
  s.launch(k, cfg);
  s.synchronize();
  for (auto _ : state) {
    for (int i = 0; i < kQueued; ++i) s.launch(k, cfg);
    s.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kQueued);
  state.counters["streams"] = double(state.range(0));
  state.SetLabel(s.wait_path() == zex::Stream::WaitPath::kList ? "list" : "events");
}

// The same 2000 empty launches in work-groups of 64 items (issue 25, item 3): Args = {live streams,
// groups}. A work-group of 64 makes each launch cost PoCL more than the 1-item shape does, so the
// launch pipeline (the application thread, zex-cpu's issuing and retiring threads, PoCL's) runs with
// the device as busy as the host, not idle between launches.
constexpr uint32_t kGroup64 = 64;

void BM_Queued64_Raw(benchmark::State& state) {
  set_live_raw(int(state.range(0)));
  RawQueue raw("empty");
  zex::check(zeKernelSetGroupSize(raw.kernel(), kGroup64, 1, 1), "zeKernelSetGroupSize");
  const ze_group_count_t g{uint32_t(state.range(1)), 1, 1};
  raw.run(1, g, [] {}, 0);
  for (auto _ : state) raw.run(kQueued, g, [] {}, 0);
  state.SetItemsProcessed(state.iterations() * kQueued);
  state.counters["streams"] = double(state.range(0));
  state.counters["groups"] = double(state.range(1));
}

void BM_Queued64_Zex(benchmark::State& state) {
  set_live_zex(int(state.range(0)));
  zex::Kernel k = g_env->mod.kernel("empty");
  zex::Stream s(g_env->dev);
  zex::LaunchConfig cfg;
  cfg.groups = {uint32_t(state.range(1))};
  cfg.group_size = {kGroup64};
  cfg.debug_level = 1;
  s.launch(k, cfg);
  s.synchronize();
  for (auto _ : state) {
    for (int i = 0; i < kQueued; ++i) s.launch(k, cfg);
    s.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kQueued);
  state.counters["streams"] = double(state.range(0));
  state.counters["groups"] = double(state.range(1));
  state.SetLabel(s.wait_path() == zex::Stream::WaitPath::kList ? "list" : "events");
}

// The same 2000 launches spread over N busy streams (2000 / N each, every stream synchronized once
// per iteration): what many lists cost the driver (zex-cpu runs two threads per list that submits),
// on both sides alike, against the one-stream figures above.
void BM_QueuedBusy_Raw(benchmark::State& state) {
  const int n = int(state.range(0));
  std::vector<std::unique_ptr<RawQueue>> raw;
  const ze_group_count_t g{1, 1, 1};
  for (int i = 0; i < n; ++i) {
    raw.push_back(std::make_unique<RawQueue>("empty"));
    zex::check(zeKernelSetGroupSize(raw.back()->kernel(), 1, 1, 1), "zeKernelSetGroupSize");
    raw.back()->run(1, g, [] {}, 0);
  }
  for (auto _ : state) {
    for (auto& r : raw) r->launch(kQueued / n, g, [] {}, 0);
    for (auto& r : raw) r->wait();
  }
  state.SetItemsProcessed(state.iterations() * (kQueued / n) * n);
  state.counters["streams"] = double(n);
}

void BM_QueuedBusy_Zex(benchmark::State& state) {
  const int n = int(state.range(0));
  zex::Kernel k = g_env->mod.kernel("empty");
  std::vector<zex::Stream> streams;
  const auto cfg = one_item();
  for (int i = 0; i < n; ++i) {
    streams.emplace_back(g_env->dev);
    streams.back().launch(k, cfg);
    streams.back().synchronize();
  }
  for (auto _ : state) {
    for (auto& s : streams)
      for (int i = 0; i < kQueued / n; ++i) s.launch(k, cfg);
    for (auto& s : streams) s.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * (kQueued / n) * n);
  state.counters["streams"] = double(n);
}

// The same shape with a kernel zex was not tuned for: 200 saxpy launches of 4096 elements (16
// groups of 256) with their four arguments, one wait.
constexpr uint32_t kSaxpyN = 4096;

struct SaxpyData {
  float* x = nullptr;
  float* y = nullptr;
  SaxpyData() {
    auto& e = *g_env;
    ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    void* p = nullptr;
    zex::check(zeMemAllocDevice(e.ctx.handle(), &dd, kSaxpyN * sizeof(float), 64, e.dev.handle(), &p), "zeMemAllocDevice");
    x = static_cast<float*>(p);
    zex::check(zeMemAllocDevice(e.ctx.handle(), &dd, kSaxpyN * sizeof(float), 64, e.dev.handle(), &p), "zeMemAllocDevice");
    y = static_cast<float*>(p);
  }
  ~SaxpyData() {
    zeMemFree(g_env->ctx.handle(), x);
    zeMemFree(g_env->ctx.handle(), y);
  }
  SaxpyData(const SaxpyData&) = delete;
  SaxpyData& operator=(const SaxpyData&) = delete;
};

void BM_QueuedSaxpy_Raw(benchmark::State& state) {
  set_live_raw(1);
  SaxpyData d;
  RawQueue raw("saxpy");
  ze_kernel_handle_t k = raw.kernel();
  zex::check(zeKernelSetGroupSize(k, 256, 1, 1), "zeKernelSetGroupSize");
  const ze_group_count_t g{kSaxpyN / 256, 1, 1};
  const float a = 2.0f;
  const uint32_t n = kSaxpyN;
  auto args = [&] {
    zex::check(zeKernelSetArgumentValue(k, 0, sizeof d.y, &d.y), "zeKernelSetArgumentValue");
    zex::check(zeKernelSetArgumentValue(k, 1, sizeof d.x, &d.x), "zeKernelSetArgumentValue");
    zex::check(zeKernelSetArgumentValue(k, 2, sizeof a, &a), "zeKernelSetArgumentValue");
    zex::check(zeKernelSetArgumentValue(k, 3, sizeof n, &n), "zeKernelSetArgumentValue");
  };
  raw.run(1, g, args, 4);
  for (auto _ : state) raw.run(kSaxpyLaunches, g, args, 4);
  state.SetItemsProcessed(state.iterations() * kSaxpyLaunches);
}

// BM_QueuedSaxpy_Zex with `stop` = stop_on_throw: what early stop costs when nothing throws.
void queued_saxpy(benchmark::State& state, bool stop) {
  set_live_zex(1);
  SaxpyData d;
  zex::Kernel k = g_env->mod.kernel("saxpy");
  zex::Stream s(g_env->dev);
  zex::LaunchConfig cfg;
  cfg.groups = {kSaxpyN / 256};
  cfg.group_size = {256};
  cfg.debug_level = 1;
  cfg.stop_on_throw = stop;
  s.launch(k, cfg, d.y, static_cast<const float*>(d.x), 2.0f, kSaxpyN);
  s.synchronize();
  for (auto _ : state) {
    for (int i = 0; i < kSaxpyLaunches; ++i) s.launch(k, cfg, d.y, static_cast<const float*>(d.x), 2.0f, kSaxpyN);
    s.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kSaxpyLaunches);
}
void BM_QueuedSaxpy_Zex(benchmark::State& state) { queued_saxpy(state, false); }
void BM_QueuedSaxpy_ZexStop(benchmark::State& state) { queued_saxpy(state, true); }

// Early stop's saving: one launch of busy_throw, 4096 groups of 64 work-items, 2000 multiply-adds each,
// throwing in its first group (range(0) = 1) or not at all (0), with stop_on_throw or without
// (`stop`), then the synchronize (which raises when it threw).
void stop_launch(benchmark::State& state, bool stop) {
  set_live_zex(1);
  constexpr uint32_t kGroups = 4096, kItems = 64, kIters = 2000;
  auto& e = *g_env;
  ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  void* out = nullptr;
  zex::check(zeMemAllocDevice(e.ctx.handle(), &dd, kGroups * kItems * sizeof(float), 64, e.dev.handle(), &out),
             "zeMemAllocDevice");
  zex::Kernel k = e.mod.kernel("busy_throw");
  zex::Stream s(e.dev);
  zex::LaunchConfig cfg;
  cfg.groups = {kGroups};
  cfg.group_size = {kItems};
  cfg.debug_level = 1;
  cfg.stop_on_throw = stop;
  const uint32_t thrower = state.range(0) ? 0u : UINT32_MAX;
  auto once = [&] {
    s.launch(k, cfg, static_cast<float*>(out), kIters, thrower);
    try {
      s.synchronize();
    } catch (const zex::KernelException&) {
    }
  };
  once();
  for (auto _ : state) once();
  zeMemFree(e.ctx.handle(), out);
}
void BM_Stop_Plain(benchmark::State& state) { stop_launch(state, false); }
void BM_Stop_Stop(benchmark::State& state) { stop_launch(state, true); }

}  // namespace zex_bench
