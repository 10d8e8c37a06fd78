// zex::ZeError and zex::check (include/zex/error.hpp): unit tests, no device needed.
#include <zex/error.hpp>

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

TEST(ZeError, CheckDoesNothingOnSuccess) { EXPECT_NO_THROW(zex::check(ZE_RESULT_SUCCESS, "zeFoo")); }

TEST(ZeError, CheckThrowsWithResultAndCall) {
  try {
    zex::check(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, "zeMemAllocDevice", "allocating a slab");
    FAIL() << "check() did not throw";
  } catch (const zex::ZeError& e) {
    EXPECT_EQ(e.result(), ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
    EXPECT_EQ(e.call(), "zeMemAllocDevice");
    std::string m = e.what();
    EXPECT_NE(m.find("zeMemAllocDevice failed with ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY (0x70000003)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("while allocating a slab"), std::string::npos) << m;
    EXPECT_NE(m.find("free device allocations"), std::string::npos) << m;  // what to do
  }
}

TEST(ZeError, IsARuntimeError) {
  EXPECT_THROW(zex::check(ZE_RESULT_ERROR_UNKNOWN, "zeFoo"), std::runtime_error);
}

TEST(ZeError, UnknownResultIsShownAsHex) {
  zex::ZeError e(static_cast<ze_result_t>(0x12345), "zeFoo");
  EXPECT_EQ(zex::result_name(static_cast<ze_result_t>(0x12345)), nullptr);
  EXPECT_NE(std::string(e.what()).find("ze_result_t 0x12345"), std::string::npos) << e.what();
}

TEST(ZeError, DefaultAdvicePointsAtTheValidationLayer) {
  zex::ZeError e(ZE_RESULT_ERROR_INVALID_ARGUMENT, "zeKernelSetGroupSize");
  EXPECT_NE(std::string(e.what()).find("ZE_ENABLE_VALIDATION_LAYER=1"), std::string::npos) << e.what();
}

TEST(ZeError, CarriesTheBuildLog) {
  zex::ZeError e(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, "zeModuleCreate", "building", {},
                 "error: undefined symbol foo");
  EXPECT_EQ(e.build_log(), "error: undefined symbol foo");
  std::string m = e.what();
  EXPECT_NE(m.find("Build log:\nerror: undefined symbol foo\n"), std::string::npos) << m;
}

TEST(ZeError, ResultNames) {
  EXPECT_STREQ(zex::result_name(ZE_RESULT_SUCCESS), "ZE_RESULT_SUCCESS");
  EXPECT_STREQ(zex::result_name(ZE_RESULT_ERROR_DEVICE_LOST), "ZE_RESULT_ERROR_DEVICE_LOST");
  EXPECT_STREQ(zex::result_name(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE),
               "ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE");
}

// Failing Level Zero calls, made to fail by zex-cpu's fault injection (ZEX_CPU_FAIL), surface as
// ZeError naming the call and leave zex usable. Runs in the CTest entry zex_tests_faults, whose
// ZEX_CPU_FAIL makes the first zeMemAllocDevice, zeModuleCreate and zeCommandListAppendLaunchKernel
// of the process fail.
#include "zex_fixture.hpp"

TEST(ErrorFaults, FailingCallsBecomeZeErrorsAndZexRecovers) {
  if (!std::getenv("ZEX_TEST_FAULTS"))
    GTEST_SKIP() << "runs in the CTest entry zex_tests_faults (ZEX_CPU_FAIL set for the whole process)";
  auto& e = zex_test::env();
  // The first stream grows the slab pool: its device-USM allocation fails.
  try {
    zex::Stream s(e.dev);
    FAIL() << "the first zeMemAllocDevice did not fail";
  } catch (const zex::ZeError& ex) {
    EXPECT_EQ(ex.call(), "zeMemAllocDevice");
    EXPECT_EQ(ex.result(), ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
    EXPECT_NE(std::string(ex.what()).find("allocating a slab of zex claim words"), std::string::npos) << ex.what();
  }
  EXPECT_EQ(e.dev.slab_pool().usm_allocations(), 0u) << "the half-made slab was freed";
  zex::Stream s(e.dev);
  zex::Kernel k = e.mod.kernel("maybe_throw");
  zex_test::Usm<uint32_t> count(1);
  // The first module build fails; the next launch builds it.
  try {
    s.launch(k, zex_test::cfg1d(1, 1, 1), count.get(), uint32_t(0));
    FAIL() << "the first zeModuleCreate did not fail";
  } catch (const zex::ZeError& ex) {
    EXPECT_EQ(ex.call(), "zeModuleCreate");
    EXPECT_EQ(ex.result(), ZE_RESULT_ERROR_MODULE_BUILD_FAILURE);
    EXPECT_NE(std::string(ex.what()).find("Build log:"), std::string::npos) << ex.what();
  }
  // That launch builds; its append fails.
  try {
    s.launch(k, zex_test::cfg1d(1, 1, 1), count.get(), uint32_t(0));
    FAIL() << "the first zeCommandListAppendLaunchKernel did not fail";
  } catch (const zex::ZeError& ex) {
    EXPECT_EQ(ex.call(), "zeCommandListAppendLaunchKernel");
    EXPECT_EQ(ex.result(), ZE_RESULT_ERROR_DEVICE_LOST);
    EXPECT_NE(std::string(ex.what()).find("launching kernel 'maybe_throw'"), std::string::npos) << ex.what();
  }
  EXPECT_NO_THROW(s.synchronize());
  // And the stream works: a clean launch and a throwing one.
  s.launch(k, zex_test::cfg1d(1, 1, 1), count.get(), uint32_t(0));
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(count[0], 1u);
  s.launch(k, zex_test::cfg1d(1, 1, 1), count.get(), uint32_t(1));
  EXPECT_THROW(s.synchronize(), zex::KernelException);
}
