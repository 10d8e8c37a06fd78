// The state a zex::Context shares with every object made from it: the driver, the ze context (owned
// or adopted), what zex knows of each device, and the slab pool of each device. Included by src/ only.
#pragma once

#include <zex/context.hpp>
#include "runtime/device_watch.hpp"
#include <zex/slab.hpp>

#include <level_zero/ze_api.h>

#include <deque>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace zex {
namespace detail {

class ContextState {
 public:
  /// Lists the driver's devices and describes each.
  /// @throws ZeError
  ContextState(ze_driver_handle_t driver, ze_context_handle_t context, bool owned);
  ContextState(const ContextState&) = delete;
  ContextState& operator=(const ContextState&) = delete;
  ~ContextState();

  ze_driver_handle_t driver() const noexcept { return driver_; }
  ze_context_handle_t context() const noexcept { return context_; }
  const std::vector<DeviceInfo>& devices() const noexcept { return devices_; }

  /// A device or a sub-device of the driver.
  /// @throws std::invalid_argument if `h` is neither; ZeError if listing sub-devices fails
  const DeviceInfo& info_for(ze_device_handle_t h);
  /// The sub-devices of `d`, described on first use (their DeviceInfo never moves).
  /// @throws ZeError
  std::vector<const DeviceInfo*> sub_devices(const DeviceInfo& d);
  SlabPool& pool(const DeviceInfo& d);
  /// The watch of device i (for a device-loss report), or null if it could not be made.
  DeviceWatch* watch(size_t i) const noexcept { return i < watches_.size() ? watches_[i].get() : nullptr; }

 private:
  ze_driver_handle_t driver_;
  ze_context_handle_t context_;
  bool owned_;
  std::vector<DeviceInfo> devices_;
  std::vector<std::unique_ptr<DeviceWatch>> watches_;  // parallel to devices_
  std::mutex mu_;  // pools_, subs_, listed_
  std::vector<std::pair<ze_device_handle_t, std::unique_ptr<SlabPool>>> pools_;
  std::deque<DeviceInfo> subs_;  // sub-devices described so far (a deque: pointers to them stay valid)
  std::vector<std::pair<ze_device_handle_t, std::vector<const DeviceInfo*>>> listed_;  // per root device
};

}  // namespace detail
}  // namespace zex
