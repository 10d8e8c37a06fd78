// Details of the specification that are easy to get wrong: count/array query protocols, default and
// synchronous queue modes, fences never submitted, constant pointer arguments, large allocations,
// sub-group sizes consistent with the reported properties.
#include "l0_fixture.hpp"

#include <algorithm>
#include <thread>

using SpecDetails = L0Test;

TEST_F(SpecDetails, CountGreaterThanAvailableIsCorrected) {
  uint32_t n = 5;
  ze_driver_handle_t drivers[5] = {};
  ZE_OK(zeDriverGet(&n, drivers));
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(drivers[0], driver);
  EXPECT_EQ(drivers[1], nullptr) << "only the available drivers are written";
  n = 7;
  ze_device_handle_t devices[7] = {};
  ZE_OK(zeDeviceGet(driver, &n, devices));
  EXPECT_EQ(n, 1u);
  EXPECT_EQ(devices[0], device);
  uint32_t ng = 0;
  ZE_OK(zeDeviceGetCommandQueueGroupProperties(device, &ng, nullptr));
  uint32_t more = ng + 3;
  std::vector<ze_command_queue_group_properties_t> g(more);
  for (auto& x : g) {
    x = {};
    x.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  }
  ZE_OK(zeDeviceGetCommandQueueGroupProperties(device, &more, g.data()));
  EXPECT_EQ(more, ng);
  ze_module_handle_t m = module("atomics");
  ASSERT_NE(m, nullptr);
  uint32_t nk = 10;
  const char* names[10] = {};
  ZE_OK(zeModuleGetKernelNames(m, &nk, names));
  EXPECT_EQ(nk, 3u);
}

TEST_F(SpecDetails, DefaultModeImmediateListWorks) {
  ze_kernel_handle_t k = kernel(module("basic"), "store_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 31));
  ze_command_list_handle_t l = immediate_list(ZE_COMMAND_QUEUE_MODE_DEFAULT);
  ze_event_handle_t e = make_event();
  ASSERT_TRUE(l && e);
  ZE_OK(launch(l, k, 1, 64, e));
  ZE_OK(zeEventHostSynchronize(e, UINT64_MAX));
  EXPECT_EQ(p[63], 31);
}

TEST_F(SpecDetails, SynchronousQueueBlocksInExecute) {
  ze_kernel_handle_t k = kernel(module("basic"), "spin_then_store");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 100000));
  ZE_OK(set_val(k, 2, 17));
  ze_command_queue_handle_t q = queue(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
  ze_command_list_handle_t l = regular_list();
  ASSERT_TRUE(q && l);
  ZE_OK(launch(l, k, 1, 64));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  // No synchronisation: a synchronous queue has run the lists when the call returns.
  for (int i = 0; i < 64; ++i) ASSERT_EQ(p[i], 17) << i;
}

TEST_F(SpecDetails, FenceNeverSubmittedIsNotReady) {
  ze_command_queue_handle_t q = queue();
  ze_fence_handle_t f = fence(q);
  ASSERT_NE(f, nullptr);
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeFenceHostSynchronize(f, 0));
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeFenceHostSynchronize(f, 20'000'000ull));
  EXPECT_GE(ms_since(t0), 15.0);
  // An idle queue synchronizes at once.
  EXPECT_ZE_OK(zeCommandQueueSynchronize(q, 0));
}

TEST_F(SpecDetails, ConstantPointerArgument) {
  ze_kernel_handle_t k = kernel(module("misc"), "poly");
  ASSERT_NE(k, nullptr);
  auto* coeffs = static_cast<float*>(alloc_device(4 * sizeof(float)));
  auto* staging = static_cast<float*>(alloc_host(4 * sizeof(float)));
  auto* out = static_cast<float*>(alloc_shared(64 * sizeof(float)));
  staging[0] = 1.0f, staging[1] = -2.0f, staging[2] = 0.5f, staging[3] = 0.0f;
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t e = make_event();
  ZE_OK(zeCommandListAppendMemoryCopy(l, coeffs, staging, 4 * sizeof(float), nullptr, 0, nullptr));
  ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
  ZE_OK(set_ptr(k, 0, coeffs));
  ZE_OK(set_val(k, 1, 3));
  ZE_OK(set_ptr(k, 2, out));
  ZE_OK(launch(l, k, 1, 64, e));
  ZE_OK(zeEventHostSynchronize(e, UINT64_MAX));
  for (int x = 0; x < 64; ++x) ASSERT_EQ(out[x], 1.0f - 2.0f * x + 0.5f * x * x) << x;
}

TEST_F(SpecDetails, LargeAllocationsAreUsable) {
  ze_device_properties_t dp = {};
  dp.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  ZE_OK(zeDeviceGetProperties(device, &dp));
  const size_t size = std::min<uint64_t>(dp.maxMemAllocSize, size_t{512} << 20);
  ASSERT_GE(size, size_t{64} << 20) << "maxMemAllocSize is implausibly small";
  ze_kernel_handle_t k = kernel(module("misc"), "touch_ends");
  ASSERT_NE(k, nullptr);
  for (int kind = 0; kind < 3; ++kind) {
    char* p = static_cast<char*>(kind == 0 ? alloc_host(size) : kind == 1 ? alloc_shared(size) : alloc_device(size));
    ASSERT_NE(p, nullptr) << "kind " << kind;
    auto* ends = static_cast<char*>(alloc_host(2));
    ZE_OK(set_ptr(k, 0, p));
    ZE_OK(set_val(k, 1, uint64_t{size}));
    ze_command_list_handle_t l = immediate_list();
    ze_event_handle_t e = make_event();
    ZE_OK(launch(l, k, 1, 1));
    ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
    ZE_OK(zeCommandListAppendMemoryCopy(l, ends, p, 1, nullptr, 0, nullptr));
    ZE_OK(zeCommandListAppendMemoryCopy(l, ends + 1, p + size - 1, 1, e, 0, nullptr));
    ZE_OK(zeEventHostSynchronize(e, UINT64_MAX));
    EXPECT_EQ(ends[0], 11) << "kind " << kind;
    EXPECT_EQ(ends[1], 22) << "kind " << kind;
    void* base = nullptr;
    size_t len = 0;
    ZE_OK(zeMemGetAddressRange(context, p + size - 1, &base, &len));
    EXPECT_EQ(base, p);
    EXPECT_GE(len, size);
  }
}

// The Level Zero SPIR-V environment (SPIRV.rst, "Required Capabilities") requires the Groups capability,
// with Subgroup or Workgroup execution scope, so these kernels must build on every Level Zero device.
TEST_F(SpecDetails, SubGroupSizesMatchComputeProperties) {
  ze_kernel_handle_t k = kernel(module("subgroups"), "sg_info");
  ASSERT_NE(k, nullptr);
  ze_device_compute_properties_t cp = {};
  cp.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  ZE_OK(zeDeviceGetComputeProperties(device, &cp));
  std::vector<uint32_t> sizes(cp.subGroupSizes, cp.subGroupSizes + cp.numSubGroupSizes);
  ze_kernel_properties_t kp = {};
  kp.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
  ZE_OK(zeKernelGetProperties(k, &kp));
  const uint32_t gs = 64, n = 256;
  auto* out = static_cast<uint32_t*>(alloc_shared(n * 4 * sizeof(uint32_t)));
  ZE_OK(set_ptr(k, 0, out));
  run(k, n / gs, gs);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t sg = out[i * 4 + 0], max_sg = out[i * 4 + 1], reduced = out[i * 4 + 2], count = out[i * 4 + 3];
    ASSERT_TRUE(std::find(sizes.begin(), sizes.end(), max_sg) != sizes.end())
        << "work-item " << i << ": get_max_sub_group_size() = " << max_sg << " is not a reported sub-group size";
    ASSERT_LE(sg, max_sg) << i;
    ASSERT_EQ(reduced, sg) << "sub_group_reduce_add(1) must equal the sub-group size, item " << i;
    ASSERT_EQ(count, (gs + max_sg - 1) / max_sg) << i;
    if (kp.maxSubgroupSize) {
      ASSERT_LE(max_sg, kp.maxSubgroupSize) << i;
    }
  }
}

TEST_F(SpecDetails, DocumentedBuildFlagsAreAccepted) {
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  ASSERT_FALSE(spv.empty());
  // The options ze_module_desc_t.pBuildFlags documents.
  for (const char* flags : {"-ze-opt-disable", "-ze-opt-greater-than-4GB-buffer-required", "-ze-opt-large-register-file",
                            "-ze-opt-disable -ze-opt-greater-than-4GB-buffer-required"}) {
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(), spv.data(),
                           flags, nullptr};
    ze_module_handle_t m = nullptr;
    ze_module_build_log_handle_t log = nullptr;
    ze_result_t r = zeModuleCreate(context, device, &md, &m, &log);
    std::string text = build_log(log);
    ASSERT_ZE(ZE_RESULT_SUCCESS, r) << "flags \"" << flags << "\": " << text;
    defer([m] { zeModuleDestroy(m); });
    ze_kernel_handle_t k = kernel(m, "store_value");
    ASSERT_NE(k, nullptr);
    auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
    ZE_OK(set_ptr(k, 0, p));
    ZE_OK(set_val(k, 1, 55));
    run(k, 1, 64);
    EXPECT_EQ(p[63], 55) << flags;
  }
}

TEST_F(SpecDetails, EveryQueueGroupDoesWhatItsFlagsSay) {
  uint32_t ng = 0;
  ZE_OK(zeDeviceGetCommandQueueGroupProperties(device, &ng, nullptr));
  std::vector<ze_command_queue_group_properties_t> groups(ng);
  for (auto& x : groups) {
    x = {};
    x.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  }
  ZE_OK(zeDeviceGetCommandQueueGroupProperties(device, &ng, groups.data()));
  ze_kernel_handle_t k = kernel(module("basic"), "store_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  auto* h = static_cast<int*>(alloc_host(64 * sizeof(int)));
  ZE_OK(set_ptr(k, 0, p));
  for (uint32_t g = 0; g < ng; ++g) {
    for (uint32_t index = 0; index < std::min<uint32_t>(groups[g].numQueues, 4); ++index) {
      ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, g, index, 0,
                                    ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
      ze_command_list_handle_t l = nullptr;
      ZE_OK(zeCommandListCreateImmediate(context, device, &qd, &l)) << "group " << g << " queue " << index;
      ze_event_handle_t e = make_event();
      std::fill(p, p + 64, 0);
      std::fill(h, h + 64, 0);
      if (groups[g].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
        ZE_OK(set_val(k, 1, int(100 + g * 10 + index)));
        EXPECT_ZE_OK(launch(l, k, 1, 64));
        EXPECT_ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
      } else {
        for (int i = 0; i < 64; ++i) p[i] = int(100 + g * 10 + index);
      }
      if (groups[g].flags & (ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE)) {
        EXPECT_ZE_OK(zeCommandListAppendMemoryCopy(l, h, p, 64 * sizeof(int), nullptr, 0, nullptr));
      }
      EXPECT_ZE_OK(zeCommandListAppendBarrier(l, e, 0, nullptr));
      EXPECT_ZE_OK(zeEventHostSynchronize(e, 30'000'000'000ull));
      if (groups[g].flags & (ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE)) {
        EXPECT_EQ(h[63], int(100 + g * 10 + index)) << "group " << g << " queue " << index;
      }
      EXPECT_ZE_OK(zeCommandListDestroy(l));
    }
  }
}

TEST_F(SpecDetails, AdvertisedFp64Works) {
  ze_device_module_properties_t mp = {};
  mp.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
  ZE_OK(zeDeviceGetModuleProperties(device, &mp));
  if (!(mp.flags & ZE_DEVICE_MODULE_FLAG_FP64)) GTEST_SKIP() << "the device does not advertise FP64";
  EXPECT_NE(mp.fp64flags, 0u) << "FP64 advertised without any fp64 capability flags";
  ze_kernel_handle_t k = kernel(module("fp64"), "dmul");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<double*>(alloc_shared(64 * sizeof(double)));
  for (int i = 0; i < 64; ++i) p[i] = 1.0 + i * 1e-12;  // needs more than float precision
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 3.0));
  run(k, 1, 64);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(p[i], (1.0 + i * 1e-12) * 3.0 + 1e-300) << i;
}

TEST_F(SpecDetails, AdvertisedFp16Works) {
  ze_device_module_properties_t mp = {};
  mp.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
  ZE_OK(zeDeviceGetModuleProperties(device, &mp));
  if (!(mp.flags & ZE_DEVICE_MODULE_FLAG_FP16)) GTEST_SKIP() << "the device does not advertise FP16";
  ze_kernel_handle_t k = kernel(module("fp16"), "hadd");
  ASSERT_NE(k, nullptr);
  auto* a = static_cast<uint16_t*>(alloc_shared(64 * sizeof(uint16_t)));
  auto* out = static_cast<float*>(alloc_shared(64 * sizeof(float)));
  for (int i = 0; i < 64; ++i) a[i] = 0x3c00;  // 1.0 in IEEE half
  ZE_OK(set_ptr(k, 0, a));
  ZE_OK(set_ptr(k, 1, out));
  run(k, 1, 64);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(out[i], 2.0f) << i;
}

TEST_F(SpecDetails, WorkGroupCollectives) {
  ze_kernel_handle_t k = kernel(module("workgroup"), "wg_collectives");
  ASSERT_NE(k, nullptr);
  const uint32_t gs = 32, groups = 8, n = gs * groups;
  auto* out = static_cast<int*>(alloc_shared(n * 4 * sizeof(int)));
  ZE_OK(set_ptr(k, 0, out));
  run(k, groups, gs);
  for (uint32_t i = 0; i < n; ++i) {
    const int lid = int(i % gs);
    ASSERT_EQ(out[i * 4 + 0], int(gs)) << "work_group_reduce_add(1), item " << i;
    ASSERT_EQ(out[i * 4 + 1], int(i - i % gs)) << "work_group_broadcast, item " << i;
    ASSERT_EQ(out[i * 4 + 2], lid * (lid + 1) / 2) << "work_group_scan_inclusive_add, item " << i;
    ASSERT_EQ(out[i * 4 + 3], 3) << "work_group_any/all, item " << i;
  }
}

// More capabilities every Level Zero device must accept (SPIRV.rst, "Required Capabilities").
TEST_F(SpecDetails, GenericPointerCapability) {
  ze_kernel_handle_t k = kernel(module("generic_ptr"), "generic_calls");
  ASSERT_NE(k, nullptr);
  const uint32_t n = 256;
  auto* in = static_cast<int*>(alloc_shared(n * sizeof(int)));
  auto* out = static_cast<int*>(alloc_shared(n * sizeof(int)));
  for (uint32_t i = 0; i < n; ++i) in[i] = int(i);
  ZE_OK(set_ptr(k, 0, in));
  ZE_OK(set_ptr(k, 1, out));
  run(k, n / 64, 64);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], 2 * int(i) + 2 * (int(i) + 1)) << i;
}

TEST_F(SpecDetails, Vector16Capability) {
  ze_kernel_handle_t k = kernel(module("vec16"), "vec16");
  ASSERT_NE(k, nullptr);
  const uint32_t n = 64;
  auto* a = static_cast<float*>(alloc_shared(n * 16 * sizeof(float)));
  auto* sums = static_cast<float*>(alloc_shared(n * sizeof(float)));
  for (uint32_t i = 0; i < n * 16; ++i) a[i] = float(i % 16);
  ZE_OK(set_ptr(k, 0, a));
  ZE_OK(set_ptr(k, 1, sums));
  run(k, n / 16, 16);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(sums[i], 240.0f) << i;  // 2 * (0 + 1 + ... + 15)
  EXPECT_EQ(a[16 * 5 + 7], 14.0f);
}

TEST_F(SpecDetails, Float16BufferCapability) {
  ze_kernel_handle_t k = kernel(module("halfbuf"), "halves");
  ASSERT_NE(k, nullptr);
  const uint32_t n = 64;
  auto* in = static_cast<uint16_t*>(alloc_shared(n * sizeof(uint16_t)));
  auto* out = static_cast<uint16_t*>(alloc_shared(n * sizeof(uint16_t)));
  auto* f = static_cast<float*>(alloc_shared(n * sizeof(float)));
  for (uint32_t i = 0; i < n; ++i) in[i] = 0x3e00;  // 1.5 in IEEE half
  ZE_OK(set_ptr(k, 0, in));
  ZE_OK(set_ptr(k, 1, out));
  ZE_OK(set_ptr(k, 2, f));
  run(k, 1, n);
  for (uint32_t i = 0; i < n; ++i) {
    ASSERT_EQ(f[i], 1.5f) << i;
    ASSERT_EQ(out[i], 0x4200) << i;  // 3.0 in IEEE half
  }
}
