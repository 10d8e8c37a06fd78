// Kernels that must compute exact results: vector add, atomics, module constants, local memory and
// barriers, non-inlined helpers that call work-item builtins.
#include "l0_fixture.hpp"

#include <algorithm>
#include <numeric>

using Execution = L0Test;

TEST_F(Execution, VectorAdd1M) {
  const uint32_t n = 1u << 20;
  ze_kernel_handle_t k = kernel(module("basic"), "vadd");
  ASSERT_NE(k, nullptr);
  auto* a = static_cast<float*>(alloc_host(n * sizeof(float)));
  auto* b = static_cast<float*>(alloc_shared(n * sizeof(float)));
  auto* c = static_cast<float*>(alloc_shared(n * sizeof(float)));
  ASSERT_TRUE(a && b && c);
  for (uint32_t i = 0; i < n; ++i) a[i] = float(i), b[i] = float(2 * i), c[i] = -1.0f;
  ZE_OK(set_ptr(k, 0, a));
  ZE_OK(set_ptr(k, 1, b));
  ZE_OK(set_ptr(k, 2, c));
  run(k, n / 256, 256);
  uint32_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) bad += c[i] != float(3 * i);
  EXPECT_EQ(bad, 0u);
}

TEST_F(Execution, VectorAddThroughDeviceMemoryAndCopies) {
  const uint32_t n = 1u << 20;
  const size_t bytes = n * sizeof(float);
  ze_kernel_handle_t k = kernel(module("basic"), "vadd");
  ASSERT_NE(k, nullptr);
  auto* ha = static_cast<float*>(alloc_host(bytes));
  auto* hc = static_cast<float*>(alloc_host(bytes));
  void* da = alloc_device(bytes);
  void* db = alloc_device(bytes);
  void* dc = alloc_device(bytes);
  ASSERT_TRUE(ha && hc && da && db && dc);
  for (uint32_t i = 0; i < n; ++i) ha[i] = float(i % 1000);
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t done = make_event();
  ZE_OK(zeCommandListAppendMemoryCopy(l, da, ha, bytes, nullptr, 0, nullptr));
  float two = 2.0f;
  ZE_OK(zeCommandListAppendMemoryFill(l, db, &two, sizeof two, bytes, nullptr, 0, nullptr));
  ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
  ZE_OK(set_ptr(k, 0, da));
  ZE_OK(set_ptr(k, 1, db));
  ZE_OK(set_ptr(k, 2, dc));
  ZE_OK(launch(l, k, n / 128, 128));
  ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
  ZE_OK(zeCommandListAppendMemoryCopy(l, hc, dc, bytes, done, 0, nullptr));
  ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
  uint32_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) bad += hc[i] != float(i % 1000) + 2.0f;
  EXPECT_EQ(bad, 0u);
}

TEST_F(Execution, OneCasWinnerAmong64K) {
  const uint32_t n = 1u << 16;
  ze_kernel_handle_t k = kernel(module("atomics"), "cas_winner");
  ASSERT_NE(k, nullptr);
  auto* flag = static_cast<int*>(alloc_shared(sizeof(int)));
  auto* winners = static_cast<int*>(alloc_device(sizeof(int)));
  auto* won = static_cast<int*>(alloc_shared(n * sizeof(int)));
  auto* host_winners = static_cast<int*>(alloc_host(sizeof(int)));
  ASSERT_TRUE(flag && winners && won && host_winners);
  *flag = 0;
  std::fill(won, won + n, -1);
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t done = make_event();
  int zero = 0;
  ZE_OK(zeCommandListAppendMemoryFill(l, winners, &zero, sizeof zero, sizeof(int), nullptr, 0, nullptr));
  ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
  ZE_OK(set_ptr(k, 0, flag));
  ZE_OK(set_ptr(k, 1, winners));
  ZE_OK(set_ptr(k, 2, won));
  ZE_OK(launch(l, k, n / 64, 64));
  ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
  ZE_OK(zeCommandListAppendMemoryCopy(l, host_winners, winners, sizeof(int), done, 0, nullptr));
  ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
  EXPECT_EQ(*host_winners, 1);
  ASSERT_GE(*flag, 1);
  ASSERT_LE(*flag, int(n));
  uint32_t ones = 0, others = 0;
  for (uint32_t i = 0; i < n; ++i) {
    ones += won[i] == 1;
    others += won[i] != 0 && won[i] != 1;
  }
  EXPECT_EQ(ones, 1u);
  EXPECT_EQ(others, 0u) << "some work-items did not run";
  EXPECT_EQ(won[*flag - 1], 1) << "the winner is the work-item whose id is in the flag";
}

TEST_F(Execution, ExactAtomicCounterAmong64K) {
  const uint32_t n = 1u << 16;
  ze_module_handle_t m = module("atomics");
  ze_kernel_handle_t k = kernel(m, "count");
  ze_kernel_handle_t k64 = kernel(m, "count_add");
  ASSERT_TRUE(k && k64);
  auto* counter = static_cast<int*>(alloc_shared(sizeof(int)));
  auto* sum = static_cast<int64_t*>(alloc_shared(sizeof(int64_t)));
  *counter = 0;
  *sum = 0;
  ZE_OK(set_ptr(k, 0, counter));
  ZE_OK(set_ptr(k64, 0, sum));
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t done = make_event();
  ZE_OK(launch(l, k, n / 256, 256));
  ZE_OK(launch(l, k, n / 32, 32));  // in order on the same list: a second pass adds exactly n again
  ZE_OK(launch(l, k64, n / 128, 128, done));
  ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
  EXPECT_EQ(*counter, int(2 * n));
  EXPECT_EQ(*sum, int64_t{n} * (n - 1) / 2);
}

TEST_F(Execution, ModuleConstantAddressIsInAnAddressRange) {
  ze_module_handle_t m = module("const_string");
  ze_kernel_handle_t ka = kernel(m, "marker_address");
  ze_kernel_handle_t kc = kernel(m, "marker_copy");
  ASSERT_TRUE(ka && kc);
  auto* out = static_cast<uint64_t*>(alloc_shared(2 * sizeof(uint64_t)));
  out[0] = out[1] = 0;
  ZE_OK(set_ptr(ka, 0, out));
  run(ka, 1, 1);
  const char expected[] = "zex-cpu module constant marker 0123456789 abcdefghijklmnopqrstuvwxyz";
  ASSERT_EQ(out[1], sizeof(expected));
  ASSERT_NE(out[0], 0u);
  auto* addr = reinterpret_cast<char*>(out[0]);
  void* base = nullptr;
  size_t size = 0;
  ZE_OK(zeMemGetAddressRange(context, addr, &base, &size)) << "the address of a __constant string";
  auto b = reinterpret_cast<uintptr_t>(base), a = reinterpret_cast<uintptr_t>(addr);
  EXPECT_LE(b, a);
  EXPECT_GE(b + size, a + sizeof(expected)) << "the range must hold the whole string";
  // The same answer for a pointer to the last character of the string.
  void* base2 = nullptr;
  size_t size2 = 0;
  ZE_OK(zeMemGetAddressRange(context, addr + sizeof(expected) - 1, &base2, &size2));
  EXPECT_EQ(base2, base);
  EXPECT_EQ(size2, size);
  // The kernel's own view of the string agrees with the host's view through the address.
  auto* copy = static_cast<char*>(alloc_shared(sizeof(expected)));
  ZE_OK(set_ptr(kc, 0, copy));
  run(kc, 1, sizeof(expected));
  EXPECT_STREQ(copy, expected);
  EXPECT_EQ(std::memcmp(addr, expected, sizeof(expected)), 0) << "the address does not hold the string";
  // A second module of the same source has its own constant, in its own range.
  ze_kernel_handle_t ka2 = kernel(module("const_string"), "marker_address");
  ASSERT_NE(ka2, nullptr);
  auto* out2 = static_cast<uint64_t*>(alloc_shared(2 * sizeof(uint64_t)));
  ZE_OK(set_ptr(ka2, 0, out2));
  run(ka2, 1, 1);
  void* base3 = nullptr;
  size_t size3 = 0;
  ZE_OK(zeMemGetAddressRange(context, reinterpret_cast<void*>(out2[0]), &base3, &size3));
  EXPECT_LE(reinterpret_cast<uintptr_t>(base3), out2[0]);
  EXPECT_GE(reinterpret_cast<uintptr_t>(base3) + size3, out2[0] + sizeof(expected));
}

TEST_F(Execution, ModuleConstantRangeGoesAwayWithTheModule) {
  ze_module_handle_t m = build_module("const_string");
  ze_kernel_handle_t k = create_kernel(m, "marker_address");
  ASSERT_TRUE(m && k);
  auto* out = static_cast<uint64_t*>(alloc_shared(2 * sizeof(uint64_t)));
  ZE_OK(set_ptr(k, 0, out));
  run(k, 1, 1);
  void* base = nullptr;
  size_t size = 0;
  ZE_OK(zeMemGetAddressRange(context, reinterpret_cast<void*>(out[0]), &base, &size));
  ZE_OK(zeKernelDestroy(k));
  ZE_OK(zeModuleDestroy(m));
  void* before_base = base;
  size_t before_size = size;
  EXPECT_NE(zeMemGetAddressRange(context, reinterpret_cast<void*>(out[0]), &base, &size), ZE_RESULT_SUCCESS)
      << "the constant data of a destroyed module is no longer an allocation; constant at 0x" << std::hex << out[0]
      << ", range while the module lived: " << before_base << "+0x" << before_size << ", after: " << base << "+0x"
      << size;
}

TEST_F(Execution, LocalMemoryReductionWithBarriers) {
  ze_module_handle_t m = module("reduce");
  ze_kernel_handle_t k = kernel(m, "reduce_arg");
  ze_kernel_handle_t ks = kernel(m, "reduce_static");
  ASSERT_TRUE(k && ks);
  const uint32_t groups = 512, gs = 64, n = groups * gs;
  auto* in = static_cast<int*>(alloc_shared(n * sizeof(int)));
  auto* out = static_cast<int*>(alloc_shared(groups * sizeof(int)));
  auto* out2 = static_cast<int*>(alloc_shared(groups * sizeof(int)));
  auto* seen = static_cast<int*>(alloc_shared(n * sizeof(int)));
  for (uint32_t i = 0; i < n; ++i) in[i] = int((i * 7919u) % 1000) - 500;
  std::fill(out, out + groups, 0x7fffffff);
  ZE_OK(set_ptr(k, 0, in));
  ZE_OK(set_ptr(k, 1, out));
  ZE_OK(zeKernelSetArgumentValue(k, 2, gs * sizeof(int), nullptr));
  ZE_OK(set_ptr(ks, 0, in));
  ZE_OK(set_ptr(ks, 1, out2));
  ZE_OK(set_ptr(ks, 2, seen));
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t done = make_event();
  ZE_OK(launch(l, k, groups, gs));
  ZE_OK(launch(l, ks, groups, gs, done));
  ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
  for (uint32_t g = 0; g < groups; ++g) {
    int want = std::accumulate(in + g * gs, in + (g + 1) * gs, 0);
    ASSERT_EQ(out[g], want) << "local-memory argument, group " << g;
    ASSERT_EQ(out2[g], want) << "kernel-scope local array, group " << g;
    for (uint32_t i = 0; i < gs; ++i) ASSERT_EQ(seen[g * gs + i], want) << "group " << g << " item " << i;
  }
}

TEST_F(Execution, LocalMemoryArgumentSizeCanChange) {
  ze_kernel_handle_t k = kernel(module("reduce"), "reduce_arg");
  ASSERT_NE(k, nullptr);
  auto* in = static_cast<int*>(alloc_shared(1024 * sizeof(int)));
  auto* out = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::iota(in, in + 1024, 1);
  ZE_OK(set_ptr(k, 0, in));
  ZE_OK(set_ptr(k, 1, out));
  for (uint32_t gs : {16u, 128u}) {
    ZE_OK(zeKernelSetArgumentValue(k, 2, gs * sizeof(int), nullptr));
    run(k, 1024 / gs, gs);
    for (uint32_t g = 0; g < 1024 / gs; ++g)
      ASSERT_EQ(out[g], std::accumulate(in + g * gs, in + (g + 1) * gs, 0)) << "gs " << gs << " group " << g;
  }
}

TEST_F(Execution, NonInlinedHelperCallingGetGlobalId) {
  ze_kernel_handle_t k = kernel(module("helper"), "through_helpers");
  ASSERT_NE(k, nullptr);
  const uint32_t n = 4096;
  auto* a = static_cast<int*>(alloc_shared(n * sizeof(int)));
  auto* b = static_cast<int*>(alloc_shared(n * sizeof(int)));
  std::fill(a, a + n, -1);
  std::fill(b, b + n, -1);
  ZE_OK(set_ptr(k, 0, a));
  ZE_OK(set_ptr(k, 1, b));
  run(k, n / 64, 64);
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(a[i], int(i) + 1) << i;
    ASSERT_EQ(b[i], int(i) * 3) << i;
  }
}

TEST_F(Execution, EmptyKernelManyTimes) {
  ze_kernel_handle_t k = kernel(module("basic"), "empty");
  ASSERT_NE(k, nullptr);
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t done = make_event();
  ZE_OK(zeKernelSetGroupSize(k, 1, 1, 1));
  ze_group_count_t gc = {1, 1, 1};
  for (int i = 0; i < 1000; ++i) ZE_OK(zeCommandListAppendLaunchKernel(l, k, &gc, nullptr, 0, nullptr));
  ZE_OK(zeCommandListAppendBarrier(l, done, 0, nullptr));
  ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
}
