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

// One error model: everything zex throws is a zex::Error, and still the std type it always was.
namespace {

// Catches `f`'s exception as a zex::Error; empty if it threw something else or nothing.
template <class F>
std::string zex_error_message(F&& f) {
  try {
    f();
  } catch (const zex::Error& e) {
    return e.message();
  } catch (...) {
    return "<not a zex::Error>";
  }
  return "<nothing thrown>";
}

}  // namespace

TEST(Error, EveryZexErrorIsAZexErrorAndItsStdType) {
  EXPECT_THROW(throw zex::InvalidArgument("x"), std::invalid_argument);
  EXPECT_THROW(throw zex::LogicError("x"), std::logic_error);
  EXPECT_THROW(throw zex::OutOfRange("x"), std::out_of_range);
  EXPECT_THROW(throw zex::RuntimeError("x"), std::runtime_error);
  EXPECT_THROW(throw zex::ZeError(ZE_RESULT_ERROR_UNKNOWN, "zeFoo"), std::runtime_error);
  EXPECT_THROW(throw zex::KernelException(zex::KernelExceptionInfo{}), std::runtime_error);
  EXPECT_EQ(zex_error_message([] { throw zex::InvalidArgument("bad argument"); }), "bad argument");
  EXPECT_EQ(zex_error_message([] { throw zex::LogicError("bad state"); }), "bad state");
  EXPECT_EQ(zex_error_message([] { throw zex::OutOfRange("past the end"); }), "past the end");
  EXPECT_EQ(zex_error_message([] { throw zex::RuntimeError("missing part"); }), "missing part");
  const std::string ze = zex_error_message([] { zex::check(ZE_RESULT_ERROR_DEVICE_LOST, "zeFoo"); });
  EXPECT_EQ(ze.rfind("zex: zeFoo failed with ZE_RESULT_ERROR_DEVICE_LOST", 0), 0u) << ze;
  zex::KernelExceptionInfo i;
  i.kernel_name = "k";
  i.device_name = "d";
  const std::string ke = zex_error_message([&] { throw zex::KernelException(i); });
  EXPECT_EQ(ke.rfind("KernelException: An exception was thrown in kernel 'k' on d", 0), 0u) << ke;
}

TEST(Error, CatchesNothingButZexErrors) {
  EXPECT_EQ(zex_error_message([] { throw std::invalid_argument("theirs"); }), "<not a zex::Error>");
  EXPECT_EQ(zex_error_message([] { throw std::runtime_error("theirs"); }), "<not a zex::Error>");
  EXPECT_EQ(zex_error_message([] { throw 42; }), "<not a zex::Error>");
}

// What zex throws for misuse, end to end: a zex::Error every time, never a bare std exception.
TEST(Error, MisuseOfRealObjectsThrowsZexErrors) {
  auto& e = zex_test::env();
  const std::string not_zex = "<not a zex::Error>";
  EXPECT_NE(zex_error_message([&] { e.mod.kernel("no_such_kernel"); }), not_zex);
  EXPECT_NE(zex_error_message([&] { e.ctx.device(e.ctx.device_count()); }), not_zex);
  EXPECT_NE(zex_error_message([&] { zex::Module m(e.dev, std::vector<uint8_t>{1, 2, 3}); }), not_zex);
  EXPECT_NE(zex_error_message([&] { zex::Module m(e.dev, std::vector<uint32_t>{0x07230203u, 0, 0, 0, 0, 7}); }),
            not_zex);
  EXPECT_NE(zex_error_message([&] { zex::Module::checked_level(3); }), not_zex);
  EXPECT_NE(zex_error_message([&] { zex::Context c(nullptr, nullptr); }), not_zex);
  EXPECT_NE(zex_error_message([&] { zex::Device().slab_pool(); }), not_zex);
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  EXPECT_NE(zex_error_message([&] { s.launch(vadd, zex_test::cfg1d(1, 1), 1.0); }), not_zex);
  EXPECT_NE(zex_error_message([&] { s.launch(vadd, zex_test::cfg1d(0, 1), nullptr, nullptr, nullptr, 1u); }),
            not_zex);
  zex::LaunchConfig bad = zex_test::cfg1d(1, 1);
  bad.debug_level = 9;
  EXPECT_NE(zex_error_message([&] { s.launch(vadd, bad, nullptr, nullptr, nullptr, 1u); }), not_zex);
  EXPECT_NE(zex_error_message([&] { s.wait(nullptr); }), not_zex);
  EXPECT_NE(zex_error_message([&] { zex::Dim3 d(-1); (void)d; }), not_zex);
  zex::Stream moved(std::move(s));
  EXPECT_NE(zex_error_message([&] { s.synchronize(); }), not_zex);  // NOLINT: use after move, on purpose
  // A kernel exception too.
  zex_test::Usm<float> a(64), b(64), c(64);
  moved.launch(vadd, zex_test::cfg1d(1, 64), c.get(), a.get(), b.get(), 10u);
  const std::string ke = zex_error_message([&] { moved.synchronize(); });
  EXPECT_NE(ke.find("BoundsError"), std::string::npos) << ke;
}
