// A lost device (docs/cpu-driver.md, "A lost device"): ZEX_CPU_LOSE_DEVICE=<n> makes the n-th kernel
// launch that runs lose zex-cpu's device, as a GPU page fault or hang loses a real one (and with
// ZEX_CPU_FAIL_LOSES_DEVICE=1, so does an injected ZE_RESULT_ERROR_DEVICE_LOST). From then on:
//   - the lost launch and every launch after it run nothing (they complete at once, so no wait lasts
//     longer than it would have without the loss);
//   - waits still wait for the work before them (so that the application may then free what it used),
//     and a wait that ends, in progress at the loss or later, answers ZE_RESULT_ERROR_DEVICE_LOST;
//   - every other call that works on the device answers ZE_RESULT_ERROR_DEVICE_LOST (gated in
//     ZEXCPU_FAULT_POINT); destroys, frees, unmaps, IPC closes, property queries, host signals and resets of events, and
//     Sysman keep working, so that a runtime can clean up and find out why (as on NEO);
//   - Sysman reports it: zesDeviceGetState a reset reason (wedged), a RAS counter, and the Info Log
//     extension one CPER record describing the fault (unless ZEX_CPU_NO_INFO_LOG=1).
// The loss is process-wide and permanent, like a GPU hang's on NEO: the device stays lost for every
// context until the process ends.
#pragma once

#include <level_zero/ze_api.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace zexcpu {

namespace loss_detail {
extern std::atomic<bool> g_lost;
}

/// True once the device is lost. One relaxed load: it is read by every entry point.
inline bool device_lost() noexcept { return loss_detail::g_lost.load(std::memory_order_relaxed); }

/// Called by a launch as it is about to run: counts it, and returns true if the device is lost (by
/// this launch, the n-th of ZEX_CPU_LOSE_DEVICE, or before), in which case the launch runs nothing.
bool launch_runs_nothing(const char* kernel_name);

/// Reads ZEX_CPU_LOSE_DEVICE and ZES_ENABLE_SYSMAN; called by zeInit. Returns false (with the
/// message printed) for a malformed ZEX_CPU_LOSE_DEVICE, which makes zeInit fail.
bool read_loss_config();

/// The result of every wait and poll: `r`, except that a wait that ended (SUCCESS) on a lost device
/// answers ZE_RESULT_ERROR_DEVICE_LOST. A wait that has not ended (NOT_READY) says so: the work before it
/// is still draining (it runs nothing, so not for long), and the application must not free what it uses.
inline ze_result_t after_wait(ze_result_t r) noexcept {
  return r == ZE_RESULT_SUCCESS && loss_detail::g_lost.load(std::memory_order_acquire) ? ZE_RESULT_ERROR_DEVICE_LOST
                                                                                       : r;
}

/// Whether `entry` answers ZE_RESULT_ERROR_DEVICE_LOST once the device is lost.
bool gated_while_lost(const char* entry) noexcept;

/// One Info Log record (a CPER record) and the driver timestamp it carries.
struct LossRecord {
  std::vector<uint8_t> bytes;
  uint64_t timestamp_ns = 0;
};
/// A copy of the records logged so far (at most one: the loss).
std::vector<LossRecord> loss_records();

/// RAS counters of zex-cpu's two error sets ([0] correctable, [1] uncorrectable), per category
/// (zes_ras_error_cat_t, 7 of them).
void ras_counters(uint64_t out[2][7]);
/// Sets the counters of set `set` (0 correctable, 1 uncorrectable) to zero (zesRasGetState's clear).
void clear_ras_counters(int set);
/// Whether Sysman calls are answered (ZES_ENABLE_SYSMAN=1 at zeInit), as NEO requires.
bool sysman_enabled() noexcept;
/// Whether the Info Log extension is offered (not ZEX_CPU_NO_INFO_LOG=1).
bool info_log_offered() noexcept;

/// The Info Logs extension's function `name` (info_log.cpp), unless ZEX_CPU_NO_INFO_LOG=1.
bool info_log_function(const char* name, void** out);

/// The CPER record zex-cpu logs for a loss: a header, one section descriptor, one processor-generic
/// section (UEFI 2.10 appendix N), `utc_seconds` as its timestamp. Exposed for the driver's tests.
std::vector<uint8_t> make_loss_record(const std::string& brand, uint64_t record_id, int64_t utc_seconds);

/// An injected failure fired (ZEX_CPU_FAIL): with ZEX_CPU_FAIL_LOSES_DEVICE=1, an injected
/// ZE_RESULT_ERROR_DEVICE_LOST loses the device as ZEX_CPU_LOSE_DEVICE does (the record names the call).
/// Without it an injected failure changes nothing, as ZEX_CPU_FAIL promises.
void injected_failure(const char* entry, uint64_t call, ze_result_t r);
/// ZEX_CPU_FAIL_LOSES_DEVICE=1: an injected DEVICE_LOST lost the device, and the call that got it then
/// behaves as any call on a lost device.
bool injected_loss_mode() noexcept;

}  // namespace zexcpu
