// Driver, device and context properties (issue 2 item 2: type CPU, a name with "zex-cpu", host USM without
// atomics, sensible compute, memory, module and command-queue-group properties).
#include "l0_fixture.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

using Properties = L0Test;

TEST_F(Properties, DriverProperties) {
  ze_driver_properties_t p = {ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES, nullptr, {}, 0};
  ZE_OK(zeDriverGetProperties(driver, &p));
  ze_api_version_t v = ZE_API_VERSION_FORCE_UINT32;
  ZE_OK(zeDriverGetApiVersion(driver, &v));
  EXPECT_GE(ZE_MAJOR_VERSION(v), 1u);
  uint32_t n = 0;
  ZE_OK(zeDriverGetExtensionProperties(driver, &n, nullptr));
}

// zex-cpu advertises that its immediate lists and queues run in order (what ZE_COMMAND_QUEUE_FLAG_IN_ORDER of
// Level Zero 1.7 asks for), so that a client on the 1.4 API can know it; the count protocol as ze_api.h says.
TEST_F(Properties, InOrderExtensionListed) {
  uint32_t n = 0;
  ZE_OK(zeDriverGetExtensionProperties(driver, &n, nullptr));
  ASSERT_GE(n, 1u);
  std::vector<ze_driver_extension_properties_t> props(n + 2);
  uint32_t more = n + 2;  // more than there are: corrected to the number available
  ZE_OK(zeDriverGetExtensionProperties(driver, &more, props.data()));
  EXPECT_EQ(more, n);
  bool found = false;
  for (uint32_t i = 0; i < more; ++i) {
    std::string name(props[i].name, strnlen(props[i].name, ZE_MAX_EXTENSION_NAME));
    if (name == "ZEX_CPU_in_order_immediate_lists") {
      found = true;
      EXPECT_EQ(props[i].version, ZE_MAKE_VERSION(1, 0));
    }
  }
  EXPECT_TRUE(found) << "ZEX_CPU_in_order_immediate_lists not listed";
  ze_driver_extension_properties_t sentinel[2] = {};
  sentinel[1].version = 0xdeadbeef;
  uint32_t one = 1;  // fewer than there are (or as many): exactly that many written
  ZE_OK(zeDriverGetExtensionProperties(driver, &one, sentinel));
  EXPECT_EQ(one, 1u);
  EXPECT_NE(sentinel[0].name[0], '\0');
  EXPECT_EQ(sentinel[1].version, 0xdeadbeefu);
}

TEST_F(Properties, DriverCountIsStable) {
  uint32_t n = 0;
  ZE_OK(zeDriverGet(&n, nullptr));
  EXPECT_EQ(n, 1u) << "ZE_ENABLE_ALT_DRIVERS names one driver";
  // Asking for fewer than there are returns exactly that many.
  uint32_t one = 1;
  ze_driver_handle_t d = nullptr;
  ZE_OK(zeDriverGet(&one, &d));
  EXPECT_EQ(one, 1u);
  EXPECT_EQ(d, driver);
}

TEST_F(Properties, DeviceIsCpuNamedZexCpu) {
  ze_device_properties_t p = {};
  p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  ZE_OK(zeDeviceGetProperties(device, &p));
  EXPECT_EQ(p.type, ZE_DEVICE_TYPE_CPU);
  std::string name(p.name, strnlen(p.name, ZE_MAX_DEVICE_NAME));
  EXPECT_NE(name.find("zex-cpu"), std::string::npos) << "device name: " << name;
  EXPECT_GT(p.numThreadsPerEU, 0u);
  EXPECT_GT(p.numEUsPerSubslice, 0u);
  EXPECT_GT(p.numSubslicesPerSlice, 0u);
  EXPECT_GT(p.numSlices, 0u);
  EXPECT_GT(p.maxMemAllocSize, 0u);
  EXPECT_FALSE(p.flags & ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE);
  // Two devices from two zeDeviceGet calls are the same handle.
  uint32_t n = 1;
  ze_device_handle_t again = nullptr;
  ZE_OK(zeDeviceGet(driver, &n, &again));
  EXPECT_EQ(again, device);
}

TEST_F(Properties, ComputePropertiesAreSane) {
  ze_device_compute_properties_t c = {};
  c.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  ZE_OK(zeDeviceGetComputeProperties(device, &c));
  EXPECT_GE(c.maxTotalGroupSize, 64u);
  EXPECT_GE(c.maxGroupSizeX, 1u);
  EXPECT_GE(c.maxGroupSizeY, 1u);
  EXPECT_GE(c.maxGroupSizeZ, 1u);
  EXPECT_LE(c.maxGroupSizeX, c.maxTotalGroupSize);
  EXPECT_LE(c.maxGroupSizeY, c.maxTotalGroupSize);
  EXPECT_LE(c.maxGroupSizeZ, c.maxTotalGroupSize);
  EXPECT_GE(c.maxGroupCountX, 1u << 16);
  EXPECT_GE(c.maxGroupCountY, 1u);
  EXPECT_GE(c.maxGroupCountZ, 1u);
  EXPECT_GE(c.maxSharedLocalMemory, 16u * 1024) << "OpenCL requires at least 16 KiB of local memory";
  ASSERT_GE(c.numSubGroupSizes, 1u);
  ASSERT_LE(c.numSubGroupSizes, static_cast<uint32_t>(ZE_SUBGROUPSIZE_COUNT));
  for (uint32_t i = 0; i < c.numSubGroupSizes; ++i) {
    EXPECT_GE(c.subGroupSizes[i], 1u);
    EXPECT_LE(c.subGroupSizes[i], c.maxTotalGroupSize);
  }
}

TEST_F(Properties, HostUsmAccessWithoutAtomics) {
  ze_device_memory_access_properties_t a = {};
  a.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_ACCESS_PROPERTIES;
  ZE_OK(zeDeviceGetMemoryAccessProperties(device, &a));
  EXPECT_TRUE(a.hostAllocCapabilities & ZE_MEMORY_ACCESS_CAP_FLAG_RW);
  EXPECT_FALSE(a.hostAllocCapabilities & ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC)
      << "DG2/PVC report host USM without atomics; zex must not rely on them";
  EXPECT_FALSE(a.hostAllocCapabilities & ZE_MEMORY_ACCESS_CAP_FLAG_CONCURRENT_ATOMIC);
  EXPECT_TRUE(a.deviceAllocCapabilities & ZE_MEMORY_ACCESS_CAP_FLAG_RW);
  EXPECT_TRUE(a.deviceAllocCapabilities & ZE_MEMORY_ACCESS_CAP_FLAG_ATOMIC);
  EXPECT_TRUE(a.sharedSingleDeviceAllocCapabilities & ZE_MEMORY_ACCESS_CAP_FLAG_RW);
}

TEST_F(Properties, MemoryProperties) {
  uint32_t n = 0;
  ZE_OK(zeDeviceGetMemoryProperties(device, &n, nullptr));
  ASSERT_GE(n, 1u);
  std::vector<ze_device_memory_properties_t> m(n);
  for (auto& x : m) {
    x = {};
    x.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
  }
  ZE_OK(zeDeviceGetMemoryProperties(device, &n, m.data()));
  EXPECT_GT(m[0].totalSize, 0u);
}

TEST_F(Properties, ModuleProperties) {
  ze_device_module_properties_t m = {};
  m.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
  ZE_OK(zeDeviceGetModuleProperties(device, &m));
  EXPECT_GE(m.spirvVersionSupported, ZE_MAKE_VERSION(1, 0));
  EXPECT_GT(m.maxArgumentsSize, 0u);
}

TEST_F(Properties, CommandQueueGroupsHaveCompute) {
  uint32_t n = 0;
  ZE_OK(zeDeviceGetCommandQueueGroupProperties(device, &n, nullptr));
  ASSERT_GE(n, 1u);
  std::vector<ze_command_queue_group_properties_t> g(n);
  for (auto& x : g) {
    x = {};
    x.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
  }
  ZE_OK(zeDeviceGetCommandQueueGroupProperties(device, &n, g.data()));
  bool compute = false;
  for (auto& x : g) {
    EXPECT_GE(x.numQueues, 1u);
    if (x.flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) {
      compute = true;
      EXPECT_GE(x.maxMemoryFillPatternSize, 4u);
    }
  }
  EXPECT_TRUE(compute);
}

TEST_F(Properties, NoSubDevices) {
  uint32_t n = 99;
  ZE_OK(zeDeviceGetSubDevices(device, &n, nullptr));
  EXPECT_EQ(n, 0u);
}

TEST_F(Properties, ContextStatusAndSecondContext) {
  EXPECT_ZE_OK(zeContextGetStatus(context));
  ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ze_context_handle_t other = nullptr;
  ZE_OK(zeContextCreate(driver, &cd, &other));
  EXPECT_NE(other, context);
  EXPECT_ZE_OK(zeContextDestroy(other));
}

TEST_F(Properties, DeviceTimestamps) {
  uint64_t host1 = 0, dev1 = 0, host2 = 0, dev2 = 0;
  ze_result_t r = zeDeviceGetGlobalTimestamps(device, &host1, &dev1);
  if (r == ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) GTEST_SKIP() << "zeDeviceGetGlobalTimestamps unsupported";
  ZE_OK(r);
  ZE_OK(zeDeviceGetGlobalTimestamps(device, &host2, &dev2));
  EXPECT_GE(host2, host1);
  EXPECT_GE(dev2, dev1);
}

TEST_F(Properties, ZeInitAgainAndBadFlags) {
  EXPECT_ZE_OK(zeInit(0)) << "zeInit may be called more than once";
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ENUMERATION, zeInit(0x100));
  // Still usable afterwards.
  uint32_t n = 0;
  EXPECT_ZE_OK(zeDriverGet(&n, nullptr));
  EXPECT_EQ(n, 1u);
}
