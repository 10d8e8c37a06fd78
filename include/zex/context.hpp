// zex::Context and zex::Device: the Level Zero driver, context and devices zex works on. Creating
// them is cold and compiled (src/runtime/context.cpp); what a launch reads (handles, names) is inline.
#pragma once

#include <zex/detail/ze_newer.hpp>
#include <zex/error.hpp>
#include <zex/slab.hpp>

#include <level_zero/ze_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zex {

namespace detail {

/// What zex knows of one device of a context; owned by the context's shared state, so pointers to it
/// stay valid while any Device, Module or Stream of the context lives.
struct DeviceInfo {
  ze_device_handle_t handle = nullptr;
  ze_context_handle_t context = nullptr;
  std::string name;
  uint32_t compute_ordinal = 0;  // a command queue group with compute (which also copies and fills)
  // How streams wait on this driver, chosen once per context (src/runtime/context.cpp, docs/design.md
  // "Waiting"): with a host synchronize and in-order lists, launches carry no event at all.
  ze_newer::CommandListHostSynchronizeFn host_synchronize = nullptr;  // null: wait through events
  ze_newer::CommandListImmediateAppendFn immediate_append = nullptr;  // null: Stream::execute refuses
  // Mutable command lists with kernel-argument updates (Graph::update); both null: the graph's list is
  // recorded again instead.
  ze_newer::GetNextCommandIdFn next_command_id = nullptr;
  ze_newer::UpdateMutableCommandsFn update_mutable = nullptr;
  ze_command_queue_flags_t list_flags = 0;  // ZE_COMMAND_QUEUE_FLAG_IN_ORDER where the API has it
  bool lists_in_order = false;              // the flag is set, or the driver is known to be in order
};

// Shared by the Context and every Device, Module and Stream made from it (src/runtime/context_state.hpp),
// so that the ze context and the slab pools outlive the last object that uses them, whatever order
// the user destroys in.
class ContextState;

/// The slab pool of `d` on context `s`, created on first use.
SlabPool& slab_pool_of(ContextState& s, const DeviceInfo& d);

}  // namespace detail

/// A Level Zero device of a zex::Context. Cheap to copy; keeps the context alive.
class Device {
 public:
  Device() = default;
  /// The raw device handle, for interop.
  ze_device_handle_t handle() const noexcept { return info_ ? info_->handle : nullptr; }
  /// The device's name as the driver reports it (ze_device_properties_t::name).
  const std::string& name() const;
  /// The raw context handle this device is used with.
  ze_context_handle_t context_handle() const noexcept { return info_ ? info_->context : nullptr; }
  /// The command queue group ordinal zex uses on this device (one with compute).
  uint32_t compute_ordinal() const noexcept { return info_ ? info_->compute_ordinal : 0; }
  /// The slab pool shared by every stream on this context+device (lower-level API).
  /// @throws std::logic_error on a default-constructed Device
  SlabPool& slab_pool() const { return detail::slab_pool_of(state(), info()); }
  explicit operator bool() const noexcept { return info_ != nullptr; }
  /// The device's sub-devices (tiles, e.g. PVC's two), each usable like a device: streams, modules and
  /// allocations on it, its own slab pool; empty for a device without any (and for a sub-device).
  /// Listed on first use. @throws ZeError; LogicError on an empty Device
  std::vector<Device> sub_devices() const;
  /// The same device of the same context (handles compared).
  friend bool operator==(const Device& a, const Device& b) noexcept {
    return a.handle() == b.handle() && a.context_handle() == b.context_handle();
  }
  friend bool operator!=(const Device& a, const Device& b) noexcept { return !(a == b); }

  // Internal: the shared context state.
  detail::ContextState& state() const {
    if (__builtin_expect(!ctx_ || !info_, 0)) throw_empty();
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
  [[noreturn]] static void throw_empty();
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
  Context();

  /// Adopts a runtime's own driver and context; zex never destroys them. The runtime must keep the
  /// context alive while zex objects made from it exist, and must have called zeInit.
  /// @throws ZeError if listing the driver's devices fails; std::invalid_argument on null handles
  Context(ze_driver_handle_t driver, ze_context_handle_t context);

  Context(Context&&) noexcept = default;
  Context& operator=(Context&&) noexcept = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ~Context() = default;

  /// The raw context handle (nullptr after a move).
  ze_context_handle_t handle() const noexcept;
  /// The raw driver handle (nullptr after a move).
  ze_driver_handle_t driver() const noexcept;
  /// Number of devices of the driver.
  size_t device_count() const noexcept;
  /// Device i of the driver.
  /// @throws std::out_of_range; std::logic_error on a moved-from Context
  Device device(size_t i = 0) const;
  /// Every device of the driver.
  std::vector<Device> devices() const;
  /// The Device for a raw handle of this context's driver, a device or a sub-device (for runtimes
  /// adopting handles).
  /// @throws std::invalid_argument if the handle is not one of the driver's devices or sub-devices
  Device device_for(ze_device_handle_t h) const;

 private:
  detail::ContextState& live() const;
  std::shared_ptr<detail::ContextState> state_;
};

}  // namespace zex
