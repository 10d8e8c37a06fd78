// Shared by every file of zex-cpu. Owned by the driver core (driver_device.cpp & co); the module/kernel
// side (module_kernel.cpp, compiler.cpp) relies on what is declared here, so change it only additively.
#pragma once

#include <CL/cl.h>
#include <level_zero/ze_api.h>
#include <level_zero/ze_ddi.h>

#include <string>

namespace zexcpu {

/// The OpenCL (PoCL CPU) device that zex-cpu runs on, created once by the first successful zeInit.
struct Platform {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  std::string device_name;  // the ze device name; contains "zex-cpu"
};
/// Valid only after a successful zeInit (every entry point after zeInit may rely on it).
Platform& platform();

/// Fault injection (ZEX_CPU_FAIL=<entry>:<n>:<result>[,...]): true when this call of `entry` must fail,
/// with the result to return in *result. Thread-safe; counts calls per entry point.
bool should_fail(const char* entry, ze_result_t* result);

/// The name of a ze_result_t ("ZE_RESULT_ERROR_INVALID_ARGUMENT"), or nullptr if unknown.
const char* result_name(ze_result_t r);

/// The ze_result_t called `name` (the inverse of result_name); false if no result has that name.
bool result_from_name(const char* name, ze_result_t* r);

/// nullptr when ZEX_CPU_FAIL is unset or well-formed; otherwise the message already printed on stderr
/// (zeInit then fails with ZE_RESULT_ERROR_INVALID_ARGUMENT rather than ignoring the variable).
const char* fault_injection_error();

}  // namespace zexcpu

/// First statement of every implemented entry point: an injected failure returns before any change.
#define ZEXCPU_FAULT_POINT(entry)                                   \
  do {                                                              \
    ze_result_t zexcpu_injected_;                                   \
    if (::zexcpu::should_fail(entry, &zexcpu_injected_)) return zexcpu_injected_; \
  } while (0)
