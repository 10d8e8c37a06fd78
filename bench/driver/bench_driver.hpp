// What bench_driver's files share: Level Zero through the loader (Ze, its kernels, an immediate list)
// and PoCL through OpenCL directly (Cl, the baseline), each opened once per process.
#pragma once

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

namespace zex_bench_driver {

using Clock = std::chrono::steady_clock;

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

inline double seconds(Clock::time_point t0, Clock::time_point t1) { return std::chrono::duration<double>(t1 - t0).count(); }

// ---------------------------------------------------------------------------------------------------------
// Level Zero (zex-cpu through the loader)

struct Ze {
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  ze_context_handle_t context = nullptr;
  std::string error;  // empty when usable
};

inline Ze& ze() {
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

inline ZeKernels& ze_kernels() {
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

inline Cl& cl() {
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

}  // namespace zex_bench_driver
