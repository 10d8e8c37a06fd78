// zex::ZeError and zex::check(): every failing Level Zero call surfaces as one exception type that
// names the result, the call, and what to do about it.
#pragma once

#include <zex/device_report.hpp>

#include <level_zero/ze_api.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace zex {

/// The base of everything zex throws (docs/design.md, "Errors"): `catch (const zex::Error&)` catches
/// zex's errors and nothing else. A mixin, not a std::exception, so that each error keeps deriving
/// from the std type it always derived from (ZeError and KernelException from std::runtime_error,
/// InvalidArgument from std::invalid_argument, ...) and existing `catch (const std::...&)` clauses
/// still work; message() is what() of that std type.
class Error {
 public:
  virtual ~Error() = default;
  /// The message (the same text as what()).
  virtual const char* message() const noexcept = 0;

 protected:
  Error() = default;
  Error(const Error&) = default;
  Error& operator=(const Error&) = default;
};

/// Misuse that zex detects before touching anything: invalid SPIR-V, an unknown kernel name, a wrong
/// argument count or type, a bad debug level, a zero extent. Nothing was appended.
class InvalidArgument : public std::invalid_argument, public Error {
 public:
  explicit InvalidArgument(const std::string& what) : std::invalid_argument(what) {}
  explicit InvalidArgument(const char* what) : std::invalid_argument(what) {}
  const char* message() const noexcept override { return what(); }
};

/// A call that the object's state does not allow: a moved-from or empty object, two threads on one
/// stream at once. Nothing changed.
class LogicError : public std::logic_error, public Error {
 public:
  explicit LogicError(const std::string& what) : std::logic_error(what) {}
  explicit LogicError(const char* what) : std::logic_error(what) {}
  const char* message() const noexcept override { return what(); }
};

/// An index past the end (Context::device(i) with i >= device_count()). A std::out_of_range, as
/// before, so also a std::logic_error.
class OutOfRange : public std::out_of_range, public Error {
 public:
  explicit OutOfRange(const std::string& what) : std::out_of_range(what) {}
  const char* message() const noexcept override { return what(); }
};

/// zex was built without a part it needs (its device library). A std::runtime_error, as before.
class RuntimeError : public std::runtime_error, public Error {
 public:
  explicit RuntimeError(const std::string& what) : std::runtime_error(what) {}
  const char* message() const noexcept override { return what(); }
};

/// The spelling of a ze_result_t as in ze_api.h (e.g. "ZE_RESULT_ERROR_DEVICE_LOST"), or nullptr
/// for a value the table does not know. Never throws.
/// (Compiled, src/runtime/error.cpp: the table is shared with zex-cpu, common/result_names.hpp.)
const char* result_name(ze_result_t r) noexcept;

namespace detail {

/// "ZE_RESULT_ERROR_DEVICE_LOST (0x70000001)", or "ze_result_t 0x..." for a value the table does
/// not know.
std::string result_spelling(ze_result_t r);

/// What a reader of a ZeError's message should do next; specific where the result says enough.
const char* result_advice(ze_result_t r) noexcept;
/// The whole message of a ZeError (compiled: src/runtime/error.cpp); `report` (may be null) adds its summary.
std::string format_ze_error(ze_result_t result, const std::string& call, const std::string& detail,
                            const std::string& advice, const std::string& build_log,
                            const DeviceReport* report = nullptr);

/// True for the results after which zex collects a DeviceReport: ZE_RESULT_ERROR_DEVICE_LOST and
/// ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET.
constexpr bool is_device_loss(ze_result_t r) noexcept {
  return r == ZE_RESULT_ERROR_DEVICE_LOST || r == ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET;
}

/// Collects what the driver can say about the lost device (src/runtime/device_report.cpp, docs/design.md
/// "When the device is lost"): of the devices of every live zex::Context, the one zeDeviceGetStatus
/// says is lost (or the only one). Null when no context is live or nothing could be collected.
/// Never throws.
std::shared_ptr<const DeviceReport> collect_device_report() noexcept;

/// The report a ZeError with result `r` carries: collected only for a device loss.
inline std::shared_ptr<const DeviceReport> report_for(ze_result_t r) {
  return __builtin_expect(is_device_loss(r), 0) ? collect_device_report() : nullptr;
}

}  // namespace detail

/// A Level Zero call failed. result() is the ze_result_t, call() the Level Zero function that
/// returned it; what() names both, adds what zex was doing and what to do, and for a failed module
/// build contains the driver's build log (also in build_log()). When the device was lost
/// (ZE_RESULT_ERROR_DEVICE_LOST, ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET), device_report() says what
/// the driver knows of why, and what() ends with its summary.
class ZeError : public std::runtime_error, public Error {
 public:
  /// @param detail   what zex was doing (may be empty)
  /// @param advice   what to do; empty picks a default from the result
  /// @param build_log the driver's build log, when the call built a module
  /// For a device loss, collects the DeviceReport (detail::collect_device_report); for any other
  /// result nothing more happens.
  ZeError(ze_result_t result, std::string call, const std::string& detail = {},
          const std::string& advice = {}, std::string build_log = {})
      : ZeError(detail::report_for(result), result, std::move(call), detail, advice, std::move(build_log)) {}

  /// With a report already collected (null: none), e.g. by a runtime that collected it itself.
  ZeError(std::shared_ptr<const DeviceReport> report, ze_result_t result, std::string call,
          const std::string& detail = {}, const std::string& advice = {}, std::string build_log = {})
      : std::runtime_error(detail::format_ze_error(result, call, detail, advice, build_log, report.get())),
        result_(result),
        call_(std::move(call)),
        build_log_(std::move(build_log)),
        report_(std::move(report)) {}

  /// The ze_result_t the call returned.
  ze_result_t result() const noexcept { return result_; }
  /// The Level Zero function that failed, e.g. "zeModuleCreate".
  const std::string& call() const noexcept { return call_; }
  /// The driver's build log when the failing call built a module, else empty.
  const std::string& build_log() const noexcept { return build_log_; }
  /// What zex collected about the lost device, or null (not a device loss, or nothing collected).
  const DeviceReport* device_report() const noexcept { return report_.get(); }
  /// The same report, shared (it outlives the exception).
  const std::shared_ptr<const DeviceReport>& shared_device_report() const noexcept { return report_; }
  const char* message() const noexcept override { return what(); }

 private:
  ze_result_t result_;
  std::string call_;
  std::string build_log_;
  std::shared_ptr<const DeviceReport> report_;
};

namespace detail {
// Out of line (src/runtime/error.cpp) so that check() inlines to a compare and a branch: nothing is formatted
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
