// Events (and their pools) destroyed while a queued command still signals or waits on them
// (docs/cpu-driver.md "Events destroyed in flight"). The specification forbids it, but runtimes do it
// (AdaptiveCpp destroys the event of a USM copy, sometimes with its pool, before the copy has run) and
// Intel's driver survives it: zex-cpu must too. No crash, no hang, the command still runs, and the
// list, the queue and later events keep working. Each command is held back behind a host-signalled
// gate event, so that the destroy surely comes before the command runs. Run on immediate lists
// (parameter true) and on regular lists executed on a queue (false).
#include "l0_fixture.hpp"

#include <future>
#include <thread>

namespace {

// Long enough for a loaded machine; a hang (the behaviour before events were counted) fails the test
// instead of stalling the suite.
constexpr uint64_t kTimeout = 20'000'000'000ull;

/// A pool of one event and that event, destroyed by the test itself (not by the fixture).
struct OwnEvent {
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t event = nullptr;
};

class EventLifetime : public L0Test, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    L0Test::SetUp();
    if (HasFatalFailure()) return;
    if (GetParam()) {
      list_ = immediate_list();
    } else {
      list_ = regular_list();
      queue_ = queue();
    }
    ASSERT_NE(list_, nullptr);
    gate_ = host_event();
    ASSERT_NE(gate_, nullptr);
    k_ = kernel(module("basic"), "add_value");
    ASSERT_NE(k_, nullptr);
    p_ = static_cast<int*>(alloc_shared(64 * sizeof(int)));
    ASSERT_NE(p_, nullptr);
    std::fill(p_, p_ + 64, 0);
    ZE_OK(set_ptr(k_, 0, p_));
    ZE_OK(set_val(k_, 1, 1));
  }

  OwnEvent own_event(ze_event_pool_flags_t flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE) {
    OwnEvent o;
    ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, flags, 1};
    EXPECT_ZE_OK(zeEventPoolCreate(context, &pd, 1, &device, &o.pool));
    ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
    if (o.pool != nullptr) {
      EXPECT_ZE_OK(zeEventCreate(o.pool, &ed, &o.event));
    }
    return o;
  }
  static void destroy(const OwnEvent& o) {
    EXPECT_ZE_OK(zeEventDestroy(o.event));
    EXPECT_ZE_OK(zeEventPoolDestroy(o.pool));
  }

  /// Appends add_value(p, 1), held back by the gate (and `also_wait`, if any), signalling `signal`.
  ze_result_t gated_launch(ze_event_handle_t signal, ze_event_handle_t also_wait = nullptr) {
    ze_event_handle_t waits[2] = {gate_, also_wait};
    return launch(list_, k_, 1, 64, signal, also_wait ? 2 : 1, waits);
  }
  /// A regular list is closed and executed now, before the test destroys anything.
  void submit() {
    if (queue_ == nullptr) return;
    ZE_OK(zeCommandListClose(list_));
    ZE_OK(zeCommandQueueExecuteCommandLists(queue_, 1, &list_, nullptr));
  }
  /// Opens the gate and waits for the list (zeCommandListHostSynchronize) or the queue.
  ze_result_t open_and_synchronize() {
    EXPECT_ZE_OK(zeEventHostSignal(gate_));
    if (queue_ != nullptr) return zeCommandQueueSynchronize(queue_, kTimeout);
    using HostSync = ze_result_t(ZE_APICALL*)(ze_command_list_handle_t, uint64_t);
    void* fn = nullptr;
    if (zeDriverGetExtensionFunctionAddress(driver, "zeCommandListHostSynchronize", &fn) != ZE_RESULT_SUCCESS)
      return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    return reinterpret_cast<HostSync>(fn)(list_, kTimeout);
  }
  void expect_p(int v) {
    for (int i = 0; i < 64; ++i) ASSERT_EQ(p_[i], v) << "p[" << i << "]: the command did not run (once)";
  }
  /// A launch signalling a fresh event still works, on an immediate list of its own.
  void later_event_works() {
    ze_command_list_handle_t l = immediate_list();
    ASSERT_NE(l, nullptr);
    ze_event_handle_t done = make_event();
    ZE_OK(launch(l, k_, 1, 64, done));
    ZE_OK(zeEventHostSynchronize(done, kTimeout));
  }

  ze_command_list_handle_t list_ = nullptr;
  ze_command_queue_handle_t queue_ = nullptr;
  ze_event_handle_t gate_ = nullptr;
  ze_kernel_handle_t k_ = nullptr;
  int* p_ = nullptr;
};

INSTANTIATE_TEST_SUITE_P(Lists, EventLifetime, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& i) { return i.param ? "Immediate" : "Regular"; });

// The queued launch's signal must reach neither freed memory nor the event created next, which the
// allocator typically places where the destroyed one was.
TEST_P(EventLifetime, DestroyedSignalEventOfAQueuedLaunch) {
  OwnEvent e = own_event();
  ASSERT_NE(e.event, nullptr);
  ZE_OK(gated_launch(e.event));
  submit();
  destroy(e);
  OwnEvent next = own_event();
  ASSERT_NE(next.event, nullptr);
  ZE_OK(open_and_synchronize());
  expect_p(1);
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(next.event))
      << "the destroyed event's signal reached the event created after it";
  destroy(next);
  later_event_works();
}

// AdaptiveCpp's USM copy: the pool (with kernel timestamps, which the worker reads from the event) is
// destroyed first, then its event, before the copy ran.
TEST_P(EventLifetime, DestroyedPoolAndSignalEventOfAQueuedCopy) {
  OwnEvent e = own_event(ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP);
  ASSERT_NE(e.event, nullptr);
  auto* src = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  ASSERT_NE(src, nullptr);
  std::fill(src, src + 64, 1);
  ZE_OK(zeCommandListAppendMemoryCopy(list_, p_, src, 64 * sizeof(int), e.event, 1, &gate_));
  submit();
  EXPECT_ZE_OK(zeEventPoolDestroy(e.pool));
  EXPECT_ZE_OK(zeEventDestroy(e.event));
  ZE_OK(open_and_synchronize());
  expect_p(1);
  later_event_works();
}

// Nothing will ever signal the destroyed event: the wait on it counts as satisfied (see the docs), the
// launch runs, and the list or queue synchronizes instead of waiting for good.
TEST_P(EventLifetime, DestroyedWaitEventThatNothingSignals) {
  OwnEvent e = own_event();
  ASSERT_NE(e.event, nullptr);
  ZE_OK(gated_launch(nullptr, e.event));
  submit();
  destroy(e);
  ZE_OK(open_and_synchronize());
  expect_p(1);
  later_event_works();
}

// A command submitted before the destroy still signals the event, and the wait on it lasts until then:
// the order the application asked for holds. Here a second list (or queue) copies what the first list's
// gated launch wrote, after waiting on the destroyed event that the launch signals.
TEST_P(EventLifetime, DestroyedWaitEventStillSignalledByAQueuedLaunch) {
  OwnEvent e = own_event();
  ASSERT_NE(e.event, nullptr);
  ZE_OK(gated_launch(e.event));
  submit();
  auto* copy = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  ASSERT_NE(copy, nullptr);
  std::fill(copy, copy + 64, -1);
  ze_event_handle_t copied = make_event();
  ASSERT_NE(copied, nullptr);
  ze_command_list_handle_t other = GetParam() ? immediate_list() : regular_list();
  ASSERT_NE(other, nullptr);
  ZE_OK(zeCommandListAppendMemoryCopy(other, copy, p_, 64 * sizeof(int), copied, 1, &e.event));
  if (!GetParam()) {
    ze_command_queue_handle_t q2 = queue();
    ASSERT_NE(q2, nullptr);
    ZE_OK(zeCommandListClose(other));
    ZE_OK(zeCommandQueueExecuteCommandLists(q2, 1, &other, nullptr));
  }
  EXPECT_ZE_OK(zeEventDestroy(e.event));
  // Not before the gate opens: the copy must still be waiting for the launch.
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventHostSynchronize(copied, 200'000'000ull));
  ZE_OK(open_and_synchronize());
  ZE_OK(zeEventHostSynchronize(copied, kTimeout));
  expect_p(1);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(copy[i], 1) << "copy[" << i << "]: the wait did not wait for the signal";
  EXPECT_ZE_OK(zeEventPoolDestroy(e.pool));
}

// Undefined by any specification, defined here: a host thread already blocked in zeEventHostSynchronize
// when another thread destroys the event returns once the event is signalled by a command submitted
// before the destroy, or at the destroy when there is none; SUCCESS either way.
TEST_P(EventLifetime, HostWaiterOfADestroyedEventThatNothingSignals) {
  OwnEvent e = own_event();
  ASSERT_NE(e.event, nullptr);
  auto waiter = std::async(std::launch::async, [&] { return zeEventHostSynchronize(e.event, kTimeout); });
  ASSERT_EQ(waiter.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout) << "the wait ended early";
  destroy(e);
  EXPECT_ZE(ZE_RESULT_SUCCESS, waiter.get());
  later_event_works();
}

TEST_P(EventLifetime, HostWaiterOfADestroyedEventSeesItsQueuedSignal) {
  OwnEvent e = own_event();
  ASSERT_NE(e.event, nullptr);
  ZE_OK(gated_launch(e.event));
  submit();
  auto waiter = std::async(std::launch::async, [&] { return zeEventHostSynchronize(e.event, kTimeout); });
  ASSERT_EQ(waiter.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout) << "the wait ended early";
  destroy(e);
  EXPECT_EQ(waiter.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
      << "the wait ended before the launch that signals the event ran";
  ZE_OK(open_and_synchronize());
  EXPECT_ZE(ZE_RESULT_SUCCESS, waiter.get());
  expect_p(1);
}

}  // namespace
