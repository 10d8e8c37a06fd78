// zex::Stream: an in-order immediate command list plus its report slot. launch() appends exactly one
// Level Zero command; synchronize() waits once and, only if a work-item threw, takes the one path from
// report to exception (SlabPool::read_and_reset) and throws zex::KernelException (docs/design.md,
// "Streams"). The launch and synchronize paths are inline here; creation, destruction and raising
// are cold and compiled (src/stream.cpp).
#pragma once

#include <zex/abi.h>
#include <zex/context.hpp>
#include <zex/error.hpp>
#include <zex/exception.hpp>
#include <zex/module.hpp>
#include <zex/slab.hpp>

#include <level_zero/ze_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>


namespace zex {

namespace detail {
[[noreturn]] void throw_bad_extent(long long v);
[[noreturn]] void throw_bad_extent(unsigned long long v);
}  // namespace detail

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
    if constexpr (std::is_signed<T>::value) {
      if (v < 0 || static_cast<unsigned long long>(v) > 0xffffffffull) detail::throw_bad_extent(static_cast<long long>(v));
    } else {
      if (static_cast<unsigned long long>(v) > 0xffffffffull) detail::throw_bad_extent(static_cast<unsigned long long>(v));
    }
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

/// The LaunchConfig parameter of Stream::launch, with the host line of the call: implicitly built from
/// a LaunchConfig, or from the braced form a LaunchConfig takes (`{{n}, {64}}`, `{g, b, 2}`), its
/// default arguments are evaluated at the caller's line, so `stream.launch(k, cfg, ...)` records where
/// it was called without changing how it is called (C++17 has no std::source_location). The file is a
/// string literal of static storage, so recording it allocates nothing.
struct LaunchAt {
  LaunchConfig cfg;
  const char* file;
  uint32_t line;
  LaunchAt(const LaunchConfig& c, const char* f = __builtin_FILE(),  // NOLINT: implicit on purpose
           uint32_t l = __builtin_LINE()) noexcept
      : cfg(c), file(f), line(l) {}
  /// The braced forms of a LaunchConfig: groups, group size and (optionally) the debug level.
  LaunchAt(Dim3 groups, Dim3 group_size, int debug_level = -1,  // NOLINT: implicit on purpose
           const char* f = __builtin_FILE(), uint32_t l = __builtin_LINE()) noexcept
      : cfg{groups, group_size, debug_level}, file(f), line(l) {}
};

class Stream;

namespace detail {
// What a zex::Event shares with its stream: the event (its own one-event pool), the launch id of the
// mark, and the stream to raise through while the stream lives (src/stream.cpp).
struct EventState;
// The stream a stream's Events raise through, and the lock under which they do: the stream's
// destructor detaches it under the same lock, so that an Event never raises through a stream another
// thread is freeing (src/stream.cpp).
struct StreamLink;
}  // namespace detail

/// A mark in a stream's launches (Stream::record()): waiting on it waits for every launch recorded
/// before it. A cheap handle (copies share the mark). Waits on any thread; raising a launch's
/// exception is a use of the stream (one thread at a time, as for the stream's own calls).
class Event {
 public:
  Event() noexcept = default;
  /// Waits until every launch before the mark has finished. If one of them threw and the exception
  /// has not been raised yet (by Stream::synchronize or another wait), raises it here, exactly as
  /// Stream::synchronize() would have, and resets the stream's report: each exception is raised once,
  /// by whichever wait sees it first. A throw from a launch after the mark is left to later waits.
  /// Once the stream is destroyed, only waits.
  /// @throws KernelException; ZeError if the wait fails; std::logic_error on an empty Event, or if
  ///         it must raise while another thread uses the stream
  void synchronize();
  /// True if every launch before the mark has finished, without waiting or raising.
  /// @throws ZeError if the query fails; std::logic_error on an empty Event
  bool ready() const;
  /// The Level Zero event the mark signals (for interop: wait on it with your own commands).
  ze_event_handle_t handle() const noexcept;
  /// The first launch id after the mark (launches with smaller ids are before it).
  uint64_t mark_launch_id() const noexcept;
  explicit operator bool() const noexcept { return static_cast<bool>(s_); }

 private:
  friend class Stream;
  explicit Event(std::shared_ptr<detail::EventState> s) noexcept : s_(std::move(s)) {}
  std::shared_ptr<detail::EventState> s_;
};

/// A __local (work-group local memory) kernel argument of `bytes` bytes: pass zex::local(n).
struct LocalMemory {
  size_t bytes;
};
inline LocalMemory local(size_t bytes) noexcept { return LocalMemory{bytes}; }

/// One argument of Stream::launch_args(): `size` bytes at `value`, or a __local parameter of `size`
/// bytes when `value` is null.
struct KernelArg {
  size_t size = 0;
  const void* value = nullptr;
};

/// The default debug level: ZEX_DEBUG_LEVEL (0, 1 or 2), 1 when unset.
/// @throws std::invalid_argument naming the variable if it holds anything else
int default_debug_level();

namespace detail {

// Cold paths of a launch, compiled (src/stream.cpp): nothing is formatted unless something is wrong.
[[noreturn]] void throw_bad_signature(const std::string& kernel, uint32_t expected, size_t given,
                                     bool takes_state);
[[noreturn]] void throw_arg_error(ze_result_t r, const std::string& kernel, uint32_t index, size_t size);
// `lang`: whose spelling of the launch's fields the message uses (a binding passes its own, as the C API does).
[[noreturn]] void throw_zero_extent(const std::string& kernel, Language lang);
[[noreturn]] void throw_too_many_work_items(const std::string& kernel, const Dim3& groups, const Dim3& group_size);
[[noreturn]] void throw_launch_error(ze_result_t r, const std::string& kernel);
[[noreturn]] void throw_group_size_error(ze_result_t r, const std::string& kernel);
[[noreturn]] void throw_wrong_device(const std::string& kernel, const DeviceInfo& module_device,
                                     const DeviceInfo& stream_device);
// The driver rejected a scalar's size: do what a C call through a prototype does and convert the
// value to the parameter's width, if it fits (a size_t for a uint, a double for a float). The path of
// kernels whose parameter kinds the SPIR-V does not give.
void set_arg_converted(ze_kernel_handle_t k, uint32_t i, const void* v, size_t size, bool is_signed_int,
                       bool is_unsigned_int, bool is_float, ze_result_t r, const std::string& kernel);
// A scalar whose class or size is not its parameter's (`given` and `param` are param_kind bytes):
// an integer converts to an integer parameter if its value fits, a float to a float parameter; any
// other pair is a std::invalid_argument naming the kernel, the index and both types. A parameter of
// unknown kind takes the driver-size path above.
void set_arg_mismatched(ze_kernel_handle_t k, uint32_t i, const void* v, uint8_t given, bool is_signed,
                        uint8_t param, const std::string& kernel);

// The param_kind byte of a C++ argument type, at compile time; kOther (never checked) for pointers,
// structs, enums and bool (OpenCL kernels take no bool; the driver's size check stays theirs).
template <class T>
constexpr uint8_t arg_kind() {
  if constexpr (std::is_integral<T>::value && !std::is_same<T, bool>::value)
    return static_cast<uint8_t>(param_kind::kInt | sizeof(T));
  else if constexpr (std::is_floating_point<T>::value)
    return static_cast<uint8_t>(param_kind::kFloat | (sizeof(T) & param_kind::kSizeMask));
  else
    return param_kind::kOther;
}

template <class T>
inline void set_arg(ze_kernel_handle_t k, uint32_t i, const T& v, uint8_t param, const std::string& kernel) {
  static_assert(std::is_trivially_copyable<T>::value,
                "zex: kernel arguments are copied bytewise; pass pointers, scalars or plain structs");
  constexpr uint8_t given = arg_kind<T>();
  // A scalar costs one byte compare; pointers and structs none (the driver checks their size).
  if constexpr (given != param_kind::kOther) {
    if (__builtin_expect(param != given, 0))
      return set_arg_mismatched(k, i, &v, given, std::is_signed<T>::value, param, kernel);
  }
  ze_result_t r = zeKernelSetArgumentValue(k, i, sizeof(T), &v);
  if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0))
    set_arg_converted(k, i, &v, sizeof(T), std::is_integral<T>::value && std::is_signed<T>::value && !std::is_same<T, bool>::value,
                      std::is_integral<T>::value && std::is_unsigned<T>::value && !std::is_same<T, bool>::value,
                      std::is_floating_point<T>::value, r, kernel);
}
inline void set_arg(ze_kernel_handle_t k, uint32_t i, const LocalMemory& v, uint8_t, const std::string& kernel) {
  ze_result_t r = zeKernelSetArgumentValue(k, i, v.bytes, nullptr);
  if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) throw_arg_error(r, kernel, i, v.bytes);
}

}  // namespace detail

/// An in-order immediate command list and its report slot. Move-only. One thread uses a stream at
/// a time; different streams may be used from different threads at once.
///
/// Waiting (docs/design.md, "Waiting"), chosen once per driver: where the driver offers
/// zeCommandListHostSynchronize and in-order immediate lists, a launch appends the kernel with no
/// event and synchronize() is one host synchronize of the list (wait_path() == WaitPath::kList).
/// Elsewhere (Debian's loader implements API 1.4) each launch signals one of the stream's kEvents
/// events and waits for the previous launch's, as part of its one command, and synchronize() waits
/// on the newest event (WaitPath::kEvents). Either way: one append per launch, one wait per
/// synchronize, nothing appended or copied when nothing threw.
class Stream {
 public:
  /// How the stream waits for its launches.
  enum class WaitPath {
    kList,    ///< zeCommandListHostSynchronize on an in-order list; launches carry no event
    kEvents,  ///< each launch signals an event of the stream; synchronize waits on the newest
  };

  /// Creates the command list (and, on the event path, an event pool) on `dev` and takes a slot from
  /// the device's slab pool. Reads ZEX_DEBUG_LEVEL (a bad value is reported by the first launch that
  /// uses it).
  /// @throws ZeError
  explicit Stream(const Device& dev);

  Stream(Stream&&) noexcept;
  Stream& operator=(Stream&&) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  /// Waits for the stream's work, then returns the slot. An exception nobody synchronized for is
  /// dropped. Never throws.
  ~Stream();

  /// Sets `args` as the kernel's arguments, the stream's zex_state_t as its last argument, and
  /// appends the launch (one Level Zero command). Pass device pointers, scalars, plain structs, or
  /// zex::local(bytes) for a __local parameter. A scalar is checked against the parameter's type in
  /// the module's SPIR-V: an integer converts to an integer parameter of another width if its value
  /// fits (a size_t for a uint), a float to a float parameter (a double for a float); any other pair
  /// (a double for a uint, an int for a float, a value that does not fit) is refused.
  /// @throws std::invalid_argument (a scalar of the wrong type or that does not fit, naming the
  ///         kernel, the argument and both types; wrong argument count, naming the kernel and the counts; bad
  ///         debug level or ZEX_DEBUG_LEVEL; a zero in groups or group_size; 2^64 work-items or more); ZeError (build failure
  ///         with the build log, a rejected argument, a failed append)
  ///
  /// The call's file and line are recorded with the launch (LaunchAt, from the LaunchConfig) and shown
  /// by the KernelException of a throw in it (launch_site()).
  template <class... Args>
  void launch(const Kernel& kernel, LaunchAt at, const Args&... args) {
    const LaunchConfig& cfg = at.cfg;
    Impl& s = live();
    Impl::Use use(s);
    const int level = s.level_for(cfg.debug_level);
    Kernel::State& ks = kernel.live();
    if (__builtin_expect(ks.device != s.device, 0)) detail::throw_wrong_device(*ks.name, *ks.device, *s.device);
    detail::LockGuard lock(ks.mu);
    Kernel::Level& l = ks.at(level);
    constexpr size_t n = sizeof...(Args);
    check_launch(ks, l, n, cfg);
    // param_kinds has num_args (= n + 1) entries once the level exists (Kernel::State::create).
    const uint8_t* kinds = ks.param_kinds.data();
    (void)kinds;
    uint32_t i = 0;
    (void)i;
    ((detail::set_arg(l.kernel, i, args, kinds[i], *ks.name), ++i), ...);
    append_launch(s, kernel, ks, l, level, static_cast<uint32_t>(n), cfg.groups, at.file, at.line);
  }

  /// launch() with arguments known only at run time (language bindings, the C API): `count`
  /// arguments, each passed as its bytes; the scalar type check of launch() cannot apply (there are
  /// no C++ types), so the driver's size check is the only one. The argument count, debug level and
  /// extents are checked as by launch(). Compiled (src/stream.cpp).
  ///
  /// `file` and `line` are the launch site a throw reports (KernelException::launch_site()): the
  /// binding's caller, e.g. the C program's __FILE__/__LINE__ or the Python caller's frame; null for
  /// none. The pointer is kept, not copied, until the stream has synchronized past the launch (a
  /// launch from the same pointer and line as the last extends its run): pass a string literal or one
  /// that lives at least that long.
  /// @throws InvalidArgument, ZeError as launch()
  void launch_args(const Kernel& kernel, const LaunchConfig& cfg, const KernelArg* args, size_t count,
                   const char* file = nullptr, uint32_t line = 0);

  /// launch_args() over a binding's own argument type: any `Arg` with the members `size` and `value`
  /// of KernelArg (the C API's zex_arg_t), read in place. `count` is checked against the kernel's
  /// parameters before `args` is read at all: a wrong count, however large, reads nothing and
  /// allocates nothing (the C API copied a caller's array first, issue 24).
  ///
  /// The checks are launch()'s, the one copy of them for every binding; `lang` is the language whose
  /// names for the launch's fields their messages use (C: zex_launch_config_t.debug_level, Python: the
  /// debug_level= keyword), as format_kernel_exception() does for the hints.
  /// @throws InvalidArgument, ZeError as launch()
  template <class Arg>
  void launch_args(const Kernel& kernel, const LaunchConfig& cfg, const Arg* args, size_t count,
                   const char* file = nullptr, uint32_t line = 0, Language lang = Language::Cpp) {
    // launch()'s steps (check_launch, append_launch) with a loop instead of a pack.
    Impl& s = live();
    Impl::Use use(s);
    const int level = s.level_for(cfg.debug_level, lang);
    Kernel::State& ks = kernel.live();
    if (__builtin_expect(ks.device != s.device, 0)) detail::throw_wrong_device(*ks.name, *ks.device, *s.device);
    detail::LockGuard lock(ks.mu);
    Kernel::Level& l = ks.at(level);
    check_launch(ks, l, count, cfg, lang);
    const uint32_t n = static_cast<uint32_t>(count);  // == l.num_args - 1 now
    for (uint32_t i = 0; i < n; ++i) {
      ze_result_t r = zeKernelSetArgumentValue(l.kernel, i, args[i].size, args[i].value);
      if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) detail::throw_arg_error(r, *ks.name, i, args[i].size);
    }
    // A null file: no launch site (a binding whose caller is unknown; its own line would mislead).
    append_launch(s, kernel, ks, l, level, n, cfg.groups, file, file ? line : 0);
  }

  /// Waits for everything launched so far (one host wait). If a work-item threw, decodes the
  /// report of the first launch that threw, appends the claim word's reset, clears the report, and
  /// throws. When nothing was thrown it appends nothing, copies nothing and waits no more.
  /// @throws KernelException; ZeError if the wait fails
  void synchronize() {
    Impl& s = live();
    Impl::Use use(s);
    if (s.seq != s.done) s.wait_all();
    s.after_wait();
  }

  /// synchronize() that gives up after `timeout` (any std::chrono::duration): false if the stream's
  /// work has not finished by then (nothing changed; the stream stays usable: call again, or
  /// synchronize()); true once it has, after raising like synchronize() if a work-item threw. A kernel
  /// that never finishes can thus be abandoned without blocking the thread forever. A template over the
  /// duration, read through its `count()` and `period`, so that this header need not include <chrono>
  /// (a tenth of its parse time, docs/benchmarks.md).
  /// @throws KernelException; ZeError if the wait fails
  template <class Duration>
  bool synchronize_for(const Duration& timeout) {
    using Period = typename Duration::period;
    const long double ns = static_cast<long double>(timeout.count()) * Period::num * 1e9L / Period::den;
    return synchronize_for_ns(ns <= 0 ? 0 : ns >= 1.8e19L ? UINT64_MAX - 1 : static_cast<uint64_t>(ns));
  }

  /// synchronize_for() with the timeout in nanoseconds (UINT64_MAX: no timeout).
  /// @throws KernelException; ZeError if the wait fails
  bool synchronize_for_ns(uint64_t timeout_ns) {
    Impl& s = live();
    Impl::Use use(s);
    if (s.seq != s.done && !s.wait_all(timeout_ns)) return false;
    s.after_wait();
    return true;
  }

  /// True if every launch so far has finished, without waiting (a zeCommandListHostSynchronize with
  /// timeout 0, or a zeEventQueryStatus on the newest launch's event). It does not look for
  /// exceptions; synchronize() does (and then returns at once).
  /// @throws ZeError if the query fails
  bool ready() const {
    Impl& s = live();
    Impl::Use use(s);
    return s.seq == s.done || s.query();
  }

  /// Makes every later launch of the stream (and its other commands) wait for `event`, signalled by
  /// the runtime's own work: the event joins the wait list of the stream's next command, so this
  /// appends nothing. The event must stay valid until that command has run.
  /// @throws std::invalid_argument if `event` is null; std::bad_alloc
  void wait(ze_event_handle_t event) {
    Impl& s = live();
    Impl::Use use(s);
    if (__builtin_expect(event == nullptr, 0)) throw_null_event("wait");
    s.user_waits.push_back(event);
  }

  /// Marks the stream's position: the returned Event is signalled once every launch so far has
  /// finished, and its synchronize() raises a throw of those launches (Event::synchronize). One
  /// barrier appended; the event comes from its own one-event pool (cold: not per launch).
  /// @throws ZeError if the event cannot be created or the barrier appended
  Event record();

  /// Makes every later command of this stream wait for `event` (recorded on any stream, usually
  /// another): ordering only, nothing is raised here; the recording stream's exception stays with
  /// that stream's waits. Appends nothing; the stream keeps the event alive until it has waited past it.
  /// @throws std::logic_error on an empty Event; std::bad_alloc
  void wait(const Event& event);

  /// Signals `event` once everything launched on the stream so far has finished: one barrier appended
  /// (which also carries any event given to wait()). For ordering the runtime's own work after the
  /// stream's.
  /// @throws std::invalid_argument if `event` is null; ZeError if the append fails
  void signal(ze_event_handle_t event) {
    Impl& s = live();
    Impl::Use use(s);
    if (__builtin_expect(event == nullptr, 0)) throw_null_event("signal");
    s.append_signal(event);
  }

  /// The raw command list (an immediate list), for interop. Work you append to it yourself is
  /// ordered with the stream's launches only on the list path (an in-order list); synchronize() waits
  /// only for the stream's own launches there too on the event path. To order your work, use wait()
  /// and signal().
  ze_command_list_handle_t handle() const noexcept { return s_ ? s_->list : nullptr; }
  /// The stream's slot (lower-level API).
  const Slot& slot() const { return live().slot; }
  /// The device the stream runs on.
  const Device& device() const { return live().dev; }
  /// How this stream waits (chosen from what the driver offers; ZEX_WAIT=events forces kEvents).
  WaitPath wait_path() const { return live().host_sync ? WaitPath::kList : WaitPath::kEvents; }
  /// The debug level launches with debug_level = -1 use (from ZEX_DEBUG_LEVEL when the stream was
  /// created).
  /// @throws std::invalid_argument if ZEX_DEBUG_LEVEL was invalid
  int default_debug_level() const { return live().level_for(-1); }
  /// Id the next launch gets (launch ids count from 1 per stream).
  uint64_t next_launch_id() const { return live().next_id; }

  /// Events per stream on the event path, at first: with this many launches in flight, a launch
  /// first waits for the oldest half of them (the device keeps the newest half queued). Unless a
  /// launch in flight waits for a runtime's event (wait()) and the oldest half has not finished:
  /// then the stream doubles its events instead (up to kMaxEvents), so that launches queued behind
  /// an event that only the calling thread will signal never deadlock it.
  static constexpr uint32_t kEvents = 64;
  /// The most events a stream grows to; past it a launch waits as above (docs/integration.md §7).
  static constexpr uint32_t kMaxEvents = 1u << 16;

 private:
  struct Impl {
    // The launches since the last synchronize, one entry per run of launches of the same kernel at
    // the same level: names the kernel of any launch id for the exception, and keeps each kernel
    // (and its module) alive until the stream has synchronized past its launches.
    struct Run {
      uint64_t first_id;
      int level;
      std::shared_ptr<Kernel::State> kernel;
      const char* file;  // the launch site (LaunchAt): a string literal, compared by address
      uint32_t line;
      uint32_t group[3];  // the work-group size: a report's group and local ids derive from its global id
    };
    // The signal and waits of the next appended command.
    struct Command {
      ze_event_handle_t signal = nullptr;
      ze_event_handle_t prev = nullptr;
      uint32_t num_waits = 0;
      ze_event_handle_t* waits = nullptr;
    };

    Device dev;
    const detail::DeviceInfo* device = nullptr;  // &dev.info(), compared with each launched kernel's
    SlabPool* pool;
    Slot slot;
    ze_command_list_handle_t list = nullptr;
    detail::ze_newer::CommandListHostSynchronizeFn host_sync = nullptr;  // non-null: the list path
    ze_event_pool_handle_t event_pool = nullptr;                        // the event path only
    std::vector<ze_event_pool_handle_t> grown_pools;                    // pools added by grow()
    bool chain = true;              // event path on a list not known in order: each command waits for the last
    bool unwaited_barrier = false;  // event path: a signal() barrier no ring event follows yet
    // The event ring (a power of two in size, kEvents at first). Commands appended so far and
    // commands known finished: [done, seq) may still run. On the event path every command signals
    // ring(seq); [done, seq) are the unreset events.
    std::vector<ze_event_handle_t> events;
    uint64_t seq = 0;
    uint64_t done = 0;
    uint64_t user_wait_end = 0;  // commands before this one may wait for a runtime's event (wait())
    uint64_t next_id = 1;
    int env_level = 1;      // ZEX_DEBUG_LEVEL when the stream was created
    std::string env_error;  // why ZEX_DEBUG_LEVEL was not a level, if it was not
    std::vector<Run> runs;
    std::vector<ze_event_handle_t> user_waits;  // from wait(): joins the next command
    std::vector<ze_event_handle_t> wait_buf;    // that command's wait list, when it has them
    std::vector<std::shared_ptr<detail::EventState>> held;  // Events wait() joined: alive until waited past
    std::shared_ptr<detail::StreamLink> link;  // what this stream's Events hold: points here until the destructor

    explicit Impl(const Device& d);
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl();

    void begin_command(Command& c) {
      if (!host_sync) {
        c.signal = next_event();
        c.prev = chain ? previous_event() : nullptr;
        if (c.prev) {
          c.num_waits = 1;
          c.waits = &c.prev;
        }
      }
      if (__builtin_expect(!user_waits.empty(), 0)) gather_waits(c);
    }
    ze_event_handle_t& ring(uint64_t q) { return events[q & (events.size() - 1)]; }
    ze_event_handle_t ring(uint64_t q) const { return events[q & (events.size() - 1)]; }
    void end_command() noexcept {
      ++seq;
      unwaited_barrier = false;
      if (__builtin_expect(!user_waits.empty(), 0)) user_waits.clear();
    }
    void gather_waits(Command& c);
    void append_signal(ze_event_handle_t event);

    // The event for the next signaling command. With every event pending, first makes room: waits
    // for the oldest half, or grows the ring (see kEvents).
    ze_event_handle_t next_event() {
      if (__builtin_expect(seq - done >= events.size(), 0)) make_room();
      ze_event_handle_t e = ring(seq);
      return __builtin_expect(e != nullptr, 1) ? e : create_event();
    }
    ze_event_handle_t create_event();
    void make_room();
    void grow();
    void retire_oldest();

    // The newest pending signal, which the next command waits for (chaining the stream in order), or
    // nullptr when everything has been waited for.
    ze_event_handle_t previous_event() const noexcept {
      return seq != done ? ring(seq - 1) : nullptr;
    }

    // Waits for every command appended so far: one host synchronize of the list, or one wait on the
    // newest event (each command waited for the one before it, so its completion means all have run
    // and observed their waits, and every pending event can be reset). False if `timeout_ns` passed
    // first (nothing changed).
    bool wait_all(uint64_t timeout_ns = UINT64_MAX) {
      if (host_sync) {
        ze_result_t r = host_sync(list, timeout_ns);
        if (r == ZE_RESULT_NOT_READY && timeout_ns != UINT64_MAX) return false;
        if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0))
          detail::throw_ze_error(r, "zeCommandListHostSynchronize", "waiting for a zex::Stream");
        done = seq;
        return true;
      }
      ze_event_handle_t last = ring(seq - 1);
      ze_result_t r = zeEventHostSynchronize(last, timeout_ns);
      if (r == ZE_RESULT_NOT_READY && timeout_ns != UINT64_MAX) return false;
      if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0))
        detail::throw_ze_error(r, "zeEventHostSynchronize", "waiting for a zex::Stream");
      for (uint64_t q = done; q < seq; ++q)
        check(zeEventHostReset(ring(q)), "zeEventHostReset", "resetting a zex::Stream's event");
      done = seq;
      return true;
    }

    // Everything has finished: raise if a work-item threw, else forget the runs.
    void after_wait() {
      if (__builtin_expect(!held.empty(), 0) && user_waits.empty()) held.clear();
      if (__builtin_expect(SlabPool::thrown(slot), 0)) raise();
      if (!runs.empty()) runs.clear();
    }

    bool query() const;

    // One thread at a time (docs/design.md, "Streams"): a second thread's call is refused with
    // std::logic_error before it touches anything, so the stream stays usable. One atomic exchange
    // and one store per call.
    int busy = 0;
    struct Use {
      explicit Use(Impl& s) : s_(s) {
        if (__builtin_expect(__atomic_exchange_n(&s.busy, 1, __ATOMIC_ACQUIRE) != 0, 0)) throw_concurrent_use();
      }
      ~Use() { __atomic_store_n(&s_.busy, 0, __ATOMIC_RELEASE); }
      Use(const Use&) = delete;
      Use& operator=(const Use&) = delete;
      Impl& s_;
    };
    [[noreturn]] static void throw_concurrent_use();

    int level_for(int requested, Language lang = Language::Cpp) const {
      if (__builtin_expect(requested == -1 && env_error.empty(), 1)) return env_level;
      if (__builtin_expect(requested >= 0 && requested <= 2, 1)) return requested;
      throw_bad_level(requested, lang);
    }
    [[noreturn]] void throw_bad_level(int requested, Language lang) const;

    const Run* find(uint64_t id) const;

    // Raises the pending exception; `all_done`: every launch has finished (synchronize), else an
    // Event's wait (later launches may still run, so their runs are kept).
    [[noreturn]] void raise(bool all_done = true);
    // Event::synchronize: raises if a launch before `mark` threw and nobody raised it yet.
    void raise_before(uint64_t mark);
  };
  friend class Event;

  Impl& live() const {
    if (__builtin_expect(!s_, 0)) throw_moved_from();
    return *s_;
  }
  [[noreturn]] static void throw_moved_from();
  [[noreturn]] static void throw_null_event(const char* what);

  // What launch() and launch_args() share around setting the arguments, inline in both (launch()'s
  // hot path stays in its caller). Before: the argument count, the extents, the group size.
  __attribute__((always_inline)) static void check_launch(Kernel::State& ks, Kernel::Level& l, size_t n,
                                                          const LaunchConfig& cfg, Language lang = Language::Cpp) {
    if (__builtin_expect((l.num_args != n + 1) | !ks.takes_state, 0))
      detail::throw_bad_signature(*ks.name, l.num_args, n, ks.takes_state);
    const Dim3& g = cfg.groups;
    const Dim3& b = cfg.group_size;
    if (__builtin_expect((g.x == 0) | (g.y == 0) | (g.z == 0) | (b.x == 0) | (b.y == 0) | (b.z == 0), 0))
      detail::throw_zero_extent(*ks.name, lang);
    // The device ABI counts work-items in 64 bits (global ids, and which work-item claimed the
    // report): a launch of 2^64 or more (up to 2^96 fit in a Dim3 pair) is refused, not truncated.
    // Each per-dimension product is below 2^64; two overflow-checked multiplies cover the rest.
    uint64_t items;
    if (__builtin_expect(__builtin_mul_overflow(uint64_t{g.x} * b.x, uint64_t{g.y} * b.y, &items) |
                             __builtin_mul_overflow(items, uint64_t{g.z} * b.z, &items),
                         0))
      detail::throw_too_many_work_items(*ks.name, g, b);
    if (l.group[0] != b.x || l.group[1] != b.y || l.group[2] != b.z) set_group_size(l, b, *ks.name);
  }

  // After the `n` arguments are set: the stream's zex_state_t as argument n, the append, the run.
  __attribute__((always_inline)) static void append_launch(Impl& s, const Kernel& kernel, Kernel::State& ks,
                                                           Kernel::Level& l, int level, uint32_t n, const Dim3& g,
                                                           const char* file, uint32_t line) {
    const uint64_t id = s.next_id;
    const zex_state_t state = SlabPool::state(s.slot, id);
    detail::set_arg(l.kernel, n, state, detail::param_kind::kOther, *ks.name);
    // A launch of another kernel or level than the last, from another line or with another group size,
    // starts a run (reserved
    // before the append, so that recording it after cannot fail). A loop launching from one line stays
    // one run: the site costs two compares and no allocation per launch.
    const bool new_run = s.runs.empty() || s.runs.back().kernel.get() != &ks || s.runs.back().level != level ||
                         s.runs.back().file != file || s.runs.back().line != line ||
                         s.runs.back().group[0] != l.group[0] || s.runs.back().group[1] != l.group[1] ||
                         s.runs.back().group[2] != l.group[2];
    if (__builtin_expect(new_run, 0)) s.runs.reserve(s.runs.size() + 1);
    const ze_group_count_t groups{g.x, g.y, g.z};
    Impl::Command c;
    s.begin_command(c);
    ze_result_t r = zeCommandListAppendLaunchKernel(s.list, l.kernel, &groups, c.signal, c.num_waits, c.waits);
    if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) detail::throw_launch_error(r, *ks.name);
    s.end_command();
    ++s.next_id;
    if (__builtin_expect(new_run, 0))
      s.runs.push_back(Impl::Run{id, level, kernel.state_, file, line, {l.group[0], l.group[1], l.group[2]}});
  }

  static void set_group_size(Kernel::Level& l, const Dim3& g, const std::string& name) {
    ze_result_t r = zeKernelSetGroupSize(l.kernel, g.x, g.y, g.z);
    if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) detail::throw_group_size_error(r, name);
    l.group[0] = g.x;
    l.group[1] = g.y;
    l.group[2] = g.z;
  }

  std::unique_ptr<Impl> s_;
};

}  // namespace zex
