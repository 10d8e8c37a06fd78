// zex::ZeError and zex::check(): every failing Level Zero call surfaces as one exception type that
// names the result, the call, and what to do about it.
#pragma once

#include <zex/detail/result_names.hpp>

#include <level_zero/ze_api.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

namespace zex {

/// The spelling of a ze_result_t as in ze_api.h (e.g. "ZE_RESULT_ERROR_DEVICE_LOST"), or nullptr
/// for a value the table does not know. Never throws.
inline const char* result_name(ze_result_t r) noexcept { return detail::result_name_or_null(r); }

namespace detail {

inline std::string result_spelling(ze_result_t r) {
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%x", static_cast<unsigned>(r));
  const char* name = result_name(r);
  return name ? std::string(name) + " (" + hex + ")" : std::string("ze_result_t ") + hex;
}

// What a reader of the message should do next; specific where the result says enough.
inline const char* result_advice(ze_result_t r) noexcept {
  switch (r) {
    case ZE_RESULT_ERROR_UNINITIALIZED:
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

}  // namespace detail

/// A Level Zero call failed. result() is the ze_result_t, call() the Level Zero function that
/// returned it; what() names both, adds what zex was doing and what to do, and for a failed module
/// build contains the driver's build log (also in build_log()).
class ZeError : public std::runtime_error {
 public:
  /// @param detail   what zex was doing (may be empty)
  /// @param advice   what to do; empty picks a default from the result
  /// @param build_log the driver's build log, when the call built a module
  ZeError(ze_result_t result, std::string call, const std::string& detail = {},
          const std::string& advice = {}, std::string build_log = {})
      : std::runtime_error(format(result, call, detail, advice, build_log)),
        result_(result),
        call_(std::move(call)),
        build_log_(std::move(build_log)) {}

  /// The ze_result_t the call returned.
  ze_result_t result() const noexcept { return result_; }
  /// The Level Zero function that failed, e.g. "zeModuleCreate".
  const std::string& call() const noexcept { return call_; }
  /// The driver's build log when the failing call built a module, else empty.
  const std::string& build_log() const noexcept { return build_log_; }

 private:
  static std::string format(ze_result_t result, const std::string& call, const std::string& detail,
                            const std::string& advice, const std::string& build_log) {
    std::string m = "zex: " + call + " failed with " + detail::result_spelling(result);
    if (!detail.empty()) m += " while " + detail;
    m += ".";
    m += build_log.empty() ? " " : "\nBuild log:\n" + build_log + (build_log.back() == '\n' ? "" : "\n");
    m += advice.empty() ? std::string(detail::result_advice(result)) : advice;
    return m;
  }

  ze_result_t result_;
  std::string call_;
  std::string build_log_;
};

namespace detail {
// Out of line and cold so that check() inlines to a compare and a branch: nothing is formatted
// unless the call failed.
[[noreturn]] __attribute__((noinline, cold)) inline void throw_ze_error(ze_result_t r, const char* call,
                                                                         const char* what) {
  throw ZeError(r, call, what ? what : "");
}
}  // namespace detail

/// Throws ZeError(r, call) unless r is ZE_RESULT_SUCCESS. `what` (optional) says what zex was
/// doing, for the message. Builds no string on success.
/// @throws ZeError
inline void check(ze_result_t r, const char* call, const char* what = nullptr) {
  if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) detail::throw_ze_error(r, call, what);
}

}  // namespace zex
