// zex library benchmarks, all in one run so that ratios compare like with like:
//  - launch + synchronize through zex vs the same launch through raw Level Zero (same kernel, same
//    arguments, an event per launch as zex uses), with 1, 100 and 1000 live zex streams;
//  - the launch call alone (host side), zex vs raw, at the same stream counts;
//  - a batch of 32 launches and one synchronize, zex vs raw, at the same stream counts;
//  - 2000 queued launches per synchronize of an empty kernel, in 1-item groups and in 64-item groups
//    (1 and 16 of them), zex vs raw (an event on the last launch only), at the same stream counts;
//  - a no-throw synchronize() vs a raw host wait on a launch whose event is already signaled;
//  - the time from synchronize() to a caught KernelException at debug levels 0, 1 and 2;
//  - launch + synchronize, and the launch call alone, through the C API (<zex/zex.h>, libzex.so) vs the
//    C++ API, 1 stream (target: C API <= 1.10x C++).
// At the end it prints the ratios (zex / raw) computed from this run's numbers.
//
//   ZE_ENABLE_ALT_DRIVERS=<build>/driver/libze_zex_cpu.so zex_bench <kernels.spv> [benchmark flags]
//   (or: cmake --build <build> --target run-bench-zex)
#include <zex/zex.h>
#include <zex/zex.hpp>

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Env {
  zex::Context ctx;
  zex::Device dev;
  zex::Module mod;
  uint32_t* flag = nullptr;  // shared USM written by `touch`
  explicit Env(const std::vector<char>& spv) : ctx(), dev(ctx.device(0)), mod(dev, spv) {
    ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    void* p = nullptr;
    zex::check(zeMemAllocShared(ctx.handle(), &dd, &hd, 64, 64, dev.handle(), &p), "zeMemAllocShared");
    flag = static_cast<uint32_t*>(p);
    *flag = 0;
  }
};
Env* g_env = nullptr;

// Idle streams that exist during a benchmark: they hold slots (and on a GPU, slabs that every launch
// makes resident), which must not slow the measured stream down.
std::vector<zex::Stream>& idle_streams() {
  static std::vector<zex::Stream> v;
  return v;
}
void set_live_streams(int n) {
  auto& v = idle_streams();
  while (int(v.size()) > n - 1) v.pop_back();
  while (int(v.size()) < n - 1) v.emplace_back(g_env->dev);
}

zex::LaunchConfig one_item(int level = 1) {
  zex::LaunchConfig c;
  c.groups = {1, 1, 1};
  c.group_size = {1, 1, 1};
  c.debug_level = level;
  return c;
}

// What every raw baseline owns: a kernel created from the same (level-1) module as zex's, its own
// immediate list, `events` events from a pool of its own, and a slot for the zex_state_t argument the
// kernel takes.
struct RawParts {
  ze_kernel_handle_t k = nullptr;
  ze_command_list_handle_t list = nullptr;
  ze_event_pool_handle_t pool = nullptr;
  std::vector<ze_event_handle_t> ev;
  zex::Slot slot;
  uint64_t id = 0;

  RawParts(const char* kernel, uint32_t events) {
    auto& e = *g_env;
    ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, kernel};
    zex::check(zeKernelCreate(e.mod.handle(1), &kd, &k), "zeKernelCreate");
    ze_result_t r = zeKernelSetIndirectAccess(
        k, ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST | ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE);
    if (r != ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) zex::check(r, "zeKernelSetIndirectAccess");
    ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, e.dev.compute_ordinal(), 0, 0,
                               ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    zex::check(zeCommandListCreateImmediate(e.ctx.handle(), e.dev.handle(), &qd, &list), "zeCommandListCreateImmediate");
    ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, events};
    ze_device_handle_t dh = e.dev.handle();
    zex::check(zeEventPoolCreate(e.ctx.handle(), &pd, 1, &dh, &pool), "zeEventPoolCreate");
    ev.resize(events);
    for (uint32_t i = 0; i < events; ++i) {
      ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, i, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
      zex::check(zeEventCreate(pool, &ed, &ev[i]), "zeEventCreate");
    }
    slot = e.dev.slab_pool().acquire();
  }
  ~RawParts() {
    for (auto e : ev) zeEventDestroy(e);
    zeEventPoolDestroy(pool);
    zeCommandListDestroy(list);
    zeKernelDestroy(k);
    g_env->dev.slab_pool().release(slot);
  }
  RawParts(const RawParts&) = delete;
  RawParts& operator=(const RawParts&) = delete;
};

// The raw Level Zero baseline, done the way zex does it on Level Zero 1.4 (no
// zeCommandListHostSynchronize): an event per launch from a small ring, one host wait on the newest
// event and host resets of the ones used.
class Raw {
 public:
  static constexpr uint32_t kEvents = 64;
  Raw() : p_("touch", kEvents) { zex::check(zeKernelSetGroupSize(p_.k, 1, 1, 1), "zeKernelSetGroupSize"); }

  void launch(uint32_t token) {
    uint32_t* flag = g_env->flag;
    zex_state_t st = zex::SlabPool::state(p_.slot, ++p_.id);
    zex::check(zeKernelSetArgumentValue(p_.k, 0, sizeof flag, &flag), "zeKernelSetArgumentValue");
    zex::check(zeKernelSetArgumentValue(p_.k, 1, sizeof token, &token), "zeKernelSetArgumentValue");
    zex::check(zeKernelSetArgumentValue(p_.k, 2, sizeof st, &st), "zeKernelSetArgumentValue");
    ze_group_count_t g{1, 1, 1};
    zex::check(zeCommandListAppendLaunchKernel(p_.list, p_.k, &g, p_.ev[used_++ % kEvents], 0, nullptr),
               "zeCommandListAppendLaunchKernel");
  }
  bool ready() const { return used_ == 0 || zeEventQueryStatus(p_.ev[(used_ - 1) % kEvents]) == ZE_RESULT_SUCCESS; }
  // At most kEvents launches between waits.
  void wait() {
    zex::check(zeEventHostSynchronize(p_.ev[(used_ - 1) % kEvents], UINT64_MAX), "zeEventHostSynchronize");
    for (uint32_t i = 0; i < used_; ++i) zex::check(zeEventHostReset(p_.ev[i]), "zeEventHostReset");
    used_ = 0;
  }

 private:
  RawParts p_;
  uint32_t used_ = 0;
};

// Idle raw streams for the baseline at N streams: what a runtime with N streams has anyway (an
// immediate list and an event pool each), without zex.
struct IdleRaw {
  ze_command_list_handle_t list = nullptr;
  ze_event_pool_handle_t pool = nullptr;
  IdleRaw() {
    auto& e = *g_env;
    ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, e.dev.compute_ordinal(), 0, 0,
                               ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    zex::check(zeCommandListCreateImmediate(e.ctx.handle(), e.dev.handle(), &qd, &list), "zeCommandListCreateImmediate");
    ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 64};
    ze_device_handle_t dh = e.dev.handle();
    zex::check(zeEventPoolCreate(e.ctx.handle(), &pd, 1, &dh, &pool), "zeEventPoolCreate");
  }
  ~IdleRaw() {
    zeEventPoolDestroy(pool);
    zeCommandListDestroy(list);
  }
  IdleRaw(const IdleRaw&) = delete;
  IdleRaw& operator=(const IdleRaw&) = delete;
};
std::vector<std::unique_ptr<IdleRaw>>& idle_raw() {
  static std::vector<std::unique_ptr<IdleRaw>> v;
  return v;
}
void set_live_raw(int n) {
  idle_streams().clear();
  auto& v = idle_raw();
  while (int(v.size()) > n - 1) v.pop_back();
  while (int(v.size()) < n - 1) v.push_back(std::make_unique<IdleRaw>());
}
void set_live_zex(int n) {
  idle_raw().clear();
  set_live_streams(n);
}

// --- launch + synchronize -------------------------------------------------------------------------

void BM_LaunchSync_Raw(benchmark::State& state) {
  set_live_raw(int(state.range(0)));
  Raw raw;
  uint32_t token = 0;
  for (auto _ : state) {
    raw.launch(++token);
    raw.wait();
  }
  state.counters["streams"] = double(state.range(0));
}

void BM_LaunchSync_Zex(benchmark::State& state) {
  set_live_zex(int(state.range(0)));
  zex::Kernel k = g_env->mod.kernel("touch");
  zex::Stream s(g_env->dev);
  const auto cfg = one_item();
  uint32_t token = 0;
  s.launch(k, cfg, g_env->flag, ++token);  // first launch builds the kernel: not measured
  s.synchronize();
  for (auto _ : state) {
    s.launch(k, cfg, g_env->flag, ++token);
    s.synchronize();
  }
  state.counters["streams"] = double(state.range(0));
}

// --- the same through the C API: libzex.so's own context, module and stream ----------------------------

struct CEnv {
  zex_context_t ctx = nullptr;
  zex_device_t dev = nullptr;
  zex_module_t mod = nullptr;
  uint32_t* flag = nullptr;
};
CEnv* g_c = nullptr;

void c_check(zex_result_t r, const char* what) {
  if (r != ZEX_SUCCESS) throw std::runtime_error(std::string(what) + ": " + zex_last_error_message());
}

// A C API stream and kernel "touch", launched once (the kernel's build is not measured).
struct CStream {
  zex_stream_t s = nullptr;
  zex_kernel_t k = nullptr;
  zex_launch_config_t cfg{{1, 1, 1}, {1, 1, 1}, 1};
  uint32_t token = 0;
  zex_arg_t args[2];
  CStream() {
    c_check(zex_stream_create(g_c->dev, &s), "zex_stream_create");
    c_check(zex_kernel_create(g_c->mod, "touch", &k), "zex_kernel_create");
    args[0] = zex_arg_t{sizeof g_c->flag, &g_c->flag};
    args[1] = zex_arg_t{sizeof token, &token};
    launch();
    c_check(zex_stream_synchronize(s, nullptr), "zex_stream_synchronize");
  }
  ~CStream() {
    zex_stream_destroy(s);
    zex_kernel_destroy(k);
  }
  zex_result_t launch() {
    ++token;
    return zex_stream_launch(s, k, &cfg, 2, args);
  }
};

void BM_LaunchSync_C(benchmark::State& state) {
  CStream c;
  for (auto _ : state) {
    if (c.launch() != ZEX_SUCCESS || zex_stream_synchronize(c.s, nullptr) != ZEX_SUCCESS) {
      state.SkipWithError(zex_last_error_message());
      break;
    }
  }
  state.counters["streams"] = 1;
}

void BM_LaunchOnly_C(benchmark::State& state) {
  CStream c;
  for (auto _ : state) {
    auto t0 = Clock::now();
    const zex_result_t r = c.launch();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
    if (r != ZEX_SUCCESS || zex_stream_synchronize(c.s, nullptr) != ZEX_SUCCESS) {
      state.SkipWithError(zex_last_error_message());
      break;
    }
  }
  state.counters["streams"] = 1;
}

// --- the launch call alone (host side: arguments + one append), synchronized outside the timing ------

void BM_LaunchOnly_Raw(benchmark::State& state) {
  set_live_raw(int(state.range(0)));
  Raw raw;
  uint32_t token = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    raw.launch(++token);
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
    raw.wait();
  }
  state.counters["streams"] = double(state.range(0));
}

void BM_LaunchOnly_Zex(benchmark::State& state) {
  set_live_zex(int(state.range(0)));
  zex::Kernel k = g_env->mod.kernel("touch");
  zex::Stream s(g_env->dev);
  const auto cfg = one_item();
  uint32_t token = 0;
  s.launch(k, cfg, g_env->flag, ++token);
  s.synchronize();
  for (auto _ : state) {
    auto t0 = Clock::now();
    s.launch(k, cfg, g_env->flag, ++token);
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
    s.synchronize();
  }
  state.counters["streams"] = double(state.range(0));
}

// --- 32 launches, one synchronize -------------------------------------------------------------------

constexpr int kBatch = 32;

void BM_Batch32_Raw(benchmark::State& state) {
  set_live_raw(int(state.range(0)));
  Raw raw;
  uint32_t token = 0;
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) raw.launch(++token);
    raw.wait();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["streams"] = double(state.range(0));
}

void BM_Batch32_Zex(benchmark::State& state) {
  set_live_zex(int(state.range(0)));
  zex::Kernel k = g_env->mod.kernel("touch");
  zex::Stream s(g_env->dev);
  const auto cfg = one_item();
  uint32_t token = 0;
  s.launch(k, cfg, g_env->flag, ++token);
  s.synchronize();
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) s.launch(k, cfg, g_env->flag, ++token);
    s.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["streams"] = double(state.range(0));
}

// --- many launches per synchronize: 2000 empty launches, one wait -----------------------------------
//
// The shape runtimes have (a training step, an array expression: hundreds of launches, one wait).
// The raw baseline is the cheapest correct raw program: plain launches on one immediate list, an
// event on the last launch only, one host wait; it sets the kernel's one argument per launch, as zex
// does (a runtime sets arguments per launch).

constexpr int kQueued = 2000;

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
constexpr int kSaxpyLaunches = 200;
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

void BM_QueuedSaxpy_Zex(benchmark::State& state) {
  set_live_zex(1);
  SaxpyData d;
  zex::Kernel k = g_env->mod.kernel("saxpy");
  zex::Stream s(g_env->dev);
  zex::LaunchConfig cfg;
  cfg.groups = {kSaxpyN / 256};
  cfg.group_size = {256};
  cfg.debug_level = 1;
  s.launch(k, cfg, d.y, static_cast<const float*>(d.x), 2.0f, kSaxpyN);
  s.synchronize();
  for (auto _ : state) {
    for (int i = 0; i < kSaxpyLaunches; ++i) s.launch(k, cfg, d.y, static_cast<const float*>(d.x), 2.0f, kSaxpyN);
    s.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kSaxpyLaunches);
}

// --- the wait alone, on a launch that has already run -------------------------------------------------

void BM_SyncOnly_Raw(benchmark::State& state) {
  set_live_raw(1);
  Raw raw;
  uint32_t token = 0;
  for (auto _ : state) {
    raw.launch(++token);
    while (!raw.ready()) {
    }
    auto t0 = Clock::now();
    raw.wait();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
  }
}

void BM_SyncOnly_Zex(benchmark::State& state) {
  set_live_zex(1);
  zex::Kernel k = g_env->mod.kernel("touch");
  zex::Stream s(g_env->dev);
  const auto cfg = one_item();
  uint32_t token = 0;
  s.launch(k, cfg, g_env->flag, ++token);
  s.synchronize();
  for (auto _ : state) {
    s.launch(k, cfg, g_env->flag, ++token);
    while (!s.ready()) {
    }
    auto t0 = Clock::now();
    s.synchronize();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
  }
}

// --- synchronize() to a caught exception ----------------------------------------------------------------

void BM_SyncToCatch_Zex(benchmark::State& state) {
  set_live_zex(1);
  const int level = int(state.range(0));
  zex::Kernel k = g_env->mod.kernel("throw_now");
  zex::Stream s(g_env->dev);
  const auto cfg = one_item(level);
  volatile uint32_t* status = &s.slot().report->status;
  uint32_t token = 0;
  s.launch(k, cfg, ++token);
  try {
    s.synchronize();
  } catch (const zex::KernelException&) {
  }
  size_t chars = 0;
  for (auto _ : state) {
    s.launch(k, cfg, ++token);
    while (!s.ready()) {
    }
    if (*status == 0) {
      state.SkipWithError("the kernel finished without a report");
      break;
    }
    auto t0 = Clock::now();
    try {
      s.synchronize();
      state.SkipWithError("no exception");
      break;
    } catch (const zex::KernelException& e) {
      chars += std::strlen(e.what());
    }
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  state.counters["level"] = level;
  benchmark::DoNotOptimize(chars);
}

// Collects each benchmark's time per iteration (ns), every repetition, so that main() can print
// ratios of medians. Names lose their "/real_time" and "/manual_time" suffixes.
class Collector : public benchmark::ConsoleReporter {
 public:
  // Colors only on a terminal, so that logs and docs/benchmarks.md stay plain text.
  Collector() : ConsoleReporter(isatty(1) ? OO_Defaults : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      if (r.error_occurred) continue;
      const bool median_of_reps = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (r.run_type != Run::RT_Iteration && !median_of_reps) continue;
      std::string name = r.run_name.str();
      for (const char* suffix : {"/real_time", "/manual_time"}) {
        const std::string sfx(suffix);
        if (name.size() > sfx.size() && name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0)
          name.resize(name.size() - sfx.size());
      }
      const double t = r.GetAdjustedRealTime() * to_ns(r.time_unit);
      const double c = r.GetAdjustedCPUTime() * to_ns(r.time_unit);
      if (median_of_reps) {
        medians[name] = t;
        cpu_medians[name] = c;
      } else {
        ns[name].push_back(t);
        cpu_ns[name].push_back(c);
      }
    }
    // The console shows the aggregates when there are repetitions; every run is recorded above.
    std::vector<Run> shown;
    for (const auto& r : runs)
      if (r.run_type == Run::RT_Aggregate || r.repetitions <= 1) shown.push_back(r);
    if (!shown.empty()) ConsoleReporter::ReportRuns(shown);
  }
  // The fastest repetition: the cost with the least interference from the rest of the machine.
  double fastest(const std::string& name, bool cpu = false) const {
    const auto& all = cpu ? cpu_ns : ns;
    auto it = all.find(name);
    if (it == all.end() || it->second.empty()) return 0.0;
    return *std::min_element(it->second.begin(), it->second.end());
  }
  // Google Benchmark's median over repetitions when there were repetitions, else ours; real time, or
  // the benchmark thread's CPU time (the host-side cost, insensitive to how the driver's worker
  // threads get scheduled on a busy machine).
  double median(const std::string& name, bool cpu = false) const {
    const auto& meds = cpu ? cpu_medians : medians;
    const auto& all = cpu ? cpu_ns : ns;
    auto m = meds.find(name);
    if (m != meds.end()) return m->second;
    auto it = all.find(name);
    if (it == all.end() || it->second.empty()) return 0.0;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
  static double to_ns(benchmark::TimeUnit u) {
    switch (u) {
      case benchmark::kSecond: return 1e9;
      case benchmark::kMillisecond: return 1e6;
      case benchmark::kMicrosecond: return 1e3;
      default: return 1.0;
    }
  }
  std::map<std::string, std::vector<double>> ns, cpu_ns;
  std::map<std::string, double> medians, cpu_medians;
};

// zex::Context adopting a ze context, and dropping it: describing the devices, choosing the wait path,
// and with Arg(1) the device-loss watch (RAS snapshot, Info Log instance; Arg(0): ZEX_DEVICE_REPORT=0).
// The watch is the only thing a device-loss report costs before a loss; docs/benchmarks.md.
void BM_ContextAdopt(benchmark::State& state) {
  setenv("ZEX_DEVICE_REPORT", state.range(0) ? "1" : "0", 1);
  ze_driver_handle_t drv = g_env->ctx.driver();
  ze_context_handle_t raw = g_env->ctx.handle();
  for (auto _ : state) {
    zex::Context c(drv, raw);
    benchmark::DoNotOptimize(c.device_count());
  }
  unsetenv("ZEX_DEVICE_REPORT");
}

std::vector<char> read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error(std::string("cannot open ") + path);
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

}  // namespace

// Raw and zex alternate at each stream count so that drift in the machine's load hits both alike.
BENCHMARK(BM_LaunchSync_Raw)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchSync_Zex)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchSync_C)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchSync_Raw)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchSync_Zex)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchSync_Raw)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchSync_Zex)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchOnly_Raw)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchOnly_Zex)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchOnly_C)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchOnly_Raw)->Arg(100)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchOnly_Zex)->Arg(100)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchOnly_Raw)->Arg(1000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchOnly_Zex)->Arg(1000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Batch32_Raw)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Batch32_Zex)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Batch32_Raw)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Batch32_Zex)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Batch32_Raw)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Batch32_Zex)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued_Raw)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued_Zex)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued_Raw)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued_Zex)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued_Raw)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued_Zex)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Raw)->Args({1, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Zex)->Args({1, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Raw)->Args({100, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Zex)->Args({100, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Raw)->Args({1000, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Zex)->Args({1000, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Raw)->Args({1, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Zex)->Args({1, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Raw)->Args({100, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Zex)->Args({100, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Raw)->Args({1000, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Zex)->Args({1000, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_QueuedBusy_Raw)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_QueuedBusy_Zex)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_QueuedSaxpy_Raw)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_QueuedSaxpy_Zex)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_SyncOnly_Raw)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SyncOnly_Zex)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ContextAdopt)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_SyncToCatch_Zex)->Arg(0)->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: zex_bench <bench_kernels.spv> [benchmark flags]\n");
    return 2;
  }
  try {
    g_env = new Env(read_file(argv[1]));  // never destroyed: see tests/runtime/zex_fixture.hpp
    {
      const std::vector<char> spv = read_file(argv[1]);
      g_c = new CEnv();  // never destroyed, likewise
      c_check(zex_context_create(&g_c->ctx), "zex_context_create");
      c_check(zex_device_get(g_c->ctx, 0, &g_c->dev), "zex_device_get");
      c_check(zex_module_create(g_c->dev, spv.data(), spv.size(), &g_c->mod), "zex_module_create");
      c_check(zex_context_alloc_shared(g_c->ctx, g_c->dev, 64, 64, reinterpret_cast<void**>(&g_c->flag)),
              "zex_context_alloc_shared");
    }
    std::printf("device: %s\n", g_env->dev.name().c_str());
    Collector rep;
    benchmark::RunSpecifiedBenchmarks(&rep);
    idle_streams().clear();
    idle_raw().clear();
    auto print_ratio = [&](bool cpu, const char* what, const std::string& a, const std::string& b) {
      const double x = rep.median(a, cpu), y = rep.median(b, cpu);
      if (x > 0 && y > 0) std::printf("  %-46s %9.3f us / %9.3f us = %.3fx\n", what, x / 1e3, y / 1e3, x / y);
    };
    auto ratio = [&](const char* what, const std::string& a, const std::string& b) { print_ratio(false, what, a, b); };
    auto cpu_ratio = [&](const char* what, const std::string& a, const std::string& b) { print_ratio(true, what, a, b); };
    std::printf("\nReal time, ratios of medians (this run):\n");
    for (const char* n : {"1", "100", "1000"})
      ratio(("launch+sync zex/raw, " + std::string(n) + " streams").c_str(),
            std::string("BM_LaunchSync_Zex/") + n, std::string("BM_LaunchSync_Raw/") + n);
    ratio("launch+sync C API/C++ (target <= 1.10x)", "BM_LaunchSync_C", "BM_LaunchSync_Zex/1");
    ratio("launch call alone C API/C++", "BM_LaunchOnly_C", "BM_LaunchOnly_Zex/1");
    for (const char* n : {"1", "100", "1000"})
      ratio(("launch call alone zex/raw, " + std::string(n) + " streams").c_str(),
            std::string("BM_LaunchOnly_Zex/") + n, std::string("BM_LaunchOnly_Raw/") + n);
    for (const char* n : {"1", "100", "1000"})
      ratio(("32 launches+sync zex/raw, " + std::string(n) + " streams").c_str(),
            std::string("BM_Batch32_Zex/") + n, std::string("BM_Batch32_Raw/") + n);
    std::printf("\nQueued launches (%d per synchronize), time per launch and zex/raw (throughput = raw/zex):\n", kQueued);
    for (const char* n : {"1", "100", "1000"}) {
      const double z = rep.median(std::string("BM_Queued_Zex/") + n), r = rep.median(std::string("BM_Queued_Raw/") + n);
      const double zf = rep.fastest(std::string("BM_Queued_Zex/") + n), rf = rep.fastest(std::string("BM_Queued_Raw/") + n);
      if (z > 0 && r > 0)
        std::printf("  %5s streams: zex %7.3f us, raw %7.3f us per launch: median %.3fx (throughput %.2f), fastest %.3fx\n", n,
                    z / 1e3 / kQueued, r / 1e3 / kQueued, z / r, r / z, zf / rf);
    }
    for (const char* g : {"1", "16"})
      for (const char* n : {"1", "100", "1000"}) {
        const std::string zn = std::string("BM_Queued64_Zex/") + n + "/" + g, rn = std::string("BM_Queued64_Raw/") + n + "/" + g;
        const double z = rep.median(zn), r = rep.median(rn), zf = rep.fastest(zn), rf = rep.fastest(rn);
        if (z > 0 && r > 0)
          std::printf("  %s x64 items, %5s streams: zex %7.3f us, raw %7.3f us per launch: median %.3fx (target <= 1.11x), fastest %.3fx\n",
                      g, n, z / 1e3 / kQueued, r / 1e3 / kQueued, z / r, zf / rf);
      }
    {
      const double z = rep.median("BM_QueuedSaxpy_Zex"), r = rep.median("BM_QueuedSaxpy_Raw");
      const double zf = rep.fastest("BM_QueuedSaxpy_Zex"), rf = rep.fastest("BM_QueuedSaxpy_Raw");
      if (z > 0 && r > 0)
        std::printf("  saxpy x%d: zex %7.3f us, raw %7.3f us per launch: median %.3fx (throughput %.2f), fastest %.3fx\n",
                    kSaxpyLaunches, z / 1e3 / kSaxpyLaunches, r / 1e3 / kSaxpyLaunches, z / r, r / z, zf / rf);
    }
    ratio("launch+sync zex, 100 vs 1 streams", "BM_LaunchSync_Zex/100", "BM_LaunchSync_Zex/1");
    ratio("launch+sync zex, 1000 vs 1 streams", "BM_LaunchSync_Zex/1000", "BM_LaunchSync_Zex/1");
    ratio("launch+sync raw, 1000 vs 1 streams", "BM_LaunchSync_Raw/1000", "BM_LaunchSync_Raw/1");
    ratio("launch call alone zex, 100 vs 1 streams", "BM_LaunchOnly_Zex/100", "BM_LaunchOnly_Zex/1");
    ratio("launch call alone zex, 1000 vs 1 streams", "BM_LaunchOnly_Zex/1000", "BM_LaunchOnly_Zex/1");
    ratio("32 launches+sync zex, 1000 vs 1 streams", "BM_Batch32_Zex/1000", "BM_Batch32_Zex/1");
    ratio("32 launches+sync raw, 1000 vs 1 streams", "BM_Batch32_Raw/1000", "BM_Batch32_Raw/1");
    std::printf("\nHost thread CPU time, ratios of medians (this run):\n");
    for (const char* n : {"1", "100", "1000"})
      cpu_ratio(("launch+sync zex/raw, " + std::string(n) + " streams").c_str(),
                std::string("BM_LaunchSync_Zex/") + n, std::string("BM_LaunchSync_Raw/") + n);
    for (const char* n : {"1", "100", "1000"})
      cpu_ratio(("32 launches+sync zex/raw, " + std::string(n) + " streams").c_str(),
                std::string("BM_Batch32_Zex/") + n, std::string("BM_Batch32_Raw/") + n);
    cpu_ratio("launch+sync zex, 1000 vs 1 streams", "BM_LaunchSync_Zex/1000", "BM_LaunchSync_Zex/1");
    cpu_ratio("launch+sync raw, 1000 vs 1 streams", "BM_LaunchSync_Raw/1000", "BM_LaunchSync_Raw/1");
    cpu_ratio("32 launches+sync zex, 1000 vs 1 streams", "BM_Batch32_Zex/1000", "BM_Batch32_Zex/1");
    cpu_ratio("32 launches+sync raw, 1000 vs 1 streams", "BM_Batch32_Raw/1000", "BM_Batch32_Raw/1");
    // How much of the growth with stream count is zex's: the driver's own growth (raw) divided out.
    std::printf("\nGrowth with streams that zex adds (zex N/1 divided by raw N/1):\n");
    for (const char* n : {"100", "1000"}) {
      for (const char* b : {"BM_LaunchSync_", "BM_LaunchOnly_", "BM_Batch32_"}) {
        for (bool cpu : {false, true}) {
          if (cpu && std::string(b) == "BM_LaunchOnly_") continue;
          const double z = rep.median(std::string(b) + "Zex/" + n, cpu) / rep.median(std::string(b) + "Zex/1", cpu);
          const double r = rep.median(std::string(b) + "Raw/" + n, cpu) / rep.median(std::string(b) + "Raw/1", cpu);
          if (z > 0 && r > 0)
            std::printf("  %-46s %.3fx\n", (std::string(b + 3) + n + " streams, " + (cpu ? "cpu" : "real")).c_str(),
                        z / r);
        }
      }
    }
    // Medians of a busy machine's repetitions still move by tens of percent; the fastest repetition of
    // each is the cost with the least interference.
    auto min_ratio = [&](const char* what, const std::string& a, const std::string& b, bool cpu) {
      const double x = rep.fastest(a, cpu), y = rep.fastest(b, cpu);
      if (x > 0 && y > 0) std::printf("  %-46s %9.3f us / %9.3f us = %.3fx\n", what, x / 1e3, y / 1e3, x / y);
    };
    std::printf("\nFastest repetitions, zex/raw (real time; cpu = host thread CPU time):\n");
    for (const char* n : {"1", "100", "1000"}) {
      const std::string sn(n);
      min_ratio(("launch+sync, " + sn + " streams").c_str(), "BM_LaunchSync_Zex/" + sn, "BM_LaunchSync_Raw/" + sn, false);
      min_ratio(("launch+sync, " + sn + " streams, cpu").c_str(), "BM_LaunchSync_Zex/" + sn, "BM_LaunchSync_Raw/" + sn, true);
      min_ratio(("launch call alone, " + sn + " streams").c_str(), "BM_LaunchOnly_Zex/" + sn, "BM_LaunchOnly_Raw/" + sn, false);
      min_ratio(("32 launches+sync, " + sn + " streams").c_str(), "BM_Batch32_Zex/" + sn, "BM_Batch32_Raw/" + sn, false);
      min_ratio(("32 launches+sync, " + sn + " streams, cpu").c_str(), "BM_Batch32_Zex/" + sn, "BM_Batch32_Raw/" + sn, true);
    }
    std::printf("\nFastest repetitions, zex at 1000 (and 100) streams vs 1 stream:\n");
    for (const char* b : {"BM_LaunchSync_Zex/", "BM_LaunchOnly_Zex/", "BM_Batch32_Zex/"})
      for (const char* n : {"100", "1000"})
        min_ratio((std::string(b + 3) + n + " vs 1").c_str(), std::string(b) + n, std::string(b) + "1", false);
    min_ratio("no-throw synchronize() / raw host wait", "BM_SyncOnly_Zex", "BM_SyncOnly_Raw", false);

    std::printf("\nSynchronize (real time of the call alone, kernel already finished):\n");
    ratio("no-throw synchronize() / raw host wait", "BM_SyncOnly_Zex", "BM_SyncOnly_Raw");
    for (const char* l : {"0", "1", "2"})
      ratio(("sync->catch level " + std::string(l) + " / no-throw synchronize()").c_str(),
            std::string("BM_SyncToCatch_Zex/") + l, "BM_SyncOnly_Zex");
    benchmark::Shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zex_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
