// zex::Context and zex::Device (include/zex/context.hpp), end to end through the loader.
#include "zex_fixture.hpp"

#include <cstdlib>
#include <string>

using zex_test::env;

TEST(Context, FindsTheDriverAndItsDevices) {
  zex::Context ctx;
  EXPECT_NE(ctx.handle(), nullptr);
  EXPECT_NE(ctx.driver(), nullptr);
  ASSERT_GE(ctx.device_count(), 1u);
  zex::Device d = ctx.device(0);
  EXPECT_NE(d.handle(), nullptr);
  EXPECT_FALSE(d.name().empty());
  EXPECT_EQ(d.context_handle(), ctx.handle());
  EXPECT_EQ(ctx.devices().size(), ctx.device_count());
  EXPECT_EQ(ctx.devices()[0].handle(), d.handle());
  EXPECT_EQ(ctx.device_for(d.handle()).name(), d.name());
  EXPECT_THROW(ctx.device(ctx.device_count()), std::out_of_range);
}

TEST(Context, AdoptsHandlesWithoutOwningThem) {
  zex::Context owner;
  ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ze_context_handle_t raw = nullptr;
  ASSERT_EQ(zeContextCreate(owner.driver(), &cd, &raw), ZE_RESULT_SUCCESS);
  {
    zex::Context adopted(owner.driver(), raw);
    EXPECT_EQ(adopted.handle(), raw);
    zex::Device dev = adopted.device(0);
    zex::Module mod(dev, zex_test::read_file(zex_test::kernel_spv()));
    zex::Kernel noop = mod.kernel("noop");
    zex::Stream s(dev);
    s.launch(noop, zex_test::cfg1d(1, 1));
    s.synchronize();
  }
  // zex did not destroy the runtime's context: it still works.
  EXPECT_EQ(zeContextGetStatus(raw), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeContextDestroy(raw), ZE_RESULT_SUCCESS);
  EXPECT_THROW(zex::Context(owner.driver(), nullptr), std::invalid_argument);
}

TEST(Context, DevicesStreamsAndModulesOutliveTheContextObject) {
  zex::Device dev;
  {
    zex::Context ctx;
    dev = ctx.device(0);
  }
  // The ze context lives as long as something made from it.
  zex::Module mod(dev, zex_test::read_file(zex_test::kernel_spv()));
  zex::Kernel noop = mod.kernel("noop");
  zex::Stream s(dev);
  s.launch(noop, zex_test::cfg1d(1, 1));
  s.synchronize();
}

TEST(ContextMoves, MoveConstructAssignSelfMoveAndDestroyMovedFrom) {
  zex::Context a;
  ze_context_handle_t h = a.handle();
  zex::Context b(std::move(a));
  EXPECT_EQ(b.handle(), h);
  EXPECT_EQ(a.handle(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_THROW(a.device(0), std::logic_error);
  zex::Context c;
  c = std::move(b);
  EXPECT_EQ(c.handle(), h);
  EXPECT_EQ(b.handle(), nullptr);  // NOLINT(bugprone-use-after-move)
  zex_test::self_move(c);
  EXPECT_EQ(c.handle(), h);
  EXPECT_EQ(zeContextGetStatus(c.handle()), ZE_RESULT_SUCCESS);
  // a and b are destroyed moved-from at the end of the scope.
}

// Runs only in the CTest entry zex_tests_no_driver, whose environment points the loader at a
// driver that does not exist: once zeInit has failed, a process cannot get a driver any more.
TEST(NoDriver, ContextSaysHowToGetADriver) {
  if (!std::getenv("ZEX_TEST_NO_DRIVER"))
    GTEST_SKIP() << "runs in the CTest entry zex_tests_no_driver (ZE_ENABLE_ALT_DRIVERS=<missing file>)";
  try {
    zex::Context ctx;
    FAIL() << "zex::Context() found a driver";
  } catch (const zex::ZeError& e) {
    EXPECT_EQ(e.call(), "zeInit");
    EXPECT_NE(e.result(), ZE_RESULT_SUCCESS);
    std::string m = e.what();
    EXPECT_NE(m.find("ZE_ENABLE_ALT_DRIVERS="), std::string::npos) << m;
    EXPECT_NE(m.find("libze_zex_cpu.so"), std::string::npos) << m;
    EXPECT_NE(m.find("compute-runtime"), std::string::npos) << m;
  }
  // A second attempt fails the same way instead of crashing in zeDriverGet.
  EXPECT_THROW(zex::Context(), zex::ZeError);
}
