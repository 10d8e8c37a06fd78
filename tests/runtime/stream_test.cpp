// zex::Stream end to end on the driver: exceptions at each debug level with their exact messages,
// custom throws, recovery, ordering, many streams, values, counts, launch sites and Events. Threads,
// waits and launch shapes: stream_threads_test.cpp, stream_events_test.cpp, stream_launch_test.cpp.
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

namespace {

// vadd over n elements launched on `groups` groups of 256: work-items n..groups*256-1 go out of
// bounds.
constexpr uint32_t kVaddLine = __LINE__ + 3;  // the launch line below: every exception of vadd names it
void launch_vadd(zex::Stream& s, zex::Kernel& k, Usm<float>& c, Usm<float>& a, Usm<float>& b, uint32_t n,
                 uint32_t groups, int level) {
  s.launch(k, cfg1d(groups, 256, level), c.get(), a.get(), b.get(), n);
}

// How the message names a kernel launched by launch_vadd (or on `line` of this file).
std::string vadd_at(uint32_t line = kVaddLine) {
  return "kernel 'vadd' (launched at stream_test.cpp:" + std::to_string(line) + ")";
}

// The first line of a level-1/2 BoundsError of vadd over n = 1000 elements on 1024 work-items: the
// index is the claimant's, and 24 work-items threw.
std::string l1_line(const zex::KernelException& ex) {
  return "KernelException: A BoundsError was thrown in " + vadd_at() + " on " + env().dev.name() +
         ": Out-of-bounds array access: index " + std::to_string(ex.values().at(0)) +
         ", length 1000\n24 work-items threw; the first to claim the report is shown.";
}

}  // namespace

// The frame of vadd's check, as the module's site table holds it (issue 15): shown from level 0 up.
std::string vadd_frame() {
  return "\nStacktrace:\n [1] vadd at " + std::string(zex_test::kernel_source()) + ":" +
         std::to_string(zex_test::line_of("vadd"));
}

// Level 0: the device stores the claim, the launch id and the numbered site (issue 15), so the
// exception names the site (name, reason, frame from the module's table), without values, count or
// work-item.
TEST(Stream, Level0ReportsTheSiteOnly) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  Usm<float> a(1024), b(1024), c(1024);
  launch_vadd(s, vadd, c, a, b, 1000, 4, 0);
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(std::string(ex.what()),
            "KernelException: A BoundsError was thrown in " + vadd_at() + " on " + e.dev.name() +
                ": Out-of-bounds array access" + vadd_frame() +
                "\nHint: launch with debug_level=1 (LaunchConfig::debug_level or ZEX_DEBUG_LEVEL=1) to see "
                "its operand values and how many work-items threw.");
  EXPECT_EQ(ex.debug_level(), 0);
  EXPECT_EQ(ex.name(), "BoundsError");
  EXPECT_EQ(ex.reason(), "Out-of-bounds array access");
  EXPECT_EQ(ex.frames().size(), 1u);
  EXPECT_EQ(ex.kernel_name(), "vadd");
  EXPECT_EQ(ex.device_name(), e.dev.name());
  EXPECT_EQ(ex.launch_id(), 1u);
  EXPECT_FALSE(ex.global_id().has_value());
  EXPECT_FALSE(ex.group_id().has_value());
  EXPECT_FALSE(ex.local_id().has_value());
  EXPECT_TRUE(ex.values().empty()) << "level 0 records no values";
  EXPECT_EQ(ex.thrower_count(), 1u) << "level 0 counts nothing";
  ASSERT_TRUE(ex.launch_site().has_value()) << "the site is host-side: every level has it";
  EXPECT_EQ(ex.launch_site()->line, kVaddLine);
}

// The braced forms a LaunchConfig takes still convert to Stream::launch's config parameter (LaunchAt),
// and record the line of the call as the named form does.
TEST(Stream, BracedConfigsLaunchAndRecordTheirLine) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  Usm<float> a(1024), b(1024), c(1024);
  const uint32_t n = 1000;
  constexpr uint32_t kLine1 = __LINE__ + 1;
  s.launch(vadd, {{4}, {256}, 1}, c.get(), a.get(), b.get(), n);
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.debug_level(), 1);
  EXPECT_EQ(ex.thrower_count(), 24u);
  ASSERT_TRUE(ex.launch_site().has_value());
  EXPECT_EQ(ex.launch_site()->line, kLine1);
  EXPECT_NE(ex.launch_site()->file.find("stream_test.cpp"), std::string::npos) << ex.launch_site()->file;
  const zex::Dim3 groups{4}, size{256};
  constexpr uint32_t kLine2 = __LINE__ + 1;
  s.launch(vadd, {groups, size, 1}, c.get(), a.get(), b.get(), n);
  ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  ASSERT_TRUE(ex.launch_site().has_value());
  EXPECT_EQ(ex.launch_site()->line, kLine2);
  s.launch(vadd, {{4}, {256}}, c.get(), a.get(), b.get(), 1024u);  // in bounds, the stream's level
  s.synchronize();
}

TEST(Stream, Level1ReportsNameAndReason) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  Usm<float> a(1024), b(1024), c(1024);
  launch_vadd(s, vadd, c, a, b, 1000, 4, 1);
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  ASSERT_EQ(ex.values().size(), 2u);
  EXPECT_GE(ex.values()[0], 1000u);
  EXPECT_LT(ex.values()[0], 1024u);
  EXPECT_EQ(ex.values()[1], 1000u);
  EXPECT_EQ(ex.thrower_count(), 24u);
  EXPECT_EQ(std::string(ex.what()),
            l1_line(ex) + vadd_frame() +
                "\nHint: launch with debug_level=2 (LaunchConfig::debug_level or ZEX_DEBUG_LEVEL=2) to see "
                "the work-item that threw.");
  EXPECT_EQ(ex.debug_level(), 1);
  EXPECT_EQ(ex.name(), "BoundsError");
  EXPECT_EQ(ex.reason(), "Out-of-bounds array access");
  EXPECT_FALSE(ex.global_id().has_value());
  EXPECT_EQ(ex.frames().size(), 1u);
}

TEST(Stream, Level2ReportsTheWorkItemAndTheStacktrace) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  Usm<float> a(1024), b(1024), c(1024);
  launch_vadd(s, vadd, c, a, b, 1000, 4, 2);
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.debug_level(), 2);
  ASSERT_TRUE(ex.global_id() && ex.group_id() && ex.local_id());
  const auto g = *ex.global_id(), grp = *ex.group_id(), l = *ex.local_id();
  // Whichever out-of-bounds work-item won the claim, its ids must agree with each other.
  EXPECT_GE(g[0], 1000u);
  EXPECT_LT(g[0], 1024u);
  EXPECT_EQ(grp[0], g[0] / 256);
  EXPECT_EQ(l[0], g[0] % 256);
  EXPECT_EQ(g[1], 0u);
  EXPECT_EQ(g[2], 0u);
  ASSERT_EQ(ex.frames().size(), 1u);
  EXPECT_EQ(ex.frames()[0].function, "vadd");
  EXPECT_EQ(ex.frames()[0].file, zex_test::kernel_source());
  EXPECT_EQ(ex.frames()[0].line, zex_test::line_of("vadd"));
  auto tri = [](const std::array<uint64_t, 3>& v) {
    return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
  };
  EXPECT_EQ(ex.values(), (std::vector<uint64_t>{g[0], 1000}));
  EXPECT_EQ(std::string(ex.what()), l1_line(ex) + "\nThrown by work-item " + tri(g) + " in work-group " +
                                        tri(grp) + ".\nStacktrace:\n [1] vadd at " + zex_test::kernel_source() +
                                        ":" + std::to_string(zex_test::line_of("vadd")));
}

TEST(Stream, Level2InTwoDimensionsNamesTheExactWorkItem) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("throw_at");
  zex::Stream s(e.dev);
  Usm<int> out(8 * 6);
  zex::LaunchConfig cfg;
  cfg.groups = {2, 3, 1};
  cfg.group_size = {4, 2, 1};
  cfg.debug_level = 2;
  const uint32_t line = __LINE__ + 1;
  s.launch(k, cfg, out.get(), uint32_t(5), uint32_t(3));
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(*ex.global_id(), (std::array<uint64_t, 3>{5, 3, 0}));
  EXPECT_EQ(*ex.group_id(), (std::array<uint64_t, 3>{1, 1, 0}));
  EXPECT_EQ(*ex.local_id(), (std::array<uint64_t, 3>{1, 1, 0}));
  // A custom ZEX_THROW: its own name and reason, and frame 1 is the kernel.
  EXPECT_EQ(ex.name(), "DomainError");
  EXPECT_EQ(ex.reason(), "sqrt of a negative number");
  ASSERT_EQ(ex.frames().size(), 1u);
  EXPECT_EQ(ex.frames()[0].function, "throw_at");
  EXPECT_EQ(ex.frames()[0].line, zex_test::line_of("throw_at"));
  EXPECT_EQ(std::string(ex.what()).rfind("KernelException: A DomainError was thrown in kernel 'throw_at' "
                                             "(launched at stream_test.cpp:" + std::to_string(line) + ") on " +
                                             e.dev.name() + ": sqrt of a negative number\nThrown by work-item "
                                             "(5, 3, 0) in work-group (1, 1, 0).\nStacktrace:\n [1] throw_at at ",
                                         0),
            0u)
      << ex.what();
  // Every other work-item went on.
  int ones = 0;
  for (size_t i = 0; i < out.size(); ++i) ones += out[i];
  EXPECT_EQ(ones, 8 * 6 - 1);
}

TEST(Stream, CustomThrowAtLevel1) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("throw_at");
  zex::Stream s(e.dev);
  Usm<int> out(64);
  const uint32_t line = __LINE__ + 1;
  s.launch(k, cfg1d(4, 16, 1), out.get(), uint32_t(17), uint32_t(0));
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_TRUE(ex.values().empty()) << "ZEX_THROW records no values";
  EXPECT_EQ(ex.thrower_count(), 1u);
  EXPECT_EQ(std::string(ex.what()),
            "KernelException: A DomainError was thrown in kernel 'throw_at' (launched at stream_test.cpp:" +
                std::to_string(line) + ") on " + e.dev.name() +
                ": sqrt of a negative number\nStacktrace:\n [1] throw_at at " + zex_test::kernel_source() + ":" +
                std::to_string(zex_test::line_of("throw_at")) +
                "\nHint: launch with debug_level=2 (LaunchConfig::debug_level or "
                "ZEX_DEBUG_LEVEL=2) to see the work-item that threw.");
}

TEST(Stream, NonPrintableBytesInStringsAreEscaped) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("throw_odd_name");
  zex::Stream s(e.dev);
  s.launch(k, cfg1d(1, 1, 1));
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.name(), "Bad\\x09Name\\x01");
  EXPECT_EQ(ex.reason(), "reason with a newline\\x0a");
}

// docs/design.md, "Where strings live": a string zex could not place in the constant surface is shown as
// an invalid address on a driver as strict as Intel's (zex-cpu by default), not read from elsewhere.
TEST(Stream, AStringThePassCannotPlaceIsAnInvalidAddress) {
  const char* lenient = std::getenv("ZEX_CPU_LENIENT_ADDRESS_RANGE");
  if (lenient && *lenient && std::string(lenient) != "0")
    GTEST_SKIP() << "ZEX_CPU_LENIENT_ADDRESS_RANGE is set: zex-cpu finds plain strings (docs/cpu-driver.md)";
  auto& e = env();
  zex::Kernel k = e.mod.kernel("throw_computed_name");
  zex::Stream s(e.dev);
  s.launch(k, cfg1d(1, 1, 2), uint32_t(1));
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.name().rfind("<invalid address 0x", 0), 0u) << ex.what();
  EXPECT_EQ(ex.reason(), "a computed name");
  ASSERT_EQ(ex.frames().size(), 1u);
  EXPECT_EQ(ex.frames()[0].function, "throw_computed_name");
}

TEST(Stream, ThreeRoundsOfThrowCatchAndCleanLaunch) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  Usm<float> a(1024), b(1024), c(1024);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 1024; ++i) {
      a[i] = float(i + round);
      b[i] = 2.0f * float(i);
      c[i] = -1.0f;
    }
    launch_vadd(s, vadd, c, a, b, 1000, 4, round % 3);
    auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
    EXPECT_EQ(ex.debug_level(), round % 3);
    EXPECT_EQ(ex.kernel_name(), "vadd");
    // The stream still works: a clean launch over the whole array, no exception.
    launch_vadd(s, vadd, c, a, b, 1024, 4, round % 3);
    EXPECT_NO_THROW(s.synchronize()) << "round " << round;
    for (int i = 0; i < 1024; ++i) ASSERT_EQ(c[i], float(i + round) + 2.0f * float(i)) << i;
  }
}

TEST(Stream, TwoThrowingKernelsBeforeOneSynchronizeGiveTheFirstOnesException) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Kernel throw_at = e.mod.kernel("throw_at");
  zex::Stream s(e.dev);
  Usm<float> a(1024), b(1024), c(1024);
  Usm<int> out(64);
  launch_vadd(s, vadd, c, a, b, 1000, 4, 1);                                // launch 1: BoundsError
  s.launch(throw_at, cfg1d(4, 16, 1), out.get(), uint32_t(3), uint32_t(0));  // launch 2: DomainError
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.kernel_name(), "vadd");
  EXPECT_EQ(ex.name(), "BoundsError");
  EXPECT_EQ(ex.launch_id(), 1u);
  EXPECT_NO_THROW(s.synchronize());
  // And the next exception is reported again.
  s.launch(throw_at, cfg1d(4, 16, 1), out.get(), uint32_t(3), uint32_t(0));
  ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.kernel_name(), "throw_at");
  EXPECT_EQ(ex.launch_id(), 3u);
}

TEST(Stream, SixtyFourStreamsOnlyTheOddOnesThrow) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  Usm<uint32_t> count(1);
  std::vector<zex::Stream> streams;
  for (int i = 0; i < 64; ++i) streams.emplace_back(e.dev);
  for (int i = 0; i < 64; ++i) streams[i].launch(k, cfg1d(2, 8, 1), count.get(), uint32_t(i % 2));
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < 64; ++i) {
      if (i % 2 == 1 && round == 0) {
        auto ex = zex_test::expect_kernel_exception([&] { streams[i].synchronize(); });
        EXPECT_EQ(ex.name(), "StreamError");
      } else {
        EXPECT_NO_THROW(streams[i].synchronize()) << "stream " << i;
      }
      // Then every stream launches cleanly.
      if (round == 0) streams[i].launch(k, cfg1d(2, 8, 1), count.get(), uint32_t(0));
    }
  }
  // Work-items that did not throw all counted: 64 streams x 16 work-items x 2 launches, minus the
  // 32 throwing work-items.
  EXPECT_EQ(count[0], 64u * 16u * 2u - 32u);
}

TEST(Stream, DebugLevelComesFromTheEnvironment) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  Usm<float> a(1024), b(1024), c(1024);
  for (const char* v : {"0", "1", "2"}) {
    zex_test::ScopedEnv set("ZEX_DEBUG_LEVEL", v);
    zex::Stream s(e.dev);
    EXPECT_EQ(s.default_debug_level(), v[0] - '0');
    launch_vadd(s, vadd, c, a, b, 1000, 4, -1);
    auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
    EXPECT_EQ(ex.debug_level(), v[0] - '0');
  }
  zex_test::ScopedEnv unset("ZEX_DEBUG_LEVEL", nullptr);
  EXPECT_EQ(zex::default_debug_level(), 1);
  zex::Stream s(e.dev);
  EXPECT_EQ(s.default_debug_level(), 1);
  // A launch's own level wins over the environment.
  zex_test::ScopedEnv two("ZEX_DEBUG_LEVEL", "2");
  zex::Stream s2(e.dev);
  launch_vadd(s2, vadd, c, a, b, 1000, 4, 0);
  EXPECT_EQ(zex_test::expect_kernel_exception([&] { s2.synchronize(); }).debug_level(), 0);
}

TEST(Stream, ExactlyTheWorkItemsThatThrewAreCounted) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("throw_below");
  zex::Stream s(e.dev);
  Usm<int> out(1024);
  const uint32_t line = __LINE__ + 1;
  s.launch(k, cfg1d(16, 64, 1), out.get(), uint32_t(280));
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.thrower_count(), 280u);
  ASSERT_EQ(ex.values().size(), 2u);
  EXPECT_LT(ex.values()[0], 280u);
  EXPECT_EQ(ex.values()[1], 280u);
  EXPECT_EQ(std::string(ex.what()),
            "KernelException: A LimitError was thrown in kernel 'throw_below' (launched at stream_test.cpp:" +
                std::to_string(line) + ") on " + e.dev.name() + ": below the limit: values " +
                std::to_string(ex.values()[0]) +
                ", 280\n280 work-items threw; the first to claim the report is shown.\nStacktrace:\n [1] throw_below at " +
                zex_test::kernel_source() + ":" + std::to_string(zex_test::line_of("throw_below")) +
                "\nHint: launch with debug_level=2 (LaunchConfig::debug_level or ZEX_DEBUG_LEVEL=2) to see the "
                "work-item that threw.");
  // The count was reset with the claim word: the next throwing launch counts from zero.
  s.launch(k, cfg1d(16, 64, 1), out.get(), uint32_t(3));
  auto again = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(again.thrower_count(), 3u);
}

TEST(Stream, OneValueAndTheLargestValue) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("throw_value");
  zex::Stream s(e.dev);
  s.launch(k, cfg1d(1, 8, 2), uint32_t(5));
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.values(), (std::vector<uint64_t>{UINT64_MAX}));
  EXPECT_EQ(ex.thrower_count(), 1u);
  const std::string what = ex.what();
  EXPECT_NE(what.find(": one value: value 18446744073709551615\nThrown by work-item (5, 0, 0)"), std::string::npos)
      << what;
  EXPECT_EQ(what.find("work-items threw"), std::string::npos) << "one thrower: no count line";
}

TEST(Stream, TheLaunchSiteIsTheCallersLineForEachLaunch) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  Usm<float> a(1024), b(1024), c(1024);
  const zex::LaunchConfig bad = cfg1d(4, 256, 1), good = cfg1d(3, 256, 1);
  // Same kernel and level on three lines: each line is its own run, so the one that threw is named.
  s.launch(vadd, good, c.get(), a.get(), b.get(), 1000u);
  const uint32_t line = __LINE__ + 1;
  s.launch(vadd, bad, c.get(), a.get(), b.get(), 1000u);
  s.launch(vadd, good, c.get(), a.get(), b.get(), 1000u);
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.launch_id(), 2u);
  ASSERT_TRUE(ex.launch_site().has_value());
  EXPECT_EQ(ex.launch_site()->file, __FILE__);
  EXPECT_EQ(ex.launch_site()->line, line);
  EXPECT_NE(std::string(ex.what()).find(vadd_at(line)), std::string::npos) << ex.what();
  // A loop on one line: one run, and the site is still that line.
  uint32_t loop_line = 0;
  for (int i = 0; i < 5; ++i) {
    loop_line = __LINE__ + 1;
    s.launch(vadd, i == 3 ? bad : good, c.get(), a.get(), b.get(), 1000u);
  }
  auto ex2 = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex2.launch_id(), 7u);
  EXPECT_EQ(ex2.launch_site()->line, loop_line);
}

TEST(Stream, AnEventWaitRaisesTheThrowBeforeItsMarkOnce) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  Usm<float> a(1024), b(1024), c(1024);
  launch_vadd(s, vadd, c, a, b, 1000, 4, 1);
  zex::Event ev = s.record();
  EXPECT_EQ(ev.mark_launch_id(), 2u);
  auto ex = zex_test::expect_kernel_exception([&] { ev.synchronize(); });
  EXPECT_EQ(ex.launch_id(), 1u);
  EXPECT_EQ(ex.thrower_count(), 24u);
  EXPECT_EQ(std::string(ex.what()).rfind(l1_line(ex), 0), 0u) << ex.what();
  EXPECT_TRUE(ev.ready());
  EXPECT_NO_THROW(ev.synchronize()) << "raised once";
  EXPECT_NO_THROW(s.synchronize()) << "the event's wait raised it: the stream's does not";
  // The stream still works, and the other order: synchronize() first, then the event raises nothing.
  launch_vadd(s, vadd, c, a, b, 1000, 4, 1);
  zex::Event ev2 = s.record();
  zex::Event copy = ev2;
  zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_NO_THROW(copy.synchronize());
  EXPECT_NO_THROW(ev2.synchronize());
}

TEST(Stream, AThrowAfterTheMarkIsLeftToLaterWaits) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  Usm<float> a(1024), b(1024), c(1024);
  launch_vadd(s, vadd, c, a, b, 1024, 4, 1);  // launch 1: in bounds
  zex::Event ev = s.record();
  launch_vadd(s, vadd, c, a, b, 1000, 4, 1);  // launch 2: throws, after the mark
  EXPECT_NO_THROW(ev.synchronize());
  zex::Event later = s.record();
  auto ex = zex_test::expect_kernel_exception([&] { later.synchronize(); });
  EXPECT_EQ(ex.launch_id(), 2u);
  EXPECT_EQ(ex.kernel_name(), "vadd");
  EXPECT_NO_THROW(s.synchronize());
}

TEST(Stream, AStreamWaitsOnAnotherStreamsEvent) {
  auto& e = env();
  zex::Kernel count = e.mod.kernel("maybe_throw");
  zex::Kernel copy = e.mod.kernel("copy_word");
  zex::Stream producer(e.dev), consumer(e.dev);
  Usm<uint32_t> counter(1), seen(1);
  counter[0] = 0;
  seen[0] = 0;
  for (int i = 0; i < 8; ++i) producer.launch(count, cfg1d(4, 64, 1), counter.get(), uint32_t(i == 7));
  zex::Event ev = producer.record();
  consumer.wait(ev);
  consumer.launch(copy, cfg1d(1, 1, 1), seen.get(), counter.get());
  EXPECT_NO_THROW(consumer.synchronize()) << "the producer's throw stays with the producer";
  EXPECT_EQ(seen[0], 8u * 256u - 1u) << "the copy ran after all eight launches";
  auto ex = zex_test::expect_kernel_exception([&] { producer.synchronize(); });
  EXPECT_EQ(ex.launch_id(), 8u);
  EXPECT_NO_THROW(ev.synchronize());
}

TEST(Stream, EventsOutliveTheirStreamAndEmptyOnesAreRefused) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  Usm<float> a(1024), b(1024), c(1024);
  zex::Event ev;
  EXPECT_FALSE(ev);
  EXPECT_THROW(ev.synchronize(), std::logic_error);
  EXPECT_THROW(static_cast<void>(ev.ready()), std::logic_error);
  {
    zex::Stream s(e.dev);
    EXPECT_THROW(s.wait(ev), std::logic_error);
    launch_vadd(s, vadd, c, a, b, 1000, 4, 1);
    ev = s.record();
  }  // the stream drops its unsynchronized exception
  EXPECT_NO_THROW(ev.synchronize());
  EXPECT_TRUE(ev.ready());
}

// Stream::launch_args: the arguments as bytes, known only at run time (what the C API and bindings
// use). The same checks of count and level as launch(), the same recovery.
TEST(Stream, LaunchArgsTakesArgumentsAsBytes) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  zex::Stream s(e.dev);
  Usm<float> a(1024), b(1024), c(1024);
  for (int i = 0; i < 1024; ++i) {
    a[i] = float(i);
    b[i] = 2.0f;
  }
  float* pc = c.get();
  float* pa = a.get();
  float* pb = b.get();
  uint32_t n = 1000;
  const zex::KernelArg args[] = {{sizeof pc, &pc}, {sizeof pa, &pa}, {sizeof pb, &pb}, {sizeof n, &n}};
  s.launch_args(vadd, zex_test::cfg1d(4, 256, 2), args, 4);
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.name(), "BoundsError");
  ASSERT_TRUE(ex.global_id().has_value());
  EXPECT_GE((*ex.global_id())[0], 1000u);
  try {
    s.launch_args(vadd, zex_test::cfg1d(4, 256), args, 3);
    FAIL() << "a wrong argument count was accepted";
  } catch (const zex::InvalidArgument& err) {
    EXPECT_NE(std::string(err.what()).find("kernel 'vadd' expects 4 argument(s)"), std::string::npos) << err.what();
  }
  n = 1024;
  s.launch_args(vadd, zex_test::cfg1d(4, 256), args, 4);
  s.synchronize();
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(c[i], float(i) + 2.0f) << i;
}

// ZEX_VALUES_MEMORY end to end (issue 27, item 3): the offset and the allocation's size continue the
// reason's sentence, at level 1; level 0 has the site's name and reason only.
TEST(Stream, MemoryReportsSayTheOffsetAndTheAllocationSize) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("memory_report");
  zex::Stream s(e.dev);
  Usm<uint32_t> a(64), out(128);
  s.launch(k, cfg1d(1, 65, 1), a.get(), out.get(), uint64_t{64 * 4});  // work-item 64 reads a[64]
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.name(), "OutOfBoundsAccess");
  EXPECT_EQ(ex.info().value_kind, ZEX_VALUES_MEMORY);
  EXPECT_EQ(ex.values(), (std::vector<uint64_t>{256, 256}));
  EXPECT_NE(std::string(ex.what()).find(": read of argument 'a' at byte offset 256 of an allocation of 256 bytes\n"),
            std::string::npos)
      << ex.what();
  s.launch(k, cfg1d(1, 65, 0), a.get(), out.get(), uint64_t{64 * 4});
  auto ex0 = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_NE(std::string(ex0.what()).find(": read of argument 'a'\n"), std::string::npos) << ex0.what();
}
