// The lost-device state of zex-cpu (device_loss.hpp): ZEX_CPU_LOSE_DEVICE, the gate every entry point
// passes, the RAS counters and the CPER record that the Sysman entry points (sysman.cpp) report.
#include "device_loss.hpp"

#include "common.hpp"
#include "objects.hpp"

#include "common/cper.hpp"

#include <level_zero/zes_api.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

namespace zexcpu {
namespace loss_detail {
std::atomic<bool> g_lost{false};
}  // namespace loss_detail

namespace {

uint64_t g_lose_at = 0;                  // ZEX_CPU_LOSE_DEVICE; 0: never
std::atomic<uint64_t> g_launches{0};     // launches that ran (or would have)
bool g_sysman = false;
bool g_info_log = true;
bool g_injected_loses = false;  // ZEX_CPU_FAIL_LOSES_DEVICE
std::mutex g_mu;                          // the two below
std::vector<LossRecord> g_records;
uint64_t g_ras[2][7] = {};

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

void put(std::vector<uint8_t>& b, size_t off, uint64_t v, size_t len) {
  for (size_t i = 0; i < len; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
}

void put_guid(std::vector<uint8_t>& b, size_t off, const zex::detail::cper::Guid& g) {
  put(b, off, g.d1, 4);
  put(b, off + 4, g.d2, 2);
  put(b, off + 6, g.d3, 2);
  std::memcpy(b.data() + off + 8, g.d4, 8);
}

uint8_t to_bcd(int v) { return static_cast<uint8_t>(((v / 10) << 4) | (v % 10)); }

// zex-cpu's creator id in the records it writes (random, fixed).
constexpr zex::detail::cper::Guid kZexCpuCreator{0x7a657863, 0x7075, 0x4c6f, {0x9b, 0x2e, 0x51, 0x0c, 0x43, 0x50, 0x45, 0x52}};

// `what` becomes the record's brand string; `id` its record id.
void lose(const std::string& what, uint64_t id) {
  bool expected = false;
  if (!loss_detail::g_lost.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) return;
  std::lock_guard<std::mutex> lock(g_mu);
  ++g_ras[1][ZES_RAS_ERROR_CAT_RESET];  // the engine reset a hang needs; uncorrectable
  try {
    LossRecord r;
    r.bytes = make_loss_record(what, id, static_cast<int64_t>(std::time(nullptr)));
    r.timestamp_ns = now_ns();
    g_records.push_back(std::move(r));
  } catch (const std::bad_alloc&) {
    // The loss itself is recorded (the flag, the counter); only the record is missing.
  }
}

}  // namespace

bool read_loss_config() {
  g_sysman = env_on("ZES_ENABLE_SYSMAN");
  g_info_log = !env_on("ZEX_CPU_NO_INFO_LOG");
  g_injected_loses = env_on("ZEX_CPU_FAIL_LOSES_DEVICE");
  const char* v = std::getenv("ZEX_CPU_LOSE_DEVICE");
  if (v == nullptr || *v == '\0') return true;
  char* end = nullptr;
  errno = 0;
  unsigned long long n = v[0] == '-' ? 0 : std::strtoull(v, &end, 10);
  if (v[0] == '-' || errno != 0 || end == nullptr || *end != '\0' || n == 0) {
    std::fprintf(stderr,
                 "zex-cpu: ZEX_CPU_LOSE_DEVICE='%s': expected a positive integer n (the n-th kernel launch "
                 "that runs loses the device)\n",
                 v);
    return false;
  }
  g_lose_at = n;
  return true;
}

bool launch_runs_nothing(const char* kernel_name) {
  if (loss_detail::g_lost.load(std::memory_order_acquire)) return true;
  if (g_lose_at == 0) return false;
  const uint64_t n = g_launches.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n != g_lose_at) return device_lost();
  lose("zex-cpu: launch " + std::to_string(n) + " of kernel '" + (kernel_name ? kernel_name : "") + "'", n);
  return true;
}

void injected_failure(const char* entry, uint64_t call, ze_result_t r) {
  if (r != ZE_RESULT_ERROR_DEVICE_LOST || !g_injected_loses) return;
  try {
    lose(std::string("zex-cpu: ZEX_CPU_FAIL ") + entry + ":" + std::to_string(call), call);
  } catch (const std::bad_alloc&) {
  }
}

bool gated_while_lost(const char* entry) noexcept {
  // What still works on a lost device: Sysman (to find out why), destroys, frees, unmaps and IPC closes
  // (to clean up),
  // zeInit and property queries (no device work), creating a context (not tied to a device), and the
  // host's own side of events (signalling and resetting from the host: a command that waits for a host
  // signal must still be releasable, or a wait behind it would hang where it would not without the loss).
  // zeDeviceGetStatus, zeContextGetStatus and zeDeviceGetGlobalTimestamps (it reads the device; NEO
  // answers DEVICE_LOST there too) are gated.
  if (std::strncmp(entry, "zes", 3) == 0) return false;
  if (std::strstr(entry, "Destroy") != nullptr || std::strncmp(entry, "zeMemFree", 9) == 0) return false;
  if (std::strcmp(entry, "zeMemCloseIpcHandle") == 0 || std::strcmp(entry, "zeVirtualMemUnmap") == 0 ||
      std::strcmp(entry, "zeVirtualMemFree") == 0)
    return false;
  if (std::strcmp(entry, "zeDeviceGetStatus") == 0 || std::strcmp(entry, "zeContextGetStatus") == 0 ||
      std::strcmp(entry, "zeDeviceGetGlobalTimestamps") == 0)
    return true;
  if (std::strstr(entry, "Get") != nullptr) return false;
  if (std::strncmp(entry, "zeInit", 6) == 0 || std::strncmp(entry, "zeContextCreate", 15) == 0) return false;
  if (std::strcmp(entry, "zeEventHostSignal") == 0 || std::strcmp(entry, "zeEventHostReset") == 0) return false;
  // Waits and polls are not gated: they wait for the work before them to end (it runs nothing), then
  // answer DEVICE_LOST (after_wait), so that an application may free what that work used.
  static const char* const kWaits[] = {"zeEventHostSynchronize", "zeEventQueryStatus",
                                       "zeFenceHostSynchronize", "zeFenceQueryStatus",
                                       "zeCommandListHostSynchronize", "zeCommandQueueSynchronize"};
  for (const char* w : kWaits)
    if (std::strcmp(entry, w) == 0) return false;
  return true;
}

std::vector<LossRecord> loss_records() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_records;
}

void ras_counters(uint64_t out[2][7]) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::memcpy(out, g_ras, sizeof g_ras);
}

void clear_ras_counters(int set) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto& c : g_ras[set]) c = 0;
}

bool sysman_enabled() noexcept { return g_sysman; }
bool injected_loss_mode() noexcept { return g_injected_loses; }
bool info_log_offered() noexcept { return g_info_log; }

std::vector<uint8_t> make_loss_record(const std::string& brand, uint64_t record_id, int64_t utc_seconds) {
  namespace c = zex::detail::cper;
  const size_t section = c::kHeaderSize + c::kDescriptorSize;
  std::vector<uint8_t> b(section + c::kProcessorGenericSize, 0);
  // Record header (N.2.1).
  put(b, 0, c::kSignature, 4);
  put(b, c::kOffRevision, 0x0101, 2);
  put(b, c::kOffSignatureEnd, c::kSignatureEnd, 4);
  put(b, c::kOffSectionCount, 1, 2);
  put(b, c::kOffSeverity, c::kFatal, 4);
  put(b, c::kOffValidation, 1u << 1, 4);  // the timestamp is valid
  put(b, c::kOffRecordLength, b.size(), 4);
  std::time_t t = static_cast<std::time_t>(utc_seconds);
  std::tm tm{};
  if (gmtime_r(&t, &tm) != nullptr) {
    const int year = tm.tm_year + 1900;
    const uint8_t ts[8] = {to_bcd(tm.tm_sec), to_bcd(tm.tm_min), to_bcd(tm.tm_hour), 0,
                           to_bcd(tm.tm_mday), to_bcd(tm.tm_mon + 1), to_bcd(year % 100), to_bcd(year / 100)};
    std::memcpy(b.data() + c::kOffTimestamp, ts, 8);
  }
  put_guid(b, c::kOffCreatorId, kZexCpuCreator);
  put(b, c::kOffRecordId, record_id, 8);
  // Section descriptor (N.2.2).
  const size_t d = c::kHeaderSize;
  put(b, d + c::kOffSectionOffset, section, 4);
  put(b, d + c::kOffSectionLength, c::kProcessorGenericSize, 4);
  put(b, d + c::kOffSectionRevision, 0x0100, 2);
  b[d + 10] = 1u << 1;  // the FRU text is valid
  put(b, d + 12, 1, 4);  // flags: primary section
  put_guid(b, d + c::kOffSectionType, c::kProcessorGeneric);
  put(b, d + c::kOffSectionSeverity, c::kFatal, 4);
  std::memcpy(b.data() + d + c::kOffFruText, "zex-cpu", 7);
  // Processor generic error section (N.2.4.1): a micro-architectural error during instruction
  // execution, what was lost (the launch and kernel, or the injected call) in the brand string (bit 7).
  put(b, section + c::kOffProcValidation, (1u << 2) | (1u << 3) | (1u << 7), 8);
  b[section + c::kOffProcErrorType] = 0x08;
  b[section + c::kOffProcOperation] = 3;
  std::memcpy(b.data() + section + 24, brand.data(), std::min<size_t>(brand.size(), 127));
  return b;
}

}  // namespace zexcpu
