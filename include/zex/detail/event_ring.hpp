// The sequence of a stream's commands and, on the event path (Stream::WaitPath::kEvents), the ring of
// events they signal (docs/design.md, "Waiting"). Inline what every launch and synchronize does (the
// next event, the newest one, the wait on it); compiled what is rare (src/runtime/event_ring.cpp):
// creating events, making room when all are pending, growing, destroying.
//
// Commands appended so far are [0, seq), commands known finished [0, done): [done, seq) may still run.
// On the event path command q signals ring(q), so [done, seq) are exactly the unreset events.
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

  EventRing() = default;
  EventRing(const EventRing&) = delete;
  EventRing& operator=(const EventRing&) = delete;
  ~EventRing() { destroy(); }

  /// The event path: kEvents slots (events made lazily) from one pool of the device.
  /// @throws ZeError if the pool cannot be created
  void create(ze_context_handle_t context, ze_device_handle_t device);
  /// Destroys every event and pool (the caller has waited for them). Never throws.
  void destroy() noexcept;

  uint64_t seq = 0;            // commands appended
  uint64_t done = 0;           // commands known finished
  uint64_t user_wait_end = 0;  // commands before this one may wait for a runtime's event

  bool idle() const noexcept { return seq == done; }
  /// The event of command q (the event path).
  ze_event_handle_t ring(uint64_t q) const noexcept { return events_[q & (events_.size() - 1)]; }

  /// The event the next signalling command signals. With every event pending, first makes room: waits
  /// for the oldest half, or grows the ring (see kEvents).
  ze_event_handle_t next() {
    if (__builtin_expect(seq - done >= events_.size(), 0)) make_room();
    ze_event_handle_t e = ring(seq);
    return __builtin_expect(e != nullptr, 1) ? e : create_event();
  }
  /// The newest pending signal, which the next command waits for (chaining the stream in order), or
  /// nullptr when everything has been waited for.
  ze_event_handle_t previous() const noexcept { return seq != done ? ring(seq - 1) : nullptr; }

  /// Waits on the newest command's event (each command waited for the one before it, so its
  /// completion means all have run and observed their waits) and resets every pending event. False if
  /// `timeout_ns` passed first (nothing changed).
  /// @throws ZeError
  bool wait_newest(uint64_t timeout_ns) {
    ze_result_t r = zeEventHostSynchronize(ring(seq - 1), timeout_ns);
    if (r == ZE_RESULT_NOT_READY && timeout_ns != UINT64_MAX) return false;
    if (__builtin_expect(r != ZE_RESULT_SUCCESS, 0))
      throw_ze_error(r, "zeEventHostSynchronize", "waiting for a zex::Stream");
    for (uint64_t q = done; q < seq; ++q)
      check(zeEventHostReset(ring(q)), "zeEventHostReset", "resetting a zex::Stream's event");
    done = seq;
    return true;
  }

 private:
  ze_event_handle_t create_event();
  void make_room();
  void grow();
  void retire_oldest();

  ze_context_handle_t context_ = nullptr;
  ze_device_handle_t device_ = nullptr;
  ze_event_pool_handle_t pool_ = nullptr;           // the first kEvents events
  std::vector<ze_event_pool_handle_t> grown_pools_;  // pools added by grow()
  std::vector<ze_event_handle_t> events_ = std::vector<ze_event_handle_t>(1, nullptr);  // list path: unused
};

}  // namespace detail
}  // namespace zex
