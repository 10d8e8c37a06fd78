// zex-cpu's topology (docs/cpu-driver.md, "Topology"): ZEX_CPU_DEVICES root devices, ZEX_CPU_SUBDEVICES
// sub-devices each, ZEX_CPU_DEVICE_TYPE. Read at zeInit, so the CTest entries driver_topology_* run this
// binary with the variables set (tests/driver/CMakeLists.txt); each test says which topology it needs
// and skips itself otherwise. Through the loader, with the plain API.
#include "l0_fixture.hpp"

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

uint32_t env_u32(const char* name, uint32_t dflt) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : dflt;
}

class Topology : public L0Test {
 protected:
  std::vector<ze_device_handle_t> roots() {
    uint32_t n = 0;
    EXPECT_ZE_OK(zeDeviceGet(driver, &n, nullptr));
    std::vector<ze_device_handle_t> v(n);
    EXPECT_ZE_OK(zeDeviceGet(driver, &n, v.data()));
    return v;
  }
  std::vector<ze_device_handle_t> subs(ze_device_handle_t d) {
    uint32_t n = 0;
    EXPECT_ZE_OK(zeDeviceGetSubDevices(d, &n, nullptr));
    std::vector<ze_device_handle_t> v(n);
    if (n) {
      EXPECT_ZE_OK(zeDeviceGetSubDevices(d, &n, v.data()));
    }
    return v;
  }
  static ze_device_properties_t props(ze_device_handle_t d) {
    ze_device_properties_t p{};
    p.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
    EXPECT_ZE_OK(zeDeviceGetProperties(d, &p));
    return p;
  }
  // Every root device and sub-device.
  std::vector<ze_device_handle_t> all() {
    std::vector<ze_device_handle_t> v;
    for (ze_device_handle_t d : roots()) {
      v.push_back(d);
      for (ze_device_handle_t s : subs(d)) v.push_back(s);
    }
    return v;
  }
};

TEST_F(Topology, DevicesAndSubDevicesAsConfigured) {
  const uint32_t nd = env_u32("ZEX_CPU_DEVICES", 1), ns = env_u32("ZEX_CPU_SUBDEVICES", 0);
  const char* t = std::getenv("ZEX_CPU_DEVICE_TYPE");
  const ze_device_type_t type = t && std::strcmp(t, "gpu") == 0 ? ZE_DEVICE_TYPE_GPU : ZE_DEVICE_TYPE_CPU;
  std::vector<ze_device_handle_t> r = roots();
  ASSERT_EQ(r.size(), nd);
  std::set<std::string> names;
  std::set<std::string> uuids;
  for (uint32_t i = 0; i < nd; ++i) {
    ze_device_properties_t p = props(r[i]);
    EXPECT_EQ(p.type, type);
    EXPECT_EQ(p.flags & ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE, 0u);
    EXPECT_NE(std::string(p.name).find("zex-cpu"), std::string::npos) << p.name;
    names.insert(p.name);
    uuids.insert(std::string(reinterpret_cast<const char*>(p.uuid.id), 16));
    std::vector<ze_device_handle_t> s = subs(r[i]);
    ASSERT_EQ(s.size(), ns);
    for (uint32_t k = 0; k < ns; ++k) {
      ze_device_properties_t q = props(s[k]);
      EXPECT_EQ(q.type, type);
      EXPECT_NE(q.flags & ZE_DEVICE_PROPERTY_FLAG_SUBDEVICE, 0u);
      EXPECT_EQ(q.subdeviceId, k);
      names.insert(q.name);
      uuids.insert(std::string(reinterpret_cast<const char*>(q.uuid.id), 16));
      EXPECT_TRUE(subs(s[k]).empty());  // a sub-device has none
    }
  }
  EXPECT_EQ(names.size(), nd * (1 + ns)) << "device names must tell the devices apart";
  EXPECT_EQ(uuids.size(), nd * (1 + ns));
  // Asking for fewer gets fewer.
  if (nd > 1) {
    uint32_t one = 1;
    ze_device_handle_t h = nullptr;
    EXPECT_ZE_OK(zeDeviceGet(driver, &one, &h));
    EXPECT_EQ(one, 1u);
    EXPECT_EQ(h, r[0]);
  }
}

TEST_F(Topology, PeersReachEachOthersMemory) {
  std::vector<ze_device_handle_t> v = all();
  for (ze_device_handle_t a : v)
    for (ze_device_handle_t b : v) {
      ze_bool_t can = false;
      EXPECT_ZE_OK(zeDeviceCanAccessPeer(a, b, &can));
      EXPECT_TRUE(can);
      ze_device_p2p_properties_t pp{ZE_STRUCTURE_TYPE_DEVICE_P2P_PROPERTIES, nullptr, 0};
      EXPECT_ZE_OK(zeDeviceGetP2PProperties(a, b, &pp));
      EXPECT_NE(pp.flags & ZE_DEVICE_P2P_PROPERTY_FLAG_ACCESS, 0u);
    }
}

// A context over every device and sub-device: each runs a kernel on memory allocated on the next one,
// and a copy moves the result to a third device's allocation; all devices run at once.
TEST_F(Topology, EveryDeviceRunsKernelsOnItsPeersMemory) {
  std::vector<ze_device_handle_t> v = all();
  ze_context_handle_t ctx = nullptr;
  ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ZE_OK(zeContextCreateEx(driver, &cd, static_cast<uint32_t>(v.size()), v.data(), &ctx));
  EXPECT_ZE_OK(zeContextDestroy(context));  // the fixture's helpers use `context` and `device`; TearDown
  context = ctx;                            // destroys this one after everything made on it
  constexpr uint32_t n = 256;
  std::vector<int*> bufs;
  for (size_t i = 0; i < v.size(); ++i) {
    device = v[i];
    bufs.push_back(static_cast<int*>(alloc_shared(n * sizeof(int))));
    std::memset(bufs.back(), 0, n * sizeof(int));
  }
  std::vector<ze_command_list_handle_t> lists;
  std::vector<ze_event_handle_t> done;
  ze_event_pool_handle_t pool = event_pool(static_cast<uint32_t>(v.size()));
  for (size_t i = 0; i < v.size(); ++i) {
    device = v[i];
    ze_module_handle_t m = module("basic");
    ze_kernel_handle_t k = kernel(m, "store_value");
    ASSERT_NE(k, nullptr);
    int* target = bufs[(i + 1) % v.size()];
    int value = static_cast<int>(100 + i);
    ZE_OK(zeKernelSetGroupSize(k, 64, 1, 1));
    ZE_OK(set_ptr(k, 0, target));
    ZE_OK(set_val(k, 1, value));
    ze_command_list_handle_t l = immediate_list();
    ze_event_handle_t e = make_event(pool, static_cast<uint32_t>(i));
    ze_group_count_t g{n / 2 / 64, 1, 1};  // the first half; the second half is the copy's
    ZE_OK(zeCommandListAppendLaunchKernel(l, k, &g, nullptr, 0, nullptr));
    // Then a copy of the result into the third device's buffer, from this device's list.
    ZE_OK(zeCommandListAppendBarrier(l, nullptr, 0, nullptr));
    ZE_OK(zeCommandListAppendMemoryCopy(l, bufs[(i + 2) % v.size()] + n / 2, target, n / 2 * sizeof(int), e, 0,
                                        nullptr));
    lists.push_back(l);
    done.push_back(e);
  }
  for (ze_event_handle_t e : done) EXPECT_ZE_OK(zeEventHostSynchronize(e, 60'000'000'000ull));
  for (size_t i = 0; i < v.size(); ++i) {
    const int* b = bufs[(i + 1) % v.size()];  // written by device i's kernel
    const int* c = bufs[(i + 2) % v.size()];  // its second half copied by device i's list
    EXPECT_EQ(b[0], static_cast<int>(100 + i)) << "device " << i;
    EXPECT_EQ(b[n / 2 - 1], static_cast<int>(100 + i)) << "device " << i;
    if (v.size() > 1) {
      EXPECT_EQ(c[n / 2], static_cast<int>(100 + i)) << "device " << i;
      EXPECT_EQ(c[n - 1], static_cast<int>(100 + i)) << "device " << i;
    }
  }
}

}  // namespace
