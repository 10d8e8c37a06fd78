// zex::Context and zex::Device: the Level Zero driver, context and devices zex works on.
#pragma once

#include <zex/error.hpp>
#include <zex/slab.hpp>

#include <level_zero/ze_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zex {

namespace detail {

struct DeviceInfo {
  ze_device_handle_t handle = nullptr;
  std::string name;
  uint32_t compute_ordinal = 0;  // a command queue group with compute (which also copies and fills)
};

// Shared by the Context and every Device, Module and Stream made from it, so that the ze context
// and the slab pools outlive the last object that uses them, whatever order the user destroys in.
class ContextState {
 public:
  ContextState(ze_driver_handle_t driver, ze_context_handle_t context, bool owned)
      : driver_(driver), context_(context), owned_(owned) {
    uint32_t n = 0;
    check(zeDeviceGet(driver, &n, nullptr), "zeDeviceGet", "counting the driver's devices");
    std::vector<ze_device_handle_t> hs(n);
    if (n) check(zeDeviceGet(driver, &n, hs.data()), "zeDeviceGet", "listing the driver's devices");
    for (uint32_t i = 0; i < n; ++i) devices_.push_back(describe(hs[i]));
  }
  ContextState(const ContextState&) = delete;
  ContextState& operator=(const ContextState&) = delete;
  ~ContextState() {
    pools_.clear();  // frees the slabs while the context still exists
    if (owned_ && context_) zeContextDestroy(context_);
  }

  ze_driver_handle_t driver() const noexcept { return driver_; }
  ze_context_handle_t context() const noexcept { return context_; }
  const std::vector<DeviceInfo>& devices() const noexcept { return devices_; }

  const DeviceInfo& info_for(ze_device_handle_t h) {
    for (auto& d : devices_)
      if (d.handle == h) return d;
    throw std::invalid_argument("zex: the device handle does not belong to this context's driver");
  }

  SlabPool& pool(const DeviceInfo& d) {
    std::lock_guard<std::mutex> lock(mu_);
    auto& p = pools_[d.handle];
    if (!p) p = std::make_unique<SlabPool>(context_, d.handle, d.name, d.compute_ordinal);
    return *p;
  }

 private:
  static DeviceInfo describe(ze_device_handle_t h) {
    DeviceInfo d;
    d.handle = h;
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
      check(zeDeviceGetCommandQueueGroupProperties(h, &ng, gs.data()),
            "zeDeviceGetCommandQueueGroupProperties", "finding the device's compute queue group");
    for (uint32_t i = 0; i < ng; ++i)
      if (gs[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
        d.compute_ordinal = i;
        break;
      }
    return d;
  }

  ze_driver_handle_t driver_;
  ze_context_handle_t context_;
  bool owned_;
  std::vector<DeviceInfo> devices_;
  std::mutex mu_;
  std::map<ze_device_handle_t, std::unique_ptr<SlabPool>> pools_;
};

inline const char* no_driver_advice() {
  return "No Level Zero driver could be loaded. Install Intel's GPU driver (Debian/Ubuntu packages "
         "intel-level-zero-gpu or libze-intel-gpu1, from Intel's compute-runtime), or use zex's CPU "
         "driver: set ZE_ENABLE_ALT_DRIVERS=/absolute/path/to/libze_zex_cpu.so (built as ze_zex_cpu, "
         "installed in zex's library directory).";
}

}  // namespace detail

/// A Level Zero device of a zex::Context. Cheap to copy; keeps the context alive.
class Device {
 public:
  Device() = default;
  /// The raw device handle, for interop.
  ze_device_handle_t handle() const noexcept { return info_ ? info_->handle : nullptr; }
  /// The device's name as the driver reports it (ze_device_properties_t::name).
  const std::string& name() const {
    static const std::string none;
    return info_ ? info_->name : none;
  }
  /// The raw context handle this device is used with.
  ze_context_handle_t context_handle() const noexcept { return ctx_ ? ctx_->context() : nullptr; }
  /// The command queue group ordinal zex uses on this device (one with compute).
  uint32_t compute_ordinal() const noexcept { return info_ ? info_->compute_ordinal : 0; }
  /// The slab pool shared by every stream on this context+device (lower-level API).
  /// @throws std::logic_error on a default-constructed Device
  SlabPool& slab_pool() const { return state().pool(*info_); }
  explicit operator bool() const noexcept { return info_ != nullptr; }

  // Internal: the shared context state.
  detail::ContextState& state() const {
    if (!ctx_ || !info_) throw std::logic_error("zex: use of an empty zex::Device (get one from Context::device)");
    return *ctx_;
  }
  const std::shared_ptr<detail::ContextState>& shared_state() const noexcept { return ctx_; }
  const detail::DeviceInfo& info() const {
    state();
    return *info_;
  }

 private:
  friend class Context;
  Device(std::shared_ptr<detail::ContextState> ctx, const detail::DeviceInfo* info)
      : ctx_(std::move(ctx)), info_(info) {}
  std::shared_ptr<detail::ContextState> ctx_;
  const detail::DeviceInfo* info_ = nullptr;
};

/// A Level Zero context and the devices of its driver. Move-only. Devices, modules and streams made
/// from it keep what they need alive, so it may be destroyed before them.
class Context {
 public:
  /// Initializes Level Zero (zeInit), takes the first driver and creates a context on it.
  /// If zeInit fails no other Level Zero function is called (Debian's loader crashes in zeDriverGet
  /// after a failed zeInit).
  /// @throws ZeError: no driver (the message says how to get one), or a failing ze call
  Context() {
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

  /// Adopts a runtime's own driver and context; zex never destroys them. The runtime must keep the
  /// context alive while zex objects made from it exist, and must have called zeInit.
  /// @throws ZeError if listing the driver's devices fails; std::invalid_argument on null handles
  Context(ze_driver_handle_t driver, ze_context_handle_t context) {
    if (!driver || !context) throw std::invalid_argument("zex::Context: null driver or context handle");
    state_ = std::make_shared<detail::ContextState>(driver, context, false);
  }

  Context(Context&&) noexcept = default;
  Context& operator=(Context&&) noexcept = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() = default;

  /// The raw context handle (nullptr after a move).
  ze_context_handle_t handle() const noexcept { return state_ ? state_->context() : nullptr; }
  /// The raw driver handle (nullptr after a move).
  ze_driver_handle_t driver() const noexcept { return state_ ? state_->driver() : nullptr; }
  /// Number of devices of the driver.
  size_t device_count() const noexcept { return state_ ? state_->devices().size() : 0; }
  /// Device i of the driver.
  /// @throws std::out_of_range; std::logic_error on a moved-from Context
  Device device(size_t i = 0) const {
    const auto& s = live();
    if (i >= s.devices().size())
      throw std::out_of_range("zex::Context::device(" + std::to_string(i) + "): the driver has " +
                              std::to_string(s.devices().size()) + " device(s)");
    return Device(state_, &s.devices()[i]);
  }
  /// Every device of the driver.
  std::vector<Device> devices() const {
    std::vector<Device> v;
    for (size_t i = 0; i < device_count(); ++i) v.push_back(device(i));
    return v;
  }
  /// The Device for a raw handle of this context's driver (for runtimes adopting handles).
  /// @throws std::invalid_argument if the handle is not one of the driver's devices
  Device device_for(ze_device_handle_t h) const {
    const auto& info = live().info_for(h);
    return Device(state_, &info);
  }

 private:
  detail::ContextState& live() const {
    if (!state_) throw std::logic_error("zex: use of a moved-from zex::Context");
    return *state_;
  }
  std::shared_ptr<detail::ContextState> state_;
};

}  // namespace zex
