// zex::SlabPool's cold half: acquiring and releasing slots, and the one path from a thrown report to
// a KernelException (read_and_reset), which zex::Stream and SlabPool::check both take.
#include <zex/slab.hpp>

#include "runtime/decoder.hpp"
#include "runtime/helper_list.hpp"
#include "runtime/slab_storage.hpp"
#include <zex/error.hpp>

#include <cstring>
#include <mutex>
#include <string>
#include <utility>

namespace zex {

struct SlabPool::Impl {
  Impl(ze_context_handle_t ctx, ze_device_handle_t dev, uint32_t ordinal)
      : storage(ctx, dev), helper(ctx, dev, ordinal) {}
  // Destroyed last-declared first: the helper list (which may have filled a slab) goes before the
  // slabs.
  std::mutex storage_mu;  // storage
  detail::SlabStorage storage;
  std::mutex helper_mu;  // helper
  detail::HelperList helper;
};

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

KernelExceptionInfo SlabPool::read_and_reset(const Slot& s, KernelNameFn kernel_name_of, const void* ctx,
                                             int launch_level, ze_command_list_handle_t reset_list,
                                             ze_event_handle_t signal, const detail::KnownStrings* known,
                                             const detail::SiteTable* sites, uint32_t site_base) {
  zex_report_t copy;
  std::memcpy(&copy, s.report, sizeof copy);
  // A numbered site without its module's table (SlabPool::check): site ids are unique in the process,
  // so the registry finds the table of whichever live zex::Module the kernel came from.
  std::shared_ptr<const detail::SiteTable> found;
  if (!sites && copy.abi_version >= 3 && detail::known_abi_version(copy.abi_version) && copy.site != 0) {
    found = detail::find_site_table(copy.site & ZEX_SITE_ID_MASK, &site_base);
    sites = found.get();
  }
  detail::DecodedReport d;
  {
    std::lock_guard<std::mutex> lock(impl_->helper_mu);
    detail::ZeMemoryReader mem(impl_->helper);
    d = detail::decode_report(copy, mem, known, sites, site_base);
    // The thrower count, from device memory next to the claim word: one more read on the path that
    // already reads strings, only for a report that can have one (version >= 2, level >= 1).
    if (d.abi_version >= 2 && detail::known_abi_version(d.abi_version) && d.debug_level >= 1 && d.debug_level <= 2) {
      std::vector<detail::ReadRequest> q(1);
      q[0].address = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(s.claim)) + ZEX_COUNT_OFFSET;
      q[0].size = sizeof(uint64_t);
      mem.read(q);
      if (q[0].ok && q[0].out.size() == sizeof(uint64_t)) std::memcpy(&d.thrower_count, q[0].out.data(), sizeof(uint64_t));
    }
  }
  std::string kname = kernel_name_of ? kernel_name_of(ctx, d.launch_id) : std::string();
  if (kname.empty()) kname = "<unknown kernel of launch " + std::to_string(d.launch_id) + ">";
  KernelExceptionInfo info = detail::exception_info(std::move(d), std::move(kname), device_name_, launch_level);
  discard(s, reset_list, signal);
  return info;
}

void SlabPool::raise(const Slot& s, KernelNameFn kernel_name_of, const void* ctx, int launch_level,
                     ze_command_list_handle_t reset_list, const detail::SiteTable* sites) {
  throw KernelException(read_and_reset(s, kernel_name_of, ctx, launch_level, reset_list, nullptr, nullptr, sites));
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
