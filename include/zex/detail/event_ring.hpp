// The sequence of a stream's commands and, on the event path (Stream::WaitPath::kEvents), the ring of
// events they signal (docs/design.md, "Waiting"). Inline what every launch and synchronize does (the
// next event, the newest one, the wait on it); compiled what is rare (src/runtime/event_ring.cpp):
// creating events, making room when all are pending, growing, destroying.
//
// Commands appended so far are [0, seq), commands known finished [0, done): [done, seq) may still run.
// On the event path command q owns slot ring(q). On a chained list (not known in order) every command
// signals its event and waits for the one before; on an in-order list only the first launch after a
// wait, every kSignalEvery-th and zex's own commands signal (the order of the list makes a later signal
// cover the earlier commands), so the signalled commands in [done, seq) are exactly the unreset events.
#pragma once

#include <zex/error.hpp>

#include <level_zero/ze_api.h>

#include <cstdint>
#include <vector>

namespace zex {
namespace detail {

class EventRing {
 public:
  /// Events at first: with this many commands in flight, the next first waits for the oldest half
  /// (the device keeps the newest half queued), unless a command in flight waits for a runtime's event
  /// (user_wait_end) and the oldest half has not finished: then the ring doubles instead (up to
  /// kMaxEvents), so that commands queued behind an event only the caller will signal never deadlock.
  static constexpr uint32_t kEvents = 64;
  static constexpr uint32_t kMaxEvents = 1u << 16;
  /// The ring a stream that keeps more commands queued than the device has retired grows to.
  static constexpr uint32_t kQueuedEvents = 1024;
  /// On an in-order list, the launches that signal: one in this many (at most kEvents / 2, so that
  /// the newest half of a full ring always holds one to wait for).
  static constexpr uint32_t kSignalEvery = 32;
  static_assert(kSignalEvery <= kEvents / 2 && (kSignalEvery & (kSignalEvery - 1)) == 0, "see kSignalEvery");

  EventRing() = default;
  EventRing(const EventRing&) = delete;
  EventRing& operator=(const EventRing&) = delete;
  ~EventRing() { destroy(); }

  /// The event path: kEvents slots (events made lazily) from one pool of the device. `in_order`: the
  /// list runs its commands in order, so launches signal sparsely (kSignalEvery).
  /// @throws ZeError if the pool cannot be created
  void create(ze_context_handle_t context, ze_device_handle_t device, bool in_order);
  /// Destroys every event and pool (the caller has waited for them). Never throws.
  void destroy() noexcept;

  uint64_t seq = 0;            // commands appended
  uint64_t done = 0;           // commands known finished
  uint64_t user_wait_end = 0;  // commands before this one may wait for a runtime's event

  bool idle() const noexcept { return seq == done; }
  /// The event of command q (the event path).
  ze_event_handle_t ring(uint64_t q) const noexcept { return events_[q & (events_.size() - 1)]; }

  /// The event the next command signals (zex's own commands, and every launch on a chained list). With
  /// every slot pending, first makes room: waits for the oldest half, or grows the ring (see kEvents).
  ze_event_handle_t next() {
    if (__builtin_expect(seq - done >= events_.size(), 0)) make_room();
    const size_t i = seq & (events_.size() - 1);
    signalled_[i] = 1;
    ze_event_handle_t e = events_[i];
    return __builtin_expect(e != nullptr, 1) ? e : create_event();
  }
  /// The event the next launch signals, or nullptr if it need not signal: on an in-order list only
  /// the first launch after a wait (so that a launch and its synchronize stay one append) and every
  /// kSignalEvery-th signal. Makes room like next().
  ze_event_handle_t next_launch() {
    if (__builtin_expect((seq & (signal_every_ - 1)) == signal_every_ - 1 || seq == done, 0)) return next();
    if (__builtin_expect(seq - done >= events_.size(), 0)) make_room();
    return nullptr;
  }
  /// The newest pending signal, which the next command waits for (chaining the stream in order), or
  /// nullptr when everything has been waited for. Only on a chained list, where every command signals.
  ze_event_handle_t previous() const noexcept { return seq != done ? ring(seq - 1) : nullptr; }
  /// The newest command signalled (wait_newest() and query() need that; else append a signalling one).
  bool newest_signalled() const noexcept { return seq != done && signalled_[(seq - 1) & (events_.size() - 1)]; }

  /// Waits on the newest command's event (newest_signalled(): each command waited for the one before
  /// it, or the list is in order, so its completion means all have run and observed their waits) and
  /// resets every pending event. False if `timeout_ns` passed first (nothing changed).
  /// @throws ZeError
  bool wait_newest(uint64_t timeout_ns) {
    ze_result_t r = zeEventHostSynchronize(ring(seq - 1), timeout_ns);
    if (r == ZE_RESULT_NOT_READY && timeout_ns != UINT64_MAX) return false;
    if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0))
      throw_ze_error(r, "zeEventHostSynchronize", "waiting for a zex::Stream");
    reset_until(seq);
    return true;
  }

 private:
  ze_event_handle_t create_event();
  void make_room();
  void grow();
  void retire_oldest(uint64_t q);
  uint64_t signalled_after(uint64_t q) const noexcept;
  void fill_first_ring();
  /// Resets the signalled events of [done, end) and makes `end` the first command not known finished.
  void reset_until(uint64_t end) {
    const size_t mask = events_.size() - 1;
    for (uint64_t q = done; q < end; ++q)
      if (signalled_[q & mask]) {
        check(zeEventHostReset(events_[q & mask]), "zeEventHostReset", "resetting a zex::Stream's event");
        signalled_[q & mask] = 0;
      }
    done = end;
  }

  ze_context_handle_t context_ = nullptr;
  ze_device_handle_t device_ = nullptr;
  ze_event_pool_handle_t pool_ = nullptr;           // the first kEvents events
  std::vector<ze_event_pool_handle_t> grown_pools_;  // pools added by grow()
  std::vector<ze_event_handle_t> events_ = std::vector<ze_event_handle_t>(1, nullptr);  // list path: unused
  std::vector<uint8_t> signalled_ = std::vector<uint8_t>(1, 0);  // per slot: its command signals (unreset)
  uint32_t signal_every_ = 1;
};

}  // namespace detail
}  // namespace zex
