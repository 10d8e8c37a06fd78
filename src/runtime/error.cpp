// The cold half of zex::ZeError: its message. Out of line because every includer of <zex/zex.hpp>
// would otherwise compile the formatting and the advice table, which only a failing call needs.
#include <zex/error.hpp>

#include "common/result_names.hpp"

#include <pthread.h>

#include <cstdio>
#include <string>

namespace zex {
namespace detail {

namespace {
// Set in a child of fork() (docs/integration.md, "fork()"): there a driver's UNINITIALIZED most likely
// means the fork, not a missing zeInit, and the advice says so. Registered when libzex is loaded.
bool g_forked_child = false;
void on_fork_child() { g_forked_child = true; }
const int g_fork_handler = pthread_atfork(nullptr, nullptr, on_fork_child);
}  // namespace

std::string result_spelling(ze_result_t r) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%x", static_cast<unsigned>(r));
  const char* name = result_name(r);
  return name ? std::string(name) + " (" + hex + ")" : std::string("ze_result_t ") + hex;
}

// What a reader of the message should do next; specific where the result says enough.
const char* result_advice(ze_result_t r) noexcept {
  switch (r) {
    case ZE_RESULT_ERROR_UNINITIALIZED:
      (void)g_fork_handler;
      if (g_forked_child)
        return "This process is a child of fork(): the Level Zero objects it inherited, and the driver's "
               "threads they need, belong to the parent process. A forked child may only exec a program "
               "or exit; its destructors release nothing (docs/integration.md, \"fork()\").";
      return "Level Zero is not initialized: create a zex::Context first (it calls zeInit), or call "
             "zeInit yourself before adopting your handles.";
    case ZE_RESULT_ERROR_DEVICE_LOST:
    case ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET:
      return "The device was lost or reset: destroy this context's objects and create a new "
             "zex::Context.";
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
      return "The host is out of memory: free memory or use fewer streams and modules.";
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
      return "The device is out of memory: free device allocations or use fewer streams and modules.";
    case ZE_RESULT_ERROR_MODULE_BUILD_FAILURE:
    case ZE_RESULT_ERROR_MODULE_LINK_FAILURE:
      return "The driver could not build the module: read the build log above.";
    case ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE:
      return "An argument's C++ type does not have the size of the kernel's parameter: pass the exact "
             "type (e.g. uint32_t for uint, a pointer for __global T*, zex::local(bytes) for __local).";
    case ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION:
      return "The work-group size is not valid for this kernel or device: use a smaller "
             "LaunchConfig::group_size.";
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
      return "The driver does not support this call: use a newer Level Zero driver.";
    default:
      return "Check the arguments; rerun with ZE_ENABLE_VALIDATION_LAYER=1 "
             "ZE_ENABLE_PARAMETER_VALIDATION=1 to have the Level Zero loader say what it rejects.";
  }
}

std::string format_ze_error(ze_result_t result, const std::string& call, const std::string& detail,
                            const std::string& advice, const std::string& build_log, const DeviceReport* report) {
  std::string m = "zex: " + call + " failed with " + result_spelling(result);
  if (!detail.empty()) m += " while " + detail;
  m += ".";
  m += build_log.empty() ? " " : "\nBuild log:\n" + build_log + (build_log.back() == '\n' ? "" : "\n");
  m += advice.empty() ? std::string(result_advice(result)) : advice;
  if (report) m += "\n" + report->summary();
  return m;
}

void throw_ze_error(ze_result_t r, const char* call, const char* what) {
  throw ZeError(r, call, what ? what : "");
}

}  // namespace detail

const char* result_name(ze_result_t r) noexcept { return detail::result_name_or_null(r); }

}  // namespace zex
