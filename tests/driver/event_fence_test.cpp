// Event pools, events (host and device signal, wait, reset) and fences.
#include "l0_fixture.hpp"

#include <algorithm>
#include <thread>

using Events = L0Test;

TEST_F(Events, HostSignalQueryReset) {
  ze_event_handle_t e = make_event();
  ASSERT_NE(e, nullptr);
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(e)) << "a new event is not signalled";
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventHostSynchronize(e, 0));
  ZE_OK(zeEventHostSignal(e));
  EXPECT_ZE_OK(zeEventQueryStatus(e));
  EXPECT_ZE_OK(zeEventHostSynchronize(e, 0));
  EXPECT_ZE_OK(zeEventHostSynchronize(e, UINT64_MAX));
  ZE_OK(zeEventHostSignal(e));  // signalling twice is harmless
  EXPECT_ZE_OK(zeEventQueryStatus(e));
  ZE_OK(zeEventHostReset(e));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(e));
}

TEST_F(Events, HostSynchronizeHonoursTimeout) {
  ze_event_handle_t e = make_event();
  ASSERT_NE(e, nullptr);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventHostSynchronize(e, 30'000'000ull));
  double ms = ms_since(t0);
  EXPECT_GE(ms, 25.0) << "the timeout is in nanoseconds";
  EXPECT_LT(ms, 5000.0);
}

TEST_F(Events, HostSignalFromAnotherThreadWakesWaiter) {
  ze_event_handle_t e = make_event();
  ASSERT_NE(e, nullptr);
  std::thread t([e] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    zeEventHostSignal(e);
  });
  auto t0 = std::chrono::steady_clock::now();
  ze_result_t r = zeEventHostSynchronize(e, 10'000'000'000ull);
  double ms = ms_since(t0);
  t.join();
  EXPECT_ZE_OK(r);
  EXPECT_GE(ms, 40.0);
  EXPECT_LT(ms, 5000.0);
}

TEST_F(Events, PoolIndicesAreIndependent) {
  const uint32_t n = 8;
  ze_event_pool_handle_t pool = event_pool(n);
  ASSERT_NE(pool, nullptr);
  std::vector<ze_event_handle_t> ev = make_events(pool, n);
  for (auto e : ev) ASSERT_NE(e, nullptr);
  ZE_OK(zeEventHostSignal(ev[3]));
  for (uint32_t i = 0; i < n; ++i)
    EXPECT_ZE(i == 3 ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY, zeEventQueryStatus(ev[i])) << "event " << i;
}

TEST_F(Events, PoolSlotCanBeReusedAfterDestroy) {
  ze_event_pool_handle_t pool = event_pool(1);
  ASSERT_NE(pool, nullptr);
  ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
  for (int i = 0; i < 3; ++i) {
    ze_event_handle_t e = nullptr;
    ZE_OK(zeEventCreate(pool, &ed, &e));
    ZE_OK(zeEventHostSignal(e));
    ZE_OK(zeEventDestroy(e));
  }
}

TEST_F(Events, IndexOutOfPoolRange) {
  ze_event_pool_handle_t pool = event_pool(2);
  ASSERT_NE(pool, nullptr);
  ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 2, 0, 0};
  ze_event_handle_t e = nullptr;
  ze_result_t r = zeEventCreate(pool, &ed, &e);
  EXPECT_NE(r, ZE_RESULT_SUCCESS) << "index 2 of a pool of 2";
  EXPECT_TRUE(r == ZE_RESULT_ERROR_INVALID_ARGUMENT || r == ZE_RESULT_ERROR_INVALID_SIZE) << zt::result_name(r);
}

TEST_F(Events, PoolOfZeroEvents) {
  ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 0};
  ze_event_pool_handle_t p = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_SIZE, zeEventPoolCreate(context, &pd, 1, &device, &p));
}

TEST_F(Events, PoolWithoutDeviceListCoversAllDevices) {
  ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 4};
  ze_event_pool_handle_t p = nullptr;
  ZE_OK(zeEventPoolCreate(context, &pd, 0, nullptr, &p));
  defer([p] { zeEventPoolDestroy(p); });
  ze_event_handle_t e = make_event(p, 3);
  ASSERT_NE(e, nullptr);
  ze_command_list_handle_t l = immediate_list();
  ZE_OK(zeCommandListAppendSignalEvent(l, e));
  EXPECT_ZE_OK(zeEventHostSynchronize(e, 30'000'000'000ull));
}

TEST_F(Events, KernelSignalsEvent) {
  ze_kernel_handle_t k = kernel(module("basic"), "store_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(1024 * sizeof(int)));
  std::fill(p, p + 1024, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 11));
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t e = make_event();
  ZE_OK(launch(l, k, 16, 64, e));
  ZE_OK(zeEventHostSynchronize(e, UINT64_MAX));
  // A signalled event with host scope makes the kernel's writes visible.
  EXPECT_EQ(p[0], 11);
  EXPECT_EQ(p[1023], 11);
}

TEST_F(Events, CrossListDependency) {
  ze_module_handle_t m = module("basic");
  ze_kernel_handle_t produce = kernel(m, "store_value");
  ze_kernel_handle_t consume = kernel(m, "add_value");
  ASSERT_TRUE(produce && consume);
  const uint32_t n = 1 << 16;
  auto* p = static_cast<int*>(alloc_device(n * sizeof(int)));
  auto* h = static_cast<int*>(alloc_host(n * sizeof(int)));
  ZE_OK(set_ptr(produce, 0, p));
  ZE_OK(set_val(produce, 1, 1000));
  ZE_OK(set_ptr(consume, 0, p));
  ZE_OK(set_val(consume, 1, 1));
  ze_command_list_handle_t a = immediate_list(), b = immediate_list();
  ze_event_pool_handle_t pool = event_pool(3);
  ze_event_handle_t gate = host_event(pool, 0);
  ze_event_handle_t produced = make_event(pool, 1), done = make_event(pool, 2);
  // b is appended first and must wait for a's kernel, which itself waits for the host.
  ZE_OK(launch(b, consume, n / 256, 256, nullptr, 1, &produced));
  ZE_OK(zeCommandListAppendBarrier(b, nullptr, 0, nullptr));
  ZE_OK(zeCommandListAppendMemoryCopy(b, h, p, n * sizeof(int), done, 0, nullptr));
  ZE_OK(launch(a, produce, n / 256, 256, produced, 1, &gate));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(done));
  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(zeEventHostSynchronize(done, 30'000'000'000ull));
  EXPECT_EQ(h[0], 1001);
  EXPECT_EQ(h[n - 1], 1001);
}

TEST_F(Events, AppendSignalWaitAndReset) {
  ze_command_list_handle_t l = regular_list();
  ze_command_queue_handle_t q = queue();
  ze_event_pool_handle_t pool = event_pool(3);
  ze_event_handle_t gate = host_event(pool, 0);
  ze_event_handle_t a = make_event(pool, 1), b = make_event(pool, 2);
  ASSERT_TRUE(l && q && gate && a && b);
  ZE_OK(zeEventHostSignal(b));
  ZE_OK(zeCommandListAppendWaitOnEvents(l, 1, &gate));
  ZE_OK(zeCommandListAppendSignalEvent(l, a));
  ZE_OK(zeCommandListAppendEventReset(l, b));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(a)) << "signalled before the wait was satisfied";
  EXPECT_ZE_OK(zeEventQueryStatus(b)) << "reset before the wait was satisfied";
  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(zeCommandQueueSynchronize(q, 30'000'000'000ull));
  EXPECT_ZE_OK(zeEventQueryStatus(a));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(b));
}

TEST_F(Events, EventReusedAcrossExecutionsAfterHostReset) {
  ze_kernel_handle_t k = kernel(module("basic"), "add_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 1));
  ze_event_handle_t e = make_event();
  ze_command_list_handle_t l = regular_list();
  ze_command_queue_handle_t q = queue();
  ZE_OK(launch(l, k, 1, 64, e));
  ZE_OK(zeCommandListClose(l));
  for (int i = 1; i <= 3; ++i) {
    ZE_OK(zeEventHostReset(e));
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
    ZE_OK(zeEventHostSynchronize(e, 30'000'000'000ull));
    EXPECT_EQ(p[0], i);
  }
}

using Fences = L0Test;

TEST_F(Fences, SignalledByExecutionAndReset) {
  ze_kernel_handle_t k = kernel(module("basic"), "add_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(256 * sizeof(int)));
  std::fill(p, p + 256, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 2));
  ze_command_queue_handle_t q = queue();
  ze_command_list_handle_t l = regular_list();
  ze_fence_handle_t f = fence(q);
  ASSERT_TRUE(q && l && f);
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeFenceQueryStatus(f)) << "a new fence is not signalled";
  ZE_OK(launch(l, k, 4, 64));
  ZE_OK(zeCommandListClose(l));
  for (int i = 1; i <= 3; ++i) {
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f));
    ZE_OK(zeFenceHostSynchronize(f, UINT64_MAX));
    EXPECT_ZE_OK(zeFenceQueryStatus(f));
    EXPECT_EQ(p[255], 2 * i);
    ZE_OK(zeFenceReset(f));
    EXPECT_ZE(ZE_RESULT_NOT_READY, zeFenceQueryStatus(f));
  }
}

TEST_F(Fences, NotSignalledWhileWorkIsBlocked) {
  ze_kernel_handle_t k = kernel(module("basic"), "store_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 3));
  ze_event_handle_t gate = host_event();
  ze_command_queue_handle_t q = queue();
  ze_command_list_handle_t l = regular_list();
  ze_fence_handle_t f = fence(q);
  ZE_OK(launch(l, k, 1, 64, nullptr, 1, &gate));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeFenceHostSynchronize(f, 20'000'000ull));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeFenceQueryStatus(f));
  EXPECT_EQ(p[0], 0);
  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(zeFenceHostSynchronize(f, 30'000'000'000ull));
  EXPECT_EQ(p[0], 3);
}

TEST_F(Fences, FenceCoversOnlyItsExecution) {
  ze_kernel_handle_t k = kernel(module("basic"), "add_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 1));
  ze_command_queue_handle_t q = queue();
  ze_command_list_handle_t l = regular_list();
  ze_fence_handle_t f1 = fence(q), f2 = fence(q);
  ZE_OK(launch(l, k, 1, 64));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f1));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f2));
  ZE_OK(zeFenceHostSynchronize(f2, UINT64_MAX));
  // In order: when the second execution is done, the first one is too.
  EXPECT_ZE_OK(zeFenceQueryStatus(f1));
  EXPECT_EQ(p[0], 2);
}

TEST_F(Events, ThousandEventsSignalledByOneList) {
  const uint32_t n = 1024;
  ze_event_pool_handle_t pool = event_pool(n);
  ASSERT_NE(pool, nullptr);
  std::vector<ze_event_handle_t> ev;
  for (uint32_t i = 0; i < n; ++i) {
    ev.push_back(make_event(pool, i));
    ASSERT_NE(ev.back(), nullptr) << i;
  }
  ze_command_list_handle_t l = immediate_list();
  for (uint32_t i = 0; i < n; ++i) ZE_OK(zeCommandListAppendSignalEvent(l, ev[i]));
  ZE_OK(zeEventHostSynchronize(ev[n - 1], 30'000'000'000ull));
  uint32_t signalled = 0;
  for (auto e : ev) signalled += zeEventQueryStatus(e) == ZE_RESULT_SUCCESS;
  EXPECT_EQ(signalled, n) << "in order: when the last is signalled, all are";
}

// --- Signalled launches pipeline (zex-cpu retires them in order on a second thread, without draining) --------

namespace {
/// Reads an int that kernels update with atomics, while they may still run.
int load(const int* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
}  // namespace

TEST_F(Events, SignalledLaunchesRetireInOrder) {
  const uint32_t n = 200;
  auto [k, counter, tickets] = ticket_kernel(n);
  ASSERT_NE(k, nullptr);
  ze_event_pool_handle_t pool = event_pool(n + 1);
  ze_event_handle_t gate = host_event(pool, n);
  std::vector<ze_event_handle_t> ev = make_events(pool, n);
  ze_command_list_handle_t l = immediate_list();
  ASSERT_TRUE(l && gate);
  // Everything queues behind the gate, so the host watches the whole stream run.
  for (uint32_t i = 0; i < n; ++i) {
    ZE_OK(set_val(k, 2, int(i)));
    ZE_OK(launch(l, k, 1, 1, ev[i], i == 0 ? 1 : 0, i == 0 ? &gate : nullptr));
  }
  ZE_OK(zeEventHostSignal(gate));
  // Scan from the last event down: once event j is seen signalled, every earlier event must be signalled too
  // (they are signalled in order, so an earlier one seen unsignalled later is a violation), and at least j + 1
  // launches must have run, read after seeing the signal.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  uint32_t done = 0;
  while (done < n && std::chrono::steady_clock::now() < deadline) {
    int highest = -1;
    for (int j = int(n) - 1; j >= 0; --j) {
      bool signalled = zeEventQueryStatus(ev[j]) == ZE_RESULT_SUCCESS;
      if (signalled && highest < 0) {
        highest = j;
        ASSERT_GE(load(counter), j + 1) << "event " << j << " signalled before its launch finished";
      }
      if (highest >= 0) {
        ASSERT_TRUE(signalled) << "event " << j << " not signalled after event " << highest;
      }
    }
    done = uint32_t(highest + 1);
  }
  ASSERT_EQ(done, n) << "not every event was signalled within 60 s";
  EXPECT_EQ(load(counter), int(n));
  for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(tickets[i], int(i)) << "launch " << i << " ran out of order";
}

TEST_F(Events, SameListWaitsOnItsOwnEarlierSignal) {
  ze_module_handle_t m = module("basic");
  ze_kernel_handle_t first = kernel(m, "store_value");
  ze_kernel_handle_t second = kernel(m, "add_value");
  ASSERT_TRUE(first && second);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(first, 0, p));
  ZE_OK(set_val(first, 1, 5));
  ZE_OK(set_ptr(second, 0, p));
  ZE_OK(set_val(second, 1, 1));
  ze_event_pool_handle_t pool = event_pool(4);
  ze_event_handle_t a = make_event(pool, 0), b = make_event(pool, 1);
  // Immediate list: the second launch waits for the event the first one signals, on the same list.
  ze_command_list_handle_t l = immediate_list();
  ZE_OK(launch(l, first, 1, 64, a));
  ZE_OK(launch(l, second, 1, 64, b, 1, &a));
  ASSERT_ZE(ZE_RESULT_SUCCESS, zeEventHostSynchronize(b, 30'000'000'000ull)) << "deadlock: a list waiting on itself";
  EXPECT_EQ(p[0], 6);
  EXPECT_EQ(p[63], 6);
  // The same in a regular list on a queue.
  ze_event_handle_t c = make_event(pool, 2), d = make_event(pool, 3);
  ze_command_list_handle_t r = regular_list();
  ze_command_queue_handle_t q = queue();
  ZE_OK(launch(r, first, 1, 64, c));
  ZE_OK(launch(r, second, 1, 64, d, 1, &c));
  ZE_OK(zeCommandListClose(r));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &r, nullptr));
  ASSERT_ZE(ZE_RESULT_SUCCESS, zeCommandQueueSynchronize(q, 30'000'000'000ull)) << "deadlock: a list waiting on itself";
  EXPECT_ZE_OK(zeEventQueryStatus(c));
  EXPECT_ZE_OK(zeEventQueryStatus(d));
  EXPECT_EQ(p[0], 6);
}

TEST_F(Events, CrossListWaitsOnPipelinedSignals) {
  ze_module_handle_t m = module("pipeline");
  ze_kernel_handle_t produce = kernel(m, "take_ticket");
  ze_kernel_handle_t observe = kernel(m, "snapshot");
  ASSERT_TRUE(produce && observe);
  const uint32_t n = 64;
  auto* counter = static_cast<int*>(alloc_shared(sizeof(int)));
  auto* tickets = static_cast<int*>(alloc_shared(n * sizeof(int)));
  auto* seen = static_cast<int*>(alloc_shared(n * sizeof(int)));
  *counter = 0;
  std::fill(seen, seen + n, -1);
  ZE_OK(set_ptr(produce, 0, counter));
  ZE_OK(set_ptr(produce, 1, tickets));
  ZE_OK(set_ptr(observe, 0, counter));
  ZE_OK(set_ptr(observe, 1, seen));
  ze_event_pool_handle_t pool = event_pool(n + 1);
  std::vector<ze_event_handle_t> ev = make_events(pool, n);
  ze_event_handle_t done = make_event(pool, n);
  ze_command_list_handle_t a = immediate_list(), b = immediate_list();
  // b is appended first: launch i of b waits for the event that launch i of a signals.
  for (uint32_t i = 0; i < n; ++i) {
    ZE_OK(set_val(observe, 2, int(i)));
    ZE_OK(launch(b, observe, 1, 1, i + 1 == n ? done : nullptr, 1, &ev[i]));
  }
  for (uint32_t i = 0; i < n; ++i) {
    ZE_OK(set_val(produce, 2, int(i)));
    ZE_OK(launch(a, produce, 1, 1, ev[i]));
  }
  ZE_OK(zeEventHostSynchronize(done, 60'000'000'000ull));
  for (uint32_t i = 0; i < n; ++i)
    EXPECT_GE(seen[i], int(i) + 1) << "b's launch " << i << " ran before a's launch " << i << " finished";
}

// A host thread that waits for good on a signalled launch waits on its OpenCL event itself and signals the event
// (settle_event); the retiring thread's later signal of the same launch must then do nothing: an event reset by
// the host right after its wait stays reset.
TEST_F(Events, EventResetRightAfterAHostWaitStaysReset) {
  const uint32_t n = 200;
  auto [k, counter, tickets] = ticket_kernel(n);
  ASSERT_NE(k, nullptr);
  ze_event_pool_handle_t pool = event_pool(2);
  ze_event_handle_t e = make_event(pool, 0), last = make_event(pool, 1);
  ze_command_list_handle_t l = immediate_list();
  ASSERT_TRUE(e && last && l);
  for (uint32_t i = 0; i < n; ++i) {
    ZE_OK(set_val(k, 2, int(i)));
    ZE_OK(launch(l, k, 1, 1, e));
    ASSERT_ZE(ZE_RESULT_SUCCESS, zeEventHostSynchronize(e, UINT64_MAX));
    ASSERT_GE(load(counter), int(i) + 1) << "event signalled before launch " << i << " ran";
    ZE_OK(zeEventHostReset(e));
  }
  // Everything appended so far has retired once `last` (a barrier's signal, not armed) is signalled.
  ZE_OK(zeCommandListAppendBarrier(l, last, 0, nullptr));
  ZE_OK(zeEventHostSynchronize(last, 60'000'000'000ull));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(e)) << "a late retirement signalled an event the host had reset";
  EXPECT_EQ(load(counter), int(n));
}

// After a host wait on the newest signal of an in-order list, every earlier signal of the list is seen too, as
// on a GPU, even though the waiting thread signalled the newest one before the retiring thread got to either.
TEST_F(Events, HostWaitOnTheNewestSignalShowsEveryEarlierOne) {
  const uint32_t n = 16;
  auto [k, counter, tickets] = ticket_kernel(n);
  ASSERT_NE(k, nullptr);
  ze_event_pool_handle_t pool = event_pool(n + 1);
  std::vector<ze_event_handle_t> ev = make_events(pool, n);
  ze_event_handle_t last = make_event(pool, n);
  ze_command_list_handle_t l = immediate_list();
  ASSERT_TRUE(l && last);
  for (int round = 0; round < 50; ++round) {
    *counter = 0;
    for (uint32_t i = 0; i < n; ++i) {
      ZE_OK(set_val(k, 2, int(i)));
      ZE_OK(launch(l, k, 1, 1, ev[i]));
    }
    ASSERT_ZE(ZE_RESULT_SUCCESS, zeEventHostSynchronize(ev[n - 1], UINT64_MAX));
    for (uint32_t i = 0; i < n; ++i)
      ASSERT_ZE(ZE_RESULT_SUCCESS, zeEventQueryStatus(ev[i])) << "round " << round << ": event " << i
                                                               << " not signalled after the newest one was";
    // Waiting on an earlier one returns at once, and the reset of all of them sticks.
    ASSERT_ZE(ZE_RESULT_SUCCESS, zeEventHostSynchronize(ev[0], 0));
    for (ze_event_handle_t e : ev) ZE_OK(zeEventHostReset(e));
  }
  ZE_OK(zeCommandListAppendBarrier(l, last, 0, nullptr));
  ZE_OK(zeEventHostSynchronize(last, 60'000'000'000ull));
  for (uint32_t i = 0; i < n; ++i) EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(ev[i])) << "event " << i;
}

// zex-cpu issues a signalled launch on the application's thread when the list's worker is idle
// (Worker::submit). A launch appended while an earlier one still waits for an event must not be issued
// that way ahead of it; and the round trip launch + host wait + reset, where the host may reach the
// wait before or after the launch is issued, sees every launch's effect.
TEST_F(Events, LaunchesIssuedOnTheCallersThreadKeepTheListsOrder) {
  const uint32_t n = 3;
  auto [k, counter, tickets] = ticket_kernel(n);
  ASSERT_NE(k, nullptr);
  ze_event_pool_handle_t pool = event_pool(n + 1);
  std::vector<ze_event_handle_t> ev = make_events(pool, n);
  ze_event_handle_t gate = make_event(pool, n);
  ze_command_list_handle_t l = immediate_list();
  ASSERT_TRUE(l && gate);
  for (int round = 0; round < 20; ++round) {
    *counter = 0;
    std::fill(tickets, tickets + n, -1);
    ZE_OK(set_val(k, 2, 0));
    ZE_OK(launch(l, k, 1, 1, ev[0]));  // the worker is idle: issued on this thread
    ASSERT_ZE(ZE_RESULT_SUCCESS, zeEventHostSynchronize(ev[0], UINT64_MAX));
    ZE_OK(set_val(k, 2, 1));
    ZE_OK(launch(l, k, 1, 1, ev[1], 1, &gate));  // the worker blocks on the gate
    ZE_OK(set_val(k, 2, 2));
    ZE_OK(launch(l, k, 1, 1, ev[2]));  // waits for nothing, but must run after launch 1
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(ev[2])) << "round " << round;
    EXPECT_EQ(tickets[2], -1) << "round " << round << ": launch 2 ran before the launch it follows";
    ZE_OK(zeEventHostSignal(gate));
    ASSERT_ZE(ZE_RESULT_SUCCESS, zeEventHostSynchronize(ev[2], UINT64_MAX));
    EXPECT_ZE(ZE_RESULT_SUCCESS, zeEventQueryStatus(ev[1]));
    for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(tickets[i], int(i)) << "round " << round << ", launch " << i;
    for (ze_event_handle_t e : ev) ZE_OK(zeEventHostReset(e));
    ZE_OK(zeEventHostReset(gate));
  }
  // Round trips: each launch is seen finished by the wait on its own event.
  *counter = 0;
  for (int i = 0; i < 300; ++i) {
    ZE_OK(set_val(k, 2, 0));
    ZE_OK(launch(l, k, 1, 1, ev[0]));
    ASSERT_ZE(ZE_RESULT_SUCCESS, zeEventHostSynchronize(ev[0], UINT64_MAX));
    ASSERT_EQ(tickets[0], i) << "the wait returned before launch " << i << " ran";
    ZE_OK(zeEventHostReset(ev[0]));
  }
}

TEST_F(Events, KernelTimestampsBracketTheKernel) {
  ze_kernel_handle_t k = kernel(module("pipeline"), "wait_for_host");
  ASSERT_NE(k, nullptr);
  auto* flags = static_cast<int*>(alloc_shared(2 * sizeof(int)));
  flags[0] = flags[1] = 0;
  ZE_OK(set_ptr(k, 0, &flags[0]));
  ZE_OK(set_ptr(k, 1, &flags[1]));
  ze_event_pool_handle_t pool = event_pool(1, ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP);
  ze_event_handle_t e = make_event(pool, 0);
  ze_command_list_handle_t l = immediate_list();
  ASSERT_TRUE(e && l);
  ZE_OK(launch(l, k, 1, 1, e));
  // The kernel runs until the host lets it go: device time `during`, read while it certainly runs, must lie
  // inside [kernelStart, kernelEnd].
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (__atomic_load_n(&flags[0], __ATOMIC_ACQUIRE) == 0 && std::chrono::steady_clock::now() < deadline) {
  }
  ASSERT_EQ(flags[0], 1) << "the kernel did not start within 60 s";
  uint64_t host = 0, during = 0;
  ZE_OK(zeDeviceGetGlobalTimestamps(device, &host, &during));
  __atomic_store_n(&flags[1], 1, __ATOMIC_RELEASE);
  ZE_OK(zeEventHostSynchronize(e, 60'000'000'000ull));
  ze_kernel_timestamp_result_t ts = {};
  ZE_OK(zeEventQueryKernelTimestamp(e, &ts));
  ze_device_properties_t dp = {};
  dp.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  ZE_OK(zeDeviceGetProperties(device, &dp));
  // Kernel timestamps count in kernelTimestampValidBits; global timestamps in timestampValidBits.
  const uint64_t mask = dp.kernelTimestampValidBits >= 64 ? ~0ull : (1ull << dp.kernelTimestampValidBits) - 1;
  EXPECT_LE(ts.global.kernelStart, during & mask) << "kernel timestamp starts after a moment it ran";
  EXPECT_GE(ts.global.kernelEnd, during & mask) << "kernel timestamp ends before a moment it ran";
}

TEST_F(Fences, FenceAfterSignalledLaunches) {
  const uint32_t n = 50;
  auto [k, counter, tickets] = ticket_kernel(n);
  ASSERT_NE(k, nullptr);
  ze_event_pool_handle_t pool = event_pool(n);
  std::vector<ze_event_handle_t> ev = make_events(pool, n);
  ze_command_queue_handle_t q = queue();
  ze_command_list_handle_t l = regular_list();
  ze_fence_handle_t f = fence(q);
  ASSERT_TRUE(q && l && f);
  for (uint32_t i = 0; i < n; ++i) {
    ZE_OK(set_val(k, 2, int(i)));
    ZE_OK(launch(l, k, 1, 1, ev[i]));
  }
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f));
  ZE_OK(zeFenceHostSynchronize(f, 60'000'000'000ull));
  // The fence covers the whole execution: every launch ran and every event it signals is signalled.
  EXPECT_EQ(load(counter), int(n));
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_ZE_OK(zeEventQueryStatus(ev[i])) << "event " << i;
    EXPECT_EQ(tickets[i], int(i));
  }
}
