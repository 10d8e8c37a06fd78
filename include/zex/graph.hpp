// zex::Graph and zex::Queue: launches recorded once in a regular command list and executed many
// times, every execution's throw accounted for (docs/design.md, "Graphs"). A graph owns one report
// slot; close() ends its list with an epilogue (a barrier and one launch of zex's own kernel) that
// copies a thrown report and claim area into that execution's entry of the graph's ring and resets the
// slot, so the next execution starts clean and executions queued back to back never overwrite each
// other's reports. Recording is cold and compiled (src/runtime/graph.cpp); only the typed argument setting is
// inline here, as in Stream::launch.
#pragma once

#include <zex/context.hpp>
#include <zex/detail/launch_args.hpp>
#include <zex/error.hpp>
#include <zex/exception.hpp>
#include <zex/launch.hpp>
#include <zex/module.hpp>
#include <zex/stream.hpp>

#include <level_zero/ze_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace zex {

class Queue;

/// A launch recorded in a Graph, for Graph::update: its number, 1 for the graph's first launch, 2 for
/// the second, and so on in recording order (the C API and Python use the number itself).
struct GraphLaunch {
  uint64_t number = 0;
};

/// Launches recorded once into a regular command list, then executed any number of times on a
/// zex::Queue. Move-only. Record from one thread; execute from any (a graph's executions are
/// serialized by its lock).
///
/// Launches run in the order they were recorded (zex appends a barrier before each launch after the
/// first, so appends the runtime makes between them are ordered too) and executions submitted to one
/// queue run one after another. A graph has executions in flight on at most one queue at a time.
class Graph {
 public:
  /// A new regular command list on `dev`'s compute group, and a report slot. `name` appears in the
  /// messages of its exceptions ("in execution 3 of graph 'step'"); empty: "a zex::Graph".
  /// @throws ZeError
  explicit Graph(const Device& dev, std::string name = "");
  /// Wraps a runtime's own regular command list, not yet closed, on `dev` (zex appends to it, closes it
  /// in close(), and does not destroy it: the runtime does, after the graph is gone).
  /// @throws std::invalid_argument if `list` is null; ZeError
  static Graph adopt(const Device& dev, ze_command_list_handle_t list, std::string name = "");

  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  /// Waits for the graph's executions in flight, then frees its list (an owned one), ring and slot. A throw nobody synchronized for is dropped. Never throws.
  ~Graph();

  /// Records a launch: the arguments are set now and captured by the append (as the specification
  /// says for regular lists), the graph's zex_state_t last; the launch site and debug level are kept
  /// for the exception of any execution in which it throws. Argument rules as Stream::launch.
  /// @throws std::invalid_argument, ZeError as Stream::launch; std::logic_error once closed
  template <class... Args>
  GraphLaunch launch(const Kernel& kernel, LaunchAt at, const Args&... args) {
    try {
      const LaunchConfig& cfg = at.cfg;
      const int level = variant_for(cfg);
      Kernel::State& ks = kernel.live();
      detail::LockGuard lock(ks.mu);
      Kernel::Level& l = begin_launch(kernel, ks, level, sizeof...(Args), cfg);
      const uint8_t* kinds = ks.param_kinds.data();
      (void)kinds;
      detail::CapturedArgs cap;  // kept for update(): what the driver was given
      {
        detail::CaptureScope scope(cap);
        uint32_t i = 0;
        (void)i;
        ((detail::capture(cap, i, args), detail::set_arg(l.kernel, i, args, kinds[i], *ks.name), ++i), ...);
      }
      return append_launch(kernel, ks, l, level, static_cast<uint32_t>(sizeof...(Args)), cfg.groups, at.file, at.line,
                           std::move(cap));
    } catch (...) {
      recording_failed(kernel);
      throw;
    }
  }

  /// launch() with arguments known only at run time (the C API, bindings): `count` arguments, each
  /// `Arg` with the members `size` and `value` (KernelArg, zex_arg_t), read in place once the count is
  /// the kernel's. `file` and `line`: the launch site a throw reports (null: none; the pointer is kept
  /// for the graph's life). Checks and errors as Stream::launch_args, in `lang`'s words.
  template <class Arg>
  GraphLaunch launch_args(const Kernel& kernel, const LaunchConfig& cfg, const Arg* args, size_t count,
                          const char* file = nullptr, uint32_t line = 0, Language lang = Language::Cpp) {
    try {
      const int level = variant_for(cfg);
      Kernel::State& ks = kernel.live();
      detail::LockGuard lock(ks.mu);
      Kernel::Level& l = begin_launch(kernel, ks, level, count, cfg, lang);
      const uint32_t n = static_cast<uint32_t>(count);
      detail::CapturedArgs cap;
      for (uint32_t i = 0; i < n; ++i) {
        ze_result_t r = zeKernelSetArgumentValue(l.kernel, i, args[i].size, args[i].value);
        if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) detail::throw_arg_error(r, *ks.name, i, args[i].size);
        cap.put(i, args[i].size, args[i].value);
      }
      return append_launch(kernel, ks, l, level, n, cfg.groups, file, file ? line : 0, std::move(cap));
    } catch (...) {
      recording_failed(kernel);
      throw;
    }
  }

  /// Changes the arguments of a recorded launch (`launch`, from launch()) for the executions submitted
  /// after this call: all of its arguments again, with launch()'s rules and checks (pointers, scalars,
  /// zex::local sizes; the zex_state_t stays zex's). Only the arguments that differ are changed. On a
  /// driver with mutable command lists (spec 1.9, kernel-argument updates) the recorded command is
  /// updated in place (zeCommandListUpdateMutableCommandsExp, then zeCommandListClose); else zex records
  /// the graph's list again from what it kept (docs/design.md, "Updating a recorded launch"), which it can
  /// do only for a list it owns and whose handle() was not handed out while recording (the runtime's own
  /// appends cannot be recorded again). The graph's executions in flight on a Queue are waited for first
  /// (their throws are kept for the next synchronize). A bad argument throws and changes nothing; a
  /// driver's failure to update or record again fails the graph as a recording error does.
  /// @throws std::invalid_argument (bad arguments, an unknown launch), std::logic_error (not closed,
  ///         in flight on a Stream, an adopted or handed-out list without mutable lists), ZeError
  template <class... Args>
  void update(GraphLaunch launch, const Args&... args) {
    detail::CapturedArgs cap;
    {
      Kernel::State& ks = update_kernel(launch);
      detail::LockGuard lock(ks.mu);
      Kernel::Level& l = begin_update(launch, ks, sizeof...(Args));
      const uint8_t* kinds = ks.param_kinds.data();
      (void)kinds;
      detail::CaptureScope scope(cap);
      uint32_t i = 0;
      (void)i;
      ((detail::capture(cap, i, args), detail::set_arg(l.kernel, i, args, kinds[i], *ks.name), ++i), ...);
    }
    finish_update(launch, std::move(cap));
  }
  /// update() with arguments known only at run time (the C API, bindings), as launch_args().
  template <class Arg>
  void update_args(GraphLaunch launch, const Arg* args, size_t count, Language lang = Language::Cpp) {
    detail::CapturedArgs cap;
    {
      Kernel::State& ks = update_kernel(launch);
      detail::LockGuard lock(ks.mu);
      Kernel::Level& l = begin_update(launch, ks, count, lang);
      for (uint32_t i = 0; i < static_cast<uint32_t>(count); ++i) {
        ze_result_t r = zeKernelSetArgumentValue(l.kernel, i, args[i].size, args[i].value);
        if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0)) detail::throw_arg_error(r, *ks.name, i, args[i].size);
        cap.put(i, args[i].size, args[i].value);
      }
    }
    finish_update(launch, std::move(cap));
  }
  /// Launches recorded so far (the last one's GraphLaunch::number).
  uint64_t launches() const;
  /// Whether update() changes launches in place (the driver's mutable command lists) rather than by
  /// recording the list again.
  bool updates_in_place() const;

  /// Ends the recording: the epilogue (a barrier and zex's one-work-item launch), then
  /// zeCommandListClose. Idempotent.
  /// @throws ZeError if the append or the close fails; the first error of a failed recording (below)
  void close();
  /// True once close() succeeded.
  bool closed() const;
  /// Early stop for the whole graph: every launch recorded after this call behaves as if its
  /// LaunchConfig had stop_on_throw (docs/integration.md, "Early stop"), so in an execution where a
  /// launch throws, the launches after it return at once (they still run, so the execution completes).
  /// Launches recorded before keep what they were recorded with.
  void stop_on_throw(bool on);
  /// Whether launches recorded now stop on throw by the graph's setting.
  bool stop_on_throw() const;
  /// Recording errors are kept: once a launch() (or close()) fails, whatever the reason (a bad
  /// argument, an out-of-memory append, an injected fault), that call throws as usual and the graph
  /// records nothing more; every later launch(), close() and Queue::execute() throws the first error
  /// again, of the same type (a ZeError keeps its result and call), its message naming the graph, the
  /// launch and the kernel. Record a new Graph. The runtime's own appends to handle() are its own.
  bool recording_failed() const;

  /// The regular command list (for a runtime's own appends while recording, ordered with the graph's
  /// launches; and for interop).
  ze_command_list_handle_t handle() const noexcept;
  /// The graph's name, as its exceptions show it.
  const std::string& name() const;
  /// Executions submitted so far (the next one's index).
  uint64_t executions() const;
  /// The device the graph runs on.
  const Device& device() const;

  /// Executions in flight (submitted, not yet synchronized) at most: the ring of report copies. One
  /// more execution first waits for the queue once and reads them all (docs/design.md, "Graphs":
  /// nothing is dropped).
  static constexpr uint32_t kMaxInFlight = 64;
  /// Reports of thrown executions kept per synchronize beyond the one raised (KernelException::others);
  /// further throws are counted in executions_thrown() and named in the message, not kept.
  static constexpr uint32_t kMaxKept = 16;

  struct State;  // src/runtime/graph.cpp

 private:
  friend class Queue;
  friend class Stream;
  explicit Graph(std::shared_ptr<State> s);
  State& live() const;
  int level_for(int requested) const;
  // The variant a launch records (detail::variant_of): its level, with early stop if it or the graph asks.
  int variant_for(const LaunchConfig& cfg) const;
  // What launch() does before and after setting the arguments (compiled).
  Kernel::Level& begin_launch(const Kernel& kernel, Kernel::State& ks, int level, size_t n, const LaunchConfig& cfg,
                              Language lang = Language::Cpp);
  GraphLaunch append_launch(const Kernel& kernel, Kernel::State& ks, Kernel::Level& l, int level, uint32_t n,
                            const Dim3& g, const char* file, uint32_t line, detail::CapturedArgs&& args);
  // update()'s parts: the launch's kernel (checks the graph and the number), its kernel object with
  // the argument count checked (ks.mu held), and the rest (compiled).
  Kernel::State& update_kernel(GraphLaunch launch);
  Kernel::Level& begin_update(GraphLaunch launch, Kernel::State& ks, size_t n, Language lang = Language::Cpp);
  void finish_update(GraphLaunch launch, detail::CapturedArgs&& args);
  // In launch()'s catch: keeps the current exception, annotated, as the graph's recording failure
  // (nothing if the graph is closed, moved from, or failed already). Never throws.
  void recording_failed(const Kernel& kernel) noexcept;

  std::shared_ptr<State> s_;
};

/// A command queue that executes graphs. Move-only; thread-safe (calls are serialized).
class Queue {
 public:
  /// An asynchronous command queue on `dev`'s compute group.
  /// @throws ZeError
  explicit Queue(const Device& dev);
  /// Wraps a runtime's own command queue on `dev` (not destroyed by zex).
  /// @throws std::invalid_argument if `queue` is null
  static Queue adopt(const Device& dev, ze_command_queue_handle_t queue);

  Queue(Queue&&) noexcept;
  Queue& operator=(Queue&&) noexcept;
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;
  /// Waits for what was submitted, then destroys an owned queue. Never throws.
  ~Queue();

  /// Submits one execution of `graph` (closed): one zeCommandQueueExecuteCommandLists of its list.
  /// With Graph::kMaxInFlight executions of the graph in flight, first waits for the queue once and
  /// keeps what they threw for the next synchronize().
  /// @throws std::logic_error (not closed; in flight on another queue; a graph of another device);
  ///         ZeError
  void execute(Graph& graph);

  /// Waits for every execution submitted; if any threw, raises a KernelException for the first
  /// (KernelException::execution(), executions_thrown(), others() for the rest, at most
  /// Graph::kMaxKept). Nothing is submitted, and no wait beyond the queue's own is made, when nothing
  /// threw.
  /// @throws KernelException; ZeError if the wait fails
  void synchronize() { synchronize_for_ns(UINT64_MAX); }
  /// synchronize() giving up after `timeout`: false if the work has not finished (nothing changed).
  template <class Duration>
  bool synchronize_for(const Duration& timeout) {
    using Period = typename Duration::period;
    const long double ns = static_cast<long double>(timeout.count()) * Period::num * 1e9L / Period::den;
    return synchronize_for_ns(ns <= 0 ? 0 : ns >= 1.8e19L ? UINT64_MAX - 1 : static_cast<uint64_t>(ns));
  }
  /// @throws KernelException; ZeError
  bool synchronize_for_ns(uint64_t timeout_ns);

  /// The raw command queue.
  ze_command_queue_handle_t handle() const noexcept;

  struct State;  // src/runtime/graph.cpp

 private:
  explicit Queue(std::unique_ptr<State> s);
  State& live() const;
  std::unique_ptr<State> s_;
};

}  // namespace zex
