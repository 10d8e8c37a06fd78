// The rare half of a stream's event ring (<zex/detail/event_ring.hpp>): making events, making room
// when every event is pending, growing the ring, and destroying it.
#include <zex/detail/event_ring.hpp>

#include <zex/error.hpp>

#include <vector>

namespace zex {
namespace detail {

void EventRing::create(ze_context_handle_t context, ze_device_handle_t device) {
  context_ = context;
  device_ = device;
  std::vector<ze_event_handle_t> events(kEvents, nullptr);
  ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, kEvents};
  check(zeEventPoolCreate(context, &pd, 1, &device, &pool_), "zeEventPoolCreate", "creating a zex::Stream's events");
  events_.swap(events);
}

void EventRing::destroy() noexcept {
  for (auto e : events_)
    if (e) zeEventDestroy(e);
  events_.assign(1, nullptr);
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

void EventRing::make_room() {
  // A launch in the window waits for a runtime's event, and the oldest half has not finished: it may
  // be waiting for an event that only this thread will signal, after more launches. Waiting here
  // would deadlock; grow instead (bounded by kMaxEvents; the common case, no wait(), never grows).
  if (user_wait_end > done && events_.size() < kMaxEvents) {
    ze_result_t r = zeEventQueryStatus(ring(done + events_.size() / 2));
    if (r == ZE_RESULT_NOT_READY) return grow();
    if (r != ZE_RESULT_SUCCESS) detail::throw_ze_error(r, "zeEventQueryStatus", "waiting for a zex::Stream");
  }
  retire_oldest();
}

void EventRing::grow() {
  // Every event is pending (seq - done == n). The new ring keeps each one at its new position
  // q & (2n - 1) and gets n new events from a new pool of n. Built aside, so that a failure leaves
  // the stream as it was.
  const size_t n = events_.size();
  ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                          static_cast<uint32_t>(n)};
  ze_device_handle_t h = device_;
  ze_event_pool_handle_t p = nullptr;
  check(zeEventPoolCreate(context_, &pd, 1, &h, &p), "zeEventPoolCreate", "growing a zex::Stream's events");
  std::vector<ze_event_handle_t> grown(2 * n, nullptr);
  auto fail = [&](ze_result_t r, const char* call) {
    for (uint64_t q = seq; q < done + 2 * n; ++q)
      if (grown[q & (2 * n - 1)]) zeEventDestroy(grown[q & (2 * n - 1)]);
    zeEventPoolDestroy(p);
    throw ZeError(r, call, "growing a zex::Stream's events");
  };
  try {
    grown_pools_.reserve(grown_pools_.size() + 1);
  } catch (...) {
    fail(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, "std::vector::reserve");
  }
  for (uint64_t q = done; q < seq; ++q) grown[q & (2 * n - 1)] = ring(q);
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
}

void EventRing::retire_oldest() {
  // Every event is pending. Wait for the command at done + n/2: once it has finished, so has every
  // command before it (the chain, or an in-order list), and each of those commands' events has been
  // waited for by its successor, so the oldest half can be reset and reused. The newest half stays
  // queued: the device never runs dry here.
  const uint64_t half = events_.size() / 2;
  ze_result_t r = zeEventHostSynchronize(ring(done + half), UINT64_MAX);
  if (r != ZE_RESULT_SUCCESS) detail::throw_ze_error(r, "zeEventHostSynchronize", "waiting for a zex::Stream");
  for (uint64_t q = done; q < done + half; ++q)
    check(zeEventHostReset(ring(q)), "zeEventHostReset", "resetting a zex::Stream's event");
  done += half;
}

}  // namespace detail
}  // namespace zex
