// zex::Stream's waits: the wait path the driver offers, many launches queued, and the runtime's own
// events (wait() and signal()).
#include "zex_fixture.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using zex_test::cfg1d;
using zex_test::env;
using zex_test::Usm;

// The wait path the CTest entry expects (ZEX_TEST_WAIT_PATH=list|events), so that a driver change
// cannot silently move the suite onto the other path.
TEST(Stream, WaitPathIsTheOneTheDriverOffers) {
  zex::Stream s(env().dev);
  const char* want = std::getenv("ZEX_TEST_WAIT_PATH");
  if (!want) GTEST_SKIP() << "ZEX_TEST_WAIT_PATH is set by the CTest entries (tests/runtime/CMakeLists.txt)";
  EXPECT_EQ(s.wait_path() == zex::Stream::WaitPath::kList ? "list" : "events", std::string(want));
}

// Many launches per synchronize, as runtimes launch: 2000 of them, far beyond the event window, with
// a throw in an early one and another in a late one. The first is reported, with its kernel's name
// (every launch since the last synchronize is remembered), and every launch ran.
TEST(Stream, TwoThousandQueuedLaunchesReportTheFirstThrowWithItsName) {
  auto& e = env();
  zex::Kernel counter = e.mod.kernel("maybe_throw");
  zex::Kernel other = e.mod.kernel("throw_at");
  zex::Stream s(e.dev);
  Usm<uint32_t> count(1);
  Usm<int> out(64);
  const uint64_t first = s.next_launch_id();
  for (int i = 0; i < 2000; ++i) {
    if (i == 7)
      s.launch(other, cfg1d(4, 16, 2), out.get(), 5u, 0u);  // throws: work-item 5
    else
      s.launch(counter, cfg1d(1, 4, 1), count.get(), uint32_t(i == 1500));
  }
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.launch_id(), first + 7);
  EXPECT_EQ(ex.kernel_name(), "throw_at");
  EXPECT_EQ(ex.debug_level(), 2);
  ASSERT_TRUE(ex.global_id());
  EXPECT_EQ((*ex.global_id())[0], 5u);
  // 1999 counting launches of 4 work-items; the one of launch 1500 lost its work-item 0 to the throw.
  EXPECT_EQ(count[0], 1999u * 4u - 1u);
  // The stream goes on: the next throw is reported again.
  s.launch(counter, cfg1d(1, 4, 1), count.get(), 1u);
  EXPECT_EQ(zex_test::expect_kernel_exception([&] { s.synchronize(); }).kernel_name(), "maybe_throw");
  s.launch(counter, cfg1d(1, 4, 1), count.get(), 0u);
  EXPECT_NO_THROW(s.synchronize());
}

// On the event path an in-order list signals only one launch in EventRing::kSignalEvery: a wait, a poll
// and an Event must still cover the launches after the last one that signalled. Counts that are not a
// multiple of it, around the window's size, and past the ring's growth; after each, ready() may say
// true only once every launch has run, and synchronize_for() and an Event the same.
TEST(Stream, WaitsCoverTheLaunchesAfterTheLastSignal) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  zex::Stream s(e.dev);
  Usm<uint32_t> count(1);
  uint32_t total = 0;
  const uint32_t every = zex::detail::EventRing::kSignalEvery;
  for (uint32_t n : {1u, every - 1, every, every + 1, 2 * zex::Stream::kEvents + 5, 3000u}) {
    for (uint32_t i = 0; i < n; ++i) s.launch(k, cfg1d(1, 1, 1), count.get(), 0u);
    total += n;
    while (!s.ready()) std::this_thread::yield();
    EXPECT_EQ(__atomic_load_n(&count[0], __ATOMIC_ACQUIRE), total) << "ready() before launch " << total << " ran";
    EXPECT_TRUE(s.synchronize_for_ns(0));
  }
  for (uint32_t n : {every + 3, 5u}) {
    for (uint32_t i = 0; i < n; ++i) s.launch(k, cfg1d(1, 1, 1), count.get(), 0u);
    total += n;
    ASSERT_TRUE(s.synchronize_for(std::chrono::seconds(60)));
    EXPECT_EQ(__atomic_load_n(&count[0], __ATOMIC_ACQUIRE), total);
  }
  for (uint32_t i = 0; i < every + 2; ++i) s.launch(k, cfg1d(1, 1, 1), count.get(), 0u);
  total += every + 2;
  zex::Event ev = s.record();
  ev.synchronize();
  EXPECT_EQ(__atomic_load_n(&count[0], __ATOMIC_ACQUIRE), total);
  // A throw in a launch that did not signal, followed by more that do not: reported, and the stream
  // goes on.
  for (uint32_t i = 0; i < every + 4; ++i) s.launch(k, cfg1d(1, 1, 1), count.get(), uint32_t(i == every + 1));
  total += every + 3;
  EXPECT_EQ(zex_test::expect_kernel_exception([&] { s.synchronize(); }).kernel_name(), "maybe_throw");
  EXPECT_EQ(count[0], total);
  s.launch(k, cfg1d(1, 1, 1), count.get(), 0u);
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(count[0], total + 1);
}

// A kernel and module destroyed with 1000 of their launches in flight stay alive for them.
TEST(Stream, KernelDestroyedWithAThousandLaunchesInFlight) {
  auto& e = env();
  zex::Stream s(e.dev);
  Usm<uint32_t> count(1);
  {
    zex::Module mod(e.dev, zex_test::read_file(zex_test::kernel_spv()));
    zex::Kernel k = mod.kernel("maybe_throw");
    for (int i = 0; i < 1000; ++i) s.launch(k, cfg1d(1, 2, 1), count.get(), uint32_t(i == 999));
  }
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.kernel_name(), "maybe_throw");
  EXPECT_EQ(ex.reason(), "asked to throw");
  EXPECT_EQ(count[0], 1999u);
}

namespace {
struct Events {
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t ev[2] = {};
  Events() {
    auto& e = env();
    ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2};
    ze_device_handle_t dh = e.dev.handle();
    zex::check(zeEventPoolCreate(e.ctx.handle(), &pd, 1, &dh, &pool), "zeEventPoolCreate");
    for (uint32_t i = 0; i < 2; ++i) {
      ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, i, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
      zex::check(zeEventCreate(pool, &ed, &ev[i]), "zeEventCreate");
    }
  }
  ~Events() {
    for (auto e : ev) zeEventDestroy(e);
    zeEventPoolDestroy(pool);
  }
};
}  // namespace

// Interop with the runtime's own events: wait() holds later launches until the event is signalled
// (appending nothing), signal() signals an event once everything launched so far has finished.
TEST(Stream, WaitsForAndSignalsTheRuntimesEvents) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  zex::Stream s(e.dev);
  Events ev;
  Usm<uint32_t> count(1);
  s.wait(ev.ev[0]);
  // Fewer launches than the event path's window (Stream::kEvents): there, a launch that finds the
  // window full waits for older launches, which here wait for the host (docs/integration.md §7).
  for (int i = 0; i < 40; ++i) s.launch(k, cfg1d(1, 1, 1), count.get(), 0u);
  s.signal(ev.ev[1]);
  // Nothing may run before the runtime signals its event.
  EXPECT_FALSE(s.synchronize_for_ns(20'000'000));
  EXPECT_FALSE(s.ready());
  EXPECT_EQ(zeEventQueryStatus(ev.ev[1]), ZE_RESULT_NOT_READY);
  EXPECT_EQ(__atomic_load_n(&count[0], __ATOMIC_ACQUIRE), 0u);
  ASSERT_EQ(zeEventHostSignal(ev.ev[0]), ZE_RESULT_SUCCESS);
  ASSERT_EQ(zeEventHostSynchronize(ev.ev[1], UINT64_MAX), ZE_RESULT_SUCCESS);
  EXPECT_EQ(__atomic_load_n(&count[0], __ATOMIC_ACQUIRE), 40u) << "signalled before the launches finished";
  EXPECT_NO_THROW(s.synchronize());
  // signal() after a throw, then synchronize: the exception is still there.
  ASSERT_EQ(zeEventHostReset(ev.ev[1]), ZE_RESULT_SUCCESS);
  s.launch(k, cfg1d(1, 1, 1), count.get(), 1u);
  s.signal(ev.ev[1]);
  ASSERT_EQ(zeEventHostSynchronize(ev.ev[1], UINT64_MAX), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zex_test::expect_kernel_exception([&] { s.synchronize(); }).kernel_name(), "maybe_throw");
  EXPECT_THROW(s.wait(nullptr), std::invalid_argument);
  EXPECT_THROW(s.signal(nullptr), std::invalid_argument);
  // A stream destroyed right after signal(): its destructor waits for the barrier too.
  ASSERT_EQ(zeEventHostReset(ev.ev[1]), ZE_RESULT_SUCCESS);
  {
    zex::Stream t(e.dev);
    t.launch(k, cfg1d(1, 1, 1), count.get(), 0u);
    t.signal(ev.ev[1]);
  }
  EXPECT_EQ(zeEventQueryStatus(ev.ev[1]), ZE_RESULT_SUCCESS);
}

// A runtime queues many launches behind an event that only its own thread signals later: on the event
// path the stream grows its events rather than wait for launches that cannot run yet (Stream::kEvents).
TEST(Stream, ManyLaunchesQueuedBehindTheCallersOwnEventDoNotDeadlock) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  zex::Stream s(e.dev);
  Events ev;
  Usm<uint32_t> count(1);
  // If a launch blocked, only this guard would let it go, after 30 s: then `guarded` says it did.
  std::atomic<bool> launched{false}, guarded{false};
  std::thread guard([&] {
    for (int i = 0; i < 3000 && !launched.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!launched.load()) {
      guarded = true;
      zeEventHostSignal(ev.ev[0]);
    }
  });
  const uint32_t n = 5 * zex::Stream::kEvents + 3;  // grows twice on the event path
  s.wait(ev.ev[0]);
  for (uint32_t i = 0; i < n; ++i) s.launch(k, cfg1d(1, 1, 1), count.get(), uint32_t(i == n - 2));
  launched = true;
  guard.join();
  EXPECT_FALSE(guarded.load()) << "a launch waited for launches queued behind the caller's own event";
  EXPECT_FALSE(s.ready());
  EXPECT_EQ(__atomic_load_n(&count[0], __ATOMIC_ACQUIRE), 0u) << "ran before the event was signalled";
  ASSERT_EQ(zeEventHostSignal(ev.ev[0]), ZE_RESULT_SUCCESS);
  // Every launch ran once; the one that threw is reported; the stream goes on as usual afterwards.
  EXPECT_EQ(zex_test::expect_kernel_exception([&] { s.synchronize(); }).kernel_name(), "maybe_throw");
  EXPECT_EQ(count[0], n - 1);  // the launch that threw counts nothing
  for (uint32_t i = 0; i < 3 * zex::Stream::kEvents; ++i) s.launch(k, cfg1d(1, 1, 1), count.get(), 0u);
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(count[0], n - 1 + 3 * zex::Stream::kEvents);
}
