// A lost device, end to end on zex-cpu through the system loader (docs/integration.md, "When the device
// is lost"): ZEX_CPU_LOSE_DEVICE=2 makes the second kernel launch of the process lose the device, which
// stays lost for the rest of the process, so each CTest entry runs one test of this binary in a
// process of its own (tests/runtime/CMakeLists.txt) and every test skips itself elsewhere.
#include "zex_fixture.hpp"

#include <zex/zex.hpp>

#include <gtest/gtest.h>
#include <level_zero/zes_api.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using zex_test::cfg1d;
using zex_test::read_file;
using zex_test::Usm;

bool mode(const char* name) {
  const char* m = std::getenv("ZEX_TEST_DEVICE_LOST");
  return m != nullptr && std::strcmp(m, name) == 0;
}

#define REQUIRE_MODE(name)                                                                            \
  if (!mode(name))                                                                                    \
  GTEST_SKIP() << "runs in the CTest entry that sets ZEX_TEST_DEVICE_LOST=" name                      \
                  " and ZEX_CPU_LOSE_DEVICE=2 (the device stays lost for the rest of the process)"

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A context (zex's own, or one given), the test kernels' vadd and a stream.
struct LostSetup {
  zex::Context ctx;
  zex::Module mod;
  zex::Kernel vadd;
  zex::Stream stream;
  explicit LostSetup(zex::Context c = zex::Context())
      : ctx(std::move(c)),
        mod(ctx.device(0), read_file(zex_test::kernel_spv())),
        vadd(mod.kernel("vadd")),
        stream(ctx.device(0)) {}
};

// The first launch runs; the second (ZEX_CPU_LOSE_DEVICE=2) loses the device. Returns the error that
// synchronize() raised.
zex::ZeError lose_the_device(zex::Context& ctx, zex::Stream& stream, zex::Kernel& vadd) {
  const uint32_t n = 256;
  Usm<float> a(n, ctx.handle(), ctx.device(0).handle()), b(n, ctx.handle(), ctx.device(0).handle()),
      c(n, ctx.handle(), ctx.device(0).handle());
  for (uint32_t i = 0; i < n; ++i) a[i] = float(i), b[i] = 1;
  stream.launch(vadd, cfg1d(n / 64, 64), c.get(), a.get(), b.get(), n);
  stream.synchronize();
  EXPECT_EQ(c[10], 11.0f);  // the stream worked before the loss
  stream.launch(vadd, cfg1d(n / 64, 64), c.get(), a.get(), b.get(), n);
  try {
    stream.synchronize();
  } catch (const zex::ZeError& e) {
    return e;
  }
  ADD_FAILURE() << "synchronize() after the losing launch did not raise";
  return zex::ZeError(ZE_RESULT_SUCCESS, "none");
}

TEST(DeviceLost, TheErrorCarriesStateCounterAndDecodedRecord) {
  REQUIRE_MODE("full");
  zex::Context ctx;
  zex::Context other;  // a second context of the same process, made before the loss
  zex::Module mod(ctx.device(0), read_file(zex_test::kernel_spv()));
  zex::Kernel vadd = mod.kernel("vadd");
  zex::Module other_mod(other.device(0), read_file(zex_test::kernel_spv()));
  zex::Kernel other_vadd = other_mod.kernel("vadd");
  zex::Stream stream(ctx.device(0));
  zex::Stream other_stream(other.device(0));

  const zex::ZeError e = lose_the_device(ctx, stream, vadd);
  std::cout << "--- the message ---\n" << e.what() << "\n---\n";
  EXPECT_EQ(e.result(), ZE_RESULT_ERROR_DEVICE_LOST);
  const zex::DeviceReport* r = e.device_report();
  ASSERT_NE(r, nullptr) << e.what();
  EXPECT_EQ(r->device, ctx.device(0).name());
  EXPECT_TRUE(r->state_read);
  EXPECT_EQ(r->reset_reasons, uint32_t(ZES_RESET_REASON_FLAG_WEDGED));
  EXPECT_EQ(r->state, "reset needed (wedged: the hardware is hung); repair: not supported");
  ASSERT_EQ(r->counters.size(), 1u) << e.what();
  EXPECT_EQ(r->counters[0].set, "uncorrectable");
  EXPECT_EQ(r->counters[0].category, "reset");
  EXPECT_EQ(r->counters[0].at_creation, 0u);
  EXPECT_EQ(r->counters[0].now, 1u);
  EXPECT_EQ(r->info_log, "");
  ASSERT_EQ(r->records.size(), 1u) << e.what();
  const zex::DeviceRecord& rec = r->records[0];
  EXPECT_EQ(rec.format, "CPER");
  EXPECT_EQ(rec.bytes.size(), 128u + 72u + 192u);
  EXPECT_EQ(std::string(rec.bytes.begin(), rec.bytes.begin() + 4), "CPER");
  EXPECT_GT(rec.timestamp, 0u);
  EXPECT_FALSE(rec.truncated);
  EXPECT_TRUE(has(rec.summary, "CPER 1.1, fatal, ")) << rec.summary;
  EXPECT_TRUE(has(rec.summary, "1 section: processor generic (fatal): micro-architectural error during instruction "
                               "execution, processor \"zex-cpu: launch 2 of kernel 'vadd'\" [FRU zex-cpu]"))
      << rec.summary;
  EXPECT_FALSE(has(rec.summary, "malformed")) << rec.summary;
  // The message: the call, the advice, then the report's summary.
  const std::string m = e.what();
  EXPECT_TRUE(has(m, "failed with ZE_RESULT_ERROR_DEVICE_LOST")) << m;
  EXPECT_TRUE(has(m, "create a new zex::Context")) << m;
  EXPECT_TRUE(has(m, "\nDevice report for '" + ctx.device(0).name() + "': state: reset needed (wedged")) << m;
  EXPECT_TRUE(has(m, "RAS uncorrectable reset: 0 -> 1 since the context was created.")) << m;
  EXPECT_TRUE(has(m, "CPER record: CPER 1.1, fatal")) << m;

  // The same stream again: the loss is reported again (not a hang), with the record kept.
  try {
    stream.synchronize();
    stream.launch(vadd, cfg1d(1, 1), static_cast<float*>(nullptr), static_cast<const float*>(nullptr),
                  static_cast<const float*>(nullptr), uint32_t(0));
    stream.synchronize();
    ADD_FAILURE() << "the lost stream kept working";
  } catch (const zex::ZeError& again) {
    EXPECT_EQ(again.result(), ZE_RESULT_ERROR_DEVICE_LOST) << again.what();
    ASSERT_NE(again.device_report(), nullptr);
    EXPECT_EQ(again.device_report()->records.size(), 1u) << again.what();
  }

  // The other context of the process: zex-cpu's loss is device-wide (as on NEO, where every context of
  // the process shares the device's engine contexts), so its stream answers DEVICE_LOST too, with a
  // report of its own, promptly and without crashing.
  try {
    other_stream.launch(other_vadd, cfg1d(1, 1), static_cast<float*>(nullptr), static_cast<const float*>(nullptr),
                        static_cast<const float*>(nullptr), uint32_t(0));
    other_stream.synchronize();
    ADD_FAILURE() << "a stream on the lost device kept working";
  } catch (const zex::ZeError& o) {
    EXPECT_EQ(o.result(), ZE_RESULT_ERROR_DEVICE_LOST) << o.what();
    ASSERT_NE(o.device_report(), nullptr) << o.what();
    EXPECT_EQ(o.device_report()->counters.size(), 1u) << o.what();
  }
  EXPECT_EQ(zeDeviceGetStatus(ctx.device(0).handle()), ZE_RESULT_ERROR_DEVICE_LOST);
  // A new context can still be made (creating one does not touch the device), and says it is lost.
  zex::Context after;
  EXPECT_EQ(after.device_count(), 1u);
  // Everything is destroyed at the end of scope without throwing or hanging.
}

// Failures injected into the collection itself (ZEX_CPU_FAIL, tests/runtime/CMakeLists.txt): the report is
// still made, says what it could not read, and the next collection reads everything again.
TEST(DeviceLost, FailuresWhileCollectingAreNamedInTheReport) {
  REQUIRE_MODE("faults");
  LostSetup t;
  const zex::ZeError e = lose_the_device(t.ctx, t.stream, t.vadd);
  std::cout << "--- the message ---\n" << e.what() << "\n---\n";
  ASSERT_NE(e.device_report(), nullptr) << e.what();
  const zex::DeviceReport& r = *e.device_report();
  // zeDeviceGetStatus:1 failed: the only device is reported anyway, with a note.
  EXPECT_TRUE(has(e.what(), "(zeDeviceGetStatus does not report this device lost)")) << e.what();
  // zesDeviceGetState:1 failed.
  EXPECT_EQ(r.state, "unavailable: zesDeviceGetState answered ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY (0x70000002)");
  // zesRasGetState:3 (the collection's first; two were the snapshot's) failed: that set is noted, the
  // other's counter is there.
  EXPECT_TRUE(has(e.what(), "(RAS correctable: zesRasGetState answered ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY")) << e.what();
  EXPECT_EQ(r.counters.size(), 1u) << e.what();
  // The Info Log's query call failed: no record this time, and a note.
  EXPECT_TRUE(r.records.empty()) << e.what();
  EXPECT_TRUE(has(e.what(), "(info log: zesInfoLogInstanceReadWithMetadataExt answered ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY"))
      << e.what();
  try {
    t.stream.synchronize();
    ADD_FAILURE() << "the lost stream kept working";
  } catch (const zex::ZeError& again) {
    ASSERT_NE(again.device_report(), nullptr);
    EXPECT_TRUE(again.device_report()->state_read) << again.what();
    EXPECT_EQ(again.device_report()->records.size(), 1u) << again.what();
    EXPECT_EQ(again.device_report()->counters.size(), 1u) << again.what();
  }
}

TEST(DeviceLost, WithoutTheInfoLogTheReportSaysSo) {
  REQUIRE_MODE("no-info-log");
  LostSetup t;
  const zex::ZeError e = lose_the_device(t.ctx, t.stream, t.vadd);
  std::cout << "--- the message ---\n" << e.what() << "\n---\n";
  ASSERT_NE(e.device_report(), nullptr) << e.what();
  const zex::DeviceReport& r = *e.device_report();
  EXPECT_TRUE(r.records.empty());
  EXPECT_EQ(r.info_log.rfind("info log: not offered by the driver", 0), 0u) << r.info_log;
  EXPECT_TRUE(has(e.what(), "info log: not offered by the driver")) << e.what();
  EXPECT_EQ(r.counters.size(), 1u) << e.what();  // the rest is still there
  EXPECT_TRUE(has(r.state, "wedged")) << r.state;
}

TEST(DeviceLost, WithoutSysmanTheReportSaysHowToEnableIt) {
  REQUIRE_MODE("no-sysman");
  // ZEX_SYSMAN=0: zex does not enable Sysman for its zeInit, as for a runtime that initialized Level
  // Zero itself without it.
  ASSERT_EQ(std::getenv("ZES_ENABLE_SYSMAN"), nullptr);
  LostSetup t;
  EXPECT_EQ(std::getenv("ZES_ENABLE_SYSMAN"), nullptr);  // zex left the environment alone
  const zex::ZeError e = lose_the_device(t.ctx, t.stream, t.vadd);
  std::cout << "--- the message ---\n" << e.what() << "\n---\n";
  ASSERT_NE(e.device_report(), nullptr) << e.what();
  const zex::DeviceReport& r = *e.device_report();
  EXPECT_FALSE(r.state_read);
  // zex makes no Sysman call on core handles without ZES_ENABLE_SYSMAN=1 (docs/decisions.md).
  EXPECT_EQ(r.state, "not read: Sysman is not enabled (set ZES_ENABLE_SYSMAN=1 before zeInit; zex::Context() sets "
                     "it unless ZEX_SYSMAN=0)");
  EXPECT_TRUE(r.counters.empty());
  EXPECT_TRUE(r.records.empty());
  EXPECT_EQ(r.info_log, "info log: not read (Sysman is not enabled)");
}

// ZEX_CPU_FAIL_LOSES_DEVICE=1: an injected DEVICE_LOST (here the second list synchronize, the second
// stream.synchronize()) loses the device like ZEX_CPU_LOSE_DEVICE, and the record names the rule.
TEST(DeviceLost, AnInjectedLossIsReportedToo) {
  REQUIRE_MODE("injected");
  LostSetup t;
  const zex::ZeError e = lose_the_device(t.ctx, t.stream, t.vadd);
  EXPECT_EQ(e.call(), "zeCommandListHostSynchronize");
  ASSERT_NE(e.device_report(), nullptr) << e.what();
  const zex::DeviceReport& r = *e.device_report();
  EXPECT_TRUE(has(r.state, "wedged")) << e.what();
  EXPECT_EQ(r.counters.size(), 1u) << e.what();
  ASSERT_EQ(r.records.size(), 1u) << e.what();
  EXPECT_TRUE(has(r.records[0].summary, "processor \"zex-cpu: ZEX_CPU_FAIL zeCommandListHostSynchronize:2\""))
      << r.records[0].summary;
  EXPECT_EQ(zeDeviceGetStatus(t.ctx.device(0).handle()), ZE_RESULT_ERROR_DEVICE_LOST);  // lost for good
}

// Several threads meet the loss at once, each on its own stream: each gets its DEVICE_LOST with a full
// report (collections are serialized; the record read by the first is kept for the others). Run under
// TSan too (CTest label threads).
TEST(DeviceLost, ThreadsThatMeetTheLossAtOnceEachGetAReport) {
  REQUIRE_MODE("threads");
  zex::Context ctx;
  zex::Module mod(ctx.device(0), read_file(zex_test::kernel_spv()));
  zex::Kernel vadd = mod.kernel("vadd");
  constexpr int kThreads = 4;
  const uint32_t n = 64;
  Usm<float> a(n, ctx.handle(), ctx.device(0).handle()), b(n, ctx.handle(), ctx.device(0).handle()),
      c(n, ctx.handle(), ctx.device(0).handle());
  std::vector<zex::Stream> streams;
  for (int t = 0; t < kThreads; ++t) streams.emplace_back(ctx.device(0));
  {
    zex::Stream first(ctx.device(0));  // launch 1 runs
    first.launch(vadd, cfg1d(1, 64), c.get(), a.get(), b.get(), n);
    first.synchronize();
  }
  std::vector<std::string> results(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int round = 0; round < 3; ++round) {  // launch 2 (whichever thread's) loses the device
          streams[t].launch(vadd, cfg1d(1, 64), c.get(), a.get(), b.get(), n);
          streams[t].synchronize();
        }
        results[t] = "no error";
      } catch (const zex::ZeError& e) {
        const zex::DeviceReport* r = e.device_report();
        results[t] = e.result() != ZE_RESULT_ERROR_DEVICE_LOST ? "result " + std::to_string(e.result())
                     : !r                                     ? "no report"
                     : r->records.size() != 1 || r->counters.size() != 1 || !has(r->state, "wedged")
                         ? "incomplete report: " + std::string(e.what())
                         : "ok";
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(results[t], "ok") << "thread " << t;
}

TEST(DeviceLost, SwitchedOffThereIsNoReport) {
  REQUIRE_MODE("off");  // ZEX_DEVICE_REPORT=0: no watch, no Sysman call, no report
  LostSetup t;
  const zex::ZeError e = lose_the_device(t.ctx, t.stream, t.vadd);
  EXPECT_EQ(e.result(), ZE_RESULT_ERROR_DEVICE_LOST);
  EXPECT_EQ(e.device_report(), nullptr) << e.what();
  EXPECT_FALSE(has(e.what(), "Device report")) << e.what();
}

TEST(DeviceLost, AnAdoptedContextKeepsTheRuntimesSetup) {
  REQUIRE_MODE("adopted");
  // The runtime initializes Level Zero itself, with Sysman (its choice), and hands zex its handles.
  ASSERT_EQ(setenv("ZES_ENABLE_SYSMAN", "1", 1), 0);
  ASSERT_EQ(zeInit(0), ZE_RESULT_SUCCESS);
  uint32_t n = 1;
  ze_driver_handle_t driver = nullptr;
  ASSERT_EQ(zeDriverGet(&n, &driver), ZE_RESULT_SUCCESS);
  ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ze_context_handle_t raw = nullptr;
  ASSERT_EQ(zeContextCreate(driver, &cd, &raw), ZE_RESULT_SUCCESS);
  {
    LostSetup t(zex::Context(driver, raw));
    const zex::ZeError e = lose_the_device(t.ctx, t.stream, t.vadd);
    ASSERT_NE(e.device_report(), nullptr) << e.what();
    EXPECT_EQ(e.device_report()->records.size(), 1u) << e.what();
    EXPECT_EQ(e.device_report()->counters.size(), 1u) << e.what();
  }
  // zex never destroys an adopted context; on a lost device destroying it still works.
  EXPECT_EQ(zeContextDestroy(raw), ZE_RESULT_SUCCESS);
}

}  // namespace
