// zex::Event: a mark in a stream's launches (Stream::record()). Compiled (src/runtime/event.cpp): an
// Event is made, waited on and destroyed off the launch path.
#pragma once

#include <level_zero/ze_api.h>

#include <cstdint>
#include <memory>

namespace zex {

class Stream;

namespace detail {
// What a zex::Event shares with its stream: the event (its own one-event pool), the launch id of the
// mark, and the stream to raise through while the stream lives (src/runtime/event_state.hpp).
struct EventState;
// The stream a stream's Events raise through, and the lock under which they do: the stream's
// destructor detaches it under the same lock, so that an Event never raises through a stream another
// thread is freeing (src/runtime/event_state.hpp).
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

}  // namespace zex
