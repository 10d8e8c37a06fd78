// zex::Stream: an in-order immediate command list plus its report slot. launch() appends exactly one
// Level Zero command; synchronize() waits once and, only if a work-item threw, takes the one path from
// report to exception (SlabPool::read_and_reset, src/runtime/report_reading.cpp) and throws
// zex::KernelException (docs/design.md, "Streams"). The launch and synchronize paths are inline here,
// over three units of their own: argument encoding (detail/launch_args.hpp), the command sequence and
// event ring (detail/event_ring.hpp) and the record of launches (detail/launch_record.hpp). Creation,
// destruction and raising are cold and compiled (src/runtime/stream.cpp).
#pragma once

#include <zex/abi.h>
#include <zex/context.hpp>
#include <zex/detail/event_ring.hpp>
#include <zex/detail/launch_args.hpp>
#include <zex/detail/launch_record.hpp>
#include <zex/error.hpp>
#include <zex/event.hpp>
#include <zex/exception.hpp>
#include <zex/launch.hpp>
#include <zex/module.hpp>
#include <zex/slab.hpp>

#include <level_zero/ze_api.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace zex {

/// An in-order immediate command list and its report slot. Move-only. One thread uses a stream at
/// a time; different streams may be used from different threads at once.
///
/// Waiting (docs/design.md, "Waiting"), chosen once per driver: where the driver offers
/// zeCommandListHostSynchronize and in-order immediate lists, a launch appends the kernel with no
/// event and synchronize() is one host synchronize of the list (wait_path() == WaitPath::kList).
/// Elsewhere (Debian's loader implements API 1.4) launches signal events of the stream's ring, as
/// part of their one command (each one, waiting for the previous launch's, on a list not known in
/// order; on an in-order list the first after a wait and every 32nd), and synchronize() waits on the
/// newest event, after one signalling barrier if the newest launch did not signal
/// (WaitPath::kEvents). Either way: one append per launch, one wait per synchronize, nothing copied
/// when nothing threw.
class Graph;

class Stream {
 public:
  /// How the stream waits for its launches.
  enum class WaitPath {
    kList,    ///< zeCommandListHostSynchronize on an in-order list; launches carry no event
    kEvents,  ///< launches signal events of the stream; synchronize waits on the newest
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
    const int level = detail::variant_of(s.level_for(cfg.debug_level), cfg.stop_on_throw);
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
    if (__builtin_expect(ks.hidden != 0, 0)) {  // a module built with check_memory
      const uint64_t addresses[n + 1] = {detail::arg_address(args)..., 0};
      set_memory_bounds(ks, l.kernel, level, addresses, n);
    }
    append_launch(s, kernel, ks, l, level, static_cast<uint32_t>(n), cfg.groups, at.file, at.line);
  }

  /// launch() with arguments known only at run time (language bindings, the C API): `count`
  /// arguments, each passed as its bytes; the scalar type check of launch() cannot apply (there are
  /// no C++ types), so the driver's size check is the only one. The argument count, debug level and
  /// extents are checked as by launch(). Compiled (src/runtime/stream.cpp).
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
    const int level = detail::variant_of(s.level_for(cfg.debug_level, lang), cfg.stop_on_throw);
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
    if (__builtin_expect(ks.hidden != 0, 0)) set_memory_bounds_args(ks, l.kernel, level, args, n);
    // A null file: no launch site (a binding whose caller is unknown; its own line would mislead).
    append_launch(s, kernel, ks, l, level, n, cfg.groups, file, file ? line : 0);
  }

  /// Waits for everything launched so far (one host wait). If a work-item threw, decodes the
  /// report of the first launch that threw, appends the claim word's reset, clears the report, and
  /// throws. When nothing was thrown it copies nothing and waits no more, and appends nothing but,
  /// on the event path of an in-order list, one signalling barrier if the newest launch did not
  /// signal (see WaitPath).
  /// @throws KernelException; ZeError if the wait fails
  void synchronize() {
    Impl& s = live();
    Impl::Use use(s);
    if (!s.cmds.idle()) s.wait_all();
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
    if (!s.cmds.idle() && !s.wait_all(timeout_ns)) return false;
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
    return s.cmds.idle() || s.query();
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

  /// Events per stream on the event path, at first: with this many commands in flight, a launch
  /// first waits for the oldest half of them (the device keeps the newest half queued). Unless the
  /// oldest half has not finished: then the stream doubles its events instead, up to 1024 (the
  /// device fell behind: waits become rarer), or, if a launch in flight waits for a runtime's event
  /// (wait()), up to kMaxEvents, so that launches queued behind an event that only the calling
  /// thread will signal never deadlock it.
  static constexpr uint32_t kEvents = detail::EventRing::kEvents;
  /// The most events a stream grows to; past it a launch waits as above (docs/integration.md §7).
  static constexpr uint32_t kMaxEvents = detail::EventRing::kMaxEvents;

  /// Appends one execution of `graph` (closed) to the stream, in order with its launches, through the
  /// driver's zeCommandListImmediateAppendCommandListsExp (spec 1.9, looked up at run time). Every
  /// execution is accounted for as on a Queue (docs/design.md, "Graphs"): synchronize() raises the
  /// graph's throws too, after the stream's own (a throw of the stream's launches is raised first; the
  /// graphs' then come with the next synchronize()). An Event of the stream does not raise a graph's
  /// throw. Destroy a graph the stream executed on the stream's thread (its destructor waits for the
  /// stream), or after the stream's synchronize().
  /// @throws ZeError (ZE_RESULT_ERROR_UNSUPPORTED_FEATURE when the driver lacks immediate append:
  ///         execute the graph on a zex::Queue); std::logic_error as Queue::execute
  void execute(Graph& graph);

 private:
  struct Impl {
    using Record = detail::LaunchRecord<Kernel::State>;
    using Run = Record::Run;
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
    detail::EventRing cmds;         // the command sequence; on the event path, the events they signal
    bool chain = true;              // event path on a list not known in order: each command waits for the last
    bool unwaited_barrier = false;  // event path: a signal() barrier no ring event follows yet
    uint64_t next_id = 1;
    int env_level = 1;      // ZEX_DEBUG_LEVEL when the stream was created
    std::string env_error;  // why ZEX_DEBUG_LEVEL was not a level, if it was not
    Record record;
    std::vector<ze_event_handle_t> user_waits;  // from wait(): joins the next command
    std::vector<ze_event_handle_t> wait_buf;    // that command's wait list, when it has them
    std::vector<std::shared_ptr<detail::EventState>> held;  // Events wait() joined: alive until waited past
    std::shared_ptr<detail::StreamLink> link;  // what this stream's Events hold: points here until the destructor
    std::vector<std::shared_ptr<void>> graphs;  // Graph::State of the graphs executed since the last raise (graph.cpp)

    explicit Impl(const Device& d);
    Impl(const Impl&) = delete;
    Impl& operator=(const Impl&) = delete;
    ~Impl();

    void begin_command(Command& c) {
      if (!host_sync) {
        c.signal = cmds.next_launch();
        c.prev = chain ? cmds.previous() : nullptr;
        if (c.prev) {
          c.num_waits = 1;
          c.waits = &c.prev;
        }
      }
      if (__builtin_expect(!user_waits.empty(), 0)) gather_waits(c);
    }
    void end_command() noexcept {
      ++cmds.seq;
      unwaited_barrier = false;
      if (__builtin_expect(!user_waits.empty(), 0)) user_waits.clear();
    }
    void gather_waits(Command& c);
    // Event path: one barrier that signals the ring's next event, for a wait when the newest command
    // did not signal (an in-order list signals sparsely, and signal() barriers signal the caller's).
    void append_wait_barrier();
    void append_signal(ze_event_handle_t event);

    // Waits for every command appended so far: one host synchronize of the list, or one wait on the
    // newest event. False if `timeout_ns` passed first (nothing changed).
    bool wait_all(uint64_t timeout_ns = UINT64_MAX) {
      if (!host_sync) {
        if (__builtin_expect(!cmds.newest_signalled(), 0)) append_wait_barrier();
        return cmds.wait_newest(timeout_ns);
      }
      ze_result_t r = host_sync(list, timeout_ns);
      if (r == ZE_RESULT_NOT_READY && timeout_ns != UINT64_MAX) return false;
      if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0))
        detail::throw_ze_error(r, "zeCommandListHostSynchronize", "waiting for a zex::Stream");
      cmds.done = cmds.seq;
      return true;
    }

    // Everything has finished: raise if a work-item threw, else forget the runs.
    void after_wait() {
      if (__builtin_expect(!held.empty(), 0) && user_waits.empty()) held.clear();
      if (__builtin_expect(SlabPool::thrown(slot), 0)) raise();
      if (!record.empty()) record.clear();
      if (__builtin_expect(!graphs.empty(), 0)) raise_graphs();
    }
    // After a wait: harvests the executed graphs' executions, raises the first throw (graph.cpp).
    void raise_graphs();
    // The stream is going: its graphs' executions in flight are nobody's (graph.cpp).
    void forget_graphs() noexcept;

    bool query();

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

    // The run of launch `id`, or null (0 and ids not yet given are nobody's).
    const Run* find(uint64_t id) const { return id == 0 || id >= next_id ? nullptr : record.find(id); }

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

  // What launch() and launch_args() share before setting the arguments, inline in both (launch()'s
  // hot path stays in its caller): the launch's shape, then the group size.
  __attribute__((always_inline)) static void check_launch(Kernel::State& ks, Kernel::Level& l, size_t n,
                                                          const LaunchConfig& cfg, Language lang = Language::Cpp) {
    detail::check_launch_shape(*ks.name, l.num_args - ks.hidden, ks.takes_state, n, cfg.groups, cfg.group_size, lang);
    const Dim3& b = cfg.group_size;
    if (l.group[0] != b.x || l.group[1] != b.y || l.group[2] != b.z) set_group_size(l, b, *ks.name);
  }

  // After the `n` arguments are set: the stream's zex_state_t as argument n, the append, the run.
  __attribute__((always_inline)) static void append_launch(Impl& s, const Kernel& kernel, Kernel::State& ks,
                                                           Kernel::Level& l, int level, uint32_t n, const Dim3& g,
                                                           const char* file, uint32_t line) {
    const uint64_t id = s.next_id;
    const zex_state_t state = SlabPool::state(s.slot, id);
    detail::set_arg(l.kernel, n + ks.hidden, state, detail::param_kind::kOther, *ks.name);
    // A launch that does not continue the last run starts one, reserved before the append so that
    // recording it after cannot fail.
    const bool new_run = !s.record.continues(&ks, level, file, line, l.group);
    if (__builtin_expect(new_run, 0)) s.record.reserve_one();
    const ze_group_count_t groups{g.x, g.y, g.z};
    Impl::Command c;
    s.begin_command(c);
    ze_result_t r = zeCommandListAppendLaunchKernel(s.list, l.kernel, &groups, c.signal, c.num_waits, c.waits);
    if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) detail::throw_launch_error(r, *ks.name);
    s.end_command();
    ++s.next_id;
    if (__builtin_expect(new_run, 0))
      s.record.start(Impl::Run{id, level, kernel.state_, file, line, {l.group[0], l.group[1], l.group[2]}});
  }

  // check_memory: the hidden bounds (base, end) of each checked pointer argument, after the kernel's
  // `n` own arguments, from the allocation each points into (`addresses[i]`: argument i's address, 0
  // for a non-pointer, a __local argument's bytes), set on `k` (the kernel of `variant`) only where
  // they changed. Compiled
  // (src/runtime/memory_bounds.cpp); ks.mu held.
  static void set_memory_bounds(Kernel::State& ks, ze_kernel_handle_t k, int variant, const uint64_t* addresses, uint32_t n);
  template <class Arg>
  static void set_memory_bounds_args(Kernel::State& ks, ze_kernel_handle_t k, int variant, const Arg* args, uint32_t n) {
    // Only the bounded arguments' addresses are read; on the stack up to 64 arguments (no allocation
    // per launch), beyond on the heap.
    uint64_t small[64];
    std::vector<uint64_t> large;
    uint64_t* addresses = small;
    if (n > 64) {
      large.resize(n);
      addresses = large.data();
    }
    for (const Kernel::State::Bounds& b : ks.bounds) {
      if (b.arg >= n) continue;
      addresses[b.arg] = 0;
      if (b.local)  // a __local argument: its size (the driver ignores a value)
        addresses[b.arg] = args[b.arg].size;
      else if (args[b.arg].size == sizeof(uint64_t) && args[b.arg].value)
        std::memcpy(&addresses[b.arg], args[b.arg].value, sizeof(uint64_t));
    }
    set_memory_bounds(ks, k, variant, addresses, n);
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
