// Command lists and queues: immediate lists (asynchronous and synchronous), regular lists executed more than
// once, memory fill and copy, barriers, in-order execution.
#include "l0_fixture.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>

using CommandList = L0Test;

TEST_F(CommandList, AsyncImmediateLaunchWaitsForHostSignal) {
  ze_kernel_handle_t k = kernel(module("basic"), "store_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 7));
  ze_command_list_handle_t l = immediate_list(ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
  ze_event_pool_handle_t pool = event_pool(2);
  ze_event_handle_t gate = host_event(pool, 0);
  ze_event_handle_t done = make_event(pool, 1);
  ASSERT_TRUE(l && gate && done);

  // Should the driver block in the append (wrong), this thread unblocks it so the test reports the failure
  // instead of hanging.
  std::atomic<bool> appended{false};
  std::thread rescue([&] {
    for (int i = 0; i < 300 && !appended; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!appended) zeEventHostSignal(gate);
  });
  auto t0 = std::chrono::steady_clock::now();
  ze_result_t r = launch(l, k, 1, 64, done, 1, &gate);
  double append_ms = ms_since(t0);
  appended = true;
  rescue.join();
  ZE_OK(r);
  EXPECT_LT(append_ms, 1000.0) << "an asynchronous immediate append must not wait for its wait events";

  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(done));
  EXPECT_EQ(p[0], 0) << "the kernel ran before the host signalled its wait event";
  EXPECT_EQ(p[63], 0);

  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(zeEventHostSynchronize(done, 30'000'000'000ull));
  EXPECT_EQ(p[0], 7);
  EXPECT_EQ(p[63], 7);
}

TEST_F(CommandList, AsyncImmediateAppendReturnsBeforeSlowKernelFinishes) {
  ze_kernel_handle_t k = kernel(module("basic"), "spin_then_store");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(sizeof(int)));
  *p = 0;
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 1 << 27));  // some hundreds of milliseconds of volatile stores
  ZE_OK(set_val(k, 2, 5));
  ze_command_list_handle_t l = immediate_list(ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS);
  ze_event_handle_t done = make_event();
  ASSERT_TRUE(l && done);
  auto t0 = std::chrono::steady_clock::now();
  ZE_OK(launch(l, k, 1, 1, done));
  double append_ms = ms_since(t0);
  ze_result_t status = zeEventQueryStatus(done);
  int seen = *p;
  ZE_OK(zeEventHostSynchronize(done, 120'000'000'000ull));
  double total_ms = ms_since(t0);
  EXPECT_EQ(*p, 5);
  EXPECT_ZE(ZE_RESULT_NOT_READY, status) << "the kernel had finished when the append returned";
  EXPECT_NE(seen, 5);
  EXPECT_LT(append_ms, 0.5 * total_ms) << "append " << append_ms << " ms, kernel done after " << total_ms << " ms";
}

TEST_F(CommandList, SyncImmediateBlocksUntilDone) {
  ze_kernel_handle_t k = kernel(module("basic"), "spin_then_store");
  ASSERT_NE(k, nullptr);
  const uint32_t n = 256;
  auto* p = static_cast<int*>(alloc_shared(n * sizeof(int)));
  std::fill(p, p + n, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 20000));
  ze_command_list_handle_t l = immediate_list(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
  ASSERT_NE(l, nullptr);
  for (int round = 1; round <= 5; ++round) {
    ZE_OK(set_val(k, 2, round));
    ZE_OK(launch(l, k, n / 32, 32));
    // No synchronisation: a synchronous list has finished the work when the append returns.
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(p[i], round) << "round " << round << " item " << i;
  }
  // Copies and fills complete on return too.
  auto* h = static_cast<int*>(alloc_host(n * sizeof(int)));
  ZE_OK(zeCommandListAppendMemoryCopy(l, h, p, n * sizeof(int), nullptr, 0, nullptr));
  EXPECT_EQ(h[n - 1], 5);
  int pattern = -9;
  ZE_OK(zeCommandListAppendMemoryFill(l, p, &pattern, sizeof pattern, n * sizeof(int), nullptr, 0, nullptr));
  EXPECT_EQ(p[0], -9);
  EXPECT_EQ(p[n - 1], -9);
}

TEST_F(CommandList, RegularListExecutedManyTimes) {
  ze_kernel_handle_t k = kernel(module("basic"), "add_value");
  ASSERT_NE(k, nullptr);
  const uint32_t n = 1024;
  auto* p = static_cast<int*>(alloc_shared(n * sizeof(int)));
  std::fill(p, p + n, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 3));
  ze_command_list_handle_t l = regular_list();
  ze_command_queue_handle_t q = queue();
  ASSERT_TRUE(l && q);
  ZE_OK(launch(l, k, n / 64, 64));
  ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
  ZE_OK(launch(l, k, n / 64, 64));
  ZE_OK(zeCommandListClose(l));
  // Nothing runs before the list is executed.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(p[0], 0);
  for (int i = 1; i <= 4; ++i) {
    ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
    ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
    ASSERT_EQ(p[0], 6 * i);
    ASSERT_EQ(p[n - 1], 6 * i);
  }
  // Executed twice without synchronising in between: still in order, still exact.
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
  EXPECT_EQ(p[n / 2], 36);
}

TEST_F(CommandList, ArgumentsAreCapturedAtAppend) {
  ze_kernel_handle_t k = kernel(module("basic"), "add_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ze_command_list_handle_t l = regular_list();
  ze_command_queue_handle_t q = queue();
  ZE_OK(set_val(k, 1, 1));
  ZE_OK(launch(l, k, 1, 64));
  ZE_OK(set_val(k, 1, 100));
  ZE_OK(launch(l, k, 1, 64));
  ZE_OK(set_val(k, 1, 10000));  // after the appends: must not change what the list does
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
  EXPECT_EQ(p[0], 101);
  EXPECT_EQ(p[63], 101);
}

TEST_F(CommandList, ResetAndReuse) {
  ze_kernel_handle_t k = kernel(module("basic"), "add_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 1));
  ze_command_list_handle_t l = regular_list();
  ze_command_queue_handle_t q = queue();
  ZE_OK(launch(l, k, 1, 64));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
  ZE_OK(zeCommandListReset(l));
  ZE_OK(set_val(k, 1, 50));
  ZE_OK(launch(l, k, 1, 64));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
  EXPECT_EQ(p[0], 51) << "after a reset the old launch must be gone";
  // An empty closed list executes fine.
  ZE_OK(zeCommandListReset(l));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
  EXPECT_EQ(p[0], 51);
}

TEST_F(CommandList, SeveralListsInOneExecuteRunInOrder) {
  ze_kernel_handle_t k = kernel(module("basic"), "store_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ze_command_list_handle_t lists[3] = {regular_list(), regular_list(), regular_list()};
  ze_command_queue_handle_t q = queue();
  for (int i = 0; i < 3; ++i) {
    ZE_OK(set_val(k, 1, i + 1));
    ZE_OK(launch(lists[i], k, 1, 64));
    ZE_OK(zeCommandListClose(lists[i]));
  }
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 3, lists, nullptr));
  ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
  EXPECT_EQ(p[0], 3) << "the last list must run last";
}

TEST_F(CommandList, QueueSynchronizeTimesOut) {
  ze_kernel_handle_t k = kernel(module("basic"), "store_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 4));
  ze_event_handle_t gate = host_event();
  ze_command_list_handle_t l = regular_list();
  ze_command_queue_handle_t q = queue();
  ZE_OK(launch(l, k, 1, 64, nullptr, 1, &gate));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeCommandQueueSynchronize(q, 0));
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeCommandQueueSynchronize(q, 50'000'000ull));
  EXPECT_GE(ms_since(t0), 40.0) << "the timeout is in nanoseconds";
  EXPECT_EQ(p[0], 0);
  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
  EXPECT_EQ(p[0], 4);
}

TEST_F(CommandList, FillPatterns) {
  ze_command_queue_group_properties_t init = {};
  init.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  uint32_t ng = 0;
  ZE_OK(zeDeviceGetCommandQueueGroupProperties(device, &ng, nullptr));
  std::vector<ze_command_queue_group_properties_t> groups(ng, init);
  ZE_OK(zeDeviceGetCommandQueueGroupProperties(device, &ng, groups.data()));
  const size_t max_pattern = groups[compute_ordinal()].maxMemoryFillPatternSize;
  const size_t size = 4096;
  auto* h = static_cast<uint8_t*>(alloc_host(size));
  void* d = alloc_device(size);
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t done = make_event();
  ASSERT_TRUE(h && d && l && done);
  for (size_t ps = 1; ps <= std::min<size_t>(max_pattern, 128); ps *= 2) {
    std::vector<uint8_t> pattern(ps);
    for (size_t i = 0; i < ps; ++i) pattern[i] = uint8_t(0x10 + i + ps);
    uint8_t zero = 0;
    ZE_OK(zeEventHostReset(done));
    ZE_OK(zeCommandListAppendMemoryFill(l, d, &zero, 1, size, nullptr, 0, nullptr));
    ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
    // Fill an interior range that is a multiple of the pattern, leaving both ends untouched.
    ZE_OK(zeCommandListAppendMemoryFill(l, static_cast<char*>(d) + 256, pattern.data(), ps, 2048, nullptr, 0,
                                        nullptr));
    ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
    ZE_OK(zeCommandListAppendMemoryCopy(l, h, d, size, done, 0, nullptr));
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    for (size_t i = 0; i < size; ++i) {
      uint8_t want = (i >= 256 && i < 256 + 2048) ? pattern[(i - 256) % ps] : 0;
      ASSERT_EQ(h[i], want) << "pattern size " << ps << " byte " << i;
    }
  }
}

TEST_F(CommandList, CopiesBetweenAllKinds) {
  const size_t size = 1 << 16;
  void* kinds[] = {alloc_host(size), alloc_device(size), alloc_shared(size)};
  auto* src = static_cast<uint8_t*>(alloc_host(size));
  auto* dst = static_cast<uint8_t*>(alloc_host(size));
  auto heap = std::vector<uint8_t>(size);
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t done = make_event();
  ASSERT_TRUE(src && dst && l && done);
  int round = 0;
  for (void* a : kinds)
    for (void* b : kinds) {
      if (a == b) continue;
      ++round;
      for (size_t i = 0; i < size; ++i) src[i] = uint8_t(i * 31 + round);
      std::memset(dst, 0, size);
      ZE_OK(zeEventHostReset(done));
      ZE_OK(zeCommandListAppendMemoryCopy(l, a, src, size, nullptr, 0, nullptr));
      ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
      ZE_OK(zeCommandListAppendMemoryCopy(l, b, a, size, nullptr, 0, nullptr));
      ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
      // Interior, unaligned copy back out, into ordinary (non-USM) host memory.
      ZE_OK(zeCommandListAppendMemoryCopy(l, heap.data() + 3, static_cast<char*>(b) + 3, size - 7, nullptr, 0,
                                          nullptr));
      ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
      ZE_OK(zeCommandListAppendMemoryCopy(l, dst, b, size, done, 0, nullptr));
      ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
      ASSERT_EQ(std::memcmp(dst, src, size), 0) << "round " << round;
      ASSERT_EQ(std::memcmp(heap.data() + 3, src + 3, size - 7), 0) << "round " << round;
    }
}

TEST_F(CommandList, BarrierOrdersAcrossKernelAndCopy) {
  ze_kernel_handle_t k = kernel(module("basic"), "store_value");
  ASSERT_NE(k, nullptr);
  const uint32_t n = 1 << 16;
  auto* p = static_cast<int*>(alloc_device(n * sizeof(int)));
  auto* h = static_cast<int*>(alloc_host(n * sizeof(int)));
  std::fill(h, h + n, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 77));
  ze_command_list_handle_t l = regular_list();
  ze_command_queue_handle_t q = queue();
  ze_fence_handle_t f = fence(q);
  ze_event_handle_t barrier_done = make_event();
  ZE_OK(launch(l, k, n / 256, 256));
  ZE_OK(zeCommandListAppendBarrier(l, barrier_done, 0, nullptr));
  ZE_OK(zeCommandListAppendMemoryCopy(l, h, p, n * sizeof(int), nullptr, 0, nullptr));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f));
  ZE_OK(zeFenceHostSynchronize(f, UINT64_MAX));
  EXPECT_ZE_OK(zeEventQueryStatus(barrier_done));
  EXPECT_EQ(h[0], 77);
  EXPECT_EQ(h[n - 1], 77);
}

TEST_F(CommandList, BarrierWaitingOnEventHoldsLaterCommands) {
  ze_kernel_handle_t k = kernel(module("basic"), "store_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 9));
  ze_command_list_handle_t l = immediate_list();
  ze_event_pool_handle_t pool = event_pool(2);
  ze_event_handle_t gate = host_event(pool, 0);
  ze_event_handle_t done = make_event(pool, 1);
  ZE_OK(zeCommandListAppendBarrier(l, nullptr, 1, &gate));
  ZE_OK(launch(l, k, 1, 64, done));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(p[0], 0) << "the launch after a barrier on an unsignalled event ran";
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(done));
  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(zeEventHostSynchronize(done, 30'000'000'000ull));
  EXPECT_EQ(p[0], 9);
}

TEST_F(CommandList, IndependentImmediateListsRunConcurrently) {
  // List A is blocked on an event; list B must still make progress (lists are concurrent).
  ze_kernel_handle_t ka = kernel(module("basic"), "store_value");
  ze_kernel_handle_t kb = kernel(module("basic"), "store_value");
  ASSERT_TRUE(ka && kb);
  auto* pa = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  auto* pb = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(pa, pa + 64, 0);
  std::fill(pb, pb + 64, 0);
  ZE_OK(set_ptr(ka, 0, pa));
  ZE_OK(set_val(ka, 1, 1));
  ZE_OK(set_ptr(kb, 0, pb));
  ZE_OK(set_val(kb, 1, 2));
  ze_command_list_handle_t la = immediate_list(), lb = immediate_list();
  ze_event_pool_handle_t pool = event_pool(3);
  ze_event_handle_t gate = host_event(pool, 0);
  ze_event_handle_t da = make_event(pool, 1), db = make_event(pool, 2);
  ZE_OK(launch(la, ka, 1, 64, da, 1, &gate));
  ZE_OK(launch(lb, kb, 1, 64, db));
  EXPECT_ZE_OK(zeEventHostSynchronize(db, 30'000'000'000ull)) << "list B waited for list A's event";
  EXPECT_EQ(pb[0], 2);
  EXPECT_EQ(pa[0], 0);
  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(zeEventHostSynchronize(da, 30'000'000'000ull));
  EXPECT_EQ(pa[0], 1);
}

TEST_F(CommandList, IndependentQueuesRunConcurrently) {
  // Queue A is blocked on an event; queue B must still finish its work, and an immediate list too.
  ze_module_handle_t m = module("basic");
  ze_kernel_handle_t ka = kernel(m, "store_value");
  ze_kernel_handle_t kb = kernel(m, "store_value");
  ze_kernel_handle_t kc = kernel(m, "store_value");
  ASSERT_TRUE(ka && kb && kc);
  int* p[3];
  ze_kernel_handle_t ks[3] = {ka, kb, kc};
  for (int i = 0; i < 3; ++i) {
    p[i] = static_cast<int*>(alloc_shared(64 * sizeof(int)));
    std::fill(p[i], p[i] + 64, 0);
    ZE_OK(set_ptr(ks[i], 0, p[i]));
    ZE_OK(set_val(ks[i], 1, i + 1));
  }
  ze_event_handle_t gate = host_event();
  ze_command_queue_handle_t qa = queue(), qb = queue();
  ze_command_list_handle_t la = regular_list(), lb = regular_list();
  ze_command_list_handle_t imm = immediate_list();
  ze_event_handle_t imm_done = make_event();
  ze_fence_handle_t fb = fence(qb);
  ZE_OK(launch(la, ka, 1, 64, nullptr, 1, &gate));
  ZE_OK(zeCommandListClose(la));
  ZE_OK(launch(lb, kb, 1, 64));
  ZE_OK(zeCommandListClose(lb));
  ZE_OK(zeCommandQueueExecuteCommandLists(qa, 1, &la, nullptr));
  ZE_OK(zeCommandQueueExecuteCommandLists(qb, 1, &lb, fb));
  EXPECT_ZE_OK(zeFenceHostSynchronize(fb, 30'000'000'000ull)) << "queue B waited for queue A's gate";
  ZE_OK(launch(imm, kc, 1, 64, imm_done));
  EXPECT_ZE_OK(zeEventHostSynchronize(imm_done, 30'000'000'000ull)) << "the immediate list waited for queue A";
  EXPECT_EQ(p[0][0], 0);
  EXPECT_EQ(p[1][0], 2);
  EXPECT_EQ(p[2][0], 3);
  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(zeCommandQueueSynchronize(qa, 30'000'000'000ull));
  EXPECT_EQ(p[0][0], 1);
}

TEST_F(CommandList, RegularListWaitsOnImmediateListEvent) {
  ze_module_handle_t m = module("basic");
  ze_kernel_handle_t produce = kernel(m, "store_value");
  ze_kernel_handle_t consume = kernel(m, "add_value");
  ASSERT_TRUE(produce && consume);
  auto* p = static_cast<int*>(alloc_shared(256 * sizeof(int)));
  std::fill(p, p + 256, 0);
  ZE_OK(set_ptr(produce, 0, p));
  ZE_OK(set_val(produce, 1, 500));
  ZE_OK(set_ptr(consume, 0, p));
  ZE_OK(set_val(consume, 1, 5));
  ze_event_pool_handle_t pool = event_pool(2);
  ze_event_handle_t gate = host_event(pool, 0);
  ze_event_handle_t produced = make_event(pool, 1);
  ze_command_list_handle_t imm = immediate_list();
  ze_command_list_handle_t l = regular_list();
  ze_command_queue_handle_t q = queue();
  ZE_OK(launch(l, consume, 4, 64, nullptr, 1, &produced));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  ZE_OK(launch(imm, produce, 4, 64, produced, 1, &gate));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(p[0], 0);
  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(zeCommandQueueSynchronize(q, 30'000'000'000ull));
  EXPECT_EQ(p[0], 505);
  EXPECT_EQ(p[255], 505);
}

// --- zeCommandListHostSynchronize (offered through zeDriverGetExtensionFunctionAddress) and in-order flags ----

using ListHostSynchronizeFn = ze_result_t(ZE_APICALL*)(ze_command_list_handle_t, uint64_t);

// Also run as CTest `driver_no_host_synchronize` with ZEX_CPU_NO_HOST_SYNCHRONIZE=1, where zex-cpu must refuse
// the name as a driver without the entry point would, so that clients' fallback paths can be tested.
TEST_F(CommandList, HostSynchronizeExtension) {
  void* fn = nullptr;
  ze_result_t r = zeDriverGetExtensionFunctionAddress(driver, "zeCommandListHostSynchronize", &fn);
  void* unknown = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeDriverGetExtensionFunctionAddress(driver, "zeNoSuchFunction", &unknown));
  EXPECT_EQ(unknown, nullptr);
  const char* hide = std::getenv("ZEX_CPU_NO_HOST_SYNCHRONIZE");
  if (hide != nullptr && *hide != '\0' && std::string(hide) != "0") {
    EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, r) << "ZEX_CPU_NO_HOST_SYNCHRONIZE=" << hide;
    EXPECT_EQ(fn, nullptr);
    return;
  }
  ZE_OK(r);
  ASSERT_NE(fn, nullptr);
  auto host_synchronize = reinterpret_cast<ListHostSynchronizeFn>(fn);
  const uint32_t n = 100;
  auto [k, counter, tickets] = ticket_kernel(n);
  ASSERT_NE(k, nullptr);
  ze_event_pool_handle_t pool = event_pool(n + 1);
  ze_event_handle_t gate = host_event(pool, n);
  std::vector<ze_event_handle_t> ev = make_events(pool, n);
  ze_command_list_handle_t l = immediate_list();
  ASSERT_TRUE(l && gate);
  for (uint32_t i = 0; i < n; ++i) {
    ZE_OK(set_val(k, 2, int(i)));
    ZE_OK(launch(l, k, 1, 1, ev[i], i == 0 ? 1 : 0, i == 0 ? &gate : nullptr));
  }
  EXPECT_ZE(ZE_RESULT_NOT_READY, host_synchronize(l, 0)) << "everything waits behind the gate";
  EXPECT_ZE(ZE_RESULT_NOT_READY, host_synchronize(l, 1'000'000));
  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(host_synchronize(l, 60'000'000'000ull));
  // Idle means finished and signalled: every launch ran, in order, and every event is signalled.
  EXPECT_EQ(__atomic_load_n(counter, __ATOMIC_ACQUIRE), int(n));
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_ZE_OK(zeEventQueryStatus(ev[i])) << "event " << i;
    EXPECT_EQ(tickets[i], int(i));
  }
  ze_command_list_handle_t regular = regular_list();
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, host_synchronize(regular, 0)) << "immediate lists only";
}

// Level Zero 1.7 flags (the installed headers are 1.4): ZE_COMMAND_QUEUE_FLAG_IN_ORDER = ZE_BIT(1) for immediate
// lists and queues, ZE_COMMAND_LIST_FLAG_IN_ORDER = ZE_BIT(3) for regular lists.
TEST_F(CommandList, InOrderFlagsAccepted) {
  constexpr ze_command_queue_flags_t kQueueInOrder = 1u << 1;
  constexpr ze_command_list_flags_t kListInOrder = 1u << 3;
  ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, compute_ordinal(), 0, kQueueInOrder,
                                ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_list_handle_t l = nullptr;
  ze_result_t r = zeCommandListCreateImmediate(context, device, &qd, &l);
  if (zt::under_validation() && r == ZE_RESULT_ERROR_INVALID_ENUMERATION)
    GTEST_SKIP() << "the loader's validation layer predates Level Zero 1.7 and refuses its flags itself";
  ZE_OK(r);
  defer([l] { zeCommandListDestroy(l); });
  // In order without events between the launches: tickets come out in append order.
  const uint32_t n = 32;
  auto [k, counter, tickets] = ticket_kernel(n);
  ASSERT_NE(k, nullptr);
  ze_event_handle_t done = make_event();
  for (uint32_t i = 0; i < n; ++i) {
    ZE_OK(set_val(k, 2, int(i)));
    ZE_OK(launch(l, k, 1, 1, i + 1 == n ? done : nullptr));
  }
  ZE_OK(zeEventHostSynchronize(done, 60'000'000'000ull));
  for (uint32_t i = 0; i < n; ++i) EXPECT_EQ(tickets[i], int(i));
  ze_command_queue_handle_t q = nullptr;
  ZE_OK(zeCommandQueueCreate(context, device, &qd, &q));
  ZE_OK(zeCommandQueueDestroy(q));
  ze_command_list_desc_t ld = {ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, compute_ordinal(), kListInOrder};
  ze_command_list_handle_t regular = nullptr;
  ZE_OK(zeCommandListCreate(context, device, &ld, &regular));
  ZE_OK(zeCommandListDestroy(regular));
  // A bit that no version defines is still refused.
  qd.flags = 1u << 7;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ENUMERATION, zeCommandQueueCreate(context, device, &qd, &q));
  ze_command_list_handle_t bad = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ENUMERATION, zeCommandListCreateImmediate(context, device, &qd, &bad));
}

// A launch that cannot run (its local buffers exceed the device's local memory together, which only the
// launch can tell) still signals its event, so nothing waits forever, and its error comes back from the next
// synchronization of its queue, once; a synchronous immediate list returns it from the append.
TEST_F(CommandList, FailedLaunchSignalsAndReportsItsError) {
  ze_kernel_handle_t k = kernel(module("pipeline"), "two_locals");
  ASSERT_NE(k, nullptr);
  ze_device_compute_properties_t cp = {};
  cp.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  ZE_OK(zeDeviceGetComputeProperties(device, &cp));
  auto* out = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  ZE_OK(set_ptr(k, 0, out));
  ZE_OK(zeKernelSetArgumentValue(k, 1, cp.maxSharedLocalMemory, nullptr));
  ZE_OK(zeKernelSetArgumentValue(k, 2, cp.maxSharedLocalMemory, nullptr));
  ze_event_pool_handle_t pool = event_pool(2);
  ze_event_handle_t e = make_event(pool, 0), after = make_event(pool, 1);
  ze_command_list_handle_t l = regular_list();
  ze_command_queue_handle_t q = queue();
  ASSERT_TRUE(e && after && l && q);
  ze_result_t r = launch(l, k, 1, 1, e);
  if (r != ZE_RESULT_SUCCESS) GTEST_SKIP() << "refused at append (" << zt::result_name(r) << "): nothing to propagate";
  ZE_OK(zeCommandListAppendSignalEvent(l, after));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  ZE_OK(zeEventHostSynchronize(e, 60'000'000'000ull));
  ZE_OK(zeEventHostSynchronize(after, 60'000'000'000ull));
  ze_result_t first = zeCommandQueueSynchronize(q, 60'000'000'000ull);
  EXPECT_NE(zt::result_name(first), zt::result_name(ZE_RESULT_SUCCESS)) << "the failed launch's error is lost";
  EXPECT_ZE_OK(zeCommandQueueSynchronize(q, 60'000'000'000ull)) << "an error is reported once";
  ze_command_list_handle_t sync = immediate_list(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
  ASSERT_NE(sync, nullptr);
  EXPECT_NE(zt::result_name(launch(sync, k, 1, 1)), zt::result_name(ZE_RESULT_SUCCESS));
}

// Destroying an immediate list lets what was appended run (the specification forbids destroying a list the
// device still uses, so this is the lenient path zex-cpu promises): when zeCommandListDestroy returns, every
// launch has run and every event it signals is signalled, none left to a thread that is gone.
TEST_F(CommandList, DestroyRetiresSignalledLaunches) {
  const uint32_t n = 50;
  auto [k, counter, tickets] = ticket_kernel(n);
  ASSERT_NE(k, nullptr);
  ze_event_pool_handle_t pool = event_pool(n);
  std::vector<ze_event_handle_t> ev = make_events(pool, n);
  ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, compute_ordinal(), 0, 0,
                                ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_list_handle_t l = nullptr;
  ZE_OK(zeCommandListCreateImmediate(context, device, &qd, &l));
  for (uint32_t i = 0; i < n; ++i) {
    ZE_OK(set_val(k, 2, int(i)));
    ZE_OK(launch(l, k, 1, 1, ev[i]));
  }
  ZE_OK(zeCommandListDestroy(l));
  EXPECT_EQ(__atomic_load_n(counter, __ATOMIC_ACQUIRE), int(n));
  for (uint32_t i = 0; i < n; ++i) {
    EXPECT_ZE_OK(zeEventQueryStatus(ev[i])) << "event " << i;
    EXPECT_EQ(tickets[i], int(i));
  }
}
