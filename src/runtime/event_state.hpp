// What a zex::Event shares with its stream (private to the runtime): the event and its one-event pool,
// the mark, and the link through which the Event raises while the stream lives. Used by event.cpp
// (Events) and stream.cpp (the stream's destructor detaches the link).
#pragma once

#include <zex/detail/mutex.hpp>

#include <level_zero/ze_api.h>

#include <cstdint>
#include <memory>

namespace zex {

namespace detail {

struct StreamLink {
  Mutex mu;             // held by a raising Event::synchronize, and by the stream's destructor to detach
  void* impl = nullptr;  // the stream's Impl; null once its destructor has begun
};

struct EventState {
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t event = nullptr;
  uint64_t mark = 0;                  // the stream's next launch id when recorded
  std::shared_ptr<StreamLink> link;  // the stream to raise through, while it lives
  bool armed = false;           // the barrier that signals the event was appended

  EventState() = default;
  EventState(const EventState&) = delete;
  EventState& operator=(const EventState&) = delete;
  ~EventState() {
    // The device may still have to signal the event: destroying it under a pending signal is undefined,
    // so the last handle waits for its mark first (the stream's own destructor waits the same way).
    if (armed) zeEventHostSynchronize(event, UINT64_MAX);
    if (event) zeEventDestroy(event);
    if (pool) zeEventPoolDestroy(pool);
  }
};

}  // namespace detail

}  // namespace zex
