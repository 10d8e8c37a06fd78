// bench_driver: a 2^24-element vector add through zex-cpu against PoCL directly, and module build time with
// PoCL's kernel cache cold and warm.
#include "bench_driver.hpp"

namespace zex_bench_driver {
namespace {

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
}  // namespace zex_bench_driver
