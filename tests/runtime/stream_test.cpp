// zex::Stream end to end on the driver: exceptions at each debug level with their exact messages,
// custom throws, recovery, ordering, many streams, threads, moves and the debug-level setting.
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

// How many of a thread's iterations throw in EightThreadsWithTheirOwnStreamsCountExactly.
int caught_by(int t, int iters) {
  int n = 0;
  for (int i = 0; i < iters; ++i) n += (i + t) % 3 == 0;
  return n;
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

TEST(Stream, EightThreadsWithTheirOwnStreamsCountExactly) {
  auto& e = env();
  constexpr int kThreads = 8, kIters = 40;
  std::atomic<int> caught{0}, wrong{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      zex::Kernel k = e.mod.kernel("maybe_throw");
      zex::Stream s(e.dev);
      Usm<uint32_t> count(1);
      for (int i = 0; i < kIters; ++i) {
        const bool do_throw = (i + t) % 3 == 0;
        s.launch(k, cfg1d(1, 4, i % 3), count.get(), uint32_t(do_throw));
        try {
          s.synchronize();
          if (do_throw) ++wrong;
        } catch (const zex::KernelException& ex) {
          if (!do_throw || ex.kernel_name() != "maybe_throw" || ex.debug_level() != i % 3) ++wrong;
          ++caught;
        }
      }
      if (count[0] != uint32_t(kIters * 4 - caught_by(t, kIters))) ++wrong;
    });
  }
  for (auto& t : ts) t.join();
  int expected = 0;
  for (int t = 0; t < kThreads; ++t) expected += caught_by(t, kIters);
  EXPECT_EQ(caught.load(), expected);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Stream, OneKernelSharedByThreadsWithTheirOwnStreams) {
  // A Level Zero kernel's arguments are state: launches of one zex::Kernel from several threads must
  // not mix their arguments. Each thread counts into its own buffer and throws on its own schedule.
  auto& e = env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  constexpr int kThreads = 4, kIters = 50;
  std::atomic<int> wrong{0}, finished{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      zex::Stream s(e.dev);
      Usm<uint32_t> count(1);
      int thrown = 0;
      for (int i = 0; i < kIters; ++i) {
        const bool do_throw = (i * (t + 1)) % 7 == 0;
        s.launch(k, cfg1d(2, 4, 1), count.get(), uint32_t(do_throw));
        try {
          s.synchronize();
          if (do_throw) ++wrong;
        } catch (const zex::KernelException&) {
          if (!do_throw) ++wrong;
          ++thrown;
        }
      }
      ++finished;
      if (count[0] != uint32_t(kIters * 8 - thrown)) ++wrong;
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(finished.load(), kThreads);
  EXPECT_EQ(wrong.load(), 0);
}

// The stress test of docs/reliability.md: 16 threads, each with 4 streams of its own, all launching
// one shared zex::Kernel; each round queues 1 to 4 launches per stream before one synchronize, a
// random quarter of the launches throw from a work-item the launch alone picks, and every 4th round
// a thread destroys its streams and makes new ones (slots move between threads through the pool).
// Every synchronize must raise exactly the first throwing launch's exception (its launch id and its
// work-item) or nothing: no exception lost, none misattributed, none leaked into another stream.
// ZEX_STRESS_ROUNDS sets the rounds (default 200, a few seconds); the figures go to the test's output.
TEST(StreamStress, SixteenThreadsLoseAndMisattributeNothing) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("throw_at");
  constexpr int kThreads = 16, kStreams = 4;
  int rounds = 200;
  if (const char* r = std::getenv("ZEX_STRESS_ROUNDS")) rounds = std::max(1, std::atoi(r));
  std::atomic<uint64_t> launches{0}, syncs{0}, expected{0}, caught{0}, lost{0}, wrong{0}, spurious{0};
  std::vector<std::string> first_wrong(kThreads);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t) {
    ts.emplace_back([&, t] {
      uint64_t rng = 0x9e3779b97f4a7c15ull * uint64_t(t + 1);
      auto next = [&rng] {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        return rng;
      };
      Usm<int> out(64);
      std::vector<zex::Stream> streams;
      for (int round = 0; round < rounds; ++round) {
        if (round % 4 == 0) {
          streams.clear();
          for (int i = 0; i < kStreams; ++i) streams.emplace_back(e.dev);
        }
        uint64_t first_id[kStreams] = {}, first_x[kStreams] = {};
        for (int i = 0; i < kStreams; ++i) {
          const int n = 1 + int(next() % 4);
          for (int j = 0; j < n; ++j) {
            const bool do_throw = next() % 4 == 0;
            const uint32_t x = do_throw ? uint32_t(next() % 64) : 0xffffffffu;  // 2^32 - 1 matches no work-item
            const uint64_t id = streams[i].next_launch_id();
            streams[i].launch(k, cfg1d(4, 16, 2), out.get(), x, 0u);
            ++launches;
            if (do_throw && first_id[i] == 0) {
              first_id[i] = id;
              first_x[i] = x;
            }
          }
        }
        for (int i = 0; i < kStreams; ++i) {
          ++syncs;
          expected += first_id[i] != 0;
          try {
            streams[i].synchronize();
            if (first_id[i] != 0) ++lost;
          } catch (const zex::KernelException& ex) {
            ++caught;
            const bool right = first_id[i] != 0 && ex.launch_id() == first_id[i] && ex.kernel_name() == "throw_at" &&
                               ex.name() == "DomainError" && ex.global_id() && (*ex.global_id())[0] == first_x[i] &&
                               (*ex.global_id())[1] == 0;
            if (first_id[i] == 0) ++spurious;
            else if (!right) ++wrong;
            if (!right && first_wrong[t].empty())
              first_wrong[t] = "expected launch " + std::to_string(first_id[i]) + " x " + std::to_string(first_x[i]) +
                               ", got " + ex.what();
          }
        }
      }
    });
  }
  for (auto& th : ts) th.join();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("[ stress   ] %d threads x %d streams x %d rounds: %llu launches, %llu synchronizes, %llu exceptions "
              "expected, %llu caught, %llu lost, %llu misattributed, %llu spurious, %.2f s\n",
              kThreads, kStreams, rounds, (unsigned long long)launches.load(), (unsigned long long)syncs.load(),
              (unsigned long long)expected.load(), (unsigned long long)caught.load(), (unsigned long long)lost.load(),
              (unsigned long long)wrong.load(), (unsigned long long)spurious.load(), s);
  for (const auto& w : first_wrong) EXPECT_TRUE(w.empty()) << w;
  EXPECT_EQ(lost.load(), 0u);
  EXPECT_EQ(wrong.load(), 0u);
  EXPECT_EQ(spurious.load(), 0u);
  EXPECT_EQ(caught.load(), expected.load());
  EXPECT_GT(expected.load(), 0u);
}

// The wait path the CTest entry expects (ZEX_TEST_WAIT_PATH=list|events), so that a driver change
// cannot silently move the suite onto the other path.
TEST(Stream, WaitPathIsTheOneTheDriverOffers) {
  zex::Stream s(env().dev);
  const char* want = std::getenv("ZEX_TEST_WAIT_PATH");
  if (!want) GTEST_SKIP() << "ZEX_TEST_WAIT_PATH is set by the CTest entries (tests/runtime/CMakeLists.txt)";
  EXPECT_EQ(s.wait_path() == zex::Stream::WaitPath::kList ? "list" : "events", std::string(want));
}

// Many launches per synchronize, as runtimes launch: 2000 of them, far beyond the event window, with
// a throw in an early one and another in a late one. The first is reported, with its kernel's name
// (every launch since the last synchronize is remembered), and every launch ran.
TEST(Stream, TwoThousandQueuedLaunchesReportTheFirstThrowWithItsName) {
  auto& e = env();
  zex::Kernel counter = e.mod.kernel("maybe_throw");
  zex::Kernel other = e.mod.kernel("throw_at");
  zex::Stream s(e.dev);
  Usm<uint32_t> count(1);
  Usm<int> out(64);
  const uint64_t first = s.next_launch_id();
  for (int i = 0; i < 2000; ++i) {
    if (i == 7)
      s.launch(other, cfg1d(4, 16, 2), out.get(), 5u, 0u);  // throws: work-item 5
    else
      s.launch(counter, cfg1d(1, 4, 1), count.get(), uint32_t(i == 1500));
  }
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.launch_id(), first + 7);
  EXPECT_EQ(ex.kernel_name(), "throw_at");
  EXPECT_EQ(ex.debug_level(), 2);
  ASSERT_TRUE(ex.global_id());
  EXPECT_EQ((*ex.global_id())[0], 5u);
  // 1999 counting launches of 4 work-items; the one of launch 1500 lost its work-item 0 to the throw.
  EXPECT_EQ(count[0], 1999u * 4u - 1u);
  // The stream goes on: the next throw is reported again.
  s.launch(counter, cfg1d(1, 4, 1), count.get(), 1u);
  EXPECT_EQ(zex_test::expect_kernel_exception([&] { s.synchronize(); }).kernel_name(), "maybe_throw");
  s.launch(counter, cfg1d(1, 4, 1), count.get(), 0u);
  EXPECT_NO_THROW(s.synchronize());
}

// A kernel and module destroyed with 1000 of their launches in flight stay alive for them.
TEST(Stream, KernelDestroyedWithAThousandLaunchesInFlight) {
  auto& e = env();
  zex::Stream s(e.dev);
  Usm<uint32_t> count(1);
  {
    zex::Module mod(e.dev, zex_test::read_file(zex_test::kernel_spv()));
    zex::Kernel k = mod.kernel("maybe_throw");
    for (int i = 0; i < 1000; ++i) s.launch(k, cfg1d(1, 2, 1), count.get(), uint32_t(i == 999));
  }
  auto ex = zex_test::expect_kernel_exception([&] { s.synchronize(); });
  EXPECT_EQ(ex.kernel_name(), "maybe_throw");
  EXPECT_EQ(ex.reason(), "asked to throw");
  EXPECT_EQ(count[0], 1999u);
}

namespace {
struct Events {
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t ev[2] = {};
  Events() {
    auto& e = env();
    ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 2};
    ze_device_handle_t dh = e.dev.handle();
    zex::check(zeEventPoolCreate(e.ctx.handle(), &pd, 1, &dh, &pool), "zeEventPoolCreate");
    for (uint32_t i = 0; i < 2; ++i) {
      ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, i, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
      zex::check(zeEventCreate(pool, &ed, &ev[i]), "zeEventCreate");
    }
  }
  ~Events() {
    for (auto e : ev) zeEventDestroy(e);
    zeEventPoolDestroy(pool);
  }
};
}  // namespace

// Interop with the runtime's own events: wait() holds later launches until the event is signalled
// (appending nothing), signal() signals an event once everything launched so far has finished.
TEST(Stream, WaitsForAndSignalsTheRuntimesEvents) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  zex::Stream s(e.dev);
  Events ev;
  Usm<uint32_t> count(1);
  s.wait(ev.ev[0]);
  // Fewer launches than the event path's window (Stream::kEvents): there, a launch that finds the
  // window full waits for older launches, which here wait for the host (docs/integration.md §7).
  for (int i = 0; i < 40; ++i) s.launch(k, cfg1d(1, 1, 1), count.get(), 0u);
  s.signal(ev.ev[1]);
  // Nothing may run before the runtime signals its event.
  EXPECT_FALSE(s.synchronize_for_ns(20'000'000));
  EXPECT_FALSE(s.ready());
  EXPECT_EQ(zeEventQueryStatus(ev.ev[1]), ZE_RESULT_NOT_READY);
  EXPECT_EQ(__atomic_load_n(&count[0], __ATOMIC_ACQUIRE), 0u);
  ASSERT_EQ(zeEventHostSignal(ev.ev[0]), ZE_RESULT_SUCCESS);
  ASSERT_EQ(zeEventHostSynchronize(ev.ev[1], UINT64_MAX), ZE_RESULT_SUCCESS);
  EXPECT_EQ(__atomic_load_n(&count[0], __ATOMIC_ACQUIRE), 40u) << "signalled before the launches finished";
  EXPECT_NO_THROW(s.synchronize());
  // signal() after a throw, then synchronize: the exception is still there.
  ASSERT_EQ(zeEventHostReset(ev.ev[1]), ZE_RESULT_SUCCESS);
  s.launch(k, cfg1d(1, 1, 1), count.get(), 1u);
  s.signal(ev.ev[1]);
  ASSERT_EQ(zeEventHostSynchronize(ev.ev[1], UINT64_MAX), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zex_test::expect_kernel_exception([&] { s.synchronize(); }).kernel_name(), "maybe_throw");
  EXPECT_THROW(s.wait(nullptr), std::invalid_argument);
  EXPECT_THROW(s.signal(nullptr), std::invalid_argument);
  // A stream destroyed right after signal(): its destructor waits for the barrier too.
  ASSERT_EQ(zeEventHostReset(ev.ev[1]), ZE_RESULT_SUCCESS);
  {
    zex::Stream t(e.dev);
    t.launch(k, cfg1d(1, 1, 1), count.get(), 0u);
    t.signal(ev.ev[1]);
  }
  EXPECT_EQ(zeEventQueryStatus(ev.ev[1]), ZE_RESULT_SUCCESS);
}

// A runtime queues many launches behind an event that only its own thread signals later: on the event
// path the stream grows its events rather than wait for launches that cannot run yet (Stream::kEvents).
TEST(Stream, ManyLaunchesQueuedBehindTheCallersOwnEventDoNotDeadlock) {
  auto& e = env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  zex::Stream s(e.dev);
  Events ev;
  Usm<uint32_t> count(1);
  // If a launch blocked, only this guard would let it go, after 30 s: then `guarded` says it did.
  std::atomic<bool> launched{false}, guarded{false};
  std::thread guard([&] {
    for (int i = 0; i < 3000 && !launched.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!launched.load()) {
      guarded = true;
      zeEventHostSignal(ev.ev[0]);
    }
  });
  const uint32_t n = 5 * zex::Stream::kEvents + 3;  // grows twice on the event path
  s.wait(ev.ev[0]);
  for (uint32_t i = 0; i < n; ++i) s.launch(k, cfg1d(1, 1, 1), count.get(), uint32_t(i == n - 2));
  launched = true;
  guard.join();
  EXPECT_FALSE(guarded.load()) << "a launch waited for launches queued behind the caller's own event";
  EXPECT_FALSE(s.ready());
  EXPECT_EQ(__atomic_load_n(&count[0], __ATOMIC_ACQUIRE), 0u) << "ran before the event was signalled";
  ASSERT_EQ(zeEventHostSignal(ev.ev[0]), ZE_RESULT_SUCCESS);
  // Every launch ran once; the one that threw is reported; the stream goes on as usual afterwards.
  EXPECT_EQ(zex_test::expect_kernel_exception([&] { s.synchronize(); }).kernel_name(), "maybe_throw");
  EXPECT_EQ(count[0], n - 1);  // the launch that threw counts nothing
  for (uint32_t i = 0; i < 3 * zex::Stream::kEvents; ++i) s.launch(k, cfg1d(1, 1, 1), count.get(), 0u);
  EXPECT_NO_THROW(s.synchronize());
  EXPECT_EQ(count[0], n - 1 + 3 * zex::Stream::kEvents);
}

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

// A stream is used by one thread at a time. A second thread's call is refused with std::logic_error
// before it touches anything, and the stream stays usable.
TEST(Stream, TwoThreadsOnOneStreamAreRefusedAndTheStreamStaysUsable) {
  auto& e = env();
  zex::Kernel hold = e.mod.kernel("wait_for_flag");
  zex::Stream s(e.dev);
  Usm<uint32_t> flag(1);
  s.launch(hold, cfg1d(1, 1, 1), flag.get());
  // The other thread blocks in synchronize() while the kernel is held (it retries if it happened to
  // meet this thread's own probe).
  std::thread waiter([&] {
    for (;;) {
      try {
        s.synchronize();
        return;
      } catch (const std::logic_error&) {
      }
    }
  });
  std::string refused;
  for (int i = 0; i < 10000 && refused.empty(); ++i) {
    try {
      (void)s.ready();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    } catch (const std::logic_error& ex) {
      refused = ex.what();
    }
  }
  __atomic_store_n(&flag[0], 1u, __ATOMIC_RELEASE);
  waiter.join();
  EXPECT_EQ(refused.rfind("zex: two threads used one zex::Stream at the same time", 0), 0u) << refused;
  zex::Kernel noop = e.mod.kernel("noop");
  s.launch(noop, cfg1d(1, 1, 1));
  EXPECT_NO_THROW(s.synchronize());
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
