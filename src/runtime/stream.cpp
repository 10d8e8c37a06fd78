// zex::Stream, cold half: creating and destroying a stream, the wait lists of its commands, and
// raising a thrown report (through SlabPool::read_and_reset, the one path from report to exception).
// The launch and synchronize paths are inline in <zex/stream.hpp>; Events are event.cpp, the event
// ring event_ring.cpp, argument encoding launch_args.cpp.
#include <zex/stream.hpp>

#include "runtime/event_state.hpp"
#include "runtime/launch_origin.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

namespace zex {

namespace {

struct EnvLevel {
  int level = 1;
  std::string error;  // non-empty if ZEX_DEBUG_LEVEL is set to something else than 0, 1 or 2
};

EnvLevel read_env_level() {
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

}  // namespace

int default_debug_level() {
  EnvLevel e = read_env_level();
  if (!e.error.empty()) throw zex::InvalidArgument(e.error);
  return e.level;
}

Stream::Stream(const Device& dev) : s_(std::make_unique<Impl>(dev)) {}
Stream::Stream(Stream&&) noexcept = default;
Stream& Stream::operator=(Stream&&) noexcept = default;
Stream::~Stream() = default;

void Stream::launch_args(const Kernel& kernel, const LaunchConfig& cfg, const KernelArg* args, size_t n,
                         const char* file, uint32_t line) {
  launch_args<KernelArg>(kernel, cfg, args, n, file, line);
}

void Stream::Impl::throw_concurrent_use() {
  throw zex::LogicError(
      "zex: two threads used one zex::Stream at the same time; a stream is used by one thread at a time: "
      "give each thread its own stream, or serialize the calls with a mutex. This call did nothing, and "
      "the stream stays usable.");
}

void Stream::throw_moved_from() { throw zex::LogicError("zex: use of a moved-from zex::Stream"); }

void Stream::throw_null_event(const char* what) {
  throw zex::InvalidArgument(std::string("zex: Stream::") + what + "() was given a null event handle");
}

Stream::Impl::Impl(const Device& d) : dev(d), device(&d.info()), pool(&d.slab_pool()) {
  EnvLevel env = read_env_level();
  env_level = env.level;
  env_error = std::move(env.error);
  const detail::DeviceInfo& info = d.info();
  host_sync = info.lists_in_order ? info.host_synchronize : nullptr;
  chain = !info.lists_in_order;
  slot = pool->acquire();
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, d.compute_ordinal(), 0, info.list_flags,
                             ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_result_t r = zeCommandListCreateImmediate(d.context_handle(), d.handle(), &qd, &list);
  if (r == ZE_RESULT_ERROR_INVALID_ENUMERATION && info.list_flags != 0) {
    // A layer or driver older than the API version the driver reported refuses the in-order flag:
    // an ordinary list, chained through events.
    qd.flags = 0;
    host_sync = nullptr;
    chain = true;
    r = zeCommandListCreateImmediate(d.context_handle(), d.handle(), &qd, &list);
  }
  if (r != ZE_RESULT_SUCCESS) {
    pool->release(slot);
    throw ZeError(r, "zeCommandListCreateImmediate", "creating a zex::Stream's command list");
  }
  if (host_sync) return;
  try {
    cmds.create(d.context_handle(), d.handle(), !chain);
  } catch (...) {
    zeCommandListDestroy(list);
    pool->release(slot);
    throw;
  }
}

Stream::Impl::~Impl() {
  // Events outlive their stream: from now on they only wait. Under the link's lock, so that an Event
  // raising through the stream on another thread finishes first (and none starts after).
  if (link) {
    detail::LockGuard lock(link->mu);
    link->impl = nullptr;
  }
  // The slot may only go back to the pool once no kernel can write it any more, and the list may be
  // destroyed only once nothing on it runs.
  bool idle = true;
  try {
    // The last command may be a signal() barrier, which signals the caller's event, not one of ours:
    // one more barrier (it waits for everything before it) that signals ours.
    if (unwaited_barrier) append_wait_barrier();
    if (!cmds.idle()) wait_all();
    if (SlabPool::thrown(slot)) {
      // An exception nobody synchronized for: clean the slot for its next owner, on the same path a
      // synchronize takes (reset appended before the report is cleared), then wait for the reset.
      pool->discard(slot, list, host_sync ? nullptr : cmds.next());
      ++cmds.seq;
      wait_all();
    }
  } catch (...) {
    idle = false;
  }
  if (!graphs.empty()) forget_graphs();
  cmds.destroy();
  zeCommandListDestroy(list);
  // A slot whose state is unknown (the device failed) is leaked rather than handed to a new stream
  // that a late write could corrupt.
  if (idle) pool->release(slot);
}

void Stream::Impl::append_wait_barrier() {
  // A barrier without wait events waits for every command before it (the specification), chained
  // list or not.
  check(zeCommandListAppendBarrier(list, cmds.next(), 0, nullptr), "zeCommandListAppendBarrier",
        "waiting for a zex::Stream's last launches");
  ++cmds.seq;
  unwaited_barrier = false;
}

bool Stream::Impl::query() {
  // The newest command must signal for its event to say anything (a poll appends at most one barrier).
  if (!host_sync && !cmds.newest_signalled()) append_wait_barrier();
  ze_result_t r = host_sync ? host_sync(list, 0) : zeEventQueryStatus(cmds.ring(cmds.seq - 1));
  if (r == ZE_RESULT_NOT_READY) return false;
  check(r, host_sync ? "zeCommandListHostSynchronize" : "zeEventQueryStatus", "polling a zex::Stream");
  return true;
}

void Stream::Impl::gather_waits(Command& c) {
  cmds.user_wait_end = cmds.seq + 1;  // this command (or, for a signal() barrier, the next one) waits for them
  wait_buf.assign(user_waits.begin(), user_waits.end());
  if (c.prev) wait_buf.push_back(c.prev);
  c.num_waits = static_cast<uint32_t>(wait_buf.size());
  c.waits = wait_buf.data();
}

void Stream::Impl::append_signal(ze_event_handle_t event) {
  // A barrier with wait events waits only for those (the specification), so on a chained list it
  // waits for the newest launch, whose completion means all have finished; on an in-order list it
  // follows everything before it anyway. Either way it holds back every later command.
  Command c;
  c.prev = chain ? cmds.previous() : nullptr;
  gather_waits(c);
  ze_result_t r = zeCommandListAppendBarrier(list, event, c.num_waits, c.num_waits ? c.waits : nullptr);
  if (r != ZE_RESULT_SUCCESS) throw ZeError(r, "zeCommandListAppendBarrier", "signalling an event after a zex::Stream's launches");
  user_waits.clear();
  if (host_sync) {
    ++cmds.seq;  // pending work: the list's host synchronize (and the destructor's) covers the barrier too
    return;
  }
  unwaited_barrier = true;  // no ring event follows it yet: the destructor adds one
  // On a chained list the barrier waits for a ring event that the chain does not know about: a wait on
  // the newest launch, or a retire past it, would reset that event before the barrier has looked, and
  // the caller's event would never signal (found by zex_tests_chained under load). One ring-signalled
  // barrier right after it (a barrier without wait events follows every command before it) puts it
  // back in the chain: everything later waits for that one.
  if (chain) append_wait_barrier();
}

void Stream::Impl::throw_bad_level(int requested, Language lang) const {
  if (requested == -1) throw zex::InvalidArgument(env_error);
  throw zex::InvalidArgument(std::string("zex: ") + detail::launch_names(lang).debug_level + " is " +
                              std::to_string(requested) + "; use 0, 1, 2, or -1 for the default (ZEX_DEBUG_LEVEL)");
}

void Stream::Impl::raise(bool all_done) {
  const Run* e = find(SlabPool::thrown_launch_id(slot));
  // The reset is a fill: on the event path it signals the stream's next event, which the next launch
  // waits for; on an in-order list later launches follow it anyway. So later launches may throw again
  // only once the claim word is 0 again, and the next synchronize (or the destructor) waits for it
  // too. One append.
  ze_event_handle_t ev = host_sync ? nullptr : cmds.next();
  KernelExceptionInfo info = pool->read_and_reset(slot, detail::origin_of(e, env_level), list, ev);
  ++cmds.seq;
  // After synchronize every launch has finished (the reset is zex's own command); after an Event's
  // wait, later launches may still run and throw, and their runs name them.
  if (all_done) record.clear();
  throw KernelException(std::move(info));
}

}  // namespace zex
