// zex::Graph and zex::Queue (docs/design.md, "Graphs"). A graph records launches into one regular
// command list, all with one report slot, and close() ends the list with its epilogue: a barrier and
// one launch of zex_graph_epilogue (device/zex_graph.cl, one work-item), which counts the execution in
// the ring's control word and, if a work-item threw, copies the slot's report and claim area into the
// ring entry of that execution (count mod kMaxInFlight) and resets the slot. So every thrown execution
// leaves its report in its own entry and the next execution starts clean; an execution is one
// submission of one list, and when nothing is thrown the epilogue loads three words and stores one.
// The host reads ring entries only after their executions finished: at synchronize, or when a graph has
// kMaxInFlight executions in flight (it then waits for the queue once and reads them all; what they
// threw is kept for the next synchronize). Nothing is dropped.
#include <zex/graph.hpp>

#include "runtime/memory_bounds.hpp"
#include "runtime/launch_origin.hpp"
#include "spirv/spirv.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <new>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zex {

namespace {

// One ring entry: what an epilogue copies out of the slot. zex_graph.cl lays it out the same way.
struct Copy {
  zex_report_t report;
  uint32_t claim[ZEX_CLAIM_BYTES / sizeof(uint32_t)];
};
static_assert(sizeof(Copy) == sizeof(zex_report_t) + ZEX_CLAIM_BYTES, "zex_graph.cl's ring stride");
static_assert(Graph::kMaxInFlight == 64, "zex_graph.cl's ZEX_GRAPH_RING_ENTRIES");
// The ring: kMaxInFlight entries, then the control word the epilogue counts executions in.
struct Ring {
  Copy entries[Graph::kMaxInFlight];
  uint64_t executions;
};

// zex_graph_epilogue of one context and device, built once and shared by that device's graphs (a weak
// cache: the module goes with the last graph, and with it its hold on the context).
struct Epilogue {
  Module module;
  Kernel kernel;
};

std::shared_ptr<Epilogue> epilogue_of(const Device& dev) {
  static std::mutex mu;
  static auto* cache = new std::map<std::pair<ze_context_handle_t, ze_device_handle_t>, std::weak_ptr<Epilogue>>;
  std::lock_guard<std::mutex> lock(mu);
  std::weak_ptr<Epilogue>& w = (*cache)[{dev.context_handle(), dev.handle()}];
  if (auto p = w.lock()) return p;
  const std::vector<uint32_t>& words = detail::graph_kernels();
  if (words.size() < 5)
    throw RuntimeError("zex::Graph: this zex library was built without its graph kernels (device/zex_graph.cl); "
                       "rebuild zex with the device/ directory");
  Module m(dev, words.data(), words.size() * sizeof(uint32_t));
  Kernel k = m.kernel("zex_graph_epilogue");
  auto p = std::make_shared<Epilogue>(Epilogue{std::move(m), std::move(k)});
  w = p;
  return p;
}

}  // namespace

struct Graph::State {
  using Record = detail::LaunchRecord<Kernel::State>;

  Device dev;
  std::shared_ptr<Epilogue> epilogue;  // the kernel close() records last
  SlabPool* pool = nullptr;
  Slot slot;
  std::string name;
  ze_command_list_handle_t list = nullptr;
  bool owned = true;
  bool closed = false;
  // The first recording failure, annotated (Graph::recording_failed): launch(), close() and
  // Queue::execute() rethrow it.
  std::exception_ptr failed;
  bool appended = false;  // a launch was recorded: the next one gets a barrier first
  bool stop_all = false;  // stop_on_throw(true): launches recorded from now on stop on throw
  uint64_t next_id = 1;
  Record record;  // every launch of the graph, for as long as the graph lives
  // Every launch as recorded, by number - 1 (GraphLaunch): what update() changes and what recording
  // the list again (rerecord) appends.
  struct Entry {
    std::shared_ptr<Kernel::State> kernel;
    int variant;
    uint32_t group[3];
    ze_group_count_t groups;
    uint64_t command_id;  // the mutable command's id (mutable lists), else 0
    detail::CapturedArgs args;
    // A checked kernel's hidden bounds struct as recorded (detail::MemoryBounds::recorded of args), else empty.
    std::vector<uint64_t> bounds;
  };
  std::vector<Entry> entries;
  bool mutable_list = false;  // created with the driver's mutable command lists: update() in place
  std::atomic<bool> exposed{false};  // handle() was handed out before close(): the runtime may have appended
  int env_level = 1;
  std::string env_error;

  std::mutex mu;  // executions and harvesting (recording is one thread's, before close())
  Ring* ring = nullptr;  // host USM
  uint64_t executions = 0;  // submitted
  uint64_t harvested_to = 0;  // executions [harvested_to, executions) are in flight
  uint64_t in_flight() const { return executions - harvested_to; }
  ze_command_queue_handle_t queue = nullptr;  // where the executions in flight are: a Queue's queue,
  void* stream = nullptr;                     // or a Stream's Impl (Stream::execute), waited for by
  void (*stream_wait)(void*) = nullptr;       // stream_wait (set by Stream::execute, which may name it)
  bool abandoned = false;                     // the Graph is gone: its throws are nobody's

  // Harvested since the last synchronize that raised.
  std::vector<KernelExceptionInfo> thrown;  // at most kMaxKept + 1
  uint64_t thrown_count = 0;
  uint64_t harvested = 0;

  State(const Device& d, std::string n) : dev(d), pool(&d.slab_pool()), name(std::move(n)) {
    try {
      env_level = default_debug_level();
    } catch (const std::exception& e) {
      env_error = e.what();
    }
  }
  State(const State&) = delete;
  State& operator=(const State&) = delete;

  // "graph 'step'", or "the graph" for an unnamed one: how messages name it (built only when refusing).
  std::string which() const { return name.empty() ? std::string("the graph") : "graph '" + name + "'"; }

  ~State() {
    // Nothing of ours may still run: wait for the executions in flight (their epilogues write the ring).
    if (in_flight() && queue) zeCommandQueueSynchronize(queue, UINT64_MAX);
    if (ring) zeMemFree(dev.context_handle(), ring);
    if (list && owned) zeCommandListDestroy(list);
    if (slot) pool->release(slot);
  }

  void init(ze_command_list_handle_t adopted) {
    epilogue = epilogue_of(dev);
    slot = pool->acquire();
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    void* p = nullptr;
    check(zeMemAllocHost(dev.context_handle(), &hd, sizeof(Ring), 64, &p), "zeMemAllocHost",
          "allocating a zex::Graph's report copies");
    ring = static_cast<Ring*>(p);
    std::memset(static_cast<void*>(ring), 0, sizeof(Ring));
    if (adopted) {
      list = adopted;
      owned = false;
    } else {
      ze_command_list_desc_t ld{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, dev.compute_ordinal(), 0};
      // Where the device updates kernel arguments of mutable lists, the graph's list is one (update()
      // in place); the descriptor is chained only then, so no other driver sees its stype.
      detail::ze_newer::MutableCommandListDesc mutable_desc;
      if (dev.info().next_command_id) {
        ld.pNext = &mutable_desc;
        mutable_list = true;
      }
      check(zeCommandListCreate(dev.context_handle(), dev.handle(), &ld, &list), "zeCommandListCreate",
            "creating a zex::Graph's command list");
    }
  }

  // Appends the epilogue (see the top of this file) to the graph's list, after a barrier.
  void append_epilogue() {
    const char* what = "recording a zex::Graph's epilogue";
    Kernel::State& ks = epilogue->kernel.live();
    detail::LockGuard lock(ks.mu);
    Kernel::Level& l = ks.at(0);
    if (l.group[0] != 1 || l.group[1] != 1 || l.group[2] != 1) {
      check(zeKernelSetGroupSize(l.kernel, 1, 1, 1), "zeKernelSetGroupSize", what);
      l.group[0] = l.group[1] = l.group[2] = 1;
    }
    const uint64_t args[4] = {static_cast<uint64_t>(reinterpret_cast<uintptr_t>(slot.report)),
                              static_cast<uint64_t>(reinterpret_cast<uintptr_t>(slot.claim)),
                              static_cast<uint64_t>(reinterpret_cast<uintptr_t>(ring->entries)),
                              static_cast<uint64_t>(reinterpret_cast<uintptr_t>(&ring->executions))};
    for (uint32_t i = 0; i < 4; ++i)
      check(zeKernelSetArgumentValue(l.kernel, i, sizeof args[i], &args[i]), "zeKernelSetArgumentValue", what);
    check(zeCommandListAppendBarrier(list, nullptr, 0, nullptr), "zeCommandListAppendBarrier", what);
    const ze_group_count_t one{1, 1, 1};
    check(zeCommandListAppendLaunchKernel(list, l.kernel, &one, nullptr, 0, nullptr), "zeCommandListAppendLaunchKernel",
          what);
  }

  // A checked kernel's bounds struct `bounds` on `k` (variant `variant` of ks, ks.mu held), after its `n`
  // own arguments. The stream's launches then set theirs again: the ze kernel no longer holds them.
  static void set_bounds(Kernel::State& ks, ze_kernel_handle_t k, int variant, uint32_t n,
                         const std::vector<uint64_t>& bounds, const char* what) {
    ks.bounds_set_on &= ~(1u << static_cast<unsigned>(variant));
    check(zeKernelSetArgumentValue(k, n, bounds.size() * sizeof(uint64_t), bounds.data()), "zeKernelSetArgumentValue",
          what);
  }

  // Appends entry `e` (launch number `number`) as append_launch first did: its group size and arguments
  // on its kernel object, the zex_state_t, a barrier after the first launch, the launch.
  void append_entry(const Entry& e, uint64_t number) {
    const char* what = "recording a zex::Graph's list again (update)";
    Kernel::State& ks = *e.kernel;
    detail::LockGuard lock(ks.mu);
    Kernel::Level& l = ks.at(e.variant);
    if (l.group[0] != e.group[0] || l.group[1] != e.group[1] || l.group[2] != e.group[2]) {
      check(zeKernelSetGroupSize(l.kernel, e.group[0], e.group[1], e.group[2]), "zeKernelSetGroupSize", what);
      std::copy(e.group, e.group + 3, l.group);
    }
    const uint32_t n = static_cast<uint32_t>(e.args.args.size());
    for (uint32_t i = 0; i < n; ++i)
      check(zeKernelSetArgumentValue(l.kernel, i, e.args.args[i].size, e.args.value(i)), "zeKernelSetArgumentValue",
            what);
    if (ks.hidden) set_bounds(ks, l.kernel, e.variant, n, e.bounds, what);
    const zex_state_t state = SlabPool::state(slot, number);
    check(zeKernelSetArgumentValue(l.kernel, n + ks.hidden, sizeof state, &state), "zeKernelSetArgumentValue", what);
    if (appended) check(zeCommandListAppendBarrier(list, nullptr, 0, nullptr), "zeCommandListAppendBarrier", what);
    ze_group_count_t groups = e.groups;
    check(zeCommandListAppendLaunchKernel(list, l.kernel, &groups, nullptr, 0, nullptr), "zeCommandListAppendLaunchKernel",
          what);
    appended = true;
  }
  // update() without mutable lists: the list reset and recorded again from `entries`, with its epilogue
  // (nothing in flight: the caller waited). A failure leaves the list half recorded: the caller fails the graph.
  void rerecord() {
    check(zeCommandListReset(list), "zeCommandListReset", "recording a zex::Graph's list again (update)");
    closed = false;
    appended = false;
    for (size_t i = 0; i < entries.size(); ++i) append_entry(entries[i], i + 1);
    append_epilogue();
    check(zeCommandListClose(list), "zeCommandListClose", "recording a zex::Graph's list again (update)");
    closed = true;
  }

  ThrowOrigin origin_of(uint64_t launch_id) const {
    return detail::origin_of(launch_id == 0 || launch_id >= next_id ? nullptr : record.find(launch_id), env_level);
  }

  // The oldest execution in flight has finished: reads its ring entry.
  void harvest_one() {
    const uint64_t e = harvested_to;
    Copy& c = ring->entries[e % kMaxInFlight];
    if (__atomic_load_n(&c.report.status, __ATOMIC_ACQUIRE) != ZEX_STATUS_NONE) {
      ++thrown_count;
      if (thrown.size() <= kMaxKept) {
        Slot copy{&c.report, c.claim, UINT32_MAX};
        KernelExceptionInfo info = pool->read_and_reset(copy, origin_of(c.report.launch_id), nullptr);
        info.execution = e;
        info.graph_name = name;
        thrown.push_back(std::move(info));
      }
      c.report.status = ZEX_STATUS_NONE;
    }
    ++harvested;
    ++harvested_to;
  }
  void harvest_all() {
    while (in_flight()) harvest_one();
  }

  // Waits for the executions in flight, wherever they are.
  void wait_in_flight() {
    if (queue)
      check(zeCommandQueueSynchronize(queue, UINT64_MAX), "zeCommandQueueSynchronize",
            "waiting for a zex::Graph's executions in flight");
    else if (stream)
      stream_wait(stream);
  }
  // What Queue::execute and Stream::execute (`fn`) refuse, before anything is submitted: a failed
  // recording (its error), an open graph, another device than `on`'s (`owner`: "queue" or "stream"),
  // executions in flight elsewhere (`elsewhere`, described by `others`). The names are built only
  // when one is refused, not on every execution.
  void check_executable(const char* fn, const Device& on, const char* owner, bool elsewhere, const char* others) const {
    if (failed) std::rethrow_exception(failed);
    if (!closed) throw LogicError(std::string(fn) + ": " + which() + " is not closed; call close() after recording it");
    if (dev != on)
      throw LogicError(std::string(fn) + ": " + which() + " was recorded for another device than the " + owner + "'s");
    if (elsewhere)
      throw LogicError(std::string(fn) + ": " + which() + " has executions in flight on " + others +
                       "; synchronize that first");
  }
  // Before another execution: with kMaxInFlight in flight, one wait for their queue, and read them all.
  void make_room() {
    if (in_flight() < kMaxInFlight) return;
    wait_in_flight();
    harvest_all();
  }
  // The executions in flight are gone with their queue (which waited for them): nobody reads them.
  void forget_in_flight() {
    for (uint32_t k = 0; k < kMaxInFlight; ++k) ring->entries[k].report.status = ZEX_STATUS_NONE;
    harvested_to = executions;
    queue = nullptr;
    stream = nullptr;
    thrown.clear();
    thrown_count = harvested = 0;
  }
};

// ---- Graph ---------------------------------------------------------------------------------------

Graph::Graph(const Device& dev, std::string name) : s_(std::make_shared<State>(dev, std::move(name))) {
  s_->init(nullptr);
}

Graph::Graph(std::shared_ptr<State> s) : s_(std::move(s)) {}

Graph Graph::adopt(const Device& dev, ze_command_list_handle_t list, std::string name) {
  if (!list) throw InvalidArgument("zex::Graph::adopt: the command list is null; pass a regular command list that is not closed yet");
  auto s = std::make_shared<State>(dev, std::move(name));
  s->init(list);
  return Graph(std::move(s));
}

Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

Graph::~Graph() {
  if (!s_) return;
  std::lock_guard<std::mutex> lock(s_->mu);
  // What the executions use (the runtime's buffers, the kernels) may go right after the graph: wait for
  // them here. The Queue that executed them still harvests them, and drops their throws.
  if (s_->in_flight()) {
    try {
      s_->wait_in_flight();
    } catch (...) {  // a failed wait (a lost device): nothing more to wait for
    }
  }
  s_->abandoned = true;
}

Graph::State& Graph::live() const {
  if (__builtin_expect(!s_, 0)) throw LogicError("zex::Graph: this graph was moved from; use the graph it was moved to");
  return *s_;
}

int Graph::level_for(int requested) const {
  const State& g = live();
  if (requested == -1 && g.env_error.empty()) return g.env_level;
  if (requested >= 0 && requested <= 2) return requested;
  if (requested == -1) throw InvalidArgument(g.env_error);
  throw InvalidArgument("zex::Graph::launch: debug_level " + std::to_string(requested) +
                        " is not a debug level; use 0, 1, 2, or -1 for the default (ZEX_DEBUG_LEVEL, else 1)");
}

int Graph::variant_for(const LaunchConfig& cfg) const {
  return detail::variant_of(level_for(cfg.debug_level), cfg.stop_on_throw || live().stop_all);
}

void Graph::stop_on_throw(bool on) { live().stop_all = on; }
bool Graph::stop_on_throw() const { return live().stop_all; }

Kernel::Level& Graph::begin_launch(const Kernel&, Kernel::State& ks, int level, size_t n, const LaunchConfig& cfg,
                                   Language lang) {
  State& g = live();
  if (g.failed) std::rethrow_exception(g.failed);
  if (g.closed)
    throw LogicError("zex::Graph::launch: " + g.which() +
                     " is closed; record every launch before close(), or record a new zex::Graph");
  if (ks.device != &g.dev.info()) detail::throw_wrong_device(*ks.name, *ks.device, g.dev.info());
  Kernel::Level& l = ks.at(level);
  detail::check_launch_shape(*ks.name, l.num_args - ks.hidden, ks.takes_state, n, cfg.groups, cfg.group_size, lang);
  const Dim3& b = cfg.group_size;
  if (l.group[0] != b.x || l.group[1] != b.y || l.group[2] != b.z) {
    ze_result_t r = zeKernelSetGroupSize(l.kernel, b.x, b.y, b.z);
    if (r != ZE_RESULT_SUCCESS) detail::throw_group_size_error(r, *ks.name);
    l.group[0] = b.x;
    l.group[1] = b.y;
    l.group[2] = b.z;
  }
  return l;
}

GraphLaunch Graph::append_launch(const Kernel& kernel, Kernel::State& ks, Kernel::Level& l, int level, uint32_t n,
                                 const Dim3& g3, const char* file, uint32_t line, detail::CapturedArgs&& args) {
  State& g = live();
  const uint64_t id = g.next_id;
  const zex_state_t state = SlabPool::state(g.slot, id);
  // A checked kernel: the bounds of the allocations its pointer arguments point into now, recorded with
  // the launch as its pointers are (an update looks them up again; a free ends both).
  std::vector<uint64_t> bounds;
  if (ks.hidden) {
    bounds = detail::MemoryBounds::recorded(ks, args);
    State::set_bounds(ks, l.kernel, level, n, bounds, "recording a zex::Graph's launch of a checked kernel");
  }
  detail::set_arg(l.kernel, n + ks.hidden, state, detail::param_kind::kOther, *ks.name);
  g.record.reserve_one();
  g.entries.reserve(g.entries.size() + 1);  // nothing can fail after the append
  // In recording order, with the runtime's own appends between launches too.
  if (g.appended)
    check(zeCommandListAppendBarrier(g.list, nullptr, 0, nullptr), "zeCommandListAppendBarrier",
          "ordering a zex::Graph's launches");
  uint64_t command_id = 0;
  if (g.mutable_list) {
    // Immediately before the append it names (NEO gives the id to the next command appended).
    detail::ze_newer::MutableCommandIdDesc d;
    d.flags = detail::ze_newer::kMutableKernelArguments;
    check(g.dev.info().next_command_id(g.list, &d, &command_id), detail::ze_newer::kGetNextCommandIdName,
          "recording a zex::Graph's launch as a mutable command");
  }
  const ze_group_count_t groups{g3.x, g3.y, g3.z};
  ze_result_t r = zeCommandListAppendLaunchKernel(g.list, l.kernel, &groups, nullptr, 0, nullptr);
  if (r != ZE_RESULT_SUCCESS) detail::throw_launch_error(r, *ks.name);
  g.appended = true;
  ++g.next_id;
  g.record.start(State::Record::Run{id, level, kernel.state_, file, line, {l.group[0], l.group[1], l.group[2]}});
  g.entries.push_back(State::Entry{kernel.state_, level, {l.group[0], l.group[1], l.group[2]}, groups, command_id,
                                   std::move(args), std::move(bounds)});
  return GraphLaunch{id};
}


namespace {

// The first failure of a recording as close(), execute() and later launches rethrow it: the same type,
// the message saying where the recording stopped (`step`) and what to do.
std::exception_ptr annotated(std::exception_ptr e, const std::string& graph, const std::string& step) {
  const std::string where = step + " of " + (graph.empty() ? std::string("a zex::Graph") : "graph '" + graph + "'");
  const std::string then = "the graph recorded nothing after it and cannot be closed or executed: record a new zex::Graph";
  auto text = [&](const char* what) { return "zex::Graph: " + where + " failed, so " + then + ". The failure: " + what; };
  try {
    std::rethrow_exception(e);
  } catch (const ZeError& z) {
    return std::make_exception_ptr(ZeError(z.shared_device_report(), z.result(), z.call(), where + "; " + then));
  } catch (const std::bad_alloc&) {
    return std::current_exception();
  } catch (const std::invalid_argument& x) {
    return std::make_exception_ptr(InvalidArgument(text(x.what())));
  } catch (const std::out_of_range& x) {
    return std::make_exception_ptr(OutOfRange(text(x.what())));
  } catch (const std::logic_error& x) {
    return std::make_exception_ptr(LogicError(text(x.what())));
  } catch (const std::exception& x) {
    return std::make_exception_ptr(RuntimeError(text(x.what())));
  } catch (...) {
    return std::current_exception();
  }
}

// Keeps `e` as the graph's recording failure, annotated with `step()` (what was being recorded), or
// bare if there is no memory for the annotation.
template <class Step>
void keep_failure(Graph::State& g, std::exception_ptr e, Step step) noexcept {
  try {
    g.failed = annotated(e, g.name, step());
  } catch (...) {
    g.failed = e;
  }
}

}  // namespace

void Graph::recording_failed(const Kernel& kernel) noexcept {
  if (!s_) return;
  State& g = *s_;
  std::lock_guard<std::mutex> lock(g.mu);  // execute() reads `failed` under it, from any thread
  if (g.closed || g.failed) return;
  const Kernel::State* ks = kernel.state_.get();
  keep_failure(g, std::current_exception(), [&] {
    return "recording launch " + std::to_string(g.next_id) +
           (ks && ks->name ? " (kernel '" + *ks->name + "')" : std::string());
  });
}

bool Graph::recording_failed() const { return static_cast<bool>(live().failed); }

Kernel::State& Graph::update_kernel(GraphLaunch launch) {
  State& g = live();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.failed) std::rethrow_exception(g.failed);
  if (launch.number == 0 || launch.number > g.entries.size())
    throw InvalidArgument("zex::Graph::update: " + g.which() + " has no launch " + std::to_string(launch.number) +
                          " (its launches are numbered 1 to " + std::to_string(g.entries.size()) +
                          " in recording order, as launch() returned them)");
  if (!g.closed)
    throw LogicError("zex::Graph::update: " + g.which() +
                     " is not closed; record every launch, close() it, then update (or record the launch with the "
                     "arguments it should have)");
  return *g.entries[launch.number - 1].kernel;
}

Kernel::Level& Graph::begin_update(GraphLaunch launch, Kernel::State& ks, size_t n, Language lang) {
  State& g = live();
  const State::Entry& e = g.entries[launch.number - 1];  // recorded before close(): never changes size after
  Kernel::Level& l = ks.at(e.variant);
  const Dim3 groups{e.groups.groupCountX, e.groups.groupCountY, e.groups.groupCountZ};
  detail::check_launch_shape(*ks.name, l.num_args - ks.hidden, ks.takes_state, n, groups,
                             Dim3{e.group[0], e.group[1], e.group[2]}, lang);
  return l;
}

void Graph::finish_update(GraphLaunch launch, detail::CapturedArgs&& args) {
  State& g = live();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.failed) std::rethrow_exception(g.failed);
  State::Entry& e = g.entries[launch.number - 1];
  std::vector<uint32_t> changed;
  for (uint32_t i = 0; i < args.args.size(); ++i)
    if (!e.args.same(i, args)) changed.push_back(i);
  if (changed.empty()) return;
  // A checked kernel's bounds follow its pointers: looked up before anything changes (a failed lookup
  // throws and leaves the launch as it was).
  // Only when a checked argument changed: an update of scalars alone keeps the recorded bounds.
  const Kernel::State& ks = *e.kernel;
  bool pointer_changed = false;
  for (uint32_t i : changed)
    pointer_changed = pointer_changed || std::binary_search(ks.checked.begin(), ks.checked.end(), i);
  std::vector<uint64_t> bounds = pointer_changed ? detail::MemoryBounds::recorded(ks, args) : e.bounds;
  const bool bounds_changed = bounds != e.bounds;
  if (!g.mutable_list && (!g.owned || g.exposed.load(std::memory_order_relaxed)))
    throw LogicError("zex::Graph::update: the driver offers no mutable command lists (spec 1.9), so zex would "
                     "record the list of " + g.which() + " again, but " +
                     (g.owned ? std::string("its handle() was handed out while it was recorded")
                              : std::string("it is a runtime's own list (Graph::adopt)")) +
                     ": the runtime's own appends to it cannot be recorded again. Record a new zex::Graph with the "
                     "new arguments");
  if (g.in_flight()) {
    if (g.stream)
      throw LogicError("zex::Graph::update: " + g.which() +
                       " has executions in flight on a zex::Stream; synchronize the stream before updating");
    g.wait_in_flight();
    g.harvest_all();  // their throws are raised by the queue's next synchronize
  }
  const std::string step = "updating launch " + std::to_string(launch.number);
  try {
    if (g.mutable_list) {
      const size_t count = changed.size() + (bounds_changed ? 1 : 0);
      std::vector<detail::ze_newer::MutableKernelArgumentDesc> descs(count);
      for (size_t k = 0; k < count; ++k) {
        detail::ze_newer::MutableKernelArgumentDesc& d = descs[k];
        d.pNext = k + 1 < count ? &descs[k + 1] : nullptr;
        d.commandId = e.command_id;
        if (k < changed.size()) {
          d.argIndex = changed[k];
          d.argSize = args.args[changed[k]].size;
          d.pArgValue = args.value(changed[k]);
        } else {  // the hidden bounds struct, after the kernel's own arguments
          d.argIndex = static_cast<uint32_t>(args.args.size());
          d.argSize = bounds.size() * sizeof(uint64_t);
          d.pArgValue = bounds.data();
        }
      }
      detail::ze_newer::MutableCommandsDesc head;
      head.pNext = descs.data();
      check(g.dev.info().update_mutable(g.list, &head), detail::ze_newer::kUpdateMutableCommandsName,
            "updating a zex::Graph's launch");
      check(zeCommandListClose(g.list), "zeCommandListClose", "closing a zex::Graph after an update");
      e.args = std::move(args);
      e.bounds = std::move(bounds);
    } else {
      e.args = std::move(args);
      e.bounds = std::move(bounds);
      g.rerecord();
    }
  } catch (...) {
    // The list may be half changed: executing it could run what nobody recorded.
    keep_failure(g, std::current_exception(), [&] { return step; });
    throw;
  }
}

uint64_t Graph::launches() const {
  State& g = live();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.entries.size();
}

bool Graph::updates_in_place() const { return live().mutable_list; }

void Graph::close() {
  State& g = live();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.failed) std::rethrow_exception(g.failed);
  if (g.closed) return;
  try {
    g.append_epilogue();
    check(zeCommandListClose(g.list), "zeCommandListClose", "closing a zex::Graph");
  } catch (...) {
    // A retry would append a second epilogue after whatever part of the first got in.
    keep_failure(g, std::current_exception(), [] { return std::string("closing the recording"); });
    throw;
  }
  g.closed = true;
}

bool Graph::closed() const { return live().closed; }
ze_command_list_handle_t Graph::handle() const noexcept {
  if (!s_) return nullptr;
  // Handed out while recording: the runtime may append to it, so update() cannot record it again.
  if (!s_->closed) s_->exposed.store(true, std::memory_order_relaxed);
  return s_->list;
}
const std::string& Graph::name() const { return live().name; }
const Device& Graph::device() const { return live().dev; }
uint64_t Graph::executions() const {
  State& g = live();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.executions;
}

// ---- Queue ---------------------------------------------------------------------------------------

namespace {

// Every execution of the `touched` graphs has finished: harvest them all, then raise the first throw
// of the first graph that threw, with the other kept reports (of that graph and of the others) as
// others(). `state` gives a Graph::State* of an element. Clears `touched`.
template <class Touched, class StateOf>
void harvest_and_raise(Touched& touched, StateOf state) {
  std::vector<KernelExceptionInfo> raised;
  for (const auto& gp : touched) {
    Graph::State& g = *state(gp);
    std::lock_guard<std::mutex> glock(g.mu);
    g.harvest_all();
    g.queue = nullptr;
    g.stream = nullptr;
    if (!g.abandoned && !g.thrown.empty()) {
      for (KernelExceptionInfo& i : g.thrown) {
        i.executions_thrown = g.thrown_count;
        i.executions_synchronized = g.harvested;
        if (raised.size() <= Graph::kMaxKept) raised.push_back(std::move(i));
      }
    }
    g.thrown.clear();
    g.thrown_count = 0;
    g.harvested = 0;
  }
  touched.clear();
  if (!raised.empty()) {
    KernelExceptionInfo first = std::move(raised.front());
    raised.erase(raised.begin());
    throw KernelException(std::move(first), std::move(raised));
  }
}

}  // namespace

struct Queue::State {
  Device dev;
  ze_command_queue_handle_t queue = nullptr;
  bool owned = true;
  std::mutex mu;
  std::vector<std::shared_ptr<Graph::State>> touched;  // graphs executed since the last synchronize

  explicit State(const Device& d) : dev(d) {}
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() {
    if (queue) zeCommandQueueSynchronize(queue, UINT64_MAX);
    // The graphs executed here forget this queue (their executions have finished): a graph that outlives
    // its queue never waits on it again. Their throws are dropped.
    for (const auto& g : touched) {
      std::lock_guard<std::mutex> lock(g->mu);
      g->forget_in_flight();
    }
    if (queue && owned) zeCommandQueueDestroy(queue);
  }
};

Queue::Queue(const Device& dev) : s_(std::make_unique<State>(dev)) {
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, dev.compute_ordinal(), 0, 0,
                             ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  check(zeCommandQueueCreate(dev.context_handle(), dev.handle(), &qd, &s_->queue), "zeCommandQueueCreate",
        "creating a zex::Queue");
}

Queue::Queue(std::unique_ptr<State> s) : s_(std::move(s)) {}

Queue Queue::adopt(const Device& dev, ze_command_queue_handle_t queue) {
  if (!queue) throw InvalidArgument("zex::Queue::adopt: the command queue is null");
  auto s = std::make_unique<State>(dev);
  s->queue = queue;
  s->owned = false;
  return Queue(std::move(s));
}

Queue::Queue(Queue&&) noexcept = default;
Queue& Queue::operator=(Queue&&) noexcept = default;
Queue::~Queue() = default;

Queue::State& Queue::live() const {
  if (__builtin_expect(!s_, 0)) throw LogicError("zex::Queue: this queue was moved from; use the queue it was moved to");
  return *s_;
}

ze_command_queue_handle_t Queue::handle() const noexcept { return s_ ? s_->queue : nullptr; }

void Queue::execute(Graph& graph) {
  State& q = live();
  Graph::State& g = graph.live();
  std::lock_guard<std::mutex> qlock(q.mu);
  std::lock_guard<std::mutex> glock(g.mu);
  g.check_executable("zex::Queue::execute", q.dev, "queue", (g.queue && g.queue != q.queue) || g.stream,
                     "another zex::Queue or a zex::Stream");
  g.make_room();
  const bool known =
      std::find_if(q.touched.begin(), q.touched.end(), [&](const auto& p) { return p.get() == &g; }) != q.touched.end();
  if (!known) q.touched.reserve(q.touched.size() + 1);  // before the submission: recording it cannot fail after
  ze_result_t r = zeCommandQueueExecuteCommandLists(q.queue, 1, &g.list, nullptr);
  if (r != ZE_RESULT_SUCCESS) detail::throw_ze_error(r, "zeCommandQueueExecuteCommandLists", "executing a zex::Graph");
  ++g.executions;
  g.queue = q.queue;
  if (!known) q.touched.push_back(graph.s_);
}

bool Queue::synchronize_for_ns(uint64_t timeout_ns) {
  State& q = live();
  std::lock_guard<std::mutex> qlock(q.mu);
  ze_result_t r = zeCommandQueueSynchronize(q.queue, timeout_ns);
  if (r == ZE_RESULT_NOT_READY && timeout_ns != UINT64_MAX) return false;
  check(r, "zeCommandQueueSynchronize", "waiting for a zex::Queue");
  harvest_and_raise(q.touched, [](const std::shared_ptr<Graph::State>& p) { return p.get(); });
  return true;
}

// ---- Stream::execute --------------------------------------------------------------------------------

void Stream::execute(Graph& graph) {
  Impl& s = live();
  Impl::Use use(s);
  Graph::State& g = graph.live();
  std::lock_guard<std::mutex> glock(g.mu);
  g.check_executable("zex::Stream::execute", s.dev, "stream", g.queue || (g.stream && g.stream != &s),
                     "a zex::Queue or another zex::Stream");
  const detail::ze_newer::CommandListImmediateAppendFn append = s.device->immediate_append;
  if (!append)
    throw ZeError(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, detail::ze_newer::kImmediateAppendName, "executing a zex::Graph on a zex::Stream",
                  "The driver does not offer Level Zero 1.9's immediate append of regular lists: execute the "
                  "graph on a zex::Queue instead (zex::Queue q(dev); q.execute(graph); q.synchronize();).");
  g.make_room();  // executions in flight are on this stream (checked above): waited through stream_wait
  const bool known = std::find_if(s.graphs.begin(), s.graphs.end(), [&](const std::shared_ptr<void>& p) {
                       return p.get() == &g;
                     }) != s.graphs.end();
  if (!known) s.graphs.reserve(s.graphs.size() + 1);  // before the append: recording it cannot fail after
  Impl::Command c;
  s.begin_command(c);
  ze_result_t r = append(s.list, 1, &g.list, c.signal, c.num_waits, c.waits);
  if (r != ZE_RESULT_SUCCESS) detail::throw_ze_error(r, detail::ze_newer::kImmediateAppendName, "executing a zex::Graph on a zex::Stream");
  s.end_command();
  ++g.executions;
  g.stream = &s;
  g.stream_wait = [](void* p) { static_cast<Stream::Impl*>(p)->wait_all(); };
  if (!known) s.graphs.push_back(graph.s_);
}

void Stream::Impl::raise_graphs() {
  harvest_and_raise(graphs, [](const std::shared_ptr<void>& p) { return static_cast<Graph::State*>(p.get()); });
}

void Stream::Impl::forget_graphs() noexcept {
  for (const auto& p : graphs) {
    Graph::State& g = *static_cast<Graph::State*>(p.get());
    std::lock_guard<std::mutex> lock(g.mu);
    g.forget_in_flight();
  }
  graphs.clear();
}

}  // namespace zex
