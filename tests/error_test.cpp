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
