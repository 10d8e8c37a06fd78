// What zex keeps per device of a context so that a device loss can be explained (docs/design.md,
// "When the device is lost"): the RAS counters at context creation and the driver's Info Log, opened
// then. Built by ContextState (once per context, best effort: nothing here ever fails a context);
// read only by collect_device_report(), i.e. only after a call answered a device loss. Included by
// src/ only.
#pragma once

#include "common/zes_newer.hpp"
#include <zex/device_report.hpp>

#include <level_zero/ze_api.h>
#include <level_zero/zes_api.h>

#include <array>
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
  /// The last report, if it was made less than a second before `now` (errors come in bursts).
  std::shared_ptr<const DeviceReport> recent(std::chrono::steady_clock::time_point now) const;
  void remember(std::shared_ptr<const DeviceReport> r, std::chrono::steady_clock::time_point at);

 private:
  struct RasSet {
    zes_ras_handle_t handle = nullptr;
    std::string type;  // "correctable" / "uncorrectable"
    uint64_t at_creation[ZES_MAX_RAS_ERROR_CATEGORY_COUNT] = {};
    ze_result_t baseline = ZE_RESULT_SUCCESS;  // the snapshot's zesRasGetState
  };
  struct LogInstance {
    zes_newer::zes_info_log_instance_handle_t handle = nullptr;
    bool peek = false;  // a shared buffer: read without consuming (other consumers' records stay)
    bool cper = true;   // the log's format is CPER
  };
  bool own_record(const uint8_t* uuid) const;
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
  std::vector<std::array<uint8_t, 16>> uuids_;  // the device's and its sub-devices', to pick its records
  bool sysman_ = false;                   // ZES_ENABLE_SYSMAN=1 at creation: Sysman calls are made
  std::shared_ptr<const DeviceReport> last_;  // recent()
  std::chrono::steady_clock::time_point last_at_{};
};

/// Registers a live context's watches for collect_device_report() (src/runtime/device_report.cpp).
class ContextState;
void register_context(ContextState* s);
void unregister_context(ContextState* s) noexcept;

}  // namespace detail
}  // namespace zex
