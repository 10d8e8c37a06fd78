// zex::Context and zex::Device: finding the driver and describing its devices. Cold (once per
// context), so compiled rather than inline in every includer.
#include <zex/context.hpp>
#include "runtime/context_state.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <new>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace zex {
namespace detail {

namespace {

DeviceInfo describe(ze_device_handle_t h, ze_context_handle_t ctx) {
  DeviceInfo d;
  d.handle = h;
  d.context = ctx;
  ze_device_properties_t props{};
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  check(zeDeviceGetProperties(h, &props), "zeDeviceGetProperties", "reading the device's name");
  d.name = props.name;
  uint32_t ng = 0;
  check(zeDeviceGetCommandQueueGroupProperties(h, &ng, nullptr), "zeDeviceGetCommandQueueGroupProperties",
        "finding the device's compute queue group");
  std::vector<ze_command_queue_group_properties_t> gs(ng);
  for (auto& g : gs) g.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  if (ng)
    check(zeDeviceGetCommandQueueGroupProperties(h, &ng, gs.data()), "zeDeviceGetCommandQueueGroupProperties",
          "finding the device's compute queue group");
  for (uint32_t i = 0; i < ng; ++i)
    if (gs[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
      d.compute_ordinal = i;
      break;
    }
  return d;
}

// What a driver offers for waiting (docs/design.md, "Waiting"): zeCommandListHostSynchronize (API 1.6;
// the loader exports it from its 1.6 builds on, and zex-cpu offers it as an extension function to
// older loaders) and in-order immediate lists (the 1.7 flag, or a driver that says it is in order).
// Every failure here only means "not offered": streams then wait through events.
struct WaitSupport {
  ze_newer::CommandListHostSynchronizeFn host_synchronize = nullptr;
  ze_newer::CommandListImmediateAppendFn immediate_append = nullptr;
  ze_newer::GetNextCommandIdFn next_command_id = nullptr;  // both or neither
  ze_newer::UpdateMutableCommandsFn update_mutable = nullptr;
  ze_command_queue_flags_t list_flags = 0;
  bool in_order = false;
};

bool has_extension(ze_driver_handle_t driver, const char* name) {
  uint32_t n = 0;
  if (zeDriverGetExtensionProperties(driver, &n, nullptr) != ZE_RESULT_SUCCESS || n == 0) return false;
  std::vector<ze_driver_extension_properties_t> exts(n);
  if (zeDriverGetExtensionProperties(driver, &n, exts.data()) != ZE_RESULT_SUCCESS) return false;
  for (uint32_t i = 0; i < n && i < exts.size(); ++i)
    if (std::strncmp(exts[i].name, name, ZE_MAX_EXTENSION_NAME) == 0) return true;
  return false;
}

WaitSupport wait_support(ze_driver_handle_t driver) {
  WaitSupport w;
  ze_api_version_t v{};
  const uint32_t api = zeDriverGetApiVersion(driver, &v) == ZE_RESULT_SUCCESS ? static_cast<uint32_t>(v) : 0;
  if (api >= ze_newer::kApiHostSynchronize) {
    // A loader of API 1.6 or later exports it, and routes it through its layers.
    w.host_synchronize = reinterpret_cast<ze_newer::CommandListHostSynchronizeFn>(
        dlsym(RTLD_DEFAULT, ze_newer::kHostSynchronizeName));
  }
  if (!w.host_synchronize) {
    void* f = nullptr;
    if (zeDriverGetExtensionFunctionAddress(driver, ze_newer::kHostSynchronizeName, &f) == ZE_RESULT_SUCCESS)
      w.host_synchronize = reinterpret_cast<ze_newer::CommandListHostSynchronizeFn>(f);
  }
  // Immediate append (Stream::execute): exported by loaders of API 1.9 on, else the driver's extension.
  if (api >= ze_newer::kApiImmediateAppend)
    w.immediate_append = reinterpret_cast<ze_newer::CommandListImmediateAppendFn>(
        dlsym(RTLD_DEFAULT, ze_newer::kImmediateAppendName));
  if (!w.immediate_append) {
    void* f = nullptr;
    if (zeDriverGetExtensionFunctionAddress(driver, ze_newer::kImmediateAppendName, &f) == ZE_RESULT_SUCCESS)
      w.immediate_append = reinterpret_cast<ze_newer::CommandListImmediateAppendFn>(f);
  }
  // Mutable command lists (Graph::update): only where the driver lists the extension (a driver that does
  // not know the properties' stype need never see it), from the loader of API 1.9 on, else the driver's
  // extension functions. ZEX_GRAPH_UPDATE=rerecord ignores them (the path of drivers without them).
  const char* upd = std::getenv("ZEX_GRAPH_UPDATE");
  if (has_extension(driver, ze_newer::kMutableCommandListExtension) && !(upd && std::strcmp(upd, "rerecord") == 0)) {
    auto find = [&](const char* name) -> void* {
      void* f = api >= ze_newer::kApiImmediateAppend ? dlsym(RTLD_DEFAULT, name) : nullptr;
      if (!f && zeDriverGetExtensionFunctionAddress(driver, name, &f) != ZE_RESULT_SUCCESS) f = nullptr;
      return f;
    };
    w.next_command_id = reinterpret_cast<ze_newer::GetNextCommandIdFn>(find(ze_newer::kGetNextCommandIdName));
    w.update_mutable = reinterpret_cast<ze_newer::UpdateMutableCommandsFn>(find(ze_newer::kUpdateMutableCommandsName));
    if (!w.next_command_id || !w.update_mutable) w.next_command_id = nullptr, w.update_mutable = nullptr;
  }
  if (api >= ze_newer::kApiInOrder) {
    w.list_flags = ze_newer::kCommandQueueFlagInOrder;
    w.in_order = true;
  } else {
    w.in_order = has_extension(driver, ze_newer::kZexCpuInOrderExtension);
  }
  if (const char* e = std::getenv("ZEX_WAIT"); e && std::strcmp(e, "events") == 0) w.host_synchronize = nullptr;
  return w;
}

// Whether `h`'s mutable command lists update kernel arguments (its properties say so). A failed query: no.
bool updates_arguments(ze_device_handle_t h) {
  ze_newer::MutableCommandListProperties m;
  ze_device_properties_t props{};
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  props.pNext = &m;
  return zeDeviceGetProperties(h, &props) == ZE_RESULT_SUCCESS && (m.mutableCommandFlags & ze_newer::kMutableKernelArguments);
}

const char* no_driver_advice() {
  return "No Level Zero driver could be loaded. Install Intel's GPU driver (Debian/Ubuntu packages "
         "intel-level-zero-gpu or libze-intel-gpu1, from Intel's compute-runtime), or use zex's CPU "
         "driver: set ZE_ENABLE_ALT_DRIVERS=/absolute/path/to/libze_zex_cpu.so (built as ze_zex_cpu, "
         "installed in zex's library directory).";
}

}  // namespace

ContextState::ContextState(ze_driver_handle_t driver, ze_context_handle_t context, bool owned)
    : driver_(driver), context_(context), owned_(owned) {
  uint32_t n = 0;
  check(zeDeviceGet(driver, &n, nullptr), "zeDeviceGet", "counting the driver's devices");
  std::vector<ze_device_handle_t> hs(n);
  if (n) check(zeDeviceGet(driver, &n, hs.data()), "zeDeviceGet", "listing the driver's devices");
  devices_.reserve(n);  // DeviceInfo pointers handed out must never move
  const WaitSupport w = wait_support(driver);
  for (uint32_t i = 0; i < n; ++i) {
    devices_.push_back(describe(hs[i], context));
    devices_.back().host_synchronize = w.host_synchronize;
    devices_.back().immediate_append = w.immediate_append;
    if (w.next_command_id && updates_arguments(hs[i])) {
      devices_.back().next_command_id = w.next_command_id;
      devices_.back().update_mutable = w.update_mutable;
    }
    devices_.back().list_flags = w.list_flags;
    devices_.back().lists_in_order = w.in_order;
  }
  // Snapshots for a device-loss report (best effort; never fails the context). ZEX_DEVICE_REPORT=0: none
  // (read per context), and a device loss then carries no report.
  const char* reports = std::getenv("ZEX_DEVICE_REPORT");
  if (!(reports && std::strcmp(reports, "0") == 0)) {
    try {
      watches_.reserve(devices_.size());
      for (auto& d : devices_) watches_.push_back(std::make_unique<DeviceWatch>(driver, d.handle, d.name));
    } catch (const std::bad_alloc&) {
      // Watches for the devices that got one; a device loss on the others carries no report.
    }
  }
  register_context(this);
}

ContextState::~ContextState() {
  unregister_context(this);
  watches_.clear();
  pools_.clear();  // frees the slabs while the context still exists
  if (owned_ && context_) zeContextDestroy(context_);
}

const DeviceInfo& ContextState::info_for(ze_device_handle_t h) {
  for (auto& d : devices_)
    if (d.handle == h) return d;
  for (auto& d : devices_)
    for (const DeviceInfo* s : sub_devices(d))
      if (s->handle == h) return *s;
  throw zex::InvalidArgument("zex: the device handle is neither a device nor a sub-device of this context's driver");
}

std::vector<const DeviceInfo*> ContextState::sub_devices(const DeviceInfo& d) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [h, v] : listed_)
    if (h == d.handle) return v;
  uint32_t n = 0;
  check(zeDeviceGetSubDevices(d.handle, &n, nullptr), "zeDeviceGetSubDevices", "counting a device's sub-devices");
  std::vector<ze_device_handle_t> hs(n);
  if (n) check(zeDeviceGetSubDevices(d.handle, &n, hs.data()), "zeDeviceGetSubDevices", "listing a device's sub-devices");
  hs.resize(std::min<size_t>(n, hs.size()));
  std::vector<DeviceInfo> described;  // all or nothing: a failure leaves nothing half listed
  for (ze_device_handle_t h : hs) {
    described.push_back(describe(h, context_));
    described.back().host_synchronize = d.host_synchronize;
    described.back().immediate_append = d.immediate_append;
    if (d.next_command_id && updates_arguments(h)) {
      described.back().next_command_id = d.next_command_id;
      described.back().update_mutable = d.update_mutable;
    }
    described.back().list_flags = d.list_flags;
    described.back().lists_in_order = d.lists_in_order;
  }
  std::vector<const DeviceInfo*> v;
  listed_.reserve(listed_.size() + 1);
  for (DeviceInfo& info : described) {
    subs_.push_back(std::move(info));
    v.push_back(&subs_.back());
  }
  listed_.emplace_back(d.handle, v);
  return v;
}

SlabPool& ContextState::pool(const DeviceInfo& d) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [h, p] : pools_)
    if (h == d.handle) return *p;
  pools_.emplace_back(d.handle, std::make_unique<SlabPool>(context_, d.handle, d.name, d.compute_ordinal));
  return *pools_.back().second;
}

SlabPool& slab_pool_of(ContextState& s, const DeviceInfo& d) { return s.pool(d); }

}  // namespace detail

const std::string& Device::name() const {
  static const std::string none;
  return info_ ? info_->name : none;
}

void Device::throw_empty() {
  throw zex::LogicError("zex: use of an empty zex::Device (get one from Context::device)");
}

namespace {
// Sysman on core device handles (what a device-loss report reads) needs ZES_ENABLE_SYSMAN=1 before the
// first zeInit with Debian's loader (1.8.12 has no zesInit). zex sets it for the zeInit it makes
// itself, unless the application set the variable (either way) or ZEX_SYSMAN=0; a runtime that
// initialized Level Zero itself is not affected (its zeInit came first). docs/decisions.md.
void enable_sysman_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* opt = std::getenv("ZEX_SYSMAN");
    if (opt && std::strcmp(opt, "0") == 0) return;
    if (std::getenv("ZES_ENABLE_SYSMAN") == nullptr) setenv("ZES_ENABLE_SYSMAN", "1", 0);
  });
}
}  // namespace

Context::Context() {
  enable_sysman_once();
  ze_result_t r = zeInit(0);
  if (r != ZE_RESULT_SUCCESS) throw ZeError(r, "zeInit", "initializing Level Zero", detail::no_driver_advice());
  uint32_t n = 0;
  r = zeDriverGet(&n, nullptr);
  if (r != ZE_RESULT_SUCCESS || n == 0)
    throw ZeError(r != ZE_RESULT_SUCCESS ? r : ZE_RESULT_ERROR_UNINITIALIZED, "zeDriverGet",
                  "looking for a Level Zero driver", detail::no_driver_advice());
  std::vector<ze_driver_handle_t> drivers(n);
  check(zeDriverGet(&n, drivers.data()), "zeDriverGet", "listing the Level Zero drivers");
  ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ze_context_handle_t ctx = nullptr;
  check(zeContextCreate(drivers[0], &cd, &ctx), "zeContextCreate", "creating a context");
  try {
    state_ = std::make_shared<detail::ContextState>(drivers[0], ctx, true);
  } catch (...) {
    zeContextDestroy(ctx);
    throw;
  }
}

Context::Context(ze_driver_handle_t driver, ze_context_handle_t context) {
  if (!driver || !context) throw zex::InvalidArgument("zex::Context: null driver or context handle");
  state_ = std::make_shared<detail::ContextState>(driver, context, false);
}

ze_context_handle_t Context::handle() const noexcept { return state_ ? state_->context() : nullptr; }
ze_driver_handle_t Context::driver() const noexcept { return state_ ? state_->driver() : nullptr; }
size_t Context::device_count() const noexcept { return state_ ? state_->devices().size() : 0; }

Device Context::device(size_t i) const {
  const auto& s = live();
  if (i >= s.devices().size())
    throw zex::OutOfRange("zex::Context::device(" + std::to_string(i) + "): the driver has " +
                            std::to_string(s.devices().size()) + " device(s)");
  return Device(state_, &s.devices()[i]);
}

std::vector<Device> Context::devices() const {
  std::vector<Device> v;
  for (size_t i = 0; i < device_count(); ++i) v.push_back(device(i));
  return v;
}

Device Context::device_for(ze_device_handle_t h) const { return Device(state_, &live().info_for(h)); }

std::vector<Device> Device::sub_devices() const {
  std::vector<Device> v;
  for (const detail::DeviceInfo* s : state().sub_devices(info())) v.push_back(Device(ctx_, s));
  return v;
}

detail::ContextState& Context::live() const {
  if (!state_) throw zex::LogicError("zex: use of a moved-from zex::Context");
  return *state_;
}

}  // namespace zex
