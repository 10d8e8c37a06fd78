// Modules from SPIR-V: specialization constants, build logs, kernel names, kernel properties, group sizes,
// arguments and global pointers.
#include "l0_fixture.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

using Module = L0Test;

TEST_F(Module, SpecConstantsDefault) {
  ze_module_handle_t m = module("spec_const");
  ze_kernel_handle_t k = kernel(m, "spec");
  ASSERT_NE(k, nullptr);
  auto* out = static_cast<int*>(alloc_shared(2 * sizeof(int)));
  out[0] = out[1] = 0;
  ZE_OK(set_ptr(k, 0, out));
  run(k, 1, 1);
  EXPECT_EQ(out[0], 11);
  EXPECT_EQ(out[1], -3);
}

TEST_F(Module, SpecConstantsOverridden) {
  uint32_t ids[] = {7, 9};
  int32_t v7 = 1234, v9 = -98765;
  const void* vals[] = {&v7, &v9};
  ze_module_constants_t c = {2, ids, vals};
  ze_module_handle_t m = module("spec_const", &c);
  ze_kernel_handle_t k = kernel(m, "spec");
  ASSERT_NE(k, nullptr);
  auto* out = static_cast<int*>(alloc_shared(2 * sizeof(int)));
  ZE_OK(set_ptr(k, 0, out));
  run(k, 1, 1);
  EXPECT_EQ(out[0], 1234);
  EXPECT_EQ(out[1], -98765);
}

TEST_F(Module, SpecConstantsPartlyOverridden) {
  uint32_t ids[] = {9};
  int32_t v9 = 5;
  const void* vals[] = {&v9};
  ze_module_constants_t c = {1, ids, vals};
  ze_kernel_handle_t k = kernel(module("spec_const", &c), "spec");
  ASSERT_NE(k, nullptr);
  auto* out = static_cast<int*>(alloc_shared(2 * sizeof(int)));
  ZE_OK(set_ptr(k, 0, out));
  run(k, 1, 1);
  EXPECT_EQ(out[0], 11);
  EXPECT_EQ(out[1], 5);
}

// Intel's driver (compute-runtime, ModuleTranslationUnit::processSpecConstantInfo) fails zeModuleCreate with
// ZE_RESULT_ERROR_MODULE_BUILD_FAILURE when pConstants names an id the module does not declare; zex-cpu does
// the same, and its build log names the id (NEO's says nothing).
TEST_F(Module, UndeclaredSpecConstantIdFailsTheBuildAsIntelsDriverDoes) {
  std::vector<uint8_t> spv = zt::read_spirv("spec_const");
  ASSERT_FALSE(spv.empty());
  uint32_t ids[] = {9, 0x1000};
  int32_t v9 = 5, v = 1;
  const void* vals[] = {&v9, &v};
  ze_module_constants_t c = {2, ids, vals};
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(),
                         spv.data(), nullptr, &c};
  ze_module_handle_t m = nullptr;
  ze_module_build_log_handle_t log = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, zeModuleCreate(context, device, &md, &m, &log));
  EXPECT_EQ(m, nullptr);
  std::string text = build_log(log);
  EXPECT_NE(text.find("specialization constant id 4096 is not declared by the module"), std::string::npos) << text;
  // The declared ids alone still build.
  c.numConstants = 1;
  ZE_OK(zeModuleCreate(context, device, &md, &m, nullptr));
  EXPECT_ZE_OK(zeModuleDestroy(m));
}

TEST_F(Module, SuccessfulBuildHasLog) {
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(),
                         spv.data(), nullptr, nullptr};
  ze_module_handle_t m = nullptr;
  ze_module_build_log_handle_t log = nullptr;
  ZE_OK(zeModuleCreate(context, device, &md, &m, &log));
  EXPECT_NE(m, nullptr);
  ASSERT_NE(log, nullptr);
  size_t size = 0;
  EXPECT_ZE_OK(zeModuleBuildLogGetString(log, &size, nullptr));
  EXPECT_GE(size, 1u) << "the size includes the terminating NUL";
  EXPECT_ZE_OK(zeModuleBuildLogDestroy(log));
  EXPECT_ZE_OK(zeModuleDestroy(m));
}

TEST_F(Module, KernelNames) {
  ze_module_handle_t m = module("basic");
  ASSERT_NE(m, nullptr);
  uint32_t n = 0;
  ZE_OK(zeModuleGetKernelNames(m, &n, nullptr));
  EXPECT_EQ(n, 10u);
  std::vector<const char*> names(n);
  ZE_OK(zeModuleGetKernelNames(m, &n, names.data()));
  std::set<std::string> got(names.begin(), names.end());
  for (const char* want : {"empty", "vadd", "add_value", "store_value", "spin_then_store", "scalars",
                           "by_struct", "geometry", "indirect_store", "two_locals"})
    EXPECT_TRUE(got.count(want)) << want;
  // Asking for fewer returns that many.
  uint32_t two = 2;
  const char* first[2] = {};
  ZE_OK(zeModuleGetKernelNames(m, &two, first));
  EXPECT_EQ(two, 2u);
  EXPECT_NE(first[0], nullptr);
}

TEST_F(Module, KernelNameAndProperties) {
  ze_module_handle_t m = module("basic");
  ze_kernel_handle_t k = kernel(m, "vadd");
  ASSERT_NE(k, nullptr);
  size_t size = 0;
  ZE_OK(zeKernelGetName(k, &size, nullptr));
  ASSERT_EQ(size, sizeof("vadd"));
  std::vector<char> name(size);
  ZE_OK(zeKernelGetName(k, &size, name.data()));
  EXPECT_STREQ(name.data(), "vadd");

  ze_kernel_properties_t p = {};
  p.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
  ZE_OK(zeKernelGetProperties(k, &p));
  EXPECT_EQ(p.numKernelArgs, 3u);

  struct {
    const char* name;
    uint32_t args;
  } more[] = {{"empty", 0}, {"scalars", 6}, {"by_struct", 2}, {"spin_then_store", 3}};
  for (auto& c : more) {
    ze_kernel_handle_t k2 = kernel(m, c.name);
    ASSERT_NE(k2, nullptr);
    ze_kernel_properties_t p2 = {};
    p2.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
    ZE_OK(zeKernelGetProperties(k2, &p2));
    EXPECT_EQ(p2.numKernelArgs, c.args) << c.name;
  }
  ze_kernel_handle_t r = kernel(module("reduce"), "reduce_arg");
  ASSERT_NE(r, nullptr);
  ze_kernel_properties_t p3 = {};
  p3.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
  ZE_OK(zeKernelGetProperties(r, &p3));
  EXPECT_EQ(p3.numKernelArgs, 3u);
}

TEST_F(Module, UnknownKernelName) {
  ze_module_handle_t m = module("basic");
  ASSERT_NE(m, nullptr);
  ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "no_such_kernel"};
  ze_kernel_handle_t k = reinterpret_cast<ze_kernel_handle_t>(0x1);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_KERNEL_NAME, zeKernelCreate(m, &kd, &k));
  // A prefix of a real name is not a name either.
  kd.pKernelName = "vad";
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_KERNEL_NAME, zeKernelCreate(m, &kd, &k));
  kd.pKernelName = "";
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_KERNEL_NAME, zeKernelCreate(m, &kd, &k));
}

TEST_F(Module, SameKernelTwiceGivesIndependentHandles) {
  ze_module_handle_t m = module("basic");
  ze_kernel_handle_t a = kernel(m, "store_value");
  ze_kernel_handle_t b = kernel(m, "store_value");
  ASSERT_TRUE(a && b);
  EXPECT_NE(a, b);
  // Arguments belong to the kernel handle, not the kernel name.
  auto* pa = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  auto* pb = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  ZE_OK(set_ptr(a, 0, pa));
  ZE_OK(set_val(a, 1, 1));
  ZE_OK(set_ptr(b, 0, pb));
  ZE_OK(set_val(b, 1, 2));
  run(a, 1, 64);
  run(b, 1, 64);
  EXPECT_EQ(pa[63], 1);
  EXPECT_EQ(pb[63], 2);
}

TEST_F(Module, GroupSizeAndGeometry3D) {
  ze_kernel_handle_t k = kernel(module("basic"), "geometry");
  ASSERT_NE(k, nullptr);
  const uint32_t lx = 4, ly = 2, lz = 2, nx = 3, ny = 2, nz = 2;
  const uint32_t total = lx * ly * lz * nx * ny * nz;
  auto* out = static_cast<uint32_t*>(alloc_shared(total * 4 * sizeof(uint32_t)));
  std::memset(out, 0, total * 4 * sizeof(uint32_t));
  ZE_OK(set_ptr(k, 0, out));
  ZE_OK(zeKernelSetGroupSize(k, lx, ly, lz));
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t done = make_event();
  ze_group_count_t gc = {nx, ny, nz};
  ZE_OK(zeCommandListAppendLaunchKernel(l, k, &gc, done, 0, nullptr));
  ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
  const uint32_t gxs = lx * nx, gys = ly * ny;
  for (uint32_t z = 0; z < lz * nz; ++z)
    for (uint32_t y = 0; y < gys; ++y)
      for (uint32_t x = 0; x < gxs; ++x) {
        uint32_t i = (z * gys + y) * gxs + x;
        ASSERT_EQ(out[i * 4 + 3], 0xC0FFEEu) << "work-item " << x << "," << y << "," << z << " did not run";
        EXPECT_EQ(out[i * 4 + 0], lx | (ly << 10) | (lz << 20));
        EXPECT_EQ(out[i * 4 + 1], nx | (ny << 10) | (nz << 20));
        EXPECT_EQ(out[i * 4 + 2], x | (y << 10) | (z << 20));
      }
}

TEST_F(Module, GroupSizeTooLargeIsRejected) {
  ze_kernel_handle_t k = kernel(module("basic"), "empty");
  ASSERT_NE(k, nullptr);
  ze_device_compute_properties_t c = {};
  c.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  ZE_OK(zeDeviceGetComputeProperties(device, &c));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION, zeKernelSetGroupSize(k, c.maxGroupSizeX + 1, 1, 1));
  // A zero dimension is invalid; the specification names no result for it.
  EXPECT_NE(zeKernelSetGroupSize(k, 0, 1, 1), ZE_RESULT_SUCCESS);
  if (uint64_t{c.maxTotalGroupSize} < uint64_t{c.maxGroupSizeX} * c.maxGroupSizeY) {
    EXPECT_ZE(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION,
              zeKernelSetGroupSize(k, c.maxGroupSizeX, c.maxGroupSizeY, 1));
  }
  EXPECT_ZE_OK(zeKernelSetGroupSize(k, 1, 1, 1));
}

TEST_F(Module, SuggestGroupSizeDividesGlobalSize) {
  ze_kernel_handle_t k = kernel(module("basic"), "vadd");
  ASSERT_NE(k, nullptr);
  ze_device_compute_properties_t c = {};
  c.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  ZE_OK(zeDeviceGetComputeProperties(device, &c));
  struct {
    uint32_t x, y, z;
  } cases[] = {{1 << 20, 1, 1}, {1000, 1, 1}, {7, 1, 1}, {64, 64, 1}, {12, 10, 6}, {1, 1, 1}};
  for (auto& g : cases) {
    uint32_t x = 0, y = 0, z = 0;
    ZE_OK(zeKernelSuggestGroupSize(k, g.x, g.y, g.z, &x, &y, &z));
    ASSERT_TRUE(x >= 1 && y >= 1 && z >= 1);
    EXPECT_EQ(g.x % x, 0u) << g.x << " / " << x;
    EXPECT_EQ(g.y % y, 0u) << g.y << " / " << y;
    EXPECT_EQ(g.z % z, 0u) << g.z << " / " << z;
    EXPECT_LE(uint64_t{x} * y * z, c.maxTotalGroupSize);
    EXPECT_LE(x, c.maxGroupSizeX);
    // The suggestion is usable as is.
    EXPECT_ZE_OK(zeKernelSetGroupSize(k, x, y, z));
  }
}

TEST_F(Module, SuggestedGroupSizeRunsVectorAdd) {
  ze_kernel_handle_t k = kernel(module("basic"), "vadd");
  ASSERT_NE(k, nullptr);
  const uint32_t n = 3000;
  uint32_t x = 0, y = 0, z = 0;
  ZE_OK(zeKernelSuggestGroupSize(k, n, 1, 1, &x, &y, &z));
  ASSERT_EQ(n % x, 0u);
  auto* a = static_cast<float*>(alloc_shared(n * sizeof(float)));
  auto* b = static_cast<float*>(alloc_shared(n * sizeof(float)));
  auto* c = static_cast<float*>(alloc_shared(n * sizeof(float)));
  for (uint32_t i = 0; i < n; ++i) a[i] = float(i), b[i] = 0.5f, c[i] = -1;
  ZE_OK(set_ptr(k, 0, a));
  ZE_OK(set_ptr(k, 1, b));
  ZE_OK(set_ptr(k, 2, c));
  run(k, n / x, x);
  for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(c[i], float(i) + 0.5f) << i;
}

TEST_F(Module, ScalarArgumentsByValue) {
  ze_kernel_handle_t k = kernel(module("basic"), "scalars");
  ASSERT_NE(k, nullptr);
  auto* out = static_cast<int64_t*>(alloc_shared(8 * sizeof(int64_t)));
  ZE_OK(set_ptr(k, 0, out));
  ZE_OK(set_val(k, 1, int8_t{-5}));
  ZE_OK(set_val(k, 2, int16_t{-30000}));
  ZE_OK(set_val(k, 3, int32_t{2000000000}));
  ZE_OK(set_val(k, 4, int64_t{-(int64_t{1} << 40)}));
  ZE_OK(set_val(k, 5, 2.25f));
  run(k, 1, 1);
  EXPECT_EQ(out[0], -5);
  EXPECT_EQ(out[1], -30000);
  EXPECT_EQ(out[2], 2000000000);
  EXPECT_EQ(out[3], -(int64_t{1} << 40));
  EXPECT_EQ(out[4], 9);
}

TEST_F(Module, StructArgumentByValue) {
  ze_kernel_handle_t k = kernel(module("basic"), "by_struct");
  ASSERT_NE(k, nullptr);
  struct Pod {  // the layout of pod_t in basic.cl
    int32_t a;
    float b;
    int64_t c;
    char d;
  } s = {-7, 1.5f, int64_t{1} << 50, 'z'};
  auto* out = static_cast<int64_t*>(alloc_shared(4 * sizeof(int64_t)));
  ZE_OK(set_ptr(k, 0, out));
  ZE_OK(zeKernelSetArgumentValue(k, 1, sizeof(Pod), &s));
  run(k, 1, 1);
  EXPECT_EQ(out[0], -7);
  EXPECT_EQ(out[1], 6);
  EXPECT_EQ(out[2], int64_t{1} << 50);
  EXPECT_EQ(out[3], 'z');
}

TEST_F(Module, ArgumentsPersistAcrossLaunchesAndCanChange) {
  ze_kernel_handle_t k = kernel(module("basic"), "store_value");
  ASSERT_NE(k, nullptr);
  auto* a = static_cast<int*>(alloc_shared(32 * sizeof(int)));
  auto* b = static_cast<int*>(alloc_shared(32 * sizeof(int)));
  std::fill(a, a + 32, 0);
  std::fill(b, b + 32, 0);
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t done = make_event();
  ZE_OK(set_ptr(k, 0, a));
  ZE_OK(set_val(k, 1, 10));
  ZE_OK(launch(l, k, 1, 32));
  // Changing an argument after appending must not affect the launch already appended.
  ZE_OK(set_ptr(k, 0, b));
  ZE_OK(launch(l, k, 1, 32));
  ZE_OK(set_val(k, 1, 20));
  ZE_OK(launch(l, k, 1, 16, done));
  ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
  EXPECT_EQ(a[0], 10);
  EXPECT_EQ(a[31], 10);
  EXPECT_EQ(b[0], 20);
  EXPECT_EQ(b[15], 20);
  EXPECT_EQ(b[16], 10);
  EXPECT_EQ(b[31], 10);
}

TEST_F(Module, ArgumentIndexAndSizeAreChecked) {
  ze_kernel_handle_t k = kernel(module("basic"), "add_value");
  ASSERT_NE(k, nullptr);
  int v = 1;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX, zeKernelSetArgumentValue(k, 2, sizeof(int), &v));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX, zeKernelSetArgumentValue(k, 1000, sizeof(int), &v));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE, zeKernelSetArgumentValue(k, 1, 8, &v));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE, zeKernelSetArgumentValue(k, 0, 4, &v));
  EXPECT_ZE_OK(zeKernelSetArgumentValue(k, 1, sizeof(int), &v));
  // A null pointer argument is allowed (pArgValue == nullptr for a pointer means a null pointer).
  EXPECT_ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof(void*), nullptr));
}

TEST_F(Module, IndirectAccessFlagsRoundTripAndWork) {
  ze_kernel_handle_t k = kernel(module("basic"), "indirect_store");
  ASSERT_NE(k, nullptr);
  ze_kernel_indirect_access_flags_t all = ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST | ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE |
                                          ZE_KERNEL_INDIRECT_ACCESS_FLAG_SHARED;
  ZE_OK(zeKernelSetIndirectAccess(k, all));
  ze_kernel_indirect_access_flags_t got = 0;
  ZE_OK(zeKernelGetIndirectAccess(k, &got));
  EXPECT_EQ(got, all);
  // The kernel reaches allocations only through a pointer stored in memory.
  void* targets[] = {alloc_host(64 * sizeof(int)), alloc_shared(64 * sizeof(int)), alloc_device(64 * sizeof(int))};
  auto* table = static_cast<uint64_t*>(alloc_shared(sizeof(uint64_t)));
  auto* readback = static_cast<int*>(alloc_host(64 * sizeof(int)));
  int v = 100;
  for (void* t : targets) {
    ASSERT_NE(t, nullptr);
    table[0] = reinterpret_cast<uint64_t>(t);
    ZE_OK(set_ptr(k, 0, table));
    ZE_OK(set_val(k, 1, v));
    ze_command_list_handle_t l = immediate_list();
    ze_event_handle_t done = make_event();
    ZE_OK(launch(l, k, 2, 32));
    ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
    ZE_OK(zeCommandListAppendMemoryCopy(l, readback, t, 64 * sizeof(int), done, 0, nullptr));
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    for (int i = 0; i < 64; ++i) ASSERT_EQ(readback[i], v + i) << "target " << t << " item " << i;
    v += 100;
  }
}

TEST_F(Module, GlobalPointer) {
  ze_module_handle_t m = module("globals");
  ASSERT_NE(m, nullptr);
  size_t size = 0;
  void* p = nullptr;
  ze_result_t r = zeModuleGetGlobalPointer(m, "zex_global_value", &size, &p);
  if (r == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) GTEST_SKIP() << "zeModuleGetGlobalPointer is unsupported here";
  ZE_OK(r);
  EXPECT_EQ(size, sizeof(int));
  ASSERT_NE(p, nullptr);
  // The kernel reads the global and increments it; reading through the pointer must see both values.
  ze_kernel_handle_t k = kernel(m, "bump_global");
  auto* out = static_cast<int*>(alloc_shared(sizeof(int)));
  auto* host = static_cast<int*>(alloc_host(sizeof(int)));
  ZE_OK(set_ptr(k, 0, out));
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t done = make_event();
  ZE_OK(launch(l, k, 1, 1));
  ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
  ZE_OK(zeCommandListAppendMemoryCopy(l, host, p, sizeof(int), done, 0, nullptr));
  ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
  EXPECT_EQ(*out, 42);
  EXPECT_EQ(*host, 43);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME, zeModuleGetGlobalPointer(m, "no_such_global", &size, &p));
}

// A module's program-scope storage is at the same address in every process (program_globals.cpp,
// map_stable): the kernels' bitcode holds that address, and PoCL's kernel cache is keyed by the bitcode,
// so with heap addresses every process compiled every kernel again. Two fresh processes (this binary,
// the disabled half below) print the address of the same module's variable.
TEST_F(Module, GlobalStorageIsAtTheSameAddressInEveryProcess) {
  auto child_address = [] {
    std::string cmd = "ZEX_PRINT_GLOBAL_ADDRESS=1 /proc/" + std::to_string(getpid()) +
                      "/exe --gtest_filter=DISABLED_GlobalAddress.Print --gtest_also_run_disabled_tests 2>&1";
    FILE* f = popen(cmd.c_str(), "r");
    std::string out;
    char buf[4096];
    for (size_t n; f && (n = fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
    if (f) pclose(f);
    const size_t at = out.find("GLOBAL_ADDRESS=");
    return at == std::string::npos ? "(none) " + out : out.substr(at, out.find('\n', at) - at);
  };
  const std::string a = child_address(), b = child_address();
  EXPECT_EQ(a.rfind("GLOBAL_ADDRESS=0x", 0), 0u) << a;
  EXPECT_EQ(a, b) << "the same module's storage moved between two processes";
}

TEST_F(Module, ModuleDestroyAfterKernelsDestroyed) {
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(),
                         spv.data(), nullptr, nullptr};
  for (int i = 0; i < 3; ++i) {
    ze_module_handle_t m = nullptr;
    ZE_OK(zeModuleCreate(context, device, &md, &m, nullptr));
    ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "empty"};
    ze_kernel_handle_t k = nullptr;
    ZE_OK(zeKernelCreate(m, &kd, &k));
    EXPECT_ZE_OK(zeKernelDestroy(k));
    EXPECT_ZE_OK(zeModuleDestroy(m));
  }
}

TEST_F(Module, GlobalPointerWrittenByHostIsPerModule) {
  ze_module_handle_t m1 = module("globals");
  ze_module_handle_t m2 = module("globals");
  ASSERT_TRUE(m1 && m2);
  size_t size = 0;
  void* g1 = nullptr;
  void* g2 = nullptr;
  ze_result_t r = zeModuleGetGlobalPointer(m1, "zex_global_value", &size, &g1);
  if (r == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) GTEST_SKIP() << "zeModuleGetGlobalPointer is unsupported here";
  ZE_OK(r);
  ZE_OK(zeModuleGetGlobalPointer(m2, "zex_global_value", &size, &g2));
  EXPECT_NE(g1, g2) << "each module has its own program-scope variables";
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t e = make_event();
  int v = 1000;
  ZE_OK(zeCommandListAppendMemoryCopy(l, g1, &v, sizeof v, nullptr, 0, nullptr));
  ZE_OK(zeCommandListAppendBarrier(l, e, 0, nullptr));
  ZE_OK(zeEventHostSynchronize(e, UINT64_MAX));
  ze_kernel_handle_t k1 = kernel(m1, "bump_global");
  ze_kernel_handle_t k2 = kernel(m2, "bump_global");
  auto* out = static_cast<int*>(alloc_shared(2 * sizeof(int)));
  ZE_OK(set_ptr(k1, 0, out));
  ZE_OK(set_ptr(k2, 0, out + 1));
  run(k1, 1, 1);
  run(k2, 1, 1);
  EXPECT_EQ(out[0], 1000) << "the kernel reads what the host wrote through the global pointer";
  EXPECT_EQ(out[1], 42) << "the other module's variable is untouched";
}

// The child half of Module.GlobalStorageIsAtTheSameAddressInEveryProcess.
using DISABLED_GlobalAddress = L0Test;
TEST_F(DISABLED_GlobalAddress, Print) {
  if (!std::getenv("ZEX_PRINT_GLOBAL_ADDRESS")) GTEST_SKIP() << "the child half of a Module test";
  ze_module_handle_t m = module("globals");
  ASSERT_NE(m, nullptr);
  size_t size = 0;
  void* p = nullptr;
  ze_result_t r = zeModuleGetGlobalPointer(m, "zex_global_value", &size, &p);
  if (r == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) GTEST_SKIP() << "zeModuleGetGlobalPointer is unsupported here";
  ZE_OK(r);
  std::printf("GLOBAL_ADDRESS=%p\n", p);
}
