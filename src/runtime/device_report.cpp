// The device report of a lost device (include/zex/device_report.hpp, docs/design.md "When the device
// is lost"): the per-device watches a context keeps, the registry of live contexts, and the collection
// that a ZeError for ZE_RESULT_ERROR_DEVICE_LOST / _REQUIRES_RESET runs. Nothing here runs on the
// success path of a launch or wait, or for any other error.
//
// Sysman handles: zex uses the core device handle as the Sysman device handle, which the
// specification allows when Sysman was enabled at zeInit (ZES_ENABLE_SYSMAN=1, which zex::Context()
// sets for the zeInit it makes unless the variable is set already); a current loader with zesInit
// accepts it too (NEO maps core handles by UUID). Without either, Sysman answers
// ZE_RESULT_ERROR_UNINITIALIZED and the report says how to enable it.
#include "runtime/context_state.hpp"
#include "common/cper.hpp"
#include "runtime/device_watch.hpp"
#include <zex/error.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <vector>

namespace zex {

namespace {

const char* ras_category_name(int c) {
  static const char* const names[ZES_MAX_RAS_ERROR_CATEGORY_COUNT] = {
      "reset", "programming errors", "driver errors", "compute errors", "non-compute errors", "cache errors",
      "display errors"};
  return c >= 0 && c < ZES_MAX_RAS_ERROR_CATEGORY_COUNT ? names[c] : "unknown category";
}

std::string sysman_advice(ze_result_t r) {
  if (r == ZE_RESULT_ERROR_UNINITIALIZED)
    return " (Sysman is not enabled: set ZES_ENABLE_SYSMAN=1 before zeInit, or call zesInit)";
  return "";
}

std::string answered(const char* call, ze_result_t r) {
  return std::string(call) + " answered " + detail::result_spelling(r) + sysman_advice(r);
}

}  // namespace

std::string DeviceReport::summary() const {
  std::string s = "Device report for " + (device.empty() ? std::string("the device") : "'" + device + "'") +
                  ": state: " + state + ".";
  for (const RasCounter& c : counters)
    s += "\n  RAS " + c.set + " " + c.category + ": " + std::to_string(c.at_creation) + " -> " +
         std::to_string(c.now) + " since the context was created.";
  for (const DeviceRecord& r : records)
    s += "\n  " + r.format + " record: " + (r.summary.empty() ? std::to_string(r.bytes.size()) + " bytes" : r.summary);
  if (!info_log.empty()) s += "\n  " + info_log + ".";
  for (const std::string& n : notes) s += "\n  (" + n + ")";
  return s;
}

namespace detail {

namespace {

std::mutex& registry_mutex() {
  static auto* m = new std::mutex;  // never destroyed: a ZeError may be built during static destruction
  return *m;
}
std::vector<ContextState*>& registry() {
  static auto* r = new std::vector<ContextState*>;
  return *r;
}

// The Info Log functions: the loader's exports where it has them (it routes them through its layers),
// else the driver's extension functions.
// *definite is false when the driver failed otherwise than by not knowing the name (worth asking again).
template <typename F> F find_function(ze_driver_handle_t driver, const char* name, bool* definite) {
  if (void* f = dlsym(RTLD_DEFAULT, name)) return reinterpret_cast<F>(f);
  void* f = nullptr;
  ze_result_t r = zeDriverGetExtensionFunctionAddress(driver, name, &f);
  if (r == ZE_RESULT_SUCCESS && f) return reinterpret_cast<F>(f);
  if (r != ZE_RESULT_ERROR_INVALID_ARGUMENT && r != ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) *definite = false;
  return nullptr;
}

// The six functions of a driver, looked up once per driver for the process (each lookup walks every
// loaded library; a context is made far more often than a driver appears).
zes_newer::InfoLogApi info_log_api(ze_driver_handle_t driver) {
  using namespace zes_newer;
  static std::mutex mu;
  static auto* cache = new std::vector<std::pair<ze_driver_handle_t, InfoLogApi>>;  // never destroyed
  std::lock_guard<std::mutex> lock(mu);
  for (const auto& [d, api] : *cache)
    if (d == driver) return api;
  InfoLogApi a;
  bool definite = true;
  a.enumerate = find_function<DriverEnumInfoLogsExtFn>(driver, kEnumInfoLogsName, &definite);
  if (a.enumerate) {
    a.properties = find_function<InfoLogGetPropertiesExtFn>(driver, kGetPropertiesName, &definite);
    a.create = find_function<InfoLogCreateInstanceExtFn>(driver, kCreateInstanceName, &definite);
    a.read = find_function<InfoLogInstanceReadExtFn>(driver, kReadName, &definite);
    a.peek = find_function<InfoLogInstanceReadExtFn>(driver, kPeekName, &definite);
    a.destroy = find_function<InfoLogInstanceDeleteExtFn>(driver, kDeleteName, &definite);
  }
  if (definite) cache->emplace_back(driver, a);  // a transient failure is asked again by the next context
  return a;
}

}  // namespace

DeviceWatch::DeviceWatch(ze_driver_handle_t driver, ze_device_handle_t device, std::string name) noexcept
    : driver_(driver), device_(device) {
  try {
    name_ = std::move(name);
    // Sysman on core device handles is what the specification allows in its ZES_ENABLE_SYSMAN mode; a
    // Sysman initialized only by zesInit may not take them (older NEO crashed on it), so without the
    // variable zex makes no Sysman call at all.
    const char* sysman = std::getenv("ZES_ENABLE_SYSMAN");
    sysman_ = sysman && std::strcmp(sysman, "1") == 0;
    if (!sysman_) return;
    // The RAS counters now, so that the report shows what changed since.
    auto zdev = reinterpret_cast<zes_device_handle_t>(device);
    uint32_t n = 0;
    ras_result_ = zesDeviceEnumRasErrorSets(zdev, &n, nullptr);
    std::vector<zes_ras_handle_t> hs(std::min<uint32_t>(n, 16));
    n = static_cast<uint32_t>(hs.size());
    if (ras_result_ == ZE_RESULT_SUCCESS && n) ras_result_ = zesDeviceEnumRasErrorSets(zdev, &n, hs.data());
    if (ras_result_ == ZE_RESULT_SUCCESS) {
      for (uint32_t i = 0; i < n && i < hs.size(); ++i) {
        RasSet set;
        set.handle = hs[i];
        zes_ras_properties_t p{};
        p.stype = ZES_STRUCTURE_TYPE_RAS_PROPERTIES;
        set.type = zesRasGetProperties(hs[i], &p) != ZE_RESULT_SUCCESS ? "error set " + std::to_string(i)
                   : p.type == ZES_RAS_ERROR_TYPE_CORRECTABLE      ? "correctable"
                                                                   : "uncorrectable";
        zes_ras_state_t st{};
        st.stype = ZES_STRUCTURE_TYPE_RAS_STATE;
        set.baseline = zesRasGetState(hs[i], 0, &st);
        if (set.baseline == ZE_RESULT_SUCCESS) std::memcpy(set.at_creation, st.category, sizeof set.at_creation);
        ras_.push_back(std::move(set));
      }
    }
    open_info_log();
  } catch (...) {
    // Best effort: a watch that could not be completed collects less, and says so.
  }
}

DeviceWatch::~DeviceWatch() { close_info_log(); }

namespace {
// zesInfoLogCreateInstanceExt and ...DeleteExt must not be called from simultaneous threads (the
// specification); contexts are made and destroyed on any thread.
std::mutex& instance_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
}  // namespace

void DeviceWatch::open_info_log() {
  using namespace zes_newer;
  ze_device_properties_t p{};
  p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  if (zeDeviceGetProperties(device_, &p) == ZE_RESULT_SUCCESS) {
    std::array<uint8_t, 16> u;
    std::memcpy(u.data(), p.uuid.id, 16);
    uuids_.push_back(u);
    // A device's sub-devices (tiles) may stamp their own UUIDs on its records.
    uint32_t ns = 0;
    if (zeDeviceGetSubDevices(device_, &ns, nullptr) == ZE_RESULT_SUCCESS && ns) {
      std::vector<ze_device_handle_t> subs(std::min<uint32_t>(ns, 16));
      ns = static_cast<uint32_t>(subs.size());
      if (zeDeviceGetSubDevices(device_, &ns, subs.data()) == ZE_RESULT_SUCCESS)
        for (uint32_t i = 0; i < ns && i < subs.size(); ++i) {
          ze_device_properties_t sp{};
          sp.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
          if (zeDeviceGetProperties(subs[i], &sp) != ZE_RESULT_SUCCESS) continue;
          std::memcpy(u.data(), sp.uuid.id, 16);
          uuids_.push_back(u);
        }
    }
  }
  log_ = info_log_api(driver_);
  if (!log_.enumerate) {
    log_absent_ = "info log: not offered by the driver (neither the loader nor the driver has zesDriverEnumInfoLogsExt)";
    return;
  }
  if (!log_.properties || !log_.create || !log_.read || !log_.destroy) {
    log_absent_ = "info log: the driver offers only part of the Info Logs extension";
    return;
  }
  auto zdrv = reinterpret_cast<zes_driver_handle_t>(driver_);
  uint32_t n = 0;
  ze_result_t r = log_.enumerate(zdrv, &n, nullptr);
  std::vector<zes_info_log_handle_t> logs(std::min<uint32_t>(n, 8));
  n = static_cast<uint32_t>(logs.size());
  if (r == ZE_RESULT_SUCCESS && n) r = log_.enumerate(zdrv, &n, logs.data());
  if (r != ZE_RESULT_SUCCESS) {
    log_absent_ = "info log: " + answered("zesDriverEnumInfoLogsExt", r);
    return;
  }
  // Instance names unique across copies of zex in the process and across processes (a driver's named
  // instances may be system-wide, and may outlive a process that crashed).
  static std::atomic<uint64_t> serial{0};
  static const uint64_t nonce = std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
  std::lock_guard<std::mutex> lock(instance_mutex());
  for (uint32_t i = 0; i < n && i < logs.size(); ++i) {
    zes_info_log_ext_properties_t props{};
    props.stype = static_cast<zes_structure_type_t>(kStypeInfoLogProperties);
    if (log_.properties(logs[i], &props) != ZE_RESULT_SUCCESS || props.infoLogType != ZES_INFO_LOG_TYPE_EXT_DEVICE)
      continue;
    // A named instance has a buffer of its own, so reading consumes only zex's copy; the default buffer
    // is shared with other consumers, so zex only peeks at it, and leaves it alone if it cannot.
    const bool named = props.isNamedInstanceSupported != 0;
    LogInstance inst;
    inst.peek = !named;
    inst.cper = props.infoLogFormat == ZES_INFO_LOG_FORMAT_EXT_CPER;
    if (!named && !(props.isPeekDataSupported && log_.peek)) {
      log_absent_ = "info log: the driver offers only a shared buffer that cannot be peeked at; zex does not "
                    "consume other consumers' records";
      continue;
    }
    zes_info_log_instance_ext_desc_t desc{};
    desc.stype = static_cast<zes_structure_type_t>(kStypeInfoLogInstanceDesc);
    r = ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
    for (int attempt = 0; attempt < 3 && r == ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE; ++attempt) {
      char name[64];
      std::snprintf(name, sizeof name, "zex-%ld-%016llx-%llu", static_cast<long>(getpid()),
                    static_cast<unsigned long long>(nonce), static_cast<unsigned long long>(serial.fetch_add(1)));
      r = log_.create(logs[i], named ? name : nullptr, &desc, &inst.handle);
      if (!named) break;
    }
    if (r != ZE_RESULT_SUCCESS || !inst.handle) {
      log_absent_ = "info log: " + answered("zesInfoLogCreateInstanceExt", r);
      continue;
    }
    instances_.push_back(inst);
  }
  if (!instances_.empty()) log_absent_.clear();
  else if (log_absent_.empty()) log_absent_ = "info log: the driver offers no device info log";
}

void DeviceWatch::close_info_log() noexcept {
  std::lock_guard<std::mutex> lock(instance_mutex());
  for (const LogInstance& i : instances_) log_.destroy(i.handle);
  instances_.clear();
}

bool DeviceWatch::own_record(const uint8_t* uuid) const {
  bool any = false;
  for (size_t b = 0; b < 16; ++b) any = any || uuid[b] != 0;
  if (!any || uuids_.empty()) return true;  // unknown device: kept
  for (const auto& u : uuids_)
    if (std::memcmp(u.data(), uuid, 16) == 0) return true;
  return false;
}

void DeviceWatch::read_info_log(DeviceReport& rep, std::chrono::steady_clock::time_point deadline) {
  using namespace zes_newer;
  if (instances_.empty()) {
    rep.info_log = log_absent_;
    rep.records = kept_;
    return;
  }
  // Records read (consumed) are kept for later reports; peeked ones stay in the driver's buffer and are
  // seen again by the next collect.
  std::vector<DeviceRecord> peeked;
  size_t skipped = 0, outside = 0;
  bool peeked_shared = false;
  for (const LogInstance& inst : instances_) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      rep.notes.push_back("the Info Log was read only in part: collection stopped at its time bound");
      break;
    }
    const uint64_t timeout_ms = static_cast<uint64_t>(std::min<int64_t>(left.count(), 500));
    InfoLogInstanceReadExtFn fn = inst.peek ? log_.peek : log_.read;
    const char* call = inst.peek ? kPeekName : kReadName;
    uint32_t size = 0, count = 0;  // a query call
    ze_result_t r = fn(inst.handle, timeout_ms, &size, nullptr, &count, nullptr, nullptr);
    if (r != ZE_RESULT_SUCCESS && r != ZE_RESULT_WARNING_DROPPED_DATA) {
      rep.notes.push_back("info log: " + answered(call, r));
      continue;
    }
    if (size == 0 || count == 0) continue;
    const uint32_t found = count;
    size = std::min<uint32_t>(size, 4u << 20);  // at most 4 MiB of records per read
    count = std::min<uint32_t>(count, 256);
    std::vector<uint8_t> buf(size);
    std::vector<zes_info_log_metadata_ext_t> md(count);
    for (auto& m : md) m.stype = static_cast<zes_structure_type_t>(kStypeInfoLogMetadata);
    zes_info_log_read_status_ext_t status{};
    status.stype = static_cast<zes_structure_type_t>(kStypeInfoLogReadStatus);
    r = fn(inst.handle, timeout_ms, &size, buf.data(), &count, md.data(), &status);
    if (r != ZE_RESULT_SUCCESS && r != ZE_RESULT_WARNING_DROPPED_DATA) {
      rep.notes.push_back("info log: " + answered(call, r));
      continue;
    }
    if (r == ZE_RESULT_WARNING_DROPPED_DATA)
      rep.notes.push_back("info log: the driver dropped " +
                          (status.droppedRecordCount > 0 ? std::to_string(status.droppedRecordCount) : std::string("some")) +
                          " record(s) (its buffer overflowed)");
    if (status.hasDataToRead || found > count)
      rep.notes.push_back("info log: more records than one read takes (" + std::to_string(found) +
                          " found); the newest read are shown");
    if (inst.peek) peeked_shared = true;
    // The driver's sizes are not trusted: a record is taken only where it lies inside what was written.
    const size_t written = std::min<size_t>(size, buf.size());
    for (uint32_t k = 0; k < count && k < md.size(); ++k) {
      const zes_info_log_metadata_ext_t& m = md[k];
      if (!own_record(m.uuid.id)) {
        ++skipped;
        continue;
      }
      if (m.offset > written || m.lengthOfData > written - m.offset) {
        ++outside;
        continue;
      }
      DeviceRecord rec;
      rec.format = inst.cper ? "CPER" : "unknown format";
      rec.timestamp = m.timestamp;
      const size_t keep = std::min<size_t>(m.lengthOfData, DeviceReport::kMaxRecordBytes);
      rec.bytes.assign(buf.begin() + m.offset, buf.begin() + m.offset + static_cast<long>(keep));
      rec.truncated = keep < m.lengthOfData;
      if (inst.cper) rec.summary = cper::summarize(cper::decode(rec.bytes.data(), rec.bytes.size()));
      if (rec.truncated) rec.summary += " (record cut at " + std::to_string(keep) + " of " + std::to_string(m.lengthOfData) + " bytes)";
      (inst.peek ? peeked : kept_).push_back(std::move(rec));
    }
  }
  if (skipped) rep.notes.push_back("info log: " + std::to_string(skipped) + " record(s) of other devices skipped");
  if (outside) rep.notes.push_back("info log: " + std::to_string(outside) + " record(s) lay outside the data the driver returned");
  if (peeked_shared)
    rep.notes.push_back("info log: read from the driver's shared buffer; its records may predate the context");
  // The newest records are the ones that tell about this loss: keep those.
  const size_t cap = DeviceReport::kMaxRecords;
  if (kept_.size() > cap) {
    rep.notes.push_back("info log: " + std::to_string(kept_.size() - cap) + " older record(s) not kept");
    kept_.erase(kept_.begin(), kept_.end() - static_cast<long>(cap));
  }
  rep.records = kept_;
  rep.records.insert(rep.records.end(), peeked.begin(), peeked.end());
  if (rep.records.size() > cap) {
    rep.notes.push_back("info log: " + std::to_string(rep.records.size() - cap) + " older record(s) not shown");
    rep.records.erase(rep.records.begin(), rep.records.end() - static_cast<long>(cap));
  }
}

std::shared_ptr<DeviceReport> DeviceWatch::collect(std::chrono::steady_clock::time_point deadline) {
  auto r = std::make_shared<DeviceReport>();
  r->device = name_;
  if (!sysman_) {
    r->state = "not read: Sysman is not enabled (set ZES_ENABLE_SYSMAN=1 before zeInit; zex::Context() sets it "
               "unless ZEX_SYSMAN=0)";
    r->info_log = "info log: not read (Sysman is not enabled)";
    return r;
  }
  auto zdev = reinterpret_cast<zes_device_handle_t>(device_);
  zes_device_state_t st{};
  st.stype = ZES_STRUCTURE_TYPE_DEVICE_STATE;
  ze_result_t sr = zesDeviceGetState(zdev, &st);
  if (sr == ZE_RESULT_SUCCESS) {
    r->state_read = true;
    r->reset_reasons = st.reset;
    r->repair_status = st.repaired;
    std::string s;
    if (st.reset == 0) {
      s = "no reset needed";
    } else {
      s = "reset needed (";
      std::string why;
      if (st.reset & ZES_RESET_REASON_FLAG_WEDGED) why += "wedged: the hardware is hung";
      if (st.reset & ZES_RESET_REASON_FLAG_REPAIR) why += std::string(why.empty() ? "" : ", ") + "to complete an in-field repair";
      const uint32_t other = st.reset & ~uint32_t(ZES_RESET_REASON_FLAG_WEDGED | ZES_RESET_REASON_FLAG_REPAIR);
      if (other) why += std::string(why.empty() ? "" : ", ") + "reasons " + cper::hex(other);
      s += why + ")";
    }
    s += st.repaired == ZES_REPAIR_STATUS_PERFORMED       ? "; repair: performed"
         : st.repaired == ZES_REPAIR_STATUS_NOT_PERFORMED ? "; repair: never performed"
                                                          : "; repair: not supported";
    r->state = s;
  } else {
    r->state = "unavailable: " + answered("zesDeviceGetState", sr);
  }

  if (std::chrono::steady_clock::now() > deadline) {
    r->notes.push_back("RAS counters and the Info Log were not read: collection stopped at its time bound");
    return r;
  }
  if (ras_result_ != ZE_RESULT_SUCCESS) {
    r->notes.push_back("RAS counters: " + answered("zesDeviceEnumRasErrorSets", ras_result_));
  } else if (ras_.empty()) {
    r->notes.push_back("RAS counters: the driver offers no RAS error sets for this device");
  } else {
    for (const RasSet& set : ras_) {
      if (set.baseline != ZE_RESULT_SUCCESS) {
        r->notes.push_back("RAS " + set.type + ": no snapshot at context creation (" +
                           answered("zesRasGetState", set.baseline) + "); not compared");
        continue;
      }
      zes_ras_state_t now{};
      now.stype = ZES_STRUCTURE_TYPE_RAS_STATE;
      ze_result_t rr = zesRasGetState(set.handle, 0, &now);
      if (rr != ZE_RESULT_SUCCESS) {
        r->notes.push_back("RAS " + set.type + ": " + answered("zesRasGetState", rr));
        continue;
      }
      for (int c = 0; c < ZES_MAX_RAS_ERROR_CATEGORY_COUNT; ++c)
        if (now.category[c] != set.at_creation[c])
          r->counters.push_back({set.type, ras_category_name(c), set.at_creation[c], now.category[c]});
    }
  }

  if (std::chrono::steady_clock::now() > deadline)
    r->notes.push_back("the Info Log was not read: collection stopped at its time bound");
  else
    read_info_log(*r, deadline);
  return r;
}

std::shared_ptr<const DeviceReport> DeviceWatch::recent(std::chrono::steady_clock::time_point now) const {
  // Only a complete one: a report with a note (a part that failed) is collected again.
  return last_ && last_->notes.empty() && now - last_at_ < std::chrono::seconds(1) ? last_ : nullptr;
}

void DeviceWatch::remember(std::shared_ptr<const DeviceReport> r, std::chrono::steady_clock::time_point at) {
  last_ = std::move(r);
  last_at_ = at;
}

void register_context(ContextState* s) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry().push_back(s);
}

void unregister_context(ContextState* s) noexcept {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto& r = registry();
  r.erase(std::remove(r.begin(), r.end(), s), r.end());
}

std::shared_ptr<const DeviceReport> collect_device_report() noexcept {
  try {
    // Bounded: a driver call cannot be interrupted, but once this much time has passed no further part
    // is started.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    std::lock_guard<std::mutex> lock(registry_mutex());
    // Every device once (the oldest context's watch: its snapshot covers the most).
    std::vector<DeviceWatch*> all;
    for (ContextState* s : registry())
      for (size_t i = 0; i < s->devices().size(); ++i) {
        DeviceWatch* w = s->watch(i);
        if (!w) continue;
        bool seen = false;
        for (DeviceWatch* x : all) seen = seen || x->device() == w->device();
        if (!seen) all.push_back(w);
      }
    if (all.empty()) return nullptr;
    std::vector<DeviceWatch*> lost;
    for (DeviceWatch* w : all)
      if (is_device_loss(zeDeviceGetStatus(w->device()))) lost.push_back(w);
    DeviceWatch* pick = !lost.empty() ? lost.front() : all.size() == 1 ? all.front() : nullptr;
    if (!pick) return nullptr;  // several devices, none says it is lost: no way to tell which one
    // Errors come in bursts after a loss (every stream's wait, every destructor's swallowed error): a
    // report made within the last second is shared rather than collected again.
    const auto now = std::chrono::steady_clock::now();
    if (auto recent = pick->recent(now)) return recent;
    std::shared_ptr<DeviceReport> r = pick->collect(deadline);
    if (lost.empty()) r->notes.push_back("zeDeviceGetStatus does not report this device lost");
    for (size_t i = 1; i < lost.size(); ++i) {
      ze_device_properties_t p{};
      p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
      std::string name = zeDeviceGetProperties(lost[i]->device(), &p) == ZE_RESULT_SUCCESS ? p.name : "another device";
      r->notes.push_back("'" + name + "' is lost too");
    }
    pick->remember(r, now);
    return r;
  } catch (...) {
    return nullptr;  // std::bad_alloc: the ZeError goes without a report
  }
}

}  // namespace detail
}  // namespace zex
