// zex::Stream: an in-order immediate command list plus its report slot. launch() appends exactly one
// Level Zero command; synchronize() waits once and, only if a work-item threw, decodes the report,
// resets the slot and throws zex::KernelException (DESIGN.md §3).
#pragma once

#include <zex/abi.h>
#include <zex/context.hpp>
#include <zex/error.hpp>
#include <zex/exception.hpp>
#include <zex/module.hpp>
#include <zex/slab.hpp>

#include <level_zero/ze_api.h>

#include <array>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace zex {

/// Three extents (x, y, z), each at least 0 and below 2^32. Built from any integers, so that
/// `cfg.groups = {n / 256, 1, 1}` compiles with a size_t n; omitted extents are 1 (`{64}` is
/// {64, 1, 1}).
struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;

  constexpr Dim3() = default;
  /// @throws std::invalid_argument if an extent is negative or does not fit in 32 bits
  template <class X, class Y = uint32_t, class Z = uint32_t>
  Dim3(X x_, Y y_ = 1, Z z_ = 1) : x(narrow(x_)), y(narrow(y_)), z(narrow(z_)) {}  // NOLINT: implicit on purpose

  uint32_t& operator[](size_t i) noexcept { return i == 0 ? x : i == 1 ? y : z; }
  uint32_t operator[](size_t i) const noexcept { return i == 0 ? x : i == 1 ? y : z; }
  bool operator==(const Dim3& o) const noexcept { return x == o.x && y == o.y && z == o.z; }
  bool operator!=(const Dim3& o) const noexcept { return !(*this == o); }

 private:
  template <class T>
  static uint32_t narrow(T v) {
    static_assert(std::is_integral<T>::value, "zex::Dim3: extents are integers");
    bool negative = false;
    if constexpr (std::is_signed<T>::value) negative = v < 0;
    if (negative || static_cast<unsigned long long>(v) > 0xffffffffull)
      throw std::invalid_argument("zex: a launch extent (" + std::to_string(v) +
                                  ") is negative or does not fit in 32 bits");
    return static_cast<uint32_t>(v);
  }
};

/// How to launch: the number of work-groups and their size in each dimension, and the debug level
/// (0, 1 or 2; -1 = the stream's default, from ZEX_DEBUG_LEVEL).
struct LaunchConfig {
  Dim3 groups;      ///< work-groups in x, y, z
  Dim3 group_size;  ///< work-items per work-group in x, y, z
  int debug_level = -1;
};

/// A __local (work-group local memory) kernel argument of `bytes` bytes: pass zex::local(n).
struct LocalMemory {
  size_t bytes;
};
inline LocalMemory local(size_t bytes) noexcept { return LocalMemory{bytes}; }

namespace detail {

struct EnvLevel {
  int level = 1;
  std::string error;  // non-empty if ZEX_DEBUG_LEVEL is set to something else than 0, 1 or 2
};

inline EnvLevel read_env_level() {
  EnvLevel e;
  const char* v = std::getenv("ZEX_DEBUG_LEVEL");
  if (!v || !*v) return e;  // unset (or empty): the default, 1
  if ((v[0] == '0' || v[0] == '1' || v[0] == '2') && v[1] == '\0') {
    e.level = v[0] - '0';
  } else {
    e.error = std::string("zex: the environment variable ZEX_DEBUG_LEVEL is set to '") + v +
              "', which is not a debug level: set it to 0, 1 or 2, or unset it for the default (1)";
  }
  return e;
}

[[noreturn]] __attribute__((noinline, cold)) inline void throw_arg_count(const std::string& kernel,
                                                                         uint32_t expected, size_t given) {
  if (expected == 0)
    throw std::invalid_argument("zex: kernel '" + kernel +
                                "' has no parameters; a kernel launched through zex takes a zex_state_t "
                                "as its last parameter");
  throw std::invalid_argument("zex: kernel '" + kernel + "' expects " + std::to_string(expected - 1) +
                              " argument(s) plus the trailing zex_state_t (" + std::to_string(expected) +
                              " parameters in all), but the launch passed " + std::to_string(given) +
                              " argument(s)");
}

[[noreturn]] __attribute__((noinline, cold)) inline void throw_arg_error(ze_result_t r, const std::string& kernel,
                                                                         uint32_t index, size_t size) {
  throw ZeError(r, "zeKernelSetArgumentValue",
                "setting argument " + std::to_string(index) + " (" + std::to_string(size) +
                    " bytes) of kernel '" + kernel + "'");
}

// The driver rejected a scalar's size: do what a C call through a prototype does and convert the
// value to the parameter's width, if it fits (a size_t for a uint, a double for a float).
template <class T>
__attribute__((noinline, cold)) void set_arg_converted(ze_kernel_handle_t k, uint32_t i, const T& v, ze_result_t r,
                                                       const std::string& kernel) {
  if (r == ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE) {
    if constexpr (std::is_integral<T>::value && !std::is_same<T, bool>::value) {
      if (sizeof(T) == 8) {
        const bool fits = std::is_signed<T>::value
                              ? (static_cast<long long>(v) >= INT32_MIN && static_cast<long long>(v) <= UINT32_MAX)
                              : static_cast<unsigned long long>(v) <= UINT32_MAX;
        const uint32_t w = static_cast<uint32_t>(v);
        if (fits && zeKernelSetArgumentValue(k, i, sizeof w, &w) == ZE_RESULT_SUCCESS) return;
      } else {
        const uint64_t w = std::is_signed<T>::value ? static_cast<uint64_t>(static_cast<int64_t>(v))
                                                    : static_cast<uint64_t>(v);
        if (zeKernelSetArgumentValue(k, i, sizeof w, &w) == ZE_RESULT_SUCCESS) return;
      }
    } else if constexpr (std::is_same<T, double>::value) {
      const float f = static_cast<float>(v);
      if (zeKernelSetArgumentValue(k, i, sizeof f, &f) == ZE_RESULT_SUCCESS) return;
    } else if constexpr (std::is_same<T, float>::value) {
      const double d = v;
      if (zeKernelSetArgumentValue(k, i, sizeof d, &d) == ZE_RESULT_SUCCESS) return;
    }
  }
  throw_arg_error(r, kernel, i, sizeof(T));
}

template <class T>
inline void set_arg(ze_kernel_handle_t k, uint32_t i, const T& v, const std::string& kernel) {
  static_assert(std::is_trivially_copyable<T>::value,
                "zex: kernel arguments are copied bytewise; pass pointers, scalars or plain structs");
  ze_result_t r = zeKernelSetArgumentValue(k, i, sizeof(T), &v);
  if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) set_arg_converted(k, i, v, r, kernel);
}
inline void set_arg(ze_kernel_handle_t k, uint32_t i, const LocalMemory& v, const std::string& kernel) {
  ze_result_t r = zeKernelSetArgumentValue(k, i, v.bytes, nullptr);
  if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) throw_arg_error(r, kernel, i, v.bytes);
}

}  // namespace detail

/// The default debug level: ZEX_DEBUG_LEVEL (0, 1 or 2), 1 when unset.
/// @throws std::invalid_argument naming the variable if it holds anything else
inline int default_debug_level() {
  detail::EnvLevel e = detail::read_env_level();
  if (!e.error.empty()) throw std::invalid_argument(e.error);
  return e.level;
}

/// An in-order immediate command list and its report slot. Move-only. One thread uses a stream at
/// a time; different streams may be used from different threads at once.
///
/// Waiting: Debian's Level Zero loader implements API 1.4, which has no
/// zeCommandListHostSynchronize. So each launch signals one of the stream's events (a ring of
/// kEvents in the stream's own event pool) and waits for the previous launch's event, both as part
/// of its one appended command; synchronize() waits on the newest event: still one host wait and no
/// append, and the launches run in order whatever the driver's default for immediate lists.
class Stream {
 public:
  /// Creates the command list and event pool on `dev` and takes a slot from the device's slab
  /// pool. Reads ZEX_DEBUG_LEVEL (a bad value is reported by the first launch that uses it).
  /// @throws ZeError
  explicit Stream(const Device& dev) : s_(std::make_unique<Impl>(dev)) {}

  Stream(Stream&&) noexcept = default;
  Stream& operator=(Stream&&) noexcept = default;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  /// Waits for the stream's work, then returns the slot. An exception nobody synchronized for is
  /// dropped. Never throws.
  ~Stream() = default;

  /// Sets `args` as the kernel's arguments, the stream's zex_state_t as its last argument, and
  /// appends the launch (one Level Zero command). Pass device pointers, scalars, plain structs, or
  /// zex::local(bytes) for a __local parameter. An integer or floating-point scalar whose size the
  /// driver rejects is converted to the other width if its value fits (a size_t for a uint, a
  /// double for a float), as a C call would.
  /// @throws std::invalid_argument (wrong argument count, naming the kernel and the counts; bad
  ///         debug level or ZEX_DEBUG_LEVEL; a zero in groups or group_size); ZeError (build failure
  ///         with the build log, a rejected argument, a failed append)
  template <class... Args>
  void launch(const Kernel& kernel, const LaunchConfig& cfg, const Args&... args) {
    Impl& s = live();
    const int level = s.level_for(cfg.debug_level);
    Kernel::State& ks = kernel.live();
    std::lock_guard<std::mutex> lock(ks.mu);
    Kernel::Level& l = ks.at(level);
    constexpr size_t n = sizeof...(Args);
    if (__builtin_expect(l.num_args != n + 1, 0)) detail::throw_arg_count(*ks.name, l.num_args, n);
    if (__builtin_expect((cfg.groups.x == 0) | (cfg.groups.y == 0) | (cfg.groups.z == 0), 0))
      throw_zero_groups(*ks.name);
    if (l.group[0] != cfg.group_size.x || l.group[1] != cfg.group_size.y || l.group[2] != cfg.group_size.z)
      set_group_size(l, cfg, *ks.name);
    uint32_t i = 0;
    (void)i;
    (detail::set_arg(l.kernel, i++, args, *ks.name), ...);
    const uint64_t id = s.next_id;
    const zex_state_t state = SlabPool::state(s.slot, id);
    detail::set_arg(l.kernel, static_cast<uint32_t>(n), state, *ks.name);
    const ze_group_count_t groups{cfg.groups.x, cfg.groups.y, cfg.groups.z};
    ze_event_handle_t ev = s.next_event();
    ze_event_handle_t prev = s.previous_event();
    ze_result_t r = zeCommandListAppendLaunchKernel(s.list, l.kernel, &groups, ev, prev ? 1 : 0, prev ? &prev : nullptr);
    if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) throw_launch_error(r, *ks.name);
    ++s.seq;
    ++s.next_id;
    Impl::Entry& e = s.ring[id % kRing];
    e.id = id;
    e.level = level;
    e.kernel = ks.name;
  }

  /// Waits for everything launched so far (one host wait). If a work-item threw, decodes the
  /// report of the first launch that threw, clears it, appends the claim word's reset, and throws.
  /// When nothing was thrown it appends nothing, copies nothing and waits no more.
  /// @throws KernelException; ZeError if the wait fails
  void synchronize() {
    Impl& s = live();
    if (s.seq != s.done) s.wait_all();
    if (__builtin_expect(SlabPool::thrown(s.slot), 0)) s.raise();
  }

  /// True if every launch so far has finished: one zeEventQueryStatus on the newest launch's event,
  /// no wait. It does not look for exceptions; synchronize() does (and then returns at once).
  /// @throws ZeError if the query fails
  bool ready() const {
    const Impl& s = live();
    ze_event_handle_t e = s.previous_event();
    if (!e) return true;
    ze_result_t r = zeEventQueryStatus(e);
    if (r == ZE_RESULT_NOT_READY) return false;
    check(r, "zeEventQueryStatus", "polling a zex::Stream");
    return true;
  }

  /// The raw command list (an immediate list), for interop. Work you append to it yourself is
  /// ordered with the stream's launches; synchronize() waits only for the stream's own launches,
  /// so wait for your work with your own event.
  ze_command_list_handle_t handle() const noexcept { return s_ ? s_->list : nullptr; }
  /// The stream's slot (lower-level API).
  const Slot& slot() const { return live().slot; }
  /// The device the stream runs on.
  const Device& device() const { return live().dev; }
  /// The debug level launches with debug_level = -1 use (from ZEX_DEBUG_LEVEL when the stream was
  /// created).
  /// @throws std::invalid_argument if ZEX_DEBUG_LEVEL was invalid
  int default_debug_level() const { return live().level_for(-1); }
  /// Id the next launch gets (launch ids count from 1 per stream).
  uint64_t next_launch_id() const { return live().next_id; }

  /// How many launches back the stream remembers which kernel a launch id belongs to; an exception
  /// from an older launch (more than this many launches without synchronize) names no kernel.
  static constexpr size_t kRing = 64;
  /// Events per stream: launches in flight beyond this many make launch() wait for the oldest.
  static constexpr uint32_t kEvents = 64;

 private:
  struct Impl {
    struct Entry {
      uint64_t id = 0;
      int level = 1;
      std::shared_ptr<const std::string> kernel;
    };

    Device dev;
    SlabPool* pool;
    Slot slot;
    ze_command_list_handle_t list = nullptr;
    ze_event_pool_handle_t event_pool = nullptr;
    std::array<ze_event_handle_t, kEvents> events{};
    uint64_t seq = 0;   // signals appended so far; the next one uses events[seq % kEvents]
    uint64_t done = 0;  // signals waited for and reset: [done, seq) are pending
    uint64_t next_id = 1;
    detail::EnvLevel env;
    std::array<Entry, kRing> ring{};

    explicit Impl(const Device& d) : dev(d), pool(&d.slab_pool()), env(detail::read_env_level()) {
      slot = pool->acquire();
      ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, d.compute_ordinal(), 0, 0,
                                 ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
      ze_result_t r = zeCommandListCreateImmediate(d.context_handle(), d.handle(), &qd, &list);
      if (r != ZE_RESULT_SUCCESS) {
        pool->release(slot);
        throw ZeError(r, "zeCommandListCreateImmediate", "creating a zex::Stream's command list");
      }
      ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, kEvents};
      ze_device_handle_t h = d.handle();
      r = zeEventPoolCreate(d.context_handle(), &pd, 1, &h, &event_pool);
      if (r != ZE_RESULT_SUCCESS) {
        zeCommandListDestroy(list);
        pool->release(slot);
        throw ZeError(r, "zeEventPoolCreate", "creating a zex::Stream's events");
      }
    }
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl() {
      // The slot may only go back to the pool once no kernel can write it any more.
      bool idle = true;
      try {
        if (seq != done) wait_all();
        if (SlabPool::thrown(slot)) {
          // An exception nobody synchronized for: clean the slot for its next owner.
          std::memset(static_cast<void*>(slot.report), 0, sizeof(zex_report_t));
          pool->append_reset(list, slot);
          ze_event_handle_t ev = next_event();
          idle = zeCommandListAppendBarrier(list, ev, 0, nullptr) == ZE_RESULT_SUCCESS;
          if (idle) {
            ++seq;
            wait_all();
          }
        }
      } catch (...) {
        idle = false;
      }
      for (auto e : events)
        if (e) zeEventDestroy(e);
      zeEventPoolDestroy(event_pool);
      zeCommandListDestroy(list);
      // A slot whose state is unknown (the device failed) is leaked rather than handed to a new
      // stream that a late write could corrupt.
      if (idle) pool->release(slot);
    }

    // The event for the next signaling command. With kEvents signals pending, first waits for all
    // of them: an event may be reset only once the command that waits for it has run.
    ze_event_handle_t next_event() {
      if (__builtin_expect(seq - done >= kEvents, 0)) wait_all();
      ze_event_handle_t& e = events[seq % kEvents];
      if (__builtin_expect(e == nullptr, 0)) {
        ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, static_cast<uint32_t>(seq % kEvents),
                           ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
        check(zeEventCreate(event_pool, &ed, &e), "zeEventCreate", "creating a zex::Stream's event");
      }
      return e;
    }

    // The newest pending signal, which the next command waits for (chaining the stream in order), or
    // nullptr when everything has been waited for.
    ze_event_handle_t previous_event() const noexcept {
      return seq != done ? events[(seq - 1) % kEvents] : nullptr;
    }

    // Waits for every pending signal: one host wait on the newest. Each command waited for the one
    // before it, so the newest's completion means all have run (and observed their waits), and every
    // pending event can be reset.
    void wait_all() {
      ze_event_handle_t last = events[(seq - 1) % kEvents];
      ze_result_t r = zeEventHostSynchronize(last, UINT64_MAX);
      if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0))
        detail::throw_ze_error(r, "zeEventHostSynchronize", "waiting for a zex::Stream");
      for (uint64_t q = done; q < seq; ++q)
        check(zeEventHostReset(events[q % kEvents]), "zeEventHostReset", "resetting a zex::Stream's event");
      done = seq;
    }

    int level_for(int requested) const {
      if (requested == -1) {
        if (__builtin_expect(!env.error.empty(), 0)) throw std::invalid_argument(env.error);
        return env.level;
      }
      if (requested < -1 || requested > 2)
        throw std::invalid_argument("zex: LaunchConfig::debug_level is " + std::to_string(requested) +
                                    "; use 0, 1, 2, or -1 for the default (ZEX_DEBUG_LEVEL)");
      return requested;
    }

    const Entry* find(uint64_t id) const {
      const Entry& e = ring[id % kRing];
      return e.id == id && e.kernel ? &e : nullptr;
    }

    [[noreturn]] __attribute__((noinline, cold)) void raise() {
      const uint64_t id = slot.report->launch_id;
      const Entry* e = find(id);
      KernelExceptionInfo info = pool->take(
          slot, [&](uint64_t lid) { const Entry* f = find(lid); return f ? *f->kernel : std::string(); },
          e ? e->level : env.level);
      // The fill, then a barrier: later launches may throw again only once the word is 0 again. The
      // barrier signals an event so that the next synchronize (or the destructor) waits for both.
      pool->append_reset(list, slot);
      ze_event_handle_t ev = next_event();
      check(zeCommandListAppendBarrier(list, ev, 0, nullptr), "zeCommandListAppendBarrier",
            "ordering a zex claim word's reset before later launches");
      ++seq;
      throw KernelException(std::move(info));
    }
  };

  Impl& live() const {
    if (__builtin_expect(!s_, 0)) throw std::logic_error("zex: use of a moved-from zex::Stream");
    return *s_;
  }

  static void set_group_size(Kernel::Level& l, const LaunchConfig& cfg, const std::string& name) {
    const Dim3& g = cfg.group_size;
    if (g.x == 0 || g.y == 0 || g.z == 0) throw_zero_groups(name);
    check(zeKernelSetGroupSize(l.kernel, g.x, g.y, g.z), "zeKernelSetGroupSize",
          ("setting the group size of kernel '" + name + "'").c_str());
    l.group[0] = g.x;
    l.group[1] = g.y;
    l.group[2] = g.z;
  }

  [[noreturn]] __attribute__((noinline, cold)) static void throw_zero_groups(const std::string& name) {
    throw std::invalid_argument("zex: launch of kernel '" + name +
                                "': every component of LaunchConfig::groups and group_size must be at "
                                "least 1 (use {n, 1, 1} for one dimension)");
  }

  [[noreturn]] __attribute__((noinline, cold)) static void throw_launch_error(ze_result_t r, const std::string& name) {
    throw ZeError(r, "zeCommandListAppendLaunchKernel", "launching kernel '" + name + "'");
  }

  std::unique_ptr<Impl> s_;
};

}  // namespace zex
