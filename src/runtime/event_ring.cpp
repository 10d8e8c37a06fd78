// The rare half of a stream's event ring (<zex/detail/event_ring.hpp>): making events, making room
// when every event is pending, growing the ring, and destroying it.
#include <zex/detail/event_ring.hpp>

#include <zex/error.hpp>

#include <vector>

namespace zex {
namespace detail {

void EventRing::create(ze_context_handle_t context, ze_device_handle_t device, bool in_order) {
  context_ = context;
  device_ = device;
  std::vector<ze_event_handle_t> events(kEvents, nullptr);
  std::vector<uint8_t> signalled(kEvents, 0);
  ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, kEvents};
  check(zeEventPoolCreate(context, &pd, 1, &device, &pool_), "zeEventPoolCreate", "creating a zex::Stream's events");
  events_.swap(events);
  signalled_.swap(signalled);
  signal_every_ = in_order ? kSignalEvery : 1;
}

void EventRing::destroy() noexcept {
  for (auto e : events_)
    if (e) zeEventDestroy(e);
  events_.assign(1, nullptr);
  signalled_.assign(1, 0);
  if (pool_) zeEventPoolDestroy(pool_);
  pool_ = nullptr;
  for (auto p : grown_pools_) zeEventPoolDestroy(p);
  grown_pools_.clear();
}

ze_event_handle_t EventRing::create_event() {
  // Only the first kEvents are created here, lazily, from the first pool: grow() fills the ring.
  ze_event_handle_t& e = events_[seq & (events_.size() - 1)];
  ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, static_cast<uint32_t>(seq % kEvents),
                     ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
  check(zeEventCreate(pool_, &ed, &e), "zeEventCreate", "creating a zex::Stream's event");
  return e;
}

void EventRing::fill_first_ring() {
  // The first ring's events are made when first signalled, slot i from index i of the first pool; on
  // an in-order list most slots never signal. grow() moves slots to new positions, after which slot
  // and index no longer match: so every slot gets its event before the first growth.
  for (size_t i = 0; i < events_.size(); ++i)
    if (!events_[i]) {
      ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, static_cast<uint32_t>(i), ZE_EVENT_SCOPE_FLAG_HOST,
                         ZE_EVENT_SCOPE_FLAG_HOST};
      check(zeEventCreate(pool_, &ed, &events_[i]), "zeEventCreate", "creating a zex::Stream's event");
    }
}

uint64_t EventRing::signalled_after(uint64_t q) const noexcept {
  // The first signalled command in [q, seq), or seq. Every kSignalEvery-th command signals, so from
  // done + n/2 one is at most kSignalEvery - 1 <= n/2 - 1 commands on: always before seq == done + n.
  const size_t mask = events_.size() - 1;
  while (q < seq && !signalled_[q & mask]) ++q;
  return q;
}

void EventRing::make_room() {
  // Every slot is pending (seq - done == n); the command to wait for is the first signalled one of the
  // newer half. A launch in the window waits for a runtime's event, and that command has not finished:
  // it may be waiting for an event that only this thread will signal, after more launches. Waiting
  // here would deadlock; grow instead (bounded by kMaxEvents; without wait() the ring grows only up to
  // kQueuedEvents). A stream that queues faster than the device retires grows too, up to
  // kQueuedEvents: a wait here blocks the caller until the device's pipeline has drained half the ring
  // (a sleep and a wake-up each), and a deeper ring makes those waits rarer (one per kQueuedEvents / 2
  // commands instead of one per kEvents / 2). Idle and lightly used streams keep kEvents.
  const uint64_t q = signalled_after(done + events_.size() / 2);
  const bool user_wait = user_wait_end > done;
  if (q < seq && events_.size() < (user_wait ? kMaxEvents : kQueuedEvents)) {
    ze_result_t r = zeEventQueryStatus(ring(q));
    if (r == ZE_RESULT_NOT_READY) return grow();
    if (r != ZE_RESULT_SUCCESS) detail::throw_ze_error(r, "zeEventQueryStatus", "waiting for a zex::Stream");
  }
  retire_oldest(q);
}

void EventRing::grow() {
  // Every slot is pending (seq - done == n). The new ring keeps each one at its new position
  // q & (2n - 1) and gets n new events from a new pool of n. Built aside, so that a failure leaves
  // the stream as it was.
  if (pool_ && events_.size() == kEvents) fill_first_ring();
  const size_t n = events_.size();
  ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                          static_cast<uint32_t>(n)};
  ze_device_handle_t h = device_;
  ze_event_pool_handle_t p = nullptr;
  check(zeEventPoolCreate(context_, &pd, 1, &h, &p), "zeEventPoolCreate", "growing a zex::Stream's events");
  std::vector<ze_event_handle_t> grown;
  std::vector<uint8_t> grown_signalled;
  auto fail = [&](ze_result_t r, const char* call) {
    for (uint64_t q = seq; q < done + 2 * n && !grown.empty(); ++q)
      if (grown[q & (2 * n - 1)]) zeEventDestroy(grown[q & (2 * n - 1)]);
    zeEventPoolDestroy(p);
    throw ZeError(r, call, "growing a zex::Stream's events");
  };
  try {
    grown.assign(2 * n, nullptr);
    grown_signalled.assign(2 * n, 0);
    grown_pools_.reserve(grown_pools_.size() + 1);
  } catch (...) {
    fail(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, "std::vector::reserve");
  }
  for (uint64_t q = done; q < seq; ++q) {
    grown[q & (2 * n - 1)] = ring(q);
    grown_signalled[q & (2 * n - 1)] = signalled_[q & (n - 1)];
  }
  uint32_t index = 0;
  for (uint64_t q = seq; q < done + 2 * n; ++q) {
    ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, index++, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
    ze_result_t r = zeEventCreate(p, &ed, &grown[q & (2 * n - 1)]);
    if (r != ZE_RESULT_SUCCESS) {
      grown[q & (2 * n - 1)] = nullptr;
      fail(r, "zeEventCreate");
    }
  }
  grown_pools_.push_back(p);
  events_.swap(grown);
  signalled_.swap(grown_signalled);
}

void EventRing::retire_oldest(uint64_t q) {
  // Every slot is pending. Wait for command q, the first signalled one from done + n/2: once it has
  // finished, so has every command before it (the chain, or an in-order list), and each of those
  // commands' events has been waited for by its successor, so [done, q) can be reset and reused. Not q
  // itself: on a chained list command q + 1 waits for q's event and may not have started yet (a reset
  // before it looks would leave it waiting forever); q's event is reset by the next retire or wait.
  // The commands after q stay queued: the device never runs dry here.
  ze_result_t r = zeEventHostSynchronize(ring(q), UINT64_MAX);
  if (r != ZE_RESULT_SUCCESS) detail::throw_ze_error(r, "zeEventHostSynchronize", "waiting for a zex::Stream");
  reset_until(q);
}

}  // namespace detail
}  // namespace zex
