// zex::SlabPool's cold half: acquiring and releasing slots, resetting claim words. The path from a
// thrown report to a KernelException is report_reading.cpp.
#include <zex/slab.hpp>

#include "runtime/slab_pool_impl.hpp"
#include <zex/error.hpp>

#include <cstring>
#include <mutex>
#include <string>
#include <utility>

namespace zex {


SlabPool::SlabPool(ze_context_handle_t context, ze_device_handle_t device, std::string device_name,
                   uint32_t compute_ordinal)
    : ctx_(context), dev_(device), device_name_(std::move(device_name)),
      impl_(std::make_unique<Impl>(context, device, compute_ordinal)) {}

SlabPool::~SlabPool() = default;

Slot SlabPool::acquire() {
  std::scoped_lock lock(impl_->storage_mu, impl_->helper_mu);
  return impl_->storage.take(impl_->helper);
}

void SlabPool::release(const Slot& s) noexcept {
  if (!s) return;
  if (thrown(s)) {
    // A throw nobody checked: its claim word is still set, and the next owner's throws would all be
    // dropped. Reset it first (the caller guarantees the slot's launches have finished, so the reset
    // is ordered after them); if that fails, the slot is leaked rather than handed on armed.
    try {
      reset_now(s);
    } catch (...) {
      return;
    }
  }
  std::memset(static_cast<void*>(s.report), 0, sizeof(zex_report_t));
  std::lock_guard<std::mutex> lock(impl_->storage_mu);
  impl_->storage.give_back(s.index);
}

void SlabPool::append_reset(ze_command_list_handle_t list, const Slot& s, ze_event_handle_t signal,
                            ze_event_handle_t wait) const {
  static const uint32_t zero = 0;
  zex::check(zeCommandListAppendMemoryFill(list, s.claim, &zero, sizeof zero, ZEX_CLAIM_BYTES, signal, wait ? 1 : 0,
                                      wait ? &wait : nullptr),
        "zeCommandListAppendMemoryFill", "appending the reset of a zex claim word");
}

void SlabPool::reset_now(const Slot& s) {
  std::lock_guard<std::mutex> lock(impl_->helper_mu);
  append_reset(impl_->helper.list(), s);
  impl_->helper.drain("resetting a zex claim word");
}

void SlabPool::discard(const Slot& s, ze_command_list_handle_t reset_list, ze_event_handle_t signal) {
  // Reset first, clear after: if the reset cannot be appended, the report still says "thrown", so
  // nobody hands the armed slot to a new owner as if it were clean.
  if (reset_list)
    append_reset(reset_list, s, signal);
  else
    reset_now(s);
  std::memset(static_cast<void*>(s.report), 0, sizeof(zex_report_t));
}

size_t SlabPool::usm_allocations() const {
  std::lock_guard<std::mutex> lock(impl_->storage_mu);
  return impl_->storage.slabs() * 2;
}

size_t SlabPool::live_slots() const {
  std::lock_guard<std::mutex> lock(impl_->storage_mu);
  return impl_->storage.live();
}

size_t SlabPool::capacity() const {
  std::lock_guard<std::mutex> lock(impl_->storage_mu);
  return impl_->storage.slabs() * kSlotsPerSlab;
}

}  // namespace zex
