// zex::SlabPool: the reports (host USM) and claim words (device USM) of every stream on one
// context+device, carved as slots out of a few large slabs (DESIGN.md §3.1).
//
// Why slabs: kernels declare indirect access, so every separate USM allocation is made resident on
// every launch on a real GPU. One allocation per stream would make launches slower as streams are
// added; with slabs, 1000 streams cost 8 allocations (4 host, 4 device).
//
// Memory per stream (slot): sizeof(zex_report_t) = 512 bytes of host USM plus 4 bytes of device
// USM = 516 bytes, allocated kSlotsPerSlab slots at a time (128 KiB host + 1 KiB device per slab).
#pragma once

#include <zex/abi.h>
#include <zex/decoder.hpp>
#include <zex/error.hpp>
#include <zex/exception.hpp>

#include <level_zero/ze_api.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace zex {

/// One stream's report and claim word. A plain value: whoever acquired it releases it.
struct Slot {
  zex_report_t* report = nullptr;  ///< host USM; the device writes it, the host reads it
  uint32_t* claim = nullptr;       ///< device USM; never dereference on the host
  uint32_t index = UINT32_MAX;     ///< position in the pool
  explicit operator bool() const noexcept { return report != nullptr; }
};

/// The slots of one context+device, shared by all streams there (get it with
/// Device::slab_pool()). Thread-safe. Runtimes that own their command lists use it directly:
///
///     zex::SlabPool& pool = dev.slab_pool();
///     zex::Slot slot = pool.acquire();
///     zeKernelSetArgumentValue(k, last, sizeof(zex_state_t), &(const zex_state_t&)pool.state(slot, id));
///     ... append, execute, synchronize by your own means ...
///     pool.check(slot, "kernel_name", my_list);   // throws KernelException if a work-item threw
///     pool.release(slot);                         // when the slot is idle and clean
class SlabPool {
 public:
  static constexpr uint32_t kSlotsPerSlab = 256;
  /// USM bytes one slot (one stream) costs: its report plus its claim word.
  static constexpr size_t kBytesPerSlot = sizeof(zex_report_t) + sizeof(uint32_t);

  /// Not usually called directly: Device::slab_pool() returns the pool of a context+device.
  /// `compute_ordinal` is a command queue group of the device that can copy and fill.
  SlabPool(ze_context_handle_t context, ze_device_handle_t device, std::string device_name,
           uint32_t compute_ordinal)
      : ctx_(context), dev_(device), device_name_(std::move(device_name)), ordinal_(compute_ordinal) {}

  SlabPool(const SlabPool&) = delete;
  SlabPool& operator=(const SlabPool&) = delete;

  ~SlabPool() {
    if (helper_event_) zeEventDestroy(helper_event_);
    if (helper_events_) zeEventPoolDestroy(helper_events_);
    if (helper_) zeCommandListDestroy(helper_);
    if (staging_) zeMemFree(ctx_, staging_);
    for (auto& s : slabs_) {
      zeMemFree(ctx_, s.reports);
      zeMemFree(ctx_, s.claims);
    }
  }

  /// A free slot with an empty report and a zero claim word; grows the pool by one slab (two USM
  /// allocations) when none is free.
  /// @throws ZeError if a USM allocation or the claim words' initial fill fails
  Slot acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_.empty()) grow();
    uint32_t i = free_.back();
    free_.pop_back();
    ++live_;
    return slot_at(i);
  }

  /// Returns a slot to the pool. The caller guarantees no kernel still uses it and that its claim
  /// word is zero (check() left it so, or it never threw). A report left behind is cleared here.
  void release(const Slot& s) noexcept {
    if (!s) return;
    std::memset(static_cast<void*>(s.report), 0, sizeof(zex_report_t));
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(s.index);
    --live_;
  }

  /// The kernel argument for a launch that uses slot `s`; launch_id must not be 0.
  static zex_state_t state(const Slot& s, uint64_t launch_id) noexcept {
    return zex_state_t{static_cast<uint64_t>(reinterpret_cast<uintptr_t>(s.report)),
                       static_cast<uint64_t>(reinterpret_cast<uintptr_t>(s.claim)), launch_id};
  }

  /// True if a work-item threw into `s` (the report's status is set). Only meaningful after the
  /// launches that use the slot completed. Never throws.
  static bool thrown(const Slot& s) noexcept {
    return __atomic_load_n(&s.report->status, __ATOMIC_ACQUIRE) != ZEX_STATUS_NONE;
  }

  /// Appends the reset of `s`'s claim word (a 4-byte fill with 0) to `list`, which may be any
  /// command list of this device (regular or immediate). Call it once after reading a report, before
  /// the next launch that uses the slot; check() does it for you.
  /// @throws ZeError
  void append_reset(ze_command_list_handle_t list, const Slot& s) const {
    static const uint32_t zero = 0;
    check_ze(zeCommandListAppendMemoryFill(list, s.claim, &zero, sizeof zero, sizeof zero, nullptr, 0,
                                           nullptr),
             "zeCommandListAppendMemoryFill", "appending the reset of a zex claim word");
  }

  /// After the runtime has synchronized the launches that use `s`: returns if nothing was thrown;
  /// otherwise reads the report, clears it, resets the claim word (appended to `reset_list` if given,
  /// else done at once on the pool's own command list) and throws the KernelException.
  /// `kernel_name_of(launch_id)` names the kernel of a launch; `launch_level` is the debug level it
  /// was launched with (used only if the report's own level is corrupt).
  /// @throws KernelException if a work-item threw; ZeError if the reset fails
  void check(const Slot& s, const std::function<std::string(uint64_t)>& kernel_name_of,
             ze_command_list_handle_t reset_list = nullptr, int launch_level = 1) {
    if (!thrown(s)) return;
    KernelExceptionInfo info = take(s, kernel_name_of, launch_level);
    if (reset_list)
      append_reset(reset_list, s);
    else
      reset_now(s);
    throw KernelException(std::move(info));
  }

  /// check() for a runtime that launched one kernel (or knows which one) since its last check.
  /// @throws KernelException, ZeError
  void check(const Slot& s, std::string_view kernel_name, ze_command_list_handle_t reset_list = nullptr,
             int launch_level = 1) {
    if (!thrown(s)) return;
    std::string name(kernel_name);
    check(s, [&](uint64_t) { return name; }, reset_list, launch_level);
  }

  /// Decodes and clears `s`'s report (which must be thrown()) without resetting the claim word and
  /// without throwing: the building block of check().
  /// @throws std::bad_alloc only; unreadable strings show as <invalid address 0x...>
  KernelExceptionInfo take(const Slot& s, const std::function<std::string(uint64_t)>& kernel_name_of,
                           int launch_level) {
    zex_report_t copy;
    std::memcpy(&copy, s.report, sizeof copy);
    detail::DecodedReport d;
    {
      std::lock_guard<std::mutex> lock(helper_mu_);
      ze_command_list_handle_t list = helper_list_locked();
      if (list) {
        detail::ZeMemoryReader mem(ctx_, list, helper_event_, staging_, staging_size_);
        d = detail::decode_report(copy, mem);
      } else {
        NullReader none;
        d = detail::decode_report(copy, none);
      }
    }
    std::memset(static_cast<void*>(s.report), 0, sizeof(zex_report_t));
    std::string kname = kernel_name_of ? kernel_name_of(d.launch_id) : std::string();
    if (kname.empty()) kname = "<unknown kernel of launch " + std::to_string(d.launch_id) + ">";
    return detail::exception_info(std::move(d), std::move(kname), device_name_, launch_level);
  }

  /// Resets `s`'s claim word now, on the pool's own command list, and waits for it.
  /// @throws ZeError
  void reset_now(const Slot& s) {
    std::lock_guard<std::mutex> lock(helper_mu_);
    ze_command_list_handle_t list = helper_list_locked();
    if (!list) check_ze(helper_error_, "zeCommandListCreateImmediate", "creating zex's helper command list");
    append_reset(list, s);
    check_ze(detail::drain(list, helper_event_), "zeEventHostSynchronize", "resetting a zex claim word");
  }

  /// USM allocations this pool holds for slots (two per slab).
  size_t usm_allocations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return slabs_.size() * 2;
  }
  /// Slots handed out and not released.
  size_t live_slots() const {
    std::lock_guard<std::mutex> lock(mu_);
    return live_;
  }
  /// Slots the current slabs hold.
  size_t capacity() const {
    std::lock_guard<std::mutex> lock(mu_);
    return slabs_.size() * kSlotsPerSlab;
  }

  ze_context_handle_t context() const noexcept { return ctx_; }
  ze_device_handle_t device() const noexcept { return dev_; }
  const std::string& device_name() const noexcept { return device_name_; }

 private:
  struct Slab {
    zex_report_t* reports;
    uint32_t* claims;
  };
  struct NullReader : detail::MemoryReader {
    std::optional<std::pair<uint64_t, uint64_t>> range(uint64_t) override { return std::nullopt; }
    void read(std::vector<detail::ReadRequest>&) override {}
  };

  static void check_ze(ze_result_t r, const char* call, const char* what) { zex::check(r, call, what); }

  Slot slot_at(uint32_t i) const {
    const Slab& s = slabs_[i / kSlotsPerSlab];
    return Slot{s.reports + i % kSlotsPerSlab, s.claims + i % kSlotsPerSlab, i};
  }

  // mu_ held.
  void grow() {
    Slab s{nullptr, nullptr};
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    void* p = nullptr;
    check_ze(zeMemAllocHost(ctx_, &hd, kSlotsPerSlab * sizeof(zex_report_t), 4096, &p), "zeMemAllocHost",
             "allocating a slab of zex reports");
    s.reports = static_cast<zex_report_t*>(p);
    std::memset(p, 0, kSlotsPerSlab * sizeof(zex_report_t));
    ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    p = nullptr;
    ze_result_t r = zeMemAllocDevice(ctx_, &dd, kSlotsPerSlab * sizeof(uint32_t), 64, dev_, &p);
    if (r != ZE_RESULT_SUCCESS) {
      zeMemFree(ctx_, s.reports);
      check_ze(r, "zeMemAllocDevice", "allocating a slab of zex claim words");
    }
    s.claims = static_cast<uint32_t*>(p);
    // Device memory starts undefined: zero every claim word before any slot is handed out.
    try {
      std::lock_guard<std::mutex> lock(helper_mu_);
      ze_command_list_handle_t list = helper_list_locked();
      if (!list) check_ze(helper_error_, "zeCommandListCreateImmediate", "creating zex's helper command list");
      static const uint32_t zero = 0;
      check_ze(zeCommandListAppendMemoryFill(list, s.claims, &zero, sizeof zero,
                                             kSlotsPerSlab * sizeof(uint32_t), nullptr, 0, nullptr),
               "zeCommandListAppendMemoryFill", "zeroing a slab of zex claim words");
      check_ze(detail::drain(list, helper_event_), "zeEventHostSynchronize", "zeroing a slab of zex claim words");
    } catch (...) {
      zeMemFree(ctx_, s.reports);
      zeMemFree(ctx_, s.claims);
      throw;
    }
    const uint32_t first = static_cast<uint32_t>(slabs_.size()) * kSlotsPerSlab;
    slabs_.push_back(s);
    // Highest index first so that acquire() (which pops the back) hands out low indices first.
    for (uint32_t i = kSlotsPerSlab; i-- > 0;) free_.push_back(first + i);
  }

  // helper_mu_ held. An immediate list (and an event to wait for it) for fills and decoding
  // copies; created on first need. Returns nullptr, with helper_error_ set, if that failed.
  ze_command_list_handle_t helper_list_locked() {
    if (helper_ || helper_error_ != ZE_RESULT_SUCCESS) return helper_;
    ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, ordinal_, 0, 0,
                               ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
    ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
    ze_device_handle_t dev = dev_;
    ze_command_list_handle_t list = nullptr;
    ze_event_pool_handle_t pool = nullptr;
    ze_event_handle_t ev = nullptr;
    ze_result_t r = zeCommandListCreateImmediate(ctx_, dev_, &qd, &list);
    if (r == ZE_RESULT_SUCCESS) r = zeEventPoolCreate(ctx_, &pd, 1, &dev, &pool);
    if (r == ZE_RESULT_SUCCESS) r = zeEventCreate(pool, &ed, &ev);
    if (r != ZE_RESULT_SUCCESS) {
      if (pool) zeEventPoolDestroy(pool);
      if (list) zeCommandListDestroy(list);
      helper_error_ = r;
      return nullptr;
    }
    helper_ = list;
    helper_events_ = pool;
    helper_event_ = ev;
    return helper_;
  }

  ze_context_handle_t ctx_;
  ze_device_handle_t dev_;
  std::string device_name_;
  uint32_t ordinal_;

  mutable std::mutex mu_;  // slabs_, free_, live_
  std::vector<Slab> slabs_;
  std::vector<uint32_t> free_;
  size_t live_ = 0;

  std::mutex helper_mu_;  // helper_, staging_
  ze_command_list_handle_t helper_ = nullptr;
  ze_result_t helper_error_ = ZE_RESULT_SUCCESS;
  ze_event_pool_handle_t helper_events_ = nullptr;
  ze_event_handle_t helper_event_ = nullptr;
  void* staging_ = nullptr;
  size_t staging_size_ = 0;
};

}  // namespace zex
