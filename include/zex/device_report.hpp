// zex::DeviceReport: what zex found out about a device that was lost (docs/integration.md, "When the
// device is lost"). A ZeError whose call answered ZE_RESULT_ERROR_DEVICE_LOST or
// ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET carries one (ZeError::device_report()): the device's state and
// reset reasons (Sysman zesDeviceGetState), the RAS error counters that changed since the zex::Context
// was created, and the error records the driver's Info Log holds from after that (CPER records decoded).
// Collected best effort, bounded in time and size, only on those two results.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace zex {

/// One error record from the driver's Info Log.
struct DeviceRecord {
  /// "CPER" for a UEFI Common Platform Error Record; otherwise the driver's format, in words.
  std::string format;
  /// The record as the driver gave it, at most DeviceReport::kMaxRecordBytes (`truncated` then).
  std::vector<uint8_t> bytes;
  /// The driver's timestamp of the record (its metadata; the unit is the driver's), 0 if none.
  uint64_t timestamp = 0;
  /// Decoded, one line: for CPER the revision, severity and each section's type, severity and error
  /// ("CPER 1.1, fatal, 1 section: processor generic (fatal): micro-architectural error ..."); a
  /// malformed record says what is wrong with it. Empty for a format zex does not decode.
  std::string summary;
  bool truncated = false;
};

/// One RAS error counter (Sysman zesRasGetState) that changed since the context was created.
struct RasCounter {
  std::string set;       ///< "correctable" or "uncorrectable" (the RAS error set's type)
  std::string category;  ///< "reset", "programming errors", "driver errors", "compute errors", ...
  uint64_t at_creation = 0;  ///< the counter when the zex::Context was created
  uint64_t now = 0;          ///< the counter when the report was collected
};

/// What zex collected about a lost device. Every part is best effort: what could not be read says
/// why in `notes` (and `state` / `info_log` say so in words), so a reader never mistakes "not
/// collected" for "nothing happened".
struct DeviceReport {
  static constexpr size_t kMaxRecords = 16;         ///< records kept (the newest are dropped)
  static constexpr size_t kMaxRecordBytes = 65536;  ///< bytes kept per record

  /// The device's name (ze_device_properties_t::name).
  std::string device;
  /// The device state in words, e.g. "reset needed (wedged: the hardware is hung); repair: not
  /// supported", "no reset needed", "unavailable: zesDeviceGetState answered ..." or "not read: Sysman
  /// is not enabled (set ZES_ENABLE_SYSMAN=1 before zeInit; ...)".
  std::string state;
  /// The raw reset reasons (zes_reset_reason_flags_t) and repair status (zes_repair_status_t);
  /// valid when state_read.
  uint32_t reset_reasons = 0;
  uint32_t repair_status = 0;
  bool state_read = false;
  /// The RAS counters that changed since the context was created.
  std::vector<RasCounter> counters;
  /// The Info Log records that arrived since the context was created, oldest first.
  std::vector<DeviceRecord> records;
  /// Empty when the Info Log was read; otherwise why there are no records, e.g. "info log: not offered
  /// by the driver".
  std::string info_log;
  /// What could not be collected, and anything cut short (a record truncated, a time bound hit).
  std::vector<std::string> notes;

  /// A few lines for ZeError::what(): the state, each changed counter, each record's summary.
  std::string summary() const;
};

}  // namespace zex
