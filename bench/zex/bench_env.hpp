// What zex_bench's files share: the objects every benchmark uses (zex's context, module and the
// shared flag; the C API's), the raw Level Zero baseline's parts, the idle streams that make up "N live
// streams", the shapes' constants and the benchmark functions (registered in zex_bench.cpp, in the order
// that alternates raw and zex).
#pragma once

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

namespace zex_bench {

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
extern Env* g_env;  // never destroyed: see tests/runtime/zex_fixture.hpp
extern const char* g_spv_path;  // the kernels' SPIR-V (zex_bench's first argument)

// Idle streams that exist during a benchmark: they hold slots (and on a GPU, slabs that every launch
// makes resident), which must not slow the measured stream down.
std::vector<zex::Stream>& idle_streams();
void set_live_streams(int n);

zex::LaunchConfig one_item(int level = 1);

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
std::vector<std::unique_ptr<IdleRaw>>& idle_raw();
void set_live_raw(int n);
void set_live_zex(int n);

// --- the same through the C API: libzex.so's own context, module and stream ----------------------------

struct CEnv {
  zex_context_t ctx = nullptr;
  zex_device_t dev = nullptr;
  zex_module_t mod = nullptr;
  uint32_t* flag = nullptr;
};
extern CEnv* g_c;

void c_check(zex_result_t r, const char* what);

std::vector<char> read_file(const char* path);

// The shapes: a batch of 32 launches; 2000 queued launches per synchronize; 200 queued saxpy launches.
constexpr int kBatch = 32;
constexpr int kQueued = 2000;
constexpr int kSaxpyLaunches = 200;
/// graph_bench.cpp: executions of a 10-launch graph per synchronize.
constexpr int kGraphExecutions = 1000;

// launch_bench.cpp and queued_bench.cpp.
void BM_LaunchSync_Raw(benchmark::State& state);
void BM_LaunchSync_Zex(benchmark::State& state);
void BM_LaunchSync_C(benchmark::State& state);
void BM_LaunchOnly_C(benchmark::State& state);
void BM_LaunchOnly_Raw(benchmark::State& state);
void BM_LaunchOnly_Zex(benchmark::State& state);
void BM_Batch32_Raw(benchmark::State& state);
void BM_Batch32_Zex(benchmark::State& state);
void BM_Queued_Raw(benchmark::State& state);
void BM_Queued_Zex(benchmark::State& state);
void BM_Queued64_Raw(benchmark::State& state);
void BM_Queued64_Zex(benchmark::State& state);
void BM_QueuedBusy_Raw(benchmark::State& state);
void BM_QueuedBusy_Zex(benchmark::State& state);
void BM_QueuedSaxpy_Raw(benchmark::State& state);
void BM_QueuedSaxpy_Zex(benchmark::State& state);
void BM_QueuedSaxpy_ZexStop(benchmark::State& state);
void BM_Stop_Plain(benchmark::State& state);
void BM_Stop_Stop(benchmark::State& state);
void BM_SyncOnly_Raw(benchmark::State& state);
void BM_SyncOnly_Zex(benchmark::State& state);
void BM_SyncToCatch_Zex(benchmark::State& state);
void BM_Graph_Raw(benchmark::State& state);
void BM_Graph_Zex(benchmark::State& state);
void BM_Graph_ZexDebugInfo(benchmark::State& state);
void BM_Graph_RawFloor(benchmark::State& state);
void BM_GraphUpdate(benchmark::State& state);
void BM_ContextAdopt(benchmark::State& state);

}  // namespace zex_bench
