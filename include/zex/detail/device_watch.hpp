// What zex keeps per device of a context so that a device loss can be explained (docs/design.md,
// "When the device is lost"): the RAS counters at context creation and the driver's Info Log, opened
// then. Built by ContextState (once per context, best effort: nothing here ever fails a context);
// read only by collect_device_report(), i.e. only after a call answered a device loss. Included by
// src/ only.
#pragma once

#include <zex/detail/zes_newer.hpp>
#include <zex/device_report.hpp>

#include <level_zero/ze_api.h>
#include <level_zero/zes_api.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zex {
namespace detail {

class DeviceWatch {
 public:
  DeviceWatch(ze_driver_handle_t driver, ze_device_handle_t device, std::string name) noexcept;
  DeviceWatch(const DeviceWatch&) = delete;
  DeviceWatch& operator=(const DeviceWatch&) = delete;
  ~DeviceWatch();

  ze_device_handle_t device() const noexcept { return device_; }
  /// Collects the report: the state, the counters that changed, the Info Log records. Bounded by
  /// `deadline`: parts not reached by then are named in the notes. Never throws but std::bad_alloc.
  std::shared_ptr<DeviceReport> collect(std::chrono::steady_clock::time_point deadline);

 private:
  struct RasSet {
    zes_ras_handle_t handle = nullptr;
    std::string type;  // "correctable" / "uncorrectable"
    uint64_t at_creation[ZES_MAX_RAS_ERROR_CATEGORY_COUNT] = {};
  };
  struct LogInstance {
    zes_newer::zes_info_log_instance_handle_t handle = nullptr;
    bool peek = false;  // a shared buffer: read without consuming (other consumers' records stay)
  };
  void open_info_log();
  void close_info_log() noexcept;
  void read_info_log(DeviceReport& r, std::chrono::steady_clock::time_point deadline);

  ze_driver_handle_t driver_;
  ze_device_handle_t device_;
  std::string name_;
  ze_result_t ras_result_ = ZE_RESULT_SUCCESS;  // the snapshot's failure, if any
  std::vector<RasSet> ras_;
  zes_newer::InfoLogApi log_;             // null functions: not offered
  std::string log_absent_;                // why there is no Info Log (empty: opened)
  std::vector<LogInstance> instances_;
  std::vector<DeviceRecord> kept_;        // records read by an earlier collect (reads consume them)
  uint8_t uuid_[16] = {};                 // the device's, to pick its records from a driver's log
  bool has_uuid_ = false;
};

/// Registers a live context's watches for collect_device_report() (src/device_report.cpp).
class ContextState;
void register_context(ContextState* s);
void unregister_context(ContextState* s) noexcept;

}  // namespace detail
}  // namespace zex
