// zex-cpu driver benchmark: launch latency and rate on an immediate list, a 2^24-element vector add through
// zex-cpu against the same kernel through PoCL's OpenCL API directly (same process, same PoCL device, same
// run), module build time with PoCL's kernel cache cold and warm, and device against host allocations.
//
// Level Zero is reached only through the system loader (ZE_ENABLE_ALT_DRIVERS=<libze_zex_cpu.so>, set by the
// run-bench-driver target). PoCL is reached through the OpenCL ICD loader, platform picked by name.
#include <CL/cl.h>
#include <benchmark/benchmark.h>
#include <level_zero/ze_api.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

double seconds(Clock::time_point t0, Clock::time_point t1) { return std::chrono::duration<double>(t1 - t0).count(); }

// ---------------------------------------------------------------------------------------------------------
// Level Zero (zex-cpu through the loader)

struct Ze {
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  ze_context_handle_t context = nullptr;
  std::string error;  // empty when usable
};

Ze& ze() {
  static Ze z = [] {
    Ze s;
    ze_result_t r = zeInit(0);
    if (r != ZE_RESULT_SUCCESS) {  // the loader crashes in zeDriverGet after a failed zeInit
      s.error = "zeInit failed (is ZE_ENABLE_ALT_DRIVERS set to libze_zex_cpu.so?)";
      return s;
    }
    uint32_t n = 1;
    if (zeDriverGet(&n, &s.driver) != ZE_RESULT_SUCCESS || n == 0) s.error = "no Level Zero driver";
    n = 1;
    if (s.error.empty() && (zeDeviceGet(s.driver, &n, &s.device) != ZE_RESULT_SUCCESS || n == 0))
      s.error = "no Level Zero device";
    ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
    if (s.error.empty() && zeContextCreate(s.driver, &cd, &s.context) != ZE_RESULT_SUCCESS)
      s.error = "zeContextCreate failed";
    if (s.error.empty()) {
      ze_device_properties_t p = {};
      p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
      zeDeviceGetProperties(s.device, &p);
      if (!std::strstr(p.name, "zex-cpu")) s.error = std::string("the device is not zex-cpu: ") + p.name;
    }
    return s;
  }();
  return z;
}

/// A module with kernels, built once per process (a cache entry may be warm from an earlier run).
struct ZeKernels {
  ze_module_handle_t module = nullptr;
  ze_kernel_handle_t empty = nullptr, vadd = nullptr;
  std::string error;
};

ZeKernels& ze_kernels() {
  static ZeKernels k = [] {
    ZeKernels s;
    Ze& z = ze();
    if (!z.error.empty()) {
      s.error = z.error;
      return s;
    }
    std::vector<uint8_t> spv = read_file(std::string(ZEX_BENCH_SPV_DIR) + "/vadd.spv");
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(),
                           spv.data(), nullptr, nullptr};
    if (spv.empty() || zeModuleCreate(z.context, z.device, &md, &s.module, nullptr) != ZE_RESULT_SUCCESS) {
      s.error = "zeModuleCreate(vadd.spv) failed";
      return s;
    }
    ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "empty"};
    if (zeKernelCreate(s.module, &kd, &s.empty) != ZE_RESULT_SUCCESS) s.error = "zeKernelCreate(empty) failed";
    kd.pKernelName = "vadd";
    if (zeKernelCreate(s.module, &kd, &s.vadd) != ZE_RESULT_SUCCESS) s.error = "zeKernelCreate(vadd) failed";
    return s;
  }();
  return k;
}

struct ZeImmediate {
  ze_command_list_handle_t list = nullptr;
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t done = nullptr;
  bool ok = false;
  ZeImmediate() {
    Ze& z = ze();
    if (!z.error.empty()) return;  // nothing may be called after a failed zeInit
    ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                                  ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
    ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST,
                          ZE_EVENT_SCOPE_FLAG_HOST};
    ok = zeCommandListCreateImmediate(z.context, z.device, &qd, &list) == ZE_RESULT_SUCCESS &&
         zeEventPoolCreate(z.context, &pd, 1, &z.device, &pool) == ZE_RESULT_SUCCESS &&
         zeEventCreate(pool, &ed, &done) == ZE_RESULT_SUCCESS;
  }
  ~ZeImmediate() {
    if (done) zeEventDestroy(done);
    if (pool) zeEventPoolDestroy(pool);
    if (list) zeCommandListDestroy(list);
  }
  /// Waits for everything appended so far.
  bool drain() {
    return zeCommandListAppendBarrier(list, done, 0, nullptr) == ZE_RESULT_SUCCESS &&
           zeEventHostSynchronize(done, UINT64_MAX) == ZE_RESULT_SUCCESS &&
           zeEventHostReset(done) == ZE_RESULT_SUCCESS;
  }
};

// ---------------------------------------------------------------------------------------------------------
// PoCL through OpenCL directly (the baseline)

struct Cl {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  cl_program program = nullptr;
  cl_kernel empty = nullptr, vadd = nullptr;
  std::string error;
};

Cl& cl() {
  static Cl c = [] {
    Cl s;
    cl_uint n = 0;
    clGetPlatformIDs(0, nullptr, &n);
    std::vector<cl_platform_id> ps(n);
    if (n) clGetPlatformIDs(n, ps.data(), nullptr);
    for (cl_platform_id p : ps) {
      char name[256] = {};
      clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof name, name, nullptr);
      if (std::strstr(name, "Portable Computing Language")) s.platform = p;
    }
    if (!s.platform) {
      s.error = "no PoCL OpenCL platform";
      return s;
    }
    cl_int err = clGetDeviceIDs(s.platform, CL_DEVICE_TYPE_CPU, 1, &s.device, nullptr);
    if (err != CL_SUCCESS) {
      s.error = "no PoCL CPU device";
      return s;
    }
    s.context = clCreateContext(nullptr, 1, &s.device, nullptr, nullptr, &err);
    s.queue = clCreateCommandQueueWithProperties(s.context, s.device, nullptr, &err);
    std::vector<uint8_t> src = read_file(ZEX_BENCH_CL_SOURCE);
    const char* text = reinterpret_cast<const char*>(src.data());
    size_t len = src.size();
    s.program = clCreateProgramWithSource(s.context, 1, &text, &len, &err);
    // Default options: OpenCL optimises by default, as zex_add_spirv's -O2 does for the SPIR-V side.
    if (err != CL_SUCCESS || clBuildProgram(s.program, 1, &s.device, nullptr, nullptr, nullptr) != CL_SUCCESS) {
      s.error = "PoCL build of vadd.cl failed";
      return s;
    }
    s.empty = clCreateKernel(s.program, "empty", &err);
    s.vadd = clCreateKernel(s.program, "vadd", &err);
    if (err != CL_SUCCESS) s.error = "clCreateKernel failed";
    return s;
  }();
  return c;
}

// ---------------------------------------------------------------------------------------------------------
// Allocation: a device allocation is a memfd mapping (exportable), a host allocation a PoCL SVM block, the
// baseline of the same run. Arg: bytes; each iteration allocates, writes one byte per page, frees.

/// A device (or host) allocation of `size` bytes with one byte written per page; nullptr if it failed.
void* alloc_and_touch(Ze& z, size_t size, bool device) {
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void* p = nullptr;
  ze_result_t r = device ? zeMemAllocDevice(z.context, &dd, size, 64, z.device, &p)
                         : zeMemAllocHost(z.context, &hd, size, 64, &p);
  if (r != ZE_RESULT_SUCCESS) return nullptr;
  for (size_t off = 0; off < size; off += 4096) static_cast<volatile char*>(p)[off] = 1;
  return p;
}

void alloc_touch_free(benchmark::State& state, bool device) {
  Ze& z = ze();
  if (!z.error.empty()) return state.SkipWithError(z.error.c_str());
  const size_t size = static_cast<size_t>(state.range(0));
  for (auto _ : state) {
    void* p = alloc_and_touch(z, size, device);
    if (p == nullptr) return state.SkipWithError("allocation failed");
    zeMemFree(z.context, p);
  }
  state.SetItemsProcessed(state.iterations());
}
void BM_AllocTouchFree_Device(benchmark::State& s) { alloc_touch_free(s, true); }
void BM_AllocTouchFree_Host(benchmark::State& s) { alloc_touch_free(s, false); }
BENCHMARK(BM_AllocTouchFree_Device)->Arg(256)->Arg(64 << 10)->Arg(16 << 20)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AllocTouchFree_Host)->Arg(256)->Arg(64 << 10)->Arg(16 << 20)->Unit(benchmark::kMicrosecond);

/// The cold shape: every allocation is new memory (all stay live until the end, so nothing is reused),
/// touched once per page; only the allocation and the touches are timed.
void alloc_touch_cold(benchmark::State& state, bool device) {
  Ze& z = ze();
  if (!z.error.empty()) return state.SkipWithError(z.error.c_str());
  const size_t size = static_cast<size_t>(state.range(0));
  std::vector<void*> live;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    void* p = alloc_and_touch(z, size, device);
    if (p == nullptr) return state.SkipWithError("allocation failed");
    state.SetIterationTime(seconds(t0, Clock::now()));
    live.push_back(p);
  }
  for (void* p : live) zeMemFree(z.context, p);
}
void BM_AllocTouchCold_Device(benchmark::State& s) { alloc_touch_cold(s, true); }
void BM_AllocTouchCold_Host(benchmark::State& s) { alloc_touch_cold(s, false); }
BENCHMARK(BM_AllocTouchCold_Device)->Arg(16 << 20)->Iterations(16)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_AllocTouchCold_Host)->Arg(16 << 20)->Iterations(16)->UseManualTime()->Unit(benchmark::kMicrosecond);

// ---------------------------------------------------------------------------------------------------------
// Launch latency and rate

/// One empty-kernel launch on an asynchronous immediate list, waited for through its signal event: the
/// round trip an application sees for a tiny kernel.
void BM_ZeEmptyLaunchLatency(benchmark::State& state) {
  ZeKernels& k = ze_kernels();
  if (!k.error.empty()) return state.SkipWithError(k.error.c_str());
  ZeImmediate imm;
  if (!imm.ok) return state.SkipWithError("immediate list setup failed");
  zeKernelSetGroupSize(k.empty, 1, 1, 1);
  ze_group_count_t gc = {1, 1, 1};
  for (auto _ : state) {
    if (zeCommandListAppendLaunchKernel(imm.list, k.empty, &gc, imm.done, 0, nullptr) != ZE_RESULT_SUCCESS ||
        zeEventHostSynchronize(imm.done, UINT64_MAX) != ZE_RESULT_SUCCESS)
      return state.SkipWithError("launch failed");
    zeEventHostReset(imm.done);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ZeEmptyLaunchLatency)->Unit(benchmark::kMicrosecond)->UseRealTime();

/// Baseline: the same empty kernel, clEnqueueNDRangeKernel + clFinish on PoCL.
void BM_ClEmptyLaunchLatency(benchmark::State& state) {
  Cl& c = cl();
  if (!c.error.empty()) return state.SkipWithError(c.error.c_str());
  size_t g = 1, l = 1;
  for (auto _ : state) {
    if (clEnqueueNDRangeKernel(c.queue, c.empty, 1, nullptr, &g, &l, 0, nullptr, nullptr) != CL_SUCCESS ||
        clFinish(c.queue) != CL_SUCCESS)
      return state.SkipWithError("clEnqueueNDRangeKernel failed");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ClEmptyLaunchLatency)->Unit(benchmark::kMicrosecond)->UseRealTime();

/// Back-to-back empty-kernel launches on one asynchronous immediate list, waited for once per batch:
/// items_per_second is launches per second.
void BM_ZeEmptyLaunchRate(benchmark::State& state) {
  ZeKernels& k = ze_kernels();
  if (!k.error.empty()) return state.SkipWithError(k.error.c_str());
  ZeImmediate imm;
  if (!imm.ok) return state.SkipWithError("immediate list setup failed");
  const int64_t batch = state.range(0);
  zeKernelSetGroupSize(k.empty, 1, 1, 1);
  ze_group_count_t gc = {1, 1, 1};
  for (auto _ : state) {
    for (int64_t i = 0; i < batch; ++i)
      if (zeCommandListAppendLaunchKernel(imm.list, k.empty, &gc, nullptr, 0, nullptr) != ZE_RESULT_SUCCESS)
        return state.SkipWithError("launch failed");
    if (!imm.drain()) return state.SkipWithError("drain failed");
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_ZeEmptyLaunchRate)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();

/// Baseline: back-to-back clEnqueueNDRangeKernel of the empty kernel on PoCL, one clFinish per batch.
void BM_ClEmptyLaunchRate(benchmark::State& state) {
  Cl& c = cl();
  if (!c.error.empty()) return state.SkipWithError(c.error.c_str());
  const int64_t batch = state.range(0);
  size_t g = 1, l = 1;
  for (auto _ : state) {
    for (int64_t i = 0; i < batch; ++i)
      if (clEnqueueNDRangeKernel(c.queue, c.empty, 1, nullptr, &g, &l, 0, nullptr, nullptr) != CL_SUCCESS)
        return state.SkipWithError("clEnqueueNDRangeKernel failed");
    clFinish(c.queue);
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_ClEmptyLaunchRate)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();

// ---------------------------------------------------------------------------------------------------------
// Pipelining of signalled launches, and single-launch latency against PoCL, each interleaved with its baseline
// in one benchmark so that both sides see the same machine state. One benchmark iteration is one sample of each
// side (order alternating); the counters are per-launch medians and bests over the samples and their ratios.

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
double best(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

/// kPipelineLaunches empty launches on one asynchronous immediate list. Signalled: every launch signals its own
/// event, the host waits on the last. Baseline: no event but on the last launch, which the host waits on.
/// Counters: µs per launch (median, best) of each side and signalled / unsignalled (target <= 1.2).
constexpr int kPipelineLaunches = 2000;

void BM_SignalledPipeline2000(benchmark::State& state) {
  ZeKernels& k = ze_kernels();
  if (!k.error.empty()) return state.SkipWithError(k.error.c_str());
  Ze& z = ze();
  ZeImmediate imm;
  if (!imm.ok) return state.SkipWithError("immediate list setup failed");
  ze_event_pool_handle_t pool = nullptr;
  ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                             kPipelineLaunches};
  if (zeEventPoolCreate(z.context, &pd, 1, &z.device, &pool) != ZE_RESULT_SUCCESS)
    return state.SkipWithError("zeEventPoolCreate failed");
  std::vector<ze_event_handle_t> ev(kPipelineLaunches);
  for (uint32_t i = 0; i < uint32_t(kPipelineLaunches); ++i) {
    ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, i, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
    if (zeEventCreate(pool, &ed, &ev[i]) != ZE_RESULT_SUCCESS) return state.SkipWithError("zeEventCreate failed");
  }
  zeKernelSetGroupSize(k.empty, 1, 1, 1);
  ze_group_count_t gc = {1, 1, 1};
  // One timed sample: all launches appended, then one wait on the last launch's event.
  auto sample = [&](bool signalled) -> double {
    auto t0 = Clock::now();
    for (int i = 0; i < kPipelineLaunches; ++i) {
      bool last = i == kPipelineLaunches - 1;
      ze_event_handle_t e = signalled || last ? ev[i] : nullptr;
      if (zeCommandListAppendLaunchKernel(imm.list, k.empty, &gc, e, 0, nullptr) != ZE_RESULT_SUCCESS) return -1;
    }
    if (zeEventHostSynchronize(ev[kPipelineLaunches - 1], UINT64_MAX) != ZE_RESULT_SUCCESS) return -1;
    auto t1 = Clock::now();
    // Untimed: every event that was appended must be signalled by now (they retire in order), then reset.
    for (int i = 0; i < kPipelineLaunches; ++i) {
      bool used = signalled || i == kPipelineLaunches - 1;
      if (used && zeEventQueryStatus(ev[i]) != ZE_RESULT_SUCCESS) return -1;
      if (used) zeEventHostReset(ev[i]);
    }
    return 1e6 * seconds(t0, t1) / kPipelineLaunches;
  };
  if (sample(true) < 0 || sample(false) < 0) return state.SkipWithError("warm-up failed");  // PoCL compiles
  std::vector<double> sig, unsig, pair;
  bool sig_first = true;
  for (auto _ : state) {
    for (int side = 0; side < 2; ++side) {
      bool s = (side == 0) == sig_first;
      double us = sample(s);
      if (us < 0) return state.SkipWithError("launch, wait or event check failed");
      (s ? sig : unsig).push_back(us);
    }
    pair.push_back(sig.back() / unsig.back());
    sig_first = !sig_first;
  }
  for (ze_event_handle_t e : ev) zeEventDestroy(e);
  zeEventPoolDestroy(pool);
  state.counters["signalled_us_median"] = median(sig);
  state.counters["unsignalled_us_median"] = median(unsig);
  state.counters["signalled_us_best"] = best(sig);
  state.counters["unsignalled_us_best"] = best(unsig);
  state.counters["ratio_median"] = median(sig) / median(unsig);
  state.counters["ratio_best"] = best(sig) / best(unsig);
  state.counters["ratio_pair_median"] = median(pair);  // of each iteration's two neighbouring samples
}
BENCHMARK(BM_SignalledPipeline2000)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(41);

/// One empty launch with a signal event + zeEventHostSynchronize + zeEventHostReset on zex-cpu, against
/// clEnqueueNDRangeKernel + clFinish of the same kernel on PoCL directly. A sample is kLatencyBlock
/// round trips of one side. Counters: µs per round trip (median, best) and zex-cpu / PoCL (target <= 1.5).
constexpr int kLatencyBlock = 200;

void BM_EmptyLaunchLatency_ZexVsPocl(benchmark::State& state) {
  ZeKernels& k = ze_kernels();
  if (!k.error.empty()) return state.SkipWithError(k.error.c_str());
  Cl& c = cl();
  if (!c.error.empty()) return state.SkipWithError(c.error.c_str());
  ZeImmediate imm;
  if (!imm.ok) return state.SkipWithError("immediate list setup failed");
  zeKernelSetGroupSize(k.empty, 1, 1, 1);
  ze_group_count_t gc = {1, 1, 1};
  size_t g = 1, l = 1;
  auto sample = [&](bool zex) -> double {
    auto t0 = Clock::now();
    for (int i = 0; i < kLatencyBlock; ++i) {
      if (zex) {
        if (zeCommandListAppendLaunchKernel(imm.list, k.empty, &gc, imm.done, 0, nullptr) != ZE_RESULT_SUCCESS ||
            zeEventHostSynchronize(imm.done, UINT64_MAX) != ZE_RESULT_SUCCESS ||
            zeEventHostReset(imm.done) != ZE_RESULT_SUCCESS)
          return -1;
      } else if (clEnqueueNDRangeKernel(c.queue, c.empty, 1, nullptr, &g, &l, 0, nullptr, nullptr) != CL_SUCCESS ||
                 clFinish(c.queue) != CL_SUCCESS) {
        return -1;
      }
    }
    return 1e6 * seconds(t0, Clock::now()) / kLatencyBlock;
  };
  if (sample(true) < 0 || sample(false) < 0) return state.SkipWithError("warm-up failed");
  std::vector<double> zs, cs, pair;
  bool zex_first = true;
  for (auto _ : state) {
    for (int side = 0; side < 2; ++side) {
      bool zex = (side == 0) == zex_first;
      double us = sample(zex);
      if (us < 0) return state.SkipWithError(zex ? "zex-cpu launch failed" : "PoCL launch failed");
      (zex ? zs : cs).push_back(us);
    }
    pair.push_back(zs.back() / cs.back());
    zex_first = !zex_first;
  }
  state.counters["zex_us_median"] = median(zs);
  state.counters["pocl_us_median"] = median(cs);
  state.counters["zex_us_best"] = best(zs);
  state.counters["pocl_us_best"] = best(cs);
  state.counters["ratio_median"] = median(zs) / median(cs);
  state.counters["ratio_best"] = best(zs) / best(cs);
  state.counters["ratio_pair_median"] = median(pair);
}
BENCHMARK(BM_EmptyLaunchLatency_ZexVsPocl)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(41);

// ---------------------------------------------------------------------------------------------------------
// 2^24-element vector add: zex-cpu vs PoCL directly, interleaved in one benchmark so both see the same
// machine state; the ratio is reported as a counter.

constexpr size_t kVaddN = size_t{1} << 24;
constexpr size_t kVaddLocal = 256;

struct ZeVadd {
  void *a = nullptr, *b = nullptr, *c = nullptr;
  ZeImmediate imm;
  bool ok = false;
  ZeVadd() {
    Ze& z = ze();
    ZeKernels& k = ze_kernels();
    if (!k.error.empty() || !imm.ok) return;
    ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    const size_t bytes = kVaddN * sizeof(float);
    if (zeMemAllocDevice(z.context, &dd, bytes, 64, z.device, &a) != ZE_RESULT_SUCCESS ||
        zeMemAllocDevice(z.context, &dd, bytes, 64, z.device, &b) != ZE_RESULT_SUCCESS ||
        zeMemAllocDevice(z.context, &dd, bytes, 64, z.device, &c) != ZE_RESULT_SUCCESS)
      return;
    float one = 1.0f, two = 2.0f;
    zeCommandListAppendMemoryFill(imm.list, a, &one, sizeof one, bytes, nullptr, 0, nullptr);
    zeCommandListAppendMemoryFill(imm.list, b, &two, sizeof two, bytes, nullptr, 0, nullptr);
    ok = imm.drain() && zeKernelSetArgumentValue(k.vadd, 0, sizeof a, &a) == ZE_RESULT_SUCCESS &&
         zeKernelSetArgumentValue(k.vadd, 1, sizeof b, &b) == ZE_RESULT_SUCCESS &&
         zeKernelSetArgumentValue(k.vadd, 2, sizeof c, &c) == ZE_RESULT_SUCCESS &&
         zeKernelSetGroupSize(k.vadd, kVaddLocal, 1, 1) == ZE_RESULT_SUCCESS && run() && check();
  }
  ~ZeVadd() {
    Ze& z = ze();
    for (void* p : {a, b, c})
      if (p) zeMemFree(z.context, p);
  }
  bool run() {
    ze_group_count_t gc = {uint32_t(kVaddN / kVaddLocal), 1, 1};
    return zeCommandListAppendLaunchKernel(imm.list, ze_kernels().vadd, &gc, imm.done, 0, nullptr) ==
               ZE_RESULT_SUCCESS &&
           zeEventHostSynchronize(imm.done, UINT64_MAX) == ZE_RESULT_SUCCESS &&
           zeEventHostReset(imm.done) == ZE_RESULT_SUCCESS;
  }
  bool check() {
    float out[2] = {};
    zeCommandListAppendMemoryCopy(imm.list, &out[0], c, sizeof(float), nullptr, 0, nullptr);
    zeCommandListAppendMemoryCopy(imm.list, &out[1], static_cast<float*>(c) + kVaddN - 1, sizeof(float), nullptr, 0,
                                  nullptr);
    return imm.drain() && out[0] == 3.0f && out[1] == 3.0f;
  }
};

struct ClVadd {
  cl_mem a = nullptr, b = nullptr, c = nullptr;
  bool ok = false;
  ClVadd() {
    Cl& s = cl();
    if (!s.error.empty()) return;
    const size_t bytes = kVaddN * sizeof(float);
    cl_int err = CL_SUCCESS;
    a = clCreateBuffer(s.context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    b = clCreateBuffer(s.context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    c = clCreateBuffer(s.context, CL_MEM_READ_WRITE, bytes, nullptr, &err);
    if (err != CL_SUCCESS) return;
    float one = 1.0f, two = 2.0f;
    clEnqueueFillBuffer(s.queue, a, &one, sizeof one, 0, bytes, 0, nullptr, nullptr);
    clEnqueueFillBuffer(s.queue, b, &two, sizeof two, 0, bytes, 0, nullptr, nullptr);
    clFinish(s.queue);
    ok = clSetKernelArg(s.vadd, 0, sizeof a, &a) == CL_SUCCESS && clSetKernelArg(s.vadd, 1, sizeof b, &b) == CL_SUCCESS &&
         clSetKernelArg(s.vadd, 2, sizeof c, &c) == CL_SUCCESS && run() && check();
  }
  ~ClVadd() {
    for (cl_mem m : {a, b, c})
      if (m) clReleaseMemObject(m);
  }
  bool run() {
    Cl& s = cl();
    size_t g = kVaddN, l = kVaddLocal;
    return clEnqueueNDRangeKernel(s.queue, s.vadd, 1, nullptr, &g, &l, 0, nullptr, nullptr) == CL_SUCCESS &&
           clFinish(s.queue) == CL_SUCCESS;
  }
  bool check() {
    float out[2] = {};
    Cl& s = cl();
    clEnqueueReadBuffer(s.queue, c, CL_TRUE, 0, sizeof(float), &out[0], 0, nullptr, nullptr);
    clEnqueueReadBuffer(s.queue, c, CL_TRUE, (kVaddN - 1) * sizeof(float), sizeof(float), &out[1], 0, nullptr, nullptr);
    return out[0] == 3.0f && out[1] == 3.0f;
  }
};

/// Each iteration runs the vector add once through zex-cpu and once through PoCL directly (order alternating);
/// the iteration time is their sum. Counters: each side's GB/s (3 arrays of 2^24 floats moved per add) and
/// zex_over_pocl = PoCL time / zex-cpu time (>= 1 means zex-cpu is at least as fast).
void BM_VectorAdd16M_ZexVsPocl(benchmark::State& state) {
  if (!ze_kernels().error.empty()) return state.SkipWithError(ze_kernels().error.c_str());
  ZeVadd z;
  if (!z.ok) return state.SkipWithError("zex-cpu vector add setup or check failed");
  ClVadd c;
  if (!c.ok) return state.SkipWithError("PoCL vector add setup or check failed");
  double tz = 0, tc = 0;
  bool zex_first = true;
  for (auto _ : state) {
    for (int side = 0; side < 2; ++side) {
      bool zex = (side == 0) == zex_first;
      auto t0 = Clock::now();
      bool ok = zex ? z.run() : c.run();
      auto t1 = Clock::now();
      if (!ok) return state.SkipWithError(zex ? "zex-cpu launch failed" : "PoCL launch failed");
      (zex ? tz : tc) += seconds(t0, t1);
    }
    zex_first = !zex_first;
  }
  if (!z.check() || !c.check()) return state.SkipWithError("wrong vector add result");
  const double bytes = 3.0 * kVaddN * sizeof(float) * double(state.iterations());
  state.counters["zex_GBps"] = bytes / tz / 1e9;
  state.counters["pocl_GBps"] = bytes / tc / 1e9;
  state.counters["zex_ms"] = 1e3 * tz / double(state.iterations());
  state.counters["pocl_ms"] = 1e3 * tc / double(state.iterations());
  state.counters["zex_over_pocl"] = tc / tz;
}
BENCHMARK(BM_VectorAdd16M_ZexVsPocl)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(3.0);

// ---------------------------------------------------------------------------------------------------------
// Module build time, PoCL kernel cache cold and warm.
//
// Method: build_time.cl folds a specialization constant into its code, and zex-cpu applies constants before
// handing bitcode to PoCL, so the program PoCL compiles (and the key of its kernel cache) depends on the
// value. Cold: every iteration uses a value never used before (seeded from the clock and pid, so a cache
// directory left by an earlier run does not help). Warm: one value, built once before timing starts.
// "Build" is zeModuleCreate alone; "BuildAndLaunch" adds zeKernelCreate and a first one-group launch waited
// for, since PoCL may finish code generation lazily at the first launch.

struct BuildBench {
  std::vector<uint8_t> spv = read_file(std::string(ZEX_BENCH_SPV_DIR) + "/build_time.spv");
  static int next_cold_salt() {
    static int salt = int((uint32_t(std::time(nullptr)) * 2654435761u ^ uint32_t(getpid()) << 8) & 0x3fffffff);
    return ++salt;
  }
  /// Builds with the given salt; with `launch`, also creates "mix" and runs one group of it.
  bool build(int salt, bool launch, ZeImmediate* imm, void* buf) {
    Ze& z = ze();
    uint32_t id = 1;
    const void* val = &salt;
    ze_module_constants_t consts = {1, &id, &val};
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(),
                           spv.data(), nullptr, &consts};
    ze_module_handle_t m = nullptr;
    if (zeModuleCreate(z.context, z.device, &md, &m, nullptr) != ZE_RESULT_SUCCESS) return false;
    bool ok = true;
    if (launch) {
      ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "mix"};
      ze_kernel_handle_t k = nullptr;
      ze_group_count_t gc = {1, 1, 1};
      ok = zeKernelCreate(m, &kd, &k) == ZE_RESULT_SUCCESS &&
           zeKernelSetArgumentValue(k, 0, sizeof buf, &buf) == ZE_RESULT_SUCCESS &&
           zeKernelSetGroupSize(k, 64, 1, 1) == ZE_RESULT_SUCCESS &&
           zeCommandListAppendLaunchKernel(imm->list, k, &gc, nullptr, 0, nullptr) == ZE_RESULT_SUCCESS && imm->drain();
      if (k) zeKernelDestroy(k);
    }
    zeModuleDestroy(m);
    return ok;
  }
};

void module_build(benchmark::State& state, bool cold, bool launch) {
  Ze& z = ze();
  if (!z.error.empty()) return state.SkipWithError(z.error.c_str());
  BuildBench b;
  if (b.spv.empty()) return state.SkipWithError("build_time.spv missing");
  ZeImmediate imm;
  void* buf = nullptr;
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  if (!imm.ok || zeMemAllocDevice(z.context, &dd, 64 * sizeof(uint32_t), 64, z.device, &buf) != ZE_RESULT_SUCCESS)
    return state.SkipWithError("setup failed");
  const int warm_salt = 424242;
  if (!cold && !b.build(warm_salt, launch, &imm, buf)) return state.SkipWithError("warm-up build failed");
  for (auto _ : state) {
    int salt = cold ? BuildBench::next_cold_salt() : warm_salt;
    auto t0 = Clock::now();
    bool ok = b.build(salt, launch, &imm, buf);
    auto t1 = Clock::now();
    if (!ok) return state.SkipWithError("module build failed");
    state.SetIterationTime(seconds(t0, t1));
  }
  zeMemFree(z.context, buf);
}

void BM_ModuleBuild_ColdCache(benchmark::State& s) { module_build(s, true, false); }
void BM_ModuleBuild_WarmCache(benchmark::State& s) { module_build(s, false, false); }
void BM_ModuleBuildAndFirstLaunch_ColdCache(benchmark::State& s) { module_build(s, true, true); }
void BM_ModuleBuildAndFirstLaunch_WarmCache(benchmark::State& s) { module_build(s, false, true); }
BENCHMARK(BM_ModuleBuild_ColdCache)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(8);
BENCHMARK(BM_ModuleBuild_WarmCache)->Unit(benchmark::kMillisecond)->UseManualTime()->MinTime(1.0);
BENCHMARK(BM_ModuleBuildAndFirstLaunch_ColdCache)->Unit(benchmark::kMillisecond)->UseManualTime()->Iterations(8);
BENCHMARK(BM_ModuleBuildAndFirstLaunch_WarmCache)->Unit(benchmark::kMillisecond)->UseManualTime()->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
