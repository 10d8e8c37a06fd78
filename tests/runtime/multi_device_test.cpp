// zex across the devices of one context (docs/integration.md, "Several devices"), on zex-cpu standing in
// for a multi-GPU node: ZEX_CPU_DEVICES=2 ZEX_CPU_SUBDEVICES=2 (tests/runtime/CMakeLists.txt), read at zeInit, so
// a process of its own; every test skips itself without that topology.
#include "zex_fixture.hpp"

#include <zex/zex.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using zex_test::cfg1d;
using zex_test::read_file;

bool two_by_two() {
  const char* d = std::getenv("ZEX_CPU_DEVICES");
  const char* s = std::getenv("ZEX_CPU_SUBDEVICES");
  return d && s && std::strcmp(d, "2") == 0 && std::strcmp(s, "2") == 0;
}
#define REQUIRE_2X2() \
  if (!two_by_two()) GTEST_SKIP() << "runs in the CTest entry zex_multi_device (ZEX_CPU_DEVICES=2 ZEX_CPU_SUBDEVICES=2)"

// Every device and sub-device of a context.
std::vector<zex::Device> all_devices(const zex::Context& ctx) {
  std::vector<zex::Device> v;
  for (const zex::Device& d : ctx.devices()) {
    v.push_back(d);
    for (const zex::Device& s : d.sub_devices()) v.push_back(s);
  }
  return v;
}

TEST(MultiDevice, OneContextOverTwoDevicesOfTwoTilesEach) {
  REQUIRE_2X2();
  zex::Context ctx;
  ASSERT_EQ(ctx.device_count(), 2u);
  std::vector<zex::Device> v = all_devices(ctx);
  ASSERT_EQ(v.size(), 6u);
  std::set<std::string> names;
  for (const zex::Device& d : v) names.insert(d.name());
  EXPECT_EQ(names.size(), 6u) << "each device and sub-device has a name of its own";
  EXPECT_TRUE(v[0] == ctx.device(0));
  EXPECT_TRUE(v[1] != v[2]);
  EXPECT_TRUE(v[0].sub_devices()[1] == v[2]);  // listed once, the same Device again
  EXPECT_TRUE(ctx.device_for(v[4].handle()) == v[4]);  // lookup by handle, sub-devices too
  EXPECT_TRUE(v[1].sub_devices().empty());  // a sub-device has none
  zex::Context other;
  EXPECT_TRUE(other.device(0) != ctx.device(0));  // the same device of another context is another Device
}

// A throw on every device and sub-device at once: each stream reports its own, naming its device.
TEST(MultiDevice, ConcurrentThrowsAreReportedOnTheRightStreamWithTheRightDevice) {
  REQUIRE_2X2();
  zex::Context ctx;
  std::vector<zex::Device> v = all_devices(ctx);
  const auto spv = read_file(zex_test::kernel_spv());
  struct PerDevice {
    zex::Device dev;
    zex::Module mod;
    zex::Kernel k;
    zex::Stream stream;
    zex_test::Usm<int> out;
    PerDevice(zex::Context& c, const zex::Device& d, const std::vector<uint8_t>& spv)
        : dev(d), mod(d, spv), k(mod.kernel("throw_at")), stream(d), out(64, c.handle(), d.handle()) {
      // Build the level-2 module now, one device after the other (the driver's translation cache makes
      // all but the first quick): six concurrent first builds take minutes in a sanitizer build.
      stream.launch(k, cfg1d(1, 16, 2), out.get(), uint32_t(99), uint32_t(0));
      stream.synchronize();
    }
  };
  std::vector<std::unique_ptr<PerDevice>> per;
  for (const zex::Device& d : v) per.push_back(std::make_unique<PerDevice>(ctx, d, spv));
  std::vector<std::string> seen(v.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < v.size(); ++i)
    threads.emplace_back([&, i] {
      PerDevice& p = *per[i];
      for (int round = 0; round < 3; ++round) {
        // Work-item i throws: its x says which stream it was.
        p.stream.launch(p.k, cfg1d(1, 16, 2), p.out.get(), static_cast<uint32_t>(i), uint32_t(0));
        try {
          p.stream.synchronize();
          seen[i] = "no exception";
          return;
        } catch (const zex::KernelException& e) {
          const bool right = e.global_id() && (*e.global_id())[0] == i &&
                             std::string(e.what()).find(" on " + p.dev.name()) != std::string::npos;
          if (!right) {
            seen[i] = e.what();
            return;
          }
        } catch (const std::exception& e) {  // anything else is a failure of this thread, not a crash
          seen[i] = std::string("unexpected: ") + e.what();
          return;
        }
      }
      seen[i] = "ok";
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < v.size(); ++i) EXPECT_EQ(seen[i], "ok") << v[i].name();
}

// 500 streams on each device: each device has its own slab pool, within its allocation bound (two USM
// allocations per 256 streams).
TEST(MultiDevice, FiveHundredStreamsPerDeviceWithinTheAllocationBound) {
  REQUIRE_2X2();
  zex::Context ctx;
  std::vector<zex::Device> v = all_devices(ctx);
  std::vector<zex::Stream> streams;
  for (const zex::Device& d : v)
    for (int i = 0; i < 500; ++i) streams.emplace_back(d);
  for (const zex::Device& d : v) EXPECT_EQ(d.slab_pool().usm_allocations(), 4u) << d.name();  // ceil(500/256) = 2 slabs
  EXPECT_NE(&v[0].slab_pool(), &v[1].slab_pool());
}

TEST(MultiDevice, AKernelOfOneDeviceIsRefusedOnAnotherDevicesStream) {
  REQUIRE_2X2();
  zex::Context ctx;
  zex::Device d0 = ctx.device(0), d1 = ctx.device(1);
  zex::Module mod(d0, read_file(zex_test::kernel_spv()));
  zex::Kernel k = mod.kernel("throw_at");
  zex::Stream s1(d1);
  zex_test::Usm<int> out(16, ctx.handle(), d1.handle());
  try {
    s1.launch(k, cfg1d(1, 16), out.get(), uint32_t(99), uint32_t(0));
    FAIL() << "a kernel of device 0's module was launched on device 1's stream";
  } catch (const zex::InvalidArgument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("built for device '" + d0.name() + "'"), std::string::npos) << m;
    EXPECT_NE(m.find("stream runs on device '" + d1.name() + "'"), std::string::npos) << m;
  }
  // Nothing was appended: the stream works with its own device's kernel.
  zex::Module mod1(d1, read_file(zex_test::kernel_spv()));
  zex::Kernel k1 = mod1.kernel("throw_at");
  s1.launch(k1, cfg1d(1, 16), out.get(), uint32_t(99), uint32_t(0));
  s1.synchronize();
  EXPECT_EQ(out[0], 1);
}

// A runtime's own context over all devices, adopted: zex finds every device and sub-device by the
// runtime's raw handles, serves a stream on each, names the right one in each exception, and leaves the
// context to the runtime.
TEST(MultiDevice, AnAdoptedContextServesEveryDeviceAndSubDevice) {
  REQUIRE_2X2();
  ASSERT_EQ(zeInit(0), ZE_RESULT_SUCCESS);
  uint32_t n = 1;
  ze_driver_handle_t driver = nullptr;
  ASSERT_EQ(zeDriverGet(&n, &driver), ZE_RESULT_SUCCESS);
  std::vector<ze_device_handle_t> raw;
  uint32_t roots = 0;
  ASSERT_EQ(zeDeviceGet(driver, &roots, nullptr), ZE_RESULT_SUCCESS);
  std::vector<ze_device_handle_t> root_handles(roots);
  ASSERT_EQ(zeDeviceGet(driver, &roots, root_handles.data()), ZE_RESULT_SUCCESS);
  for (ze_device_handle_t r : root_handles) {
    raw.push_back(r);
    uint32_t subs = 0;
    ASSERT_EQ(zeDeviceGetSubDevices(r, &subs, nullptr), ZE_RESULT_SUCCESS);
    std::vector<ze_device_handle_t> sub(subs);
    ASSERT_EQ(zeDeviceGetSubDevices(r, &subs, sub.data()), ZE_RESULT_SUCCESS);
    raw.insert(raw.end(), sub.begin(), sub.end());
  }
  ASSERT_EQ(raw.size(), 6u);
  ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ze_context_handle_t context = nullptr;
  ASSERT_EQ(zeContextCreateEx(driver, &cd, static_cast<uint32_t>(raw.size()), raw.data(), &context),
            ZE_RESULT_SUCCESS);
  {
    zex::Context ctx(driver, context);
    EXPECT_EQ(ctx.device_count(), 2u);
    const auto spv = read_file(zex_test::kernel_spv());
    std::set<std::string> names;
    for (size_t i = 0; i < raw.size(); ++i) {
      zex::Device d = ctx.device_for(raw[i]);
      EXPECT_EQ(d.handle(), raw[i]);
      names.insert(d.name());
      zex::Module mod(d, spv);
      zex::Kernel k = mod.kernel("throw_at");
      zex::Stream s(d);
      zex_test::Usm<int> out(16, context, raw[i]);
      s.launch(k, cfg1d(1, 16, 2), out.get(), static_cast<uint32_t>(i), uint32_t(0));
      try {
        s.synchronize();
        ADD_FAILURE() << "no exception on " << d.name();
      } catch (const zex::KernelException& e) {
        EXPECT_NE(std::string(e.what()).find(" on " + d.name()), std::string::npos) << e.what();
        ASSERT_TRUE(e.global_id().has_value());
        EXPECT_EQ((*e.global_id())[0], i);
      }
    }
    EXPECT_EQ(names.size(), 6u);
  }
  EXPECT_EQ(zeContextGetStatus(context), ZE_RESULT_SUCCESS) << "zex left the adopted context alive";
  EXPECT_EQ(zeContextDestroy(context), ZE_RESULT_SUCCESS);
}

}  // namespace
