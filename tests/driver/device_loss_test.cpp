// zex-cpu's lost device (docs/cpu-driver.md, "A lost device"), through the loader with the plain Level
// Zero and Sysman API: ZEX_CPU_LOSE_DEVICE=1 makes the first kernel launch that runs lose the device for
// the rest of the process, so each CTest entry (tests/driver/CMakeLists.txt) runs one test here in a
// process of its own, chosen by ZEX_TEST_LOSS; every test skips itself elsewhere. The Info Logs
// extension is called through the function pointers the driver hands out (the loader predates it).
#include "l0_fixture.hpp"

#include "common/cper.hpp"
#include "common/zes_newer.hpp"

#include <level_zero/zes_api.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

namespace zn = zex::detail::zes_newer;

bool mode(const char* m) {
  const char* v = std::getenv("ZEX_TEST_LOSS");
  return v && std::strcmp(v, m) == 0;
}
#define REQUIRE_LOSS_MODE(m) \
  if (!mode(m)) GTEST_SKIP() << "runs in the CTest entry driver_device_loss_" m " (ZEX_TEST_LOSS=" m ")"

template <typename F> F fn(ze_driver_handle_t d, const char* name) {
  void* f = nullptr;
  if (zeDriverGetExtensionFunctionAddress(d, name, &f) != ZE_RESULT_SUCCESS) return nullptr;
  return reinterpret_cast<F>(f);
}

class DeviceLoss : public L0Test {
 protected:
  void SetUp() override {
    if (mode("malformed")) GTEST_SKIP() << "zeInit fails in this process (ZEX_CPU_LOSE_DEVICE is malformed)";
    L0Test::SetUp();
  }
  zn::InfoLogApi api() {
    zn::InfoLogApi a;
    a.enumerate = fn<zn::DriverEnumInfoLogsExtFn>(driver, zn::kEnumInfoLogsName);
    a.properties = fn<zn::InfoLogGetPropertiesExtFn>(driver, zn::kGetPropertiesName);
    a.create = fn<zn::InfoLogCreateInstanceExtFn>(driver, zn::kCreateInstanceName);
    a.read = fn<zn::InfoLogInstanceReadExtFn>(driver, zn::kReadName);
    a.peek = fn<zn::InfoLogInstanceReadExtFn>(driver, zn::kPeekName);
    a.destroy = fn<zn::InfoLogInstanceDeleteExtFn>(driver, zn::kDeleteName);
    return a;
  }
  zes_device_handle_t sdev() { return reinterpret_cast<zes_device_handle_t>(device); }

  // Launches basic.cl's store_value on an immediate list and waits for it; returns the wait's result.
  ze_result_t launch_and_wait(int* p) {
    ze_module_handle_t m = module("basic");
    ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "store_value"};
    ze_kernel_handle_t k = nullptr;
    EXPECT_ZE_OK(zeKernelCreate(m, &kd, &k));
    defer([k] { zeKernelDestroy(k); });
    int v = 7;
    EXPECT_ZE_OK(zeKernelSetGroupSize(k, 1, 1, 1));
    EXPECT_ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof p, &p));
    EXPECT_ZE_OK(zeKernelSetArgumentValue(k, 1, sizeof v, &v));
    ze_command_list_handle_t l = immediate_list();
    ze_event_handle_t e = make_event();
    ze_group_count_t g{4, 1, 1};
    EXPECT_ZE_OK(zeCommandListAppendLaunchKernel(l, k, &g, e, 0, nullptr));
    return zeEventHostSynchronize(e, UINT64_MAX);
  }
};

TEST_F(DeviceLoss, ALaunchLosesTheDeviceAndSysmanSaysWhy) {
  REQUIRE_LOSS_MODE("lose");
  // Before: a healthy device, counters at 0, the extension listed and offered.
  zes_device_state_t st{ZES_STRUCTURE_TYPE_DEVICE_STATE, nullptr, 0, ZES_REPAIR_STATUS_FORCE_UINT32};
  ZE_OK(zesDeviceGetState(sdev(), &st));
  EXPECT_EQ(st.reset, 0u);
  EXPECT_EQ(st.repaired, ZES_REPAIR_STATUS_UNSUPPORTED);
  uint32_t n = 0;
  ZE_OK(zesDeviceEnumRasErrorSets(sdev(), &n, nullptr));
  ASSERT_EQ(n, 2u);
  zes_ras_handle_t ras[2];
  ZE_OK(zesDeviceEnumRasErrorSets(sdev(), &n, ras));
  zes_ras_properties_t rp{ZES_STRUCTURE_TYPE_RAS_PROPERTIES, nullptr, ZES_RAS_ERROR_TYPE_FORCE_UINT32, 1, 9};
  ZE_OK(zesRasGetProperties(ras[1], &rp));
  EXPECT_EQ(rp.type, ZES_RAS_ERROR_TYPE_UNCORRECTABLE);
  EXPECT_FALSE(rp.onSubdevice);
  uint32_t ne = 0;
  ZE_OK(zeDriverGetExtensionProperties(driver, &ne, nullptr));
  std::vector<ze_driver_extension_properties_t> exts(ne);
  ZE_OK(zeDriverGetExtensionProperties(driver, &ne, exts.data()));
  bool listed = false;
  for (auto& x : exts) listed = listed || std::strcmp(x.name, zn::kInfoLogsExtName) == 0;
  EXPECT_TRUE(listed);
  zn::InfoLogApi a = api();
  ASSERT_TRUE(a.enumerate && a.properties && a.create && a.read && a.peek && a.destroy);
  auto zdrv = reinterpret_cast<zes_driver_handle_t>(driver);
  uint32_t nl = 0;
  ZE_OK(a.enumerate(zdrv, &nl, nullptr));
  ASSERT_EQ(nl, 1u);
  zn::zes_info_log_handle_t log = nullptr;
  ZE_OK(a.enumerate(zdrv, &nl, &log));
  zn::zes_info_log_ext_properties_t lp{};
  lp.stype = static_cast<zes_structure_type_t>(zn::kStypeInfoLogProperties);
  ZE_OK(a.properties(log, &lp));
  EXPECT_EQ(lp.infoLogType, zn::ZES_INFO_LOG_TYPE_EXT_DEVICE);
  EXPECT_EQ(lp.infoLogFormat, zn::ZES_INFO_LOG_FORMAT_EXT_CPER);
  uint32_t kb = 0;
  zn::zes_info_log_instance_ext_desc_t desc{static_cast<zes_structure_type_t>(zn::kStypeInfoLogInstanceDesc), nullptr, &kb};
  zn::zes_info_log_instance_handle_t mine = nullptr, peeker = nullptr, dup = nullptr;
  ZE_OK(a.create(log, "mine", &desc, &mine));
  EXPECT_GT(kb, 0u);  // the size applied
  EXPECT_ZE(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, a.create(log, "mine", &desc, &dup));
  ZE_OK(a.create(log, nullptr, &desc, &peeker));
  uint32_t size = 0, count = 0;
  ZE_OK(a.read(mine, 0, &size, nullptr, &count, nullptr, nullptr));
  EXPECT_EQ(count, 0u);

  // Virtual memory and an opened IPC handle from before the loss, to be cleaned up after it.
  const size_t k64K = size_t{64} << 10;
  void* va = nullptr;
  ZE_OK(zeVirtualMemReserve(context, reinterpret_cast<const void*>(uintptr_t{1} << 40), 2 * k64K, &va));
  ze_physical_mem_desc_t pd{ZE_STRUCTURE_TYPE_PHYSICAL_MEM_DESC, nullptr, 0, k64K};
  ze_physical_mem_handle_t pm = nullptr;
  ZE_OK(zePhysicalMemCreate(context, device, &pd, &pm));
  ZE_OK(zeVirtualMemMap(context, va, k64K, pm, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));
  ze_device_mem_alloc_desc_t dd0{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  void* exported = nullptr;
  ZE_OK(zeMemAllocDevice(context, &dd0, k64K, 64, device, &exported));
  ze_ipc_mem_handle_t ipc{};
  ZE_OK(zeMemGetIpcHandle(context, exported, &ipc));
  void* opened = nullptr;
  ZE_OK(zeMemOpenIpcHandle(context, device, ipc, 0, &opened));

  // The loss: the launch runs nothing, the wait answers DEVICE_LOST.
  int* p = static_cast<int*>(alloc_shared(4 * sizeof(int)));
  ASSERT_NE(p, nullptr);
  std::memset(p, 0, 4 * sizeof(int));  // USM is not zeroed (ASan fills it)
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, launch_and_wait(p));
  EXPECT_EQ(p[0], 0) << "the lost launch ran";

  // After: device work answers DEVICE_LOST; destroys, frees and queries work.
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, zeDeviceGetStatus(device));
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, zeContextGetStatus(context));
  ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  void* q = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, zeMemAllocDevice(context, &dd, 64, 64, device, &q));
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0, ZE_COMMAND_QUEUE_MODE_DEFAULT,
                             ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_list_handle_t l = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, zeCommandListCreateImmediate(context, device, &qd, &l));
  ze_device_properties_t dp{};
  dp.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  EXPECT_ZE_OK(zeDeviceGetProperties(device, &dp));
  ze_context_handle_t c2 = nullptr;
  ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  EXPECT_ZE_OK(zeContextCreate(driver, &cd, &c2));
  EXPECT_ZE_OK(zeContextDestroy(c2));
  // Mapping and opening are device work; unmapping, freeing, destroying and closing are clean-up.
  void* again = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, zeMemOpenIpcHandle(context, device, ipc, 0, &again));
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST,
            zeVirtualMemMap(context, static_cast<char*>(va) + k64K, k64K, pm, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));
  EXPECT_ZE_OK(zeMemCloseIpcHandle(context, opened));
  EXPECT_ZE_OK(zeMemFree(context, exported));
  EXPECT_ZE_OK(zeVirtualMemUnmap(context, va, k64K));
  EXPECT_ZE_OK(zeVirtualMemFree(context, va, 2 * k64K));
  EXPECT_ZE_OK(zePhysicalMemDestroy(context, pm));

  ZE_OK(zesDeviceGetState(sdev(), &st));
  EXPECT_EQ(st.reset, uint32_t(ZES_RESET_REASON_FLAG_WEDGED));
  zes_ras_state_t rs{ZES_STRUCTURE_TYPE_RAS_STATE, nullptr, {}};
  ZE_OK(zesRasGetState(ras[1], 0, &rs));
  EXPECT_EQ(rs.category[ZES_RAS_ERROR_CAT_RESET], 1u);
  for (int c = 1; c < 7; ++c) EXPECT_EQ(rs.category[c], 0u) << c;
  ZE_OK(zesRasGetState(ras[0], 0, &rs));
  for (int c = 0; c < 7; ++c) EXPECT_EQ(rs.category[c], 0u) << c;  // nothing correctable

  // The record: a query, a buffer too small for it (whole records only), then the read.
  size = 0, count = 0;
  ZE_OK(a.read(mine, 0, &size, nullptr, &count, nullptr, nullptr));
  EXPECT_EQ(count, 1u);
  EXPECT_EQ(size, 128u + 72u + 192u);
  std::vector<uint8_t> buf(1024);
  std::vector<zn::zes_info_log_metadata_ext_t> md(2);
  for (auto& m : md) m.stype = static_cast<zes_structure_type_t>(zn::kStypeInfoLogMetadata);
  zn::zes_info_log_read_status_ext_t rstat{};
  rstat.stype = static_cast<zes_structure_type_t>(zn::kStypeInfoLogReadStatus);
  uint32_t small = 100;
  count = 2;
  ZE_OK(a.read(mine, 0, &small, buf.data(), &count, md.data(), &rstat));
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(small, 0u);
  EXPECT_TRUE(rstat.hasDataToRead);
  size = static_cast<uint32_t>(buf.size());
  count = 2;
  ZE_OK(a.read(mine, 0, &size, buf.data(), &count, md.data(), &rstat));
  ASSERT_EQ(count, 1u);
  EXPECT_EQ(md[0].offset, 0u);
  EXPECT_EQ(md[0].lengthOfData, size);
  EXPECT_EQ(md[0].recordType, zn::ZES_INFO_LOG_RECORD_TYPE_EXT_ERROR_FATAL);
  EXPECT_GT(md[0].timestamp, 0u);
  EXPECT_EQ(std::memcmp(md[0].uuid.id, dp.uuid.id, 16), 0);
  EXPECT_FALSE(rstat.hasDataToRead);
  EXPECT_EQ(rstat.droppedRecordCount, 0);
  const auto rec = zex::detail::cper::decode(buf.data(), size);
  EXPECT_TRUE(rec.valid) << rec.problem;
  EXPECT_EQ(rec.severity, zex::detail::cper::kFatal);
  ASSERT_EQ(rec.sections.size(), 1u);
  EXPECT_EQ(rec.sections[0].type, "processor generic");
  EXPECT_EQ(rec.sections[0].error,
            "micro-architectural error during instruction execution, processor \"zex-cpu: launch 1 of kernel "
            "'store_value'\"");
  // Read consumed it for this instance; peeking at the other one does not consume.
  size = static_cast<uint32_t>(buf.size()), count = 2;
  ZE_OK(a.read(mine, 0, &size, buf.data(), &count, md.data(), &rstat));
  EXPECT_EQ(count, 0u);
  for (int i = 0; i < 2; ++i) {
    size = static_cast<uint32_t>(buf.size()), count = 2;
    ZE_OK(a.peek(peeker, 0, &size, buf.data(), &count, md.data(), &rstat));
    EXPECT_EQ(count, 1u) << "peek " << i;
  }
  // An instance made after the loss collects from then on: nothing.
  zn::zes_info_log_instance_handle_t late = nullptr;
  ZE_OK(a.create(log, "late", &desc, &late));
  size = 0, count = 0;
  ZE_OK(a.read(late, 0, &size, nullptr, &count, nullptr, nullptr));
  EXPECT_EQ(count, 0u);
  // clear=1 reads and then zeroes the counters.
  ZE_OK(zesRasGetState(ras[1], 1, &rs));
  EXPECT_EQ(rs.category[ZES_RAS_ERROR_CAT_RESET], 1u);
  ZE_OK(zesRasGetState(ras[1], 0, &rs));
  EXPECT_EQ(rs.category[ZES_RAS_ERROR_CAT_RESET], 0u);
  for (auto* h : {mine, peeker, late}) EXPECT_ZE_OK(a.destroy(h));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, a.destroy(mine));  // already deleted
}

// Work queued behind a host-signalled event when the device is lost: the host can still signal it, and the
// wait behind it then ends (DEVICE_LOST) instead of hanging.
TEST_F(DeviceLoss, WorkBehindAHostSignalStillEnds) {
  REQUIRE_LOSS_MODE("host-signal");
  ze_module_handle_t m = module("basic");
  ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "store_value"};
  ze_kernel_handle_t k = nullptr;
  ZE_OK(zeKernelCreate(m, &kd, &k));
  defer([k] { zeKernelDestroy(k); });
  int* p = static_cast<int*>(alloc_shared(4 * sizeof(int)));
  ASSERT_NE(p, nullptr);
  std::memset(p, 0, 4 * sizeof(int));
  int v = 7;
  ZE_OK(zeKernelSetGroupSize(k, 1, 1, 1));
  ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof p, &p));
  ZE_OK(zeKernelSetArgumentValue(k, 1, sizeof v, &v));
  ze_command_list_handle_t l = immediate_list();
  ze_event_pool_handle_t pool = event_pool(4);
  ze_event_handle_t h0 = host_event(pool, 0), e1 = make_event(pool, 1), h1 = host_event(pool, 2),
                    e2 = make_event(pool, 3);
  ze_group_count_t g{4, 1, 1};
  // Everything appended while the device is fine; nothing runs before h0.
  ZE_OK(zeCommandListAppendBarrier(l, nullptr, 1, &h0));
  ZE_OK(zeCommandListAppendLaunchKernel(l, k, &g, e1, 0, nullptr));  // launch 1: loses the device
  ZE_OK(zeCommandListAppendBarrier(l, nullptr, 1, &h1));
  ZE_OK(zeCommandListAppendLaunchKernel(l, k, &g, e2, 0, nullptr));
  ZE_OK(zeEventHostSignal(h0));
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, zeEventHostSynchronize(e1, UINT64_MAX));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventHostSynchronize(e2, 0));  // held back by h1: not ended yet
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(e2));
  EXPECT_ZE_OK(zeEventHostSignal(h1));  // the host's side of an event still works
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, zeEventHostSynchronize(e2, 10'000'000'000ull));
  EXPECT_ZE_OK(zeEventHostReset(h1));
  EXPECT_EQ(p[0], 0) << "a launch ran on the lost device";
}

// zeModuleCreate and zeModuleDynamicLink on a lost device still write their logs (docs/cpu-driver.md
// "Build logs"), which say that the device is lost.
TEST_F(DeviceLoss, ModuleCallsOnALostDeviceWriteTheirLogs) {
  REQUIRE_LOSS_MODE("lose");
  if (zeDeviceGetStatus(device) == ZE_RESULT_SUCCESS) {  // this test runs alone: lose the device first
    int* p = static_cast<int*>(alloc_shared(4 * sizeof(int)));
    ASSERT_NE(p, nullptr);
    EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, launch_and_wait(p));  // ZEX_CPU_LOSE_DEVICE=1: loses it
  }
  ASSERT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, zeDeviceGetStatus(device));
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(),
                         spv.data(), nullptr, nullptr};
  ze_module_handle_t built = nullptr;
  ze_module_build_log_handle_t log = garbage_log();
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, zeModuleCreate(context, device, &md, &built, &log));
  EXPECT_EQ(built, nullptr);
  std::string text = failed_call_log(log);
  EXPECT_NE(text.find("lost"), std::string::npos) << "the log must say that the device is lost: " << text;
  log = garbage_log();
  ze_module_handle_t none = nullptr;  // not read: the lost device answers first
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, zeModuleDynamicLink(0, &none, &log));
  text = failed_call_log(log);
  EXPECT_NE(text.find("lost"), std::string::npos) << "the link log must say that the device is lost: " << text;
}

TEST_F(DeviceLoss, WithoutSysmanSysmanAnswersUninitialized) {
  REQUIRE_LOSS_MODE("no-sysman");
  zes_device_state_t st{ZES_STRUCTURE_TYPE_DEVICE_STATE, nullptr, 0, ZES_REPAIR_STATUS_UNSUPPORTED};
  EXPECT_ZE(ZE_RESULT_ERROR_UNINITIALIZED, zesDeviceGetState(sdev(), &st));
  uint32_t n = 0;
  EXPECT_ZE(ZE_RESULT_ERROR_UNINITIALIZED, zesDeviceEnumRasErrorSets(sdev(), &n, nullptr));
  zn::InfoLogApi a = api();
  ASSERT_NE(a.enumerate, nullptr);
  EXPECT_ZE(ZE_RESULT_ERROR_UNINITIALIZED, a.enumerate(reinterpret_cast<zes_driver_handle_t>(driver), &n, nullptr));
  int* p = static_cast<int*>(alloc_shared(4 * sizeof(int)));
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, launch_and_wait(p));  // the loss itself does not need Sysman
}

TEST_F(DeviceLoss, NoInfoLogWithdrawsTheExtension) {
  REQUIRE_LOSS_MODE("no-info-log");
  zn::InfoLogApi a = api();
  EXPECT_EQ(a.enumerate, nullptr);
  EXPECT_EQ(a.read, nullptr);
  uint32_t ne = 0;
  ZE_OK(zeDriverGetExtensionProperties(driver, &ne, nullptr));
  std::vector<ze_driver_extension_properties_t> exts(ne);
  ZE_OK(zeDriverGetExtensionProperties(driver, &ne, exts.data()));
  for (auto& x : exts) EXPECT_STRNE(x.name, zn::kInfoLogsExtName);
}

TEST(DeviceLossInit, AMalformedValueFailsZeInit) {
  REQUIRE_LOSS_MODE("malformed");
  EXPECT_NE(zeInit(0), ZE_RESULT_SUCCESS) << "ZEX_CPU_LOSE_DEVICE=" << std::getenv("ZEX_CPU_LOSE_DEVICE");
}

}  // namespace
