// zex::Event (<zex/event.hpp>): a stream's mark (Stream::record), waited on from any thread, raising
// the stream's exception of a launch before the mark once, through the stream while it lives; and the
// stream's side of it (record(), wait(Event), raise_before).
#include <zex/event.hpp>
#include <zex/stream.hpp>

#include "runtime/event_state.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace zex {

namespace {
[[noreturn]] void throw_empty_event(const char* what) {
  throw std::logic_error(std::string("zex: Event::") + what + "() on an empty zex::Event (default-constructed "
                         "or moved from); get one from Stream::record()");
}
}  // namespace

void Event::synchronize() {
  if (!s_) throw_empty_event("synchronize");
  check(zeEventHostSynchronize(s_->event, UINT64_MAX), "zeEventHostSynchronize", "waiting for a zex::Event");
  // Every launch before the mark has finished: its throw, if any, is in the report (status last).
  // The stream may be being destroyed on another thread: under the link's lock it is either still
  // whole (its destructor waits for this raise to end) or detached, never half freed.
  detail::StreamLink& link = *s_->link;
  detail::LockGuard lock(link.mu);
  auto* impl = static_cast<Stream::Impl*>(link.impl);
  if (impl && SlabPool::thrown(impl->slot)) impl->raise_before(s_->mark);
}

bool Event::ready() const {
  if (!s_) throw_empty_event("ready");
  ze_result_t r = zeEventQueryStatus(s_->event);
  if (r == ZE_RESULT_NOT_READY) return false;
  check(r, "zeEventQueryStatus", "polling a zex::Event");
  return true;
}

ze_event_handle_t Event::handle() const noexcept { return s_ ? s_->event : nullptr; }
uint64_t Event::mark_launch_id() const noexcept { return s_ ? s_->mark : 0; }

Event Stream::record() {
  Impl& s = live();
  Impl::Use use(s);
  auto st = std::make_shared<detail::EventState>();
  ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
  ze_device_handle_t h = s.dev.handle();
  check(zeEventPoolCreate(s.dev.context_handle(), &pd, 1, &h, &st->pool), "zeEventPoolCreate",
        "creating a zex::Event");
  ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
  check(zeEventCreate(st->pool, &ed, &st->event), "zeEventCreate", "creating a zex::Event");
  if (!s.link) {
    s.link = std::make_shared<detail::StreamLink>();
    s.link->impl = &s;
  }
  st->link = s.link;
  st->mark = s.next_id;
  s.append_signal(st->event);  // the one append: a barrier after everything so far
  st->armed = true;
  return Event(std::move(st));
}

void Stream::wait(const Event& event) {
  Impl& s = live();
  Impl::Use use(s);
  if (__builtin_expect(!event.s_, 0)) throw_empty_event("wait");
  s.held.reserve(s.held.size() + 1);  // so that joining the wait list is all that can fail after
  s.user_waits.push_back(event.s_->event);
  s.held.push_back(event.s_);
}

void Stream::Impl::raise_before(uint64_t mark) {
  Use use(*this);
  // Raised already (by synchronize() or another Event), or thrown by a launch after the mark, whose
  // own waits raise it. Status is read first (acquire): the launch id it publishes is then complete.
  if (!SlabPool::thrown(slot) || slot.report->launch_id >= mark) return;
  raise(false);
}

}  // namespace zex
