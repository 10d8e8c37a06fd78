// zex::Stream's launches: extents, __local arguments, debug levels, refused shapes, moves, faults on
// the reset, timeouts, lifetimes of what a launch in flight uses.
#include "zex_fixture.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

using zex_test::cfg1d;
using zex_test::env;
using zex_test::Usm;

TEST(LaunchConfig, ExtentsFromAnyIntegers) {
  zex::LaunchConfig c;
  EXPECT_EQ(c.groups, zex::Dim3(1, 1, 1));
  const size_t n = 1000;
  c.groups = {n / 256 + 1, 1, 1};  // size_t: must compile and convert
  EXPECT_EQ(c.groups.x, 4u);
  c.group_size = {64};
  EXPECT_EQ(c.group_size, zex::Dim3(64, 1, 1));
  c.groups = {2, 3, 4};
  EXPECT_EQ(c.groups[1], 3u);
  EXPECT_THROW(c.groups = zex::Dim3(-1, 1, 1), std::invalid_argument);
  EXPECT_THROW(c.groups = zex::Dim3(size_t(1) << 33), std::invalid_argument);
}

TEST(Stream, LocalMemoryArgument) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("group_sum");
  zex::Stream s(e.dev);
  Usm<float> in(256), out(4);
  for (int i = 0; i < 256; ++i) in[i] = float(i);
  s.launch(k, cfg1d(4, 64), in.get(), out.get(), zex::local(64 * sizeof(float)));
  s.synchronize();
  for (int g = 0; g < 4; ++g) {
    float want = 0;
    for (int i = 0; i < 64; ++i) want += float(g * 64 + i);
    EXPECT_EQ(out[g], want) << g;
  }
}

TEST(Stream, BadDebugLevelIsAClearError) {
  auto& e = env();
  zex::Kernel noop = e.mod.kernel("noop");
  for (const char* bad : {"3", "-1", "one", "1x", " 1"}) {
    zex_test::ScopedEnv set("ZEX_DEBUG_LEVEL", bad);
    try {
      zex::default_debug_level();
      FAIL() << bad;
    } catch (const std::invalid_argument& ex) {
      EXPECT_EQ(std::string(ex.what()),
                std::string("zex: the environment variable ZEX_DEBUG_LEVEL is set to '") + bad +
                    "', which is not a debug level: set it to 0, 1 or 2, or unset it for the default (1)");
    }
    zex::Stream s(e.dev);
    EXPECT_THROW(s.launch(noop, cfg1d(1, 1)), std::invalid_argument) << bad;
    // An explicit level does not need the variable.
    EXPECT_NO_THROW(s.launch(noop, cfg1d(1, 1, 1)));
    s.synchronize();
  }
  zex::Stream s(e.dev);
  try {
    s.launch(noop, cfg1d(1, 1, 3));
    FAIL();
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("LaunchConfig::debug_level is 3"), std::string::npos) << ex.what();
  }
  zex::LaunchConfig zero;
  zero.groups = {0, 1, 1};
  EXPECT_THROW(s.launch(noop, zero), std::invalid_argument);
}

TEST(Stream, ZeroGroupSizeOnAKernelsFirstLaunchIsRejected) {
  // A kernel that was never launched remembers no group size: {0, 0, 0} must not pass as "unchanged".
  auto& e = env();
  zex::Kernel fresh = e.mod.kernel("noop");
  zex::Stream s(e.dev);
  zex::LaunchConfig cfg;
  cfg.groups = {1, 1, 1};
  cfg.group_size = {0, 0, 0};
  cfg.debug_level = 1;
  try {
    s.launch(fresh, cfg);
    FAIL() << "a zero group size was accepted";
  } catch (const std::invalid_argument& ex) {
    EXPECT_NE(std::string(ex.what()).find("group_size must be at least 1"), std::string::npos) << ex.what();
  }
  cfg.group_size = {1, 0, 1};
  EXPECT_THROW(s.launch(fresh, cfg), std::invalid_argument);
  cfg.group_size = {1, 1, 1};
  EXPECT_NO_THROW(s.launch(fresh, cfg));
  EXPECT_NO_THROW(s.synchronize());
}

TEST(Stream, TwoToTheSixtyFourWorkItemsOrMoreAreRefusedAndTheStreamStaysUsable) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("noop");
  zex::Stream s(e.dev);
  zex::LaunchConfig cfg;
  cfg.debug_level = 1;
  // (2^32 - 1)^3 work-groups of one: about 2^96, what Dim3 lets through.
  cfg.groups = {0xffffffffu, 0xffffffffu, 0xffffffffu};
  cfg.group_size = {1, 1, 1};
  try {
    s.launch(k, cfg);
    FAIL() << "2^96 work-items were accepted";
  } catch (const std::invalid_argument& ex) {
    const std::string m = ex.what();
    EXPECT_NE(m.find("kernel 'noop'"), std::string::npos) << m;
    EXPECT_NE(m.find("4294967295 x 4294967295 x 4294967295 work-groups of 1 x 1 x 1"), std::string::npos) << m;
    EXPECT_NE(m.find("2^64 work-items or more"), std::string::npos) << m;
  }
  // Exactly 2^64, reached only through the last multiply: refused too.
  cfg.groups = {65536, 65536, 65536};
  cfg.group_size = {65536, 1, 1};
  EXPECT_THROW(s.launch(k, cfg), std::invalid_argument);
  cfg.groups = {65536, 65536, 1};
  cfg.group_size = {65536, 65536, 1};
  EXPECT_THROW(s.launch(k, cfg), std::invalid_argument);
  // Nothing was appended: the stream still launches and synchronizes.
  EXPECT_EQ(s.next_launch_id(), 1u);
  cfg.groups = {2, 1, 1};
  cfg.group_size = {4, 1, 1};
  EXPECT_NO_THROW(s.launch(k, cfg));
  EXPECT_NO_THROW(s.synchronize());
}

TEST(Stream, ManyLaunchesBeforeOneSynchronize) {
  // More launches than the stream has events: launch() recycles the oldest.
  auto& e = env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  zex::Stream s(e.dev);
  Usm<uint32_t> count(1);
  const int n = int(zex::Stream::kEvents) * 3 + 5;
  for (int i = 0; i < n; ++i) s.launch(k, cfg1d(1, 2, 1), count.get(), uint32_t(0));
  s.synchronize();
  EXPECT_EQ(count[0], uint32_t(2 * n));
}

TEST(Stream, AnExceptionNobodyCollectedDoesNotLeakIntoTheNextStream) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  zex::Kernel noop = e.mod.kernel("noop");
  Usm<uint32_t> count(1);
  {
    zex::Stream s(e.dev);
    s.launch(k, cfg1d(1, 1, 1), count.get(), uint32_t(1));
  }  // destroyed without synchronize
  // The pool hands out the most recently released slot first: it must be clean.
  for (int i = 0; i < 4; ++i) {
    zex::Stream s(e.dev);
    s.launch(noop, cfg1d(1, 1, 1));
    EXPECT_NO_THROW(s.synchronize());
    s.launch(k, cfg1d(1, 1, 1), count.get(), uint32_t(1));
    EXPECT_THROW(s.synchronize(), zex::KernelException);
  }
}

TEST(StreamMoves, MoveConstructAssignSelfMoveAndDestroyMovedFrom) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  Usm<uint32_t> count(1);
  zex::Stream a(e.dev);
  ze_command_list_handle_t h = a.handle();
  a.launch(k, cfg1d(1, 1, 1), count.get(), uint32_t(1));
  zex::Stream b(std::move(a));
  EXPECT_EQ(a.handle(), nullptr);  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(a.synchronize(), std::logic_error);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.handle(), h);
  // The pending exception moved with the stream.
  EXPECT_THROW(b.synchronize(), zex::KernelException);
  zex::Stream c(e.dev);
  c = std::move(b);
  EXPECT_EQ(c.handle(), h);
  zex_test::self_move(c);
  EXPECT_EQ(c.handle(), h);
  c.launch(k, cfg1d(1, 1, 1), count.get(), uint32_t(0));
  EXPECT_NO_THROW(c.synchronize());
  EXPECT_EQ(count[0], 1u);
}

// ctest -R zex_tests_fault_reset: the claim word's reset after the first exception cannot be appended
// (the 2nd fill: the 1st zeroes the slab). Nothing is lost: that synchronize reports the failed call,
// the next one raises the exception, and every later throw, on this stream and on the next stream that
// gets the slot, is caught.
TEST(StreamFaults, FailedResetKeepsTheExceptionAndTheSlotArmed) {
  if (!zex_test::fault_run("reset"))
    GTEST_SKIP() << "runs in the CTest entry zex_tests_fault_reset (ZEX_CPU_FAIL for the whole process)";
  auto& e = zex_test::env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  zex_test::Usm<uint32_t> count(1);
  uint32_t index = 0;
  {
    zex::Stream s(e.dev);
    index = s.slot().index;
    s.launch(k, zex_test::cfg1d(1, 1, 1), count.get(), uint32_t(1));
    try {
      s.synchronize();
      FAIL() << "the reset's zeCommandListAppendMemoryFill did not fail";
    } catch (const zex::ZeError& ex) {
      EXPECT_EQ(ex.call(), "zeCommandListAppendMemoryFill");
    }
    try {
      s.synchronize();
      FAIL() << "the exception whose reset failed was lost";
    } catch (const zex::KernelException& ex) {
      EXPECT_EQ(ex.name(), "StreamError");
    }
    for (int round = 0; round < 3; ++round) {
      s.launch(k, zex_test::cfg1d(1, 1, 1), count.get(), uint32_t(1));
      EXPECT_THROW(s.synchronize(), zex::KernelException) << "round " << round;
    }
  }
  zex::Stream next(e.dev);
  EXPECT_EQ(next.slot().index, index) << "the pool hands the same slot out again";
  for (int round = 0; round < 3; ++round) {
    next.launch(k, zex_test::cfg1d(1, 1, 1), count.get(), uint32_t(1));
    EXPECT_THROW(next.synchronize(), zex::KernelException) << "new stream, round " << round;
  }
}

// A kernel that does not finish does not have to block the host: synchronize_for gives up, changes
// nothing, and the stream works once the kernel ends (here, when the host releases it).
TEST(Stream, SynchronizeForGivesUpOnAKernelThatDoesNotFinish) {
  using namespace std::chrono_literals;
  auto& e = env();
  zex::Kernel hold = e.mod.kernel("wait_for_flag");
  zex::Kernel k = e.mod.kernel("maybe_throw");
  zex::Stream s(e.dev);
  Usm<uint32_t> flag(1), count(1);
  s.launch(hold, cfg1d(1, 1, 1), flag.get());
  EXPECT_FALSE(s.synchronize_for(20ms));
  EXPECT_FALSE(s.synchronize_for(0ns));
  EXPECT_FALSE(s.synchronize_for(-1s));
  EXPECT_FALSE(s.ready());
  __atomic_store_n(&flag[0], 1u, __ATOMIC_RELEASE);
  EXPECT_TRUE(s.synchronize_for(60s));
  // It raises like synchronize(), once.
  s.launch(k, cfg1d(1, 1, 1), count.get(), uint32_t(1));
  EXPECT_THROW(s.synchronize_for(60s), zex::KernelException);
  EXPECT_TRUE(s.synchronize_for(60s)) << "raised once (the claim word's reset is the only work left)";
  s.launch(k, cfg1d(1, 1, 1), count.get(), uint32_t(0));
  EXPECT_TRUE(s.synchronize_for(60s));
}

// What a pending launch uses stays alive: destroying its zex::Kernel and zex::Module while the launch
// is in flight destroys neither the Level Zero kernel the device runs nor the strings the report points
// to (the launch record holds them until the stream moves past it).
TEST(Stream, KernelAndModuleDestroyedWithALaunchInFlightStayAliveForIt) {
  auto& e = env();
  zex::Stream s(e.dev);
  Usm<uint32_t> flag(1), count(1);
  {
    zex::Module mod(e.dev, zex_test::read_file(zex_test::kernel_spv()));
    zex::Kernel hold = mod.kernel("wait_for_flag");
    zex::Kernel thrower = mod.kernel("maybe_throw");
    s.launch(hold, cfg1d(1, 1, 2), flag.get());
    s.launch(thrower, cfg1d(1, 1, 2), count.get(), uint32_t(1));
  }  // kernels and module destroyed here, both launches still pending
  __atomic_store_n(&flag[0], 1u, __ATOMIC_RELEASE);
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.kernel_name(), "maybe_throw");
  EXPECT_EQ(ex.name(), "StreamError");
  EXPECT_EQ(ex.reason(), "asked to throw");
  ASSERT_EQ(ex.frames().size(), 1u);
  EXPECT_EQ(ex.frames()[0].function, "maybe_throw");
  EXPECT_EQ(count[0], 0u) << "the only work-item threw, and returned before counting";
}

// ---------------------------------------------------------------------------------------------
// Issue 8: operand values, the thrower count, the launch site, and waits on recorded events.
