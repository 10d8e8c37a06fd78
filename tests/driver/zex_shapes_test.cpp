// What the zex library itself needs from a Level Zero driver (docs/integration.md, docs/cpu-driver.md):
// native binaries of built modules, modules linked from several SPIR-V modules, the claim protocol
// (by-value state with pointers as integers, Device-scope compare-exchange, release fence), module
// constants' addresses; and a few more
// API behaviours that are easy to get wrong (timeouts near UINT64_MAX, null pointer arguments, vector
// arguments, large grids, printf).
#include "l0_fixture.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

using ZexShapes = L0Test;

TEST_F(ZexShapes, NativeBinaryRoundTripKeepsSpecConstants) {
  uint32_t ids[] = {7, 9};
  int32_t v7 = 70, v9 = 90;
  const void* vals[] = {&v7, &v9};
  ze_module_constants_t c = {2, ids, vals};
  ze_module_handle_t m = module("spec_const", &c);
  ASSERT_NE(m, nullptr);
  size_t size = 0;
  ze_result_t r = zeModuleGetNativeBinary(m, &size, nullptr);
  if (r == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) GTEST_SKIP() << "zeModuleGetNativeBinary unsupported";
  ZE_OK(r);
  ASSERT_GT(size, 0u);
  std::vector<uint8_t> native(size);
  ZE_OK(zeModuleGetNativeBinary(m, &size, native.data()));
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_NATIVE, native.size(),
                         native.data(), nullptr, nullptr};
  ze_module_handle_t m2 = nullptr;
  ze_module_build_log_handle_t log = nullptr;
  r = zeModuleCreate(context, device, &md, &m2, &log);
  std::string text = build_log(log);
  ZE_OK(r) << text;
  defer([m2] { zeModuleDestroy(m2); });
  ze_kernel_handle_t k = kernel(m2, "spec");
  ASSERT_NE(k, nullptr);
  auto* out = static_cast<int*>(alloc_shared(2 * sizeof(int)));
  ZE_OK(set_ptr(k, 0, out));
  run(k, 1, 1);
  EXPECT_EQ(out[0], 70);
  EXPECT_EQ(out[1], 90);
}

TEST_F(ZexShapes, InvalidNativeBinary) {
  std::vector<uint8_t> junk(256);
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = uint8_t(i * 37 + 1);
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_NATIVE, junk.size(), junk.data(),
                         nullptr, nullptr};
  ze_module_handle_t m = nullptr;
  ze_module_build_log_handle_t log = nullptr;
  ze_result_t r = zeModuleCreate(context, device, &md, &m, &log);
  build_log(log);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY, r);
  // SPIR-V handed over as a native binary is not a native binary either.
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  md.inputSize = spv.size();
  md.pInputModule = spv.data();
  r = zeModuleCreate(context, device, &md, &m, nullptr);
  EXPECT_NE(r, ZE_RESULT_SUCCESS);
  if (r == ZE_RESULT_SUCCESS) zeModuleDestroy(m);
}

TEST_F(ZexShapes, LinkedModuleCallsLibraryAndExportsConstant) {
  ze_module_handle_t m = module("linked");
  ze_kernel_handle_t k = kernel(m, "use_lib");
  ASSERT_NE(k, nullptr);
  const uint32_t n = 256;
  auto* out = static_cast<int*>(alloc_shared(n * sizeof(int)));
  auto* addr = static_cast<uint64_t*>(alloc_shared(sizeof(uint64_t)));
  ZE_OK(set_ptr(k, 0, out));
  ZE_OK(set_ptr(k, 1, addr));
  run(k, n / 64, 64);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(out[i], int(i) * 10 + int(i % 10)) << i;
  // The library's exported constant: its address is a module constant with an address range.
  void* base = nullptr;
  size_t size = 0;
  ZE_OK(zeMemGetAddressRange(context, reinterpret_cast<void*>(addr[0]), &base, &size));
  EXPECT_LE(reinterpret_cast<uintptr_t>(base), addr[0]);
  EXPECT_GE(reinterpret_cast<uintptr_t>(base) + size, addr[0] + 4);
  EXPECT_EQ(*reinterpret_cast<const uint32_t*>(addr[0]), 0x5a450001u);
  // And, where supported, by name.
  size_t gsize = 0;
  void* gptr = nullptr;
  ze_result_t r = zeModuleGetGlobalPointer(m, "lib_abi_version", &gsize, &gptr);
  if (r != ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) {
    ZE_OK(r);
    EXPECT_EQ(gsize, 4u);
    ASSERT_NE(gptr, nullptr);
    EXPECT_EQ(*static_cast<const uint32_t*>(gptr), 0x5a450001u);
  }
}

namespace {
struct State {  // state_t in zexlike.cl
  uint64_t claim;
  uint64_t report;
  uint32_t launch_id;
  uint32_t pad;
};
struct Report {  // report_t in zexlike.cl
  uint32_t status;
  uint32_t launch_id;
  uint64_t gid;
  uint64_t name;
};
}  // namespace

TEST_F(ZexShapes, ClaimProtocolOneWriterAndConstantName) {
  ze_kernel_handle_t k = kernel(module("zexlike"), "throw_some");
  ASSERT_NE(k, nullptr);
  ZE_OK(zeKernelSetIndirectAccess(k, ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST | ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE |
                                         ZE_KERNEL_INDIRECT_ACCESS_FLAG_SHARED));
  const uint32_t n = 1 << 16;
  auto* claim = static_cast<uint32_t*>(alloc_device(sizeof(uint32_t)));
  auto* report = static_cast<Report*>(alloc_host(sizeof(Report)));  // host USM: plain stores only
  auto* out = static_cast<int*>(alloc_shared(n * sizeof(int)));
  auto* host_claim = static_cast<uint32_t*>(alloc_host(sizeof(uint32_t)));
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t done = make_event();
  for (uint32_t id = 1; id <= 3; ++id) {
    std::memset(report, 0, sizeof(Report));
    std::fill(out, out + n, -1);
    uint32_t zero = 0;
    ZE_OK(zeEventHostReset(done));
    ZE_OK(zeCommandListAppendMemoryFill(l, claim, &zero, sizeof zero, sizeof zero, nullptr, 0, nullptr));
    ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
    State s = {reinterpret_cast<uint64_t>(claim), reinterpret_cast<uint64_t>(report), id, 0};
    ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof s, &s));
    ZE_OK(set_ptr(k, 1, out));
    ZE_OK(launch(l, k, id == 2 ? n / 64 : n / 256, id == 2 ? 64 : 256));
    ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
    ZE_OK(zeCommandListAppendMemoryCopy(l, host_claim, claim, sizeof(uint32_t), done, 0, nullptr));
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    ASSERT_EQ(report->status, 1u) << "launch " << id;
    EXPECT_EQ(report->launch_id, id);
    EXPECT_EQ(report->gid % 7, 3u) << "only throwing work-items may claim";
    EXPECT_EQ(uint64_t{*host_claim}, report->gid + 1) << "the claimant wrote the report";
    const char expected[] = "ZexLikeError";
    void* base = nullptr;
    size_t size = 0;
    ASSERT_ZE(ZE_RESULT_SUCCESS, zeMemGetAddressRange(context, reinterpret_cast<void*>(report->name), &base, &size))
        << "the name's address must validate";
    EXPECT_GE(reinterpret_cast<uintptr_t>(base) + size, report->name + sizeof(expected));
    EXPECT_STREQ(reinterpret_cast<const char*>(report->name), expected);
    uint32_t bad = 0;
    for (uint32_t i = 0; i < n; ++i) bad += (i % 7 == 3) ? out[i] != -1 : out[i] != int(i);
    EXPECT_EQ(bad, 0u) << "the other work-items go on";
  }
}

TEST_F(ZexShapes, MemoryFencesBuildAndRun) {
  ze_module_handle_t m = module("fence");
  ze_kernel_handle_t k = kernel(m, "publish");
  ze_kernel_handle_t k2 = kernel(m, "old_fences");
  ASSERT_TRUE(k && k2);
  const uint32_t n = 1024;
  auto* data = static_cast<int*>(alloc_shared(n * sizeof(int)));
  auto* flag = static_cast<int*>(alloc_shared(sizeof(int)));
  *flag = 0;
  ZE_OK(set_ptr(k, 0, data));
  ZE_OK(set_ptr(k, 1, flag));
  run(k, n / 64, 64);
  EXPECT_EQ(*flag, 1);
  EXPECT_EQ(data[n - 1], int(n));
  ZE_OK(set_ptr(k2, 0, data));
  run(k2, n / 64, 64);
  EXPECT_EQ(data[0], 2);
  EXPECT_EQ(data[n - 1], 2);
}

TEST_F(ZexShapes, TimeoutsNearUint64MaxDoNotOverflow) {
  ze_event_handle_t e = host_event();
  ASSERT_NE(e, nullptr);
  std::thread t([e] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    zeEventHostSignal(e);
  });
  ze_result_t r = zeEventHostSynchronize(e, UINT64_MAX - 1);
  t.join();
  EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "a timeout of UINT64_MAX-1 ns is centuries, not an overflow";

  ze_kernel_handle_t k = kernel(module("basic"), "empty");
  ze_event_handle_t gate = host_event();
  ze_command_queue_handle_t q = queue();
  ze_command_list_handle_t l = regular_list();
  ze_fence_handle_t f = fence(q);
  ZE_OK(launch(l, k, 1, 1, nullptr, 1, &gate));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f));
  std::thread t2([gate] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    zeEventHostSignal(gate);
  });
  r = zeFenceHostSynchronize(f, (uint64_t{1} << 63) + 12345);
  ze_result_t rq = zeCommandQueueSynchronize(q, UINT64_MAX - 1000);
  t2.join();
  EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeFenceHostSynchronize";
  EXPECT_ZE(ZE_RESULT_SUCCESS, rq) << "zeCommandQueueSynchronize";
}

TEST_F(ZexShapes, NullPointerArgument) {
  ze_kernel_handle_t k = kernel(module("misc"), "null_check");
  ASSERT_NE(k, nullptr);
  auto* out = static_cast<int*>(alloc_shared(sizeof(int)));
  auto* some = static_cast<int*>(alloc_shared(sizeof(int)));
  *out = 0;
  ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof(void*), nullptr));
  ZE_OK(set_ptr(k, 1, out));
  run(k, 1, 1);
  EXPECT_EQ(*out, 1) << "pArgValue == nullptr must pass a null pointer";
  ZE_OK(set_ptr(k, 0, some));
  run(k, 1, 1);
  EXPECT_EQ(*out, 2);
  const void* null = nullptr;
  ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof(void*), &null));
  run(k, 1, 1);
  EXPECT_EQ(*out, 1);
}

TEST_F(ZexShapes, VectorAndMixedArguments) {
  ze_kernel_handle_t k = kernel(module("misc"), "vectors");
  ASSERT_NE(k, nullptr);
  auto* out = static_cast<float*>(alloc_shared(4 * sizeof(float)));
  float f4[4] = {1.5f, 2.5f, 3.0f, -1.0f};
  int32_t i2[2] = {-6, 7};
  uint8_t c = 200;
  uint64_t big = uint64_t{0x2a} << 40;
  ZE_OK(set_ptr(k, 0, out));
  ZE_OK(zeKernelSetArgumentValue(k, 1, sizeof f4, f4));
  ZE_OK(zeKernelSetArgumentValue(k, 2, sizeof i2, i2));
  ZE_OK(zeKernelSetArgumentValue(k, 3, sizeof c, &c));
  ZE_OK(zeKernelSetArgumentValue(k, 4, sizeof big, &big));
  run(k, 1, 1);
  EXPECT_EQ(out[0], 6.0f);
  EXPECT_EQ(out[1], -42.0f);
  EXPECT_EQ(out[2], 200.0f);
  EXPECT_EQ(out[3], 42.0f);
}

TEST_F(ZexShapes, LargeGridsInEveryDimension) {
  ze_kernel_handle_t k = kernel(module("basic"), "geometry");
  ASSERT_NE(k, nullptr);
  ze_device_compute_properties_t cp = {};
  cp.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  ZE_OK(zeDeviceGetComputeProperties(device, &cp));
  struct {
    uint32_t x, y, z;
  } grids[] = {{1u << 16, 1, 1}, {1, 1u << 16, 1}, {1, 1, std::min<uint32_t>(cp.maxGroupCountZ, 1u << 16)}};
  for (auto& g : grids) {
    const uint64_t total = uint64_t{g.x} * g.y * g.z;
    auto* out = static_cast<uint32_t*>(alloc_shared(total * 4 * sizeof(uint32_t)));
    ASSERT_NE(out, nullptr);
    std::memset(out, 0, total * 4 * sizeof(uint32_t));
    ZE_OK(set_ptr(k, 0, out));
    ZE_OK(zeKernelSetGroupSize(k, 1, 1, 1));
    ze_command_list_handle_t l = immediate_list();
    ze_event_handle_t done = make_event();
    ze_group_count_t gc = {g.x, g.y, g.z};
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &gc, done, 0, nullptr));
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    uint64_t ran = 0;
    for (uint64_t i = 0; i < total; ++i) ran += out[i * 4 + 3] == 0xC0FFEEu;
    EXPECT_EQ(ran, total) << g.x << "x" << g.y << "x" << g.z << " groups";
  }
}

TEST_F(ZexShapes, PrintfReachesStdout) {
  ze_kernel_handle_t k = kernel(module("misc"), "say");
  ASSERT_NE(k, nullptr);
  ZE_OK(set_val(k, 0, 4242));
  char path[] = "/tmp/zex-printf-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::fflush(stdout);
  int saved = dup(1);
  dup2(fd, 1);
  run(k, 1, 8);
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  std::string text;
  lseek(fd, 0, SEEK_SET);
  char buf[4096];
  for (ssize_t r; (r = read(fd, buf, sizeof buf)) > 0;) text.append(buf, size_t(r));
  close(fd);
  unlink(path);
  EXPECT_NE(text.find("zex-cpu printf 4242"), std::string::npos) << "stdout during the launch: '" << text << "'";
}
