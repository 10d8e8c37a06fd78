// zex::SlabPool: the reports (host USM) and claim words (device USM) of every stream on one
// context+device, carved as slots out of a few large slabs (docs/design.md, "Slots and slabs").
//
// Why slabs: kernels declare indirect access, so every separate USM allocation is made resident on
// every launch on a real GPU. One allocation per stream would make launches slower as streams are
// added; with slabs, 1000 streams cost 8 allocations (4 host, 4 device).
//
// Only what a launch or a synchronize touches is inline here (state(), thrown()); acquiring,
// releasing and resetting are cold and compiled (src/runtime/slab.cpp), decoding too
// (src/runtime/report_reading.cpp).
#pragma once

#include <zex/abi.h>
#include <zex/detail/sites.hpp>
#include <zex/exception.hpp>

#include <level_zero/ze_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace zex {

namespace detail {
struct KnownStrings;  // src/runtime/decoder.hpp
}  // namespace detail

/// What the runtime knows about the launch that threw, beside what its report says: the launcher looks
/// it up by the report's launch id (SlabPool::thrown_launch_id) before the report is read, and
/// read_and_reset() puts it into the exception. Every field may stay unknown.
struct ThrowOrigin {
  std::string kernel_name;  ///< empty: "<unknown kernel of launch N>"
  int launch_level = 1;     ///< the debug level launched with (used only if the report's is corrupt)
  const detail::KnownStrings* known = nullptr;  ///< the module's strings by address (zex::Module's)
  const detail::SiteTable* sites = nullptr;     ///< the module's throw sites; null: the process's registry
  uint32_t site_base = 0;                       ///< the offset of `sites`' ids
  std::optional<SourceLocation> launch_site;    ///< the host line of the launch
  /// The launch's work-group size (0: unknown): a numbered site stores only the global id, and the
  /// group and local ids follow from it (launches without a global offset).
  uint32_t group_size[3] = {0, 0, 0};
};

/// One stream's report and claim word. A plain value: whoever acquired it releases it.
struct Slot {
  zex_report_t* report = nullptr;  ///< host USM; the device writes it, the host reads it
  uint32_t* claim = nullptr;       ///< device USM (ZEX_CLAIM_BYTES: claim word, thrower count); never dereference on the host
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
  /// USM bytes one slot (one stream) costs: its report plus its claim area (claim word and thrower
  /// count, ZEX_CLAIM_BYTES).
  static constexpr size_t kBytesPerSlot = sizeof(zex_report_t) + ZEX_CLAIM_BYTES;

  /// Names the kernel of a launch id, for the exception's message; `ctx` is the caller's (the C
  /// API's zex_slot_check_with). Called once, before the report is read, with thrown_launch_id().
  using KernelNameFn = std::string (*)(const void* ctx, uint64_t launch_id);

  /// Not usually called directly: Device::slab_pool() returns the pool of a context+device.
  /// `compute_ordinal` is a command queue group of the device that can copy and fill.
  SlabPool(ze_context_handle_t context, ze_device_handle_t device, std::string device_name,
           uint32_t compute_ordinal);
  SlabPool(const SlabPool&) = delete;
  SlabPool& operator=(const SlabPool&) = delete;
  ~SlabPool();

  /// A free slot with an empty report and a zero claim word; grows the pool by one slab (two USM
  /// allocations) when none is free.
  /// @throws ZeError naming the call that failed if a USM allocation or the claim words' initial
  ///         fill fails
  Slot acquire();

  /// Returns a slot to the pool. The caller guarantees no kernel still uses it. A throw that was never
  /// checked is discarded here: its claim word is reset (on the pool's own command list, waited for)
  /// before the slot can go to a new owner; if that reset fails, the slot is kept out of the pool.
  void release(const Slot& s) noexcept;

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

  /// Appends the reset of `s`'s claim word and thrower count (a ZEX_CLAIM_BYTES fill with 0) to `list`, which may be any
  /// command list of this device (regular or immediate). The fill signals `signal` if given and
  /// waits for `wait` if given, so that a runtime can order later launches after it. Call it once
  /// after reading a report, before the next launch that uses the slot; check() does it for you.
  /// @throws ZeError
  void append_reset(ze_command_list_handle_t list, const Slot& s, ze_event_handle_t signal = nullptr,
                    ze_event_handle_t wait = nullptr) const;

  /// After the runtime has synchronized the launches that use `s`: returns if nothing was thrown;
  /// otherwise reads the report, resets the claim word (appended to `reset_list` if given, else done
  /// at once on the pool's own command list), clears the report and throws the KernelException.
  /// `kernel_name_of(launch_id)` names the kernel of a launch; `launch_level` is the debug level it
  /// was launched with (used only if the report's own level is corrupt). If the reset cannot be
  /// appended, the report is kept (a later check raises it) and the ZeError is thrown instead.
  /// `sites`, if given, is the throw-site table of the module the kernel came from
  /// (detail::link_module); without it a report of a numbered site says "unknown throw site N".
  /// @throws KernelException if a work-item threw; ZeError if the reset fails
  template <class NameOf,
            class = std::enable_if_t<std::is_invocable_r_v<std::string, NameOf&, uint64_t>>>
  void check(const Slot& s, NameOf&& kernel_name_of, ze_command_list_handle_t reset_list = nullptr,
             int launch_level = 1, const detail::SiteTable* sites = nullptr) {
    if (!thrown(s)) return;
    ThrowOrigin o;
    o.kernel_name = kernel_name_of(thrown_launch_id(s));
    o.launch_level = launch_level;
    o.sites = sites;
    raise(s, o, reset_list);
  }

  /// check() for a runtime that launched one kernel (or knows which one) since its last check.
  /// @throws KernelException, ZeError
  void check(const Slot& s, std::string_view kernel_name, ze_command_list_handle_t reset_list = nullptr,
             int launch_level = 1, const detail::SiteTable* sites = nullptr) {
    if (!thrown(s)) return;
    ThrowOrigin o;
    o.kernel_name = std::string(kernel_name);
    o.launch_level = launch_level;
    o.sites = sites;
    raise(s, o, reset_list);
  }

  /// The launch id the report of `s` names (the launch that threw), for the launcher to look up what
  /// it knows about that launch (ThrowOrigin). Meaningful once thrown(s).
  static uint64_t thrown_launch_id(const Slot& s) noexcept { return s.report->launch_id; }

  /// The one path from a thrown report to an exception, used by check() and zex::Stream
  /// (src/runtime/report_reading.cpp): copies and decodes `s`'s report (strings validated and
  /// bounded; a numbered site named from `origin.sites` or, without it, from the process's registry of
  /// tables, detail::find_site_table), reads the thrower count, appends the claim word's reset to
  /// `reset_list` (signalling `signal`; on the pool's own list, waited for, when `reset_list` is
  /// null), and only then clears the report. Returns what the exception will say: the report's
  /// content with `origin`'s.
  /// @throws ZeError if the reset cannot be appended (the report is then kept); std::bad_alloc
  KernelExceptionInfo read_and_reset(const Slot& s, const ThrowOrigin& origin, ze_command_list_handle_t reset_list,
                                     ze_event_handle_t signal = nullptr);

  /// read_and_reset() with the kernel named by `kernel_name_of(ctx, thrown_launch_id(s))` (called
  /// once, before the report is read).
  /// @throws as read_and_reset()
  KernelExceptionInfo read_and_reset(const Slot& s, KernelNameFn kernel_name_of, const void* ctx,
                                     int launch_level, ze_command_list_handle_t reset_list,
                                     ze_event_handle_t signal = nullptr,
                                     const detail::KnownStrings* known = nullptr,
                                     const detail::SiteTable* sites = nullptr, uint32_t site_base = 0) {
    ThrowOrigin o;
    if (kernel_name_of) o.kernel_name = kernel_name_of(ctx, thrown_launch_id(s));
    o.launch_level = launch_level;
    o.known = known;
    o.sites = sites;
    o.site_base = site_base;
    return read_and_reset(s, o, reset_list, signal);
  }

  /// Like read_and_reset() without decoding: for a report nobody will read (a stream destroyed
  /// with an exception pending).
  /// @throws ZeError if the reset cannot be appended (the report is then kept)
  void discard(const Slot& s, ze_command_list_handle_t reset_list, ze_event_handle_t signal = nullptr);

  /// Resets `s`'s claim word now, on the pool's own command list, and waits for it.
  /// @throws ZeError
  void reset_now(const Slot& s);

  /// USM allocations this pool holds for slots (two per slab).
  size_t usm_allocations() const;
  /// Slots handed out and not released.
  size_t live_slots() const;
  /// Slots the current slabs hold.
  size_t capacity() const;

  ze_context_handle_t context() const noexcept { return ctx_; }
  ze_device_handle_t device() const noexcept { return dev_; }
  const std::string& device_name() const noexcept { return device_name_; }

 private:
  struct Impl;

  [[noreturn]] void raise(const Slot& s, const ThrowOrigin& origin, ze_command_list_handle_t reset_list);

  ze_context_handle_t ctx_;
  ze_device_handle_t dev_;
  std::string device_name_;
  std::unique_ptr<Impl> impl_;
};

/// An owned slot: acquires on construction, releases (SlabPool::release) on destruction. Move-only,
/// so the lower-level API's right use is the easy one: a slot cannot be released twice or forgotten,
/// and a throw nobody checked is discarded and reset when the owner goes away. Destroy it only once
/// no launch uses the slot (as for release()).
///
///     zex::UniqueSlot slot(dev.slab_pool());
///     zex_state_t st = slot.state(launch_id);
///     ... launch, synchronize ...
///     slot.check("kernel_name", my_list);
class UniqueSlot {
 public:
  UniqueSlot() noexcept = default;
  /// @throws ZeError as SlabPool::acquire()
  explicit UniqueSlot(SlabPool& pool) : pool_(&pool), slot_(pool.acquire()) {}
  /// Takes ownership of `s`, acquired earlier from `pool` with SlabPool::acquire().
  static UniqueSlot adopt(SlabPool& pool, const Slot& s) noexcept { return UniqueSlot(pool, s); }
  UniqueSlot(UniqueSlot&& o) noexcept : pool_(o.pool_), slot_(o.slot_) {
    o.pool_ = nullptr;
    o.slot_ = Slot{};
  }
  UniqueSlot& operator=(UniqueSlot&& o) noexcept {
    if (this != &o) {
      reset();
      pool_ = o.pool_;
      slot_ = o.slot_;
      o.pool_ = nullptr;
      o.slot_ = Slot{};
    }
    return *this;
  }
  UniqueSlot(const UniqueSlot&) = delete;
  UniqueSlot& operator=(const UniqueSlot&) = delete;
  ~UniqueSlot() { reset(); }

  /// Returns the slot to its pool now (nothing if empty).
  void reset() noexcept {
    if (pool_ && slot_) pool_->release(slot_);
    pool_ = nullptr;
    slot_ = Slot{};
  }
  /// Gives up ownership: the caller must release the returned slot itself.
  Slot release() noexcept {
    Slot s = slot_;
    pool_ = nullptr;
    slot_ = Slot{};
    return s;
  }

  const Slot& get() const noexcept { return slot_; }
  SlabPool* pool() const noexcept { return pool_; }
  explicit operator bool() const noexcept { return static_cast<bool>(slot_); }
  /// SlabPool::state() of this slot.
  zex_state_t state(uint64_t launch_id) const noexcept { return SlabPool::state(slot_, launch_id); }
  /// SlabPool::thrown() of this slot (false when empty).
  bool thrown() const noexcept { return slot_ && SlabPool::thrown(slot_); }
  /// SlabPool::check() on this slot; does nothing when empty.
  /// @throws KernelException, ZeError
  template <class NameOf>
  void check(NameOf&& kernel_name_of, ze_command_list_handle_t reset_list = nullptr, int launch_level = 1,
             const detail::SiteTable* sites = nullptr) {
    if (pool_ && slot_) pool_->check(slot_, std::forward<NameOf>(kernel_name_of), reset_list, launch_level, sites);
  }

 private:
  UniqueSlot(SlabPool& pool, const Slot& s) noexcept : pool_(&pool), slot_(s) {}
  SlabPool* pool_ = nullptr;
  Slot slot_;
};

}  // namespace zex
