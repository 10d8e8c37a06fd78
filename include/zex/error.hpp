// zex::ZeError and zex::check(): every failing Level Zero call surfaces as one exception type that
// names the result, the call, and what to do about it.
#pragma once

#include <zex/detail/result_names.hpp>

#include <level_zero/ze_api.h>

#include <stdexcept>
#include <string>
#include <utility>

namespace zex {

/// The spelling of a ze_result_t as in ze_api.h (e.g. "ZE_RESULT_ERROR_DEVICE_LOST"), or nullptr
/// for a value the table does not know. Never throws.
inline const char* result_name(ze_result_t r) noexcept { return detail::result_name_or_null(r); }

namespace detail {

/// "ZE_RESULT_ERROR_DEVICE_LOST (0x70000001)", or "ze_result_t 0x..." for a value the table does
/// not know.
std::string result_spelling(ze_result_t r);

/// What a reader of a ZeError's message should do next; specific where the result says enough.
const char* result_advice(ze_result_t r) noexcept;
/// The whole message of a ZeError (compiled: src/error.cpp).
std::string format_ze_error(ze_result_t result, const std::string& call, const std::string& detail,
                            const std::string& advice, const std::string& build_log);

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
      : std::runtime_error(detail::format_ze_error(result, call, detail, advice, build_log)),
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
  ze_result_t result_;
  std::string call_;
  std::string build_log_;
};

namespace detail {
// Out of line (src/error.cpp) so that check() inlines to a compare and a branch: nothing is formatted
// unless the call failed.
[[noreturn]] void throw_ze_error(ze_result_t r, const char* call, const char* what);
}  // namespace detail

/// Throws ZeError(r, call) unless r is ZE_RESULT_SUCCESS. `what` (optional) says what zex was
/// doing, for the message. Builds no string on success.
/// @throws ZeError
inline void check(ze_result_t r, const char* call, const char* what = nullptr) {
  if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) detail::throw_ze_error(r, call, what);
}

}  // namespace zex
