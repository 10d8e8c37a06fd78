// zex-cpu driver benchmark: launch latency and rate on an immediate list, a 2^24-element vector add through
// zex-cpu against the same kernel through PoCL's OpenCL API directly (same process, same PoCL device, same
// run), module build time with PoCL's kernel cache cold and warm, and device against host allocations.
//
// Level Zero is reached only through the system loader (ZE_ENABLE_ALT_DRIVERS=<libze_zex_cpu.so>, set by the
// run-bench-driver target). PoCL is reached through the OpenCL ICD loader, platform picked by name.
//
// This file: device against host allocations, launch latency and rate. bench_pipeline.cpp: signalled
// launches pipelined and single-launch latency against PoCL; bench_vadd_build.cpp: the vector add and
// module build times; bench_driver.hpp: the Level Zero and OpenCL objects they share.
#include "bench_driver.hpp"

namespace zex_bench_driver {
namespace {

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

}  // namespace
}  // namespace zex_bench_driver

BENCHMARK_MAIN();
