// Addresses of program-scope data as strict as Intel's driver (NEO 22.43 with IGC 1.0.12504): a kernel's
// reference to a __constant array of i8 (string literal, named char array, uchar table) is a host pointer
// into NEO's copy of the binary, which zeMemGetAddressRange does not find; every other constant is in the
// module's constant surface and every __global variable in its global surface, both USM allocations that it
// does find. zeModuleGetGlobalPointer returns the address the kernel sees, for all of them.
// kernels/addresses.cl, dyn_lib.cl + dyn_main.cl (zeModuleDynamicLink). ZEX_CPU_LENIENT_ADDRESS_RANGE=1 is
// zex-cpu's switch back to its old answers.
#include "l0_fixture.hpp"

#include <cstdlib>

namespace {

enum Slot { kLiteral, kNamedString, kWrapped, kTable, kCounter, kLut, kSlots };
const char* const kSlotNames[kSlots] = {"string literal", "named_str", "wrapped", "table", "counter", "lut"};

// Runs strict whatever the run's environment says, and puts the run's setting back afterwards.
class StrictEnv : public L0Test {
 protected:
  void SetUp() override {
    L0Test::SetUp();
    unsetenv("ZEX_CPU_LENIENT_ADDRESS_RANGE");
  }
  void TearDown() override {
    if (!lenient_at_start.empty()) setenv("ZEX_CPU_LENIENT_ADDRESS_RANGE", lenient_at_start.c_str(), 1);
    L0Test::TearDown();
  }
  static inline const std::string lenient_at_start = [] {  // read before any test unsets it
    const char* v = std::getenv("ZEX_CPU_LENIENT_ADDRESS_RANGE");
    return std::string(v ? v : "");
  }();
};

class StrictAddresses : public StrictEnv {
 protected:
  void SetUp() override {
    StrictEnv::SetUp();
    m = module("addresses");
    k = kernel(m, "addresses");
    ASSERT_TRUE(m && k);
    out = static_cast<uint64_t*>(alloc_shared(kSlots * sizeof(uint64_t)));
    values = static_cast<uint32_t*>(alloc_shared(5 * sizeof(uint32_t)));
    ASSERT_TRUE(out && values);
    ZE_OK(set_ptr(k, 0, out));
    ZE_OK(set_ptr(k, 1, values));
    run(k, 1, 1);
    for (int i = 0; i < kSlots; ++i) ASSERT_NE(out[i], 0u) << kSlotNames[i];
  }
  // True when zeMemGetAddressRange finds `addr`, with a range that holds [addr, addr + size).
  ::testing::AssertionResult found(uint64_t addr, size_t size) {
    void* base = nullptr;
    size_t len = 0;
    ze_result_t r = zeMemGetAddressRange(context, reinterpret_cast<void*>(addr), &base, &len);
    if (r != ZE_RESULT_SUCCESS) return ::testing::AssertionFailure() << zt::result_name(r);
    auto b = reinterpret_cast<uint64_t>(base);
    if (b > addr || b + len < addr + size)
      return ::testing::AssertionFailure() << "range " << base << "+" << len << " does not hold the object";
    return ::testing::AssertionSuccess() << "found in " << base << "+" << len;
  }

  ze_module_handle_t m = nullptr;
  ze_kernel_handle_t k = nullptr;
  uint64_t* out = nullptr;
  uint32_t* values = nullptr;
};

TEST_F(StrictAddresses, KernelReadsThroughItsAddresses) {
  EXPECT_EQ(values[0], 0x11223344u);
  EXPECT_EQ(values[1], uint32_t('w'));
  EXPECT_EQ(values[2], uint32_t('n'));
  EXPECT_EQ(values[3], 9u);
  EXPECT_EQ(values[4], 41u);
  EXPECT_STREQ(reinterpret_cast<const char*>(out[kLiteral]), "a string literal");
  EXPECT_STREQ(reinterpret_cast<const char*>(out[kNamedString]), "named string");
  EXPECT_STREQ(reinterpret_cast<const char*>(out[kWrapped]), "wrapped");
}

TEST_F(StrictAddresses, ArraysOfCharAreNotFound) {
  EXPECT_FALSE(found(out[kLiteral], 17)) << "a string literal is in NEO's strings segment";
  EXPECT_FALSE(found(out[kNamedString], 13)) << "so is a named __constant char[]";
  EXPECT_FALSE(found(out[kLut], 8)) << "and a uchar table: the rule is the initializer's type";
  EXPECT_FALSE(found(out[kNamedString] + 5, 1)) << "nor any byte inside";
}

TEST_F(StrictAddresses, ConstantSurfaceAndGlobalsAreFound) {
  EXPECT_TRUE(found(out[kWrapped], 8)) << "a struct-wrapped string is in the constant surface";
  EXPECT_TRUE(found(out[kTable], 16)) << "a uint table is in the constant surface";
  EXPECT_TRUE(found(out[kCounter], 4)) << "a __global variable is in the global surface";
  EXPECT_TRUE(found(out[kWrapped] + 7, 1)) << "the last byte of the wrapped string";
}

TEST_F(StrictAddresses, GlobalPointerIsTheKernelsAddress) {
  struct Named {
    const char* name;
    Slot slot;
    size_t size;
  } named[] = {{"named_str", kNamedString, 13}, {"wrapped", kWrapped, 8}, {"table", kTable, 16},
               {"counter", kCounter, 4},        {"lut", kLut, 8}};
  for (const Named& n : named) {
    size_t size = 0;
    void* p = nullptr;
    ze_result_t r = zeModuleGetGlobalPointer(m, n.name, &size, &p);
    if (r == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) GTEST_SKIP() << "zeModuleGetGlobalPointer is unsupported here";
    ZE_OK(r) << n.name;
    EXPECT_EQ(reinterpret_cast<uint64_t>(p), out[n.slot]) << n.name << ": the address the kernel saw";
    EXPECT_EQ(size, n.size) << n.name;
  }
  // The global pointer of a __global variable is where the kernel wrote.
  size_t size = 0;
  void* p = nullptr;
  ZE_OK(zeModuleGetGlobalPointer(m, "counter", &size, &p));
  EXPECT_EQ(*static_cast<const int*>(p), 42);
}

TEST_F(StrictAddresses, CopyFromTheWrappedStringsAddress) {
  auto* dst = static_cast<char*>(alloc_host(8));
  std::memset(dst, 0, 8);
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t done = make_event();
  ZE_OK(zeCommandListAppendMemoryCopy(l, dst, reinterpret_cast<const void*>(out[kWrapped]), 8, done, 0, nullptr));
  ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
  EXPECT_STREQ(dst, "wrapped");
}

TEST_F(StrictAddresses, SurfacesGoAwayWithTheModule) {
  uint64_t wrapped = out[kWrapped], counter = out[kCounter];
  ASSERT_TRUE(found(wrapped, 8));
  // A second module, destroyed by the test (the kernel first, as the specification asks).
  ze_module_handle_t m2 = build_module("addresses");
  ze_kernel_handle_t k2 = create_kernel(m2, "addresses");
  ASSERT_TRUE(m2 && k2);
  ZE_OK(set_ptr(k2, 0, out));
  ZE_OK(set_ptr(k2, 1, values));
  run(k2, 1, 1);
  EXPECT_NE(out[kWrapped], wrapped) << "each module has its own constant surface";
  EXPECT_NE(out[kCounter], counter) << "and its own global surface";
  EXPECT_EQ(values[4], 41u) << "with its own initial values";
  uint64_t wrapped2 = out[kWrapped], counter2 = out[kCounter];
  ASSERT_TRUE(found(wrapped2, 8));
  ZE_OK(zeKernelDestroy(k2));
  ZE_OK(zeModuleDestroy(m2));
  EXPECT_FALSE(found(wrapped2, 8)) << "the constant surface of a destroyed module";
  EXPECT_FALSE(found(counter2, 4)) << "the global surface of a destroyed module";
  EXPECT_TRUE(found(wrapped, 8)) << "the first module lives on";
}

TEST_F(StrictAddresses, LenientVariableRestoresTheOldAnswers) {
  setenv("ZEX_CPU_LENIENT_ADDRESS_RANGE", "1", 1);
  EXPECT_TRUE(found(out[kLiteral], 17)) << "lenient: a string literal is found";
  EXPECT_TRUE(found(out[kNamedString], 13));
  EXPECT_TRUE(found(out[kLut], 8));
  EXPECT_TRUE(found(out[kWrapped], 8));
  EXPECT_TRUE(found(out[kCounter], 4));
  int on_stack = 0;
  EXPECT_FALSE(found(reinterpret_cast<uint64_t>(&on_stack), 4)) << "lenient is not anything goes";
  setenv("ZEX_CPU_LENIENT_ADDRESS_RANGE", "0", 1);
  EXPECT_FALSE(found(out[kLiteral], 17)) << "0 is strict";
  unsetenv("ZEX_CPU_LENIENT_ADDRESS_RANGE");
  EXPECT_FALSE(found(out[kNamedString], 13));
}

using StrictDynamicLink = StrictEnv;

// zeModuleDynamicLink: an imported mutable variable is the exporting module's (in its global surface), an
// imported constant is copied into the importing module and placed there by the same rules.
TEST_F(StrictDynamicLink, ImportedDataFollowsTheSameRules) {
  ze_module_handle_t lib = module("dyn_lib");
  ze_module_handle_t main_m = module("dyn_main");
  ASSERT_TRUE(lib && main_m);
  ze_module_handle_t both[2] = {main_m, lib};
  ze_result_t r = zeModuleDynamicLink(2, both, nullptr);
  if (r == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) GTEST_SKIP() << "zeModuleDynamicLink is unsupported here";
  ZE_OK(r);
  ze_kernel_handle_t k = kernel(main_m, "use_dyn");
  ASSERT_NE(k, nullptr);
  auto* out = static_cast<uint64_t*>(alloc_shared(4 * sizeof(uint64_t)));
  ZE_OK(set_ptr(k, 0, out));
  run(k, 1, 1);
  EXPECT_EQ(out[3], 60u) << "dyn_scale(3) through the library's table";
  auto range_ok = [&](uint64_t a) {
    void* base = nullptr;
    size_t len = 0;
    return zeMemGetAddressRange(context, reinterpret_cast<void*>(a), &base, &len) == ZE_RESULT_SUCCESS;
  };
  EXPECT_TRUE(range_ok(out[0])) << "an imported uint table: constant surface";
  EXPECT_FALSE(range_ok(out[1])) << "an imported char array: strings";
  EXPECT_TRUE(range_ok(out[2])) << "an imported variable: global surface";
  size_t size = 0;
  void* p = nullptr;
  ZE_OK(zeModuleGetGlobalPointer(lib, "dyn_counter", &size, &p));
  EXPECT_EQ(reinterpret_cast<uint64_t>(p), out[2]) << "the exporting module's variable";
  EXPECT_EQ(*static_cast<const int*>(p), 6);
  ZE_OK(zeModuleGetGlobalPointer(main_m, "dyn_table", &size, &p));
  EXPECT_EQ(reinterpret_cast<uint64_t>(p), out[0]);
  EXPECT_EQ(size, 16u);
  ZE_OK(zeModuleGetGlobalPointer(main_m, "dyn_name", &size, &p));
  EXPECT_EQ(reinterpret_cast<uint64_t>(p), out[1]);
  EXPECT_STREQ(static_cast<const char*>(p), "dyn lib");
}

}  // namespace
