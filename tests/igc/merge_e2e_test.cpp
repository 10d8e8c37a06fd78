// igc_merge_e2e: the merge_throw_sites pass changes code, not behaviour. The 17-site gather kernel,
// linked with the real device library once as <zex/device.h> emits it and once after the pass, runs on
// zex-cpu (raw Level Zero through the loader) with one out-of-bounds index planted at a chosen site and
// work-item; both modules must report the same status, level, launch id, values and ids, and each must
// name exactly the site that failed: the per-site module by its strings and frame line, the module
// zex::Module builds (throw paths numbered, then merged) by the site's id.
//
//   igc_merge_e2e_test <per-site.spv> <merged.spv> <gather17.cl>
#include <gtest/gtest.h>
#include <level_zero/ze_api.h>
#include <zex/abi.h>

#include "gather17_lines.hpp"

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::vector<std::string> g_args;

#define ZE_OK(call) ASSERT_EQ((call), ZE_RESULT_SUCCESS) << #call

std::vector<uint8_t> read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

class MergeE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (zeInit(0) != ZE_RESULT_SUCCESS) return;  // the loader crashes in zeDriverGet after a failed zeInit
    uint32_t n = 1;
    if (zeDriverGet(&n, &driver_) != ZE_RESULT_SUCCESS || n == 0) return;
    n = 1;
    if (zeDeviceGet(driver_, &n, &device_) != ZE_RESULT_SUCCESS || n == 0) return;
    ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
    if (zeContextCreate(driver_, &cd, &context_) != ZE_RESULT_SUCCESS) return;
    ready_ = true;
  }
  static void TearDownTestSuite() {
    if (context_) zeContextDestroy(context_);
  }
  void SetUp() override {
    if (!ready_) GTEST_SKIP() << "no Level Zero driver (run through CTest, which sets ZE_ENABLE_ALT_DRIVERS to zex-cpu)";
  }

  // Runs gather17 from `spv` at `level` with src[] of n floats and the index table idx[17 * m], where
  // idx[site * m + wi] = n (out of bounds); returns the report.
  void run(const std::vector<uint8_t>& spv, int level, uint32_t site, uint32_t wi, zex_report_t* out) {
    const uint32_t n = 64, m = 32;
    ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    void *src = nullptr, *idx = nullptr, *dst = nullptr, *report = nullptr, *claim = nullptr;
    ZE_OK(zeMemAllocShared(context_, &dd, &hd, n * sizeof(float), 64, device_, &src));
    ZE_OK(zeMemAllocShared(context_, &dd, &hd, 17 * m * sizeof(uint32_t), 64, device_, &idx));
    ZE_OK(zeMemAllocShared(context_, &dd, &hd, m * sizeof(float), 64, device_, &dst));
    ZE_OK(zeMemAllocHost(context_, &hd, sizeof(zex_report_t), 64, &report));
    ZE_OK(zeMemAllocShared(context_, &dd, &hd, sizeof(uint32_t), 4, device_, &claim));
    for (uint32_t i = 0; i < n; ++i) static_cast<float*>(src)[i] = 1.0f;
    for (uint32_t k = 0; k < 17 * m; ++k) static_cast<uint32_t*>(idx)[k] = k % n;
    static_cast<uint32_t*>(idx)[site * m + wi] = n;
    std::memset(report, 0, sizeof(zex_report_t));
    *static_cast<uint32_t*>(claim) = 0;

    uint32_t id = ZEX_SPEC_ID_DEBUG_LEVEL, value = static_cast<uint32_t>(level);
    const void* values[] = {&value};
    ze_module_constants_t constants{1, &id, values};
    ze_module_desc_t md{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(), spv.data(),
                        "", &constants};
    ze_module_handle_t mod = nullptr;
    ZE_OK(zeModuleCreate(context_, device_, &md, &mod, nullptr));
    ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "gather17"};
    ze_kernel_handle_t k = nullptr;
    ZE_OK(zeKernelCreate(mod, &kd, &k));
    ZE_OK(zeKernelSetGroupSize(k, 8, 1, 1));
    ZE_OK(zeKernelSetArgumentValue(k, 0, sizeof dst, &dst));
    ZE_OK(zeKernelSetArgumentValue(k, 1, sizeof src, &src));
    ZE_OK(zeKernelSetArgumentValue(k, 2, sizeof idx, &idx));
    ZE_OK(zeKernelSetArgumentValue(k, 3, sizeof n, &n));
    ZE_OK(zeKernelSetArgumentValue(k, 4, sizeof m, &m));
    zex_state_t st{reinterpret_cast<uint64_t>(report), reinterpret_cast<uint64_t>(claim), 0x1234u + level};
    ZE_OK(zeKernelSetArgumentValue(k, 5, sizeof st, &st));
    ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                               ZE_COMMAND_QUEUE_MODE_DEFAULT, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_list_handle_t list = nullptr;
    ZE_OK(zeCommandListCreateImmediate(context_, device_, &qd, &list));
    ze_group_count_t groups{m / 8, 1, 1};
    ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
    ze_event_pool_handle_t pool = nullptr;
    ZE_OK(zeEventPoolCreate(context_, &pd, 1, &device_, &pool));
    ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
    ze_event_handle_t done = nullptr;
    ZE_OK(zeEventCreate(pool, &ed, &done));
    ZE_OK(zeCommandListAppendLaunchKernel(list, k, &groups, done, 0, nullptr));
    ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
    std::memcpy(out, report, sizeof(zex_report_t));
    zeEventDestroy(done);
    zeEventPoolDestroy(pool);
    zeCommandListDestroy(list);
    zeKernelDestroy(k);
    zeModuleDestroy(mod);
    for (void* p : {src, idx, dst, report, claim}) zeMemFree(context_, p);
  }

  static inline ze_driver_handle_t driver_ = nullptr;
  static inline ze_device_handle_t device_ = nullptr;
  static inline ze_context_handle_t context_ = nullptr;
  static inline bool ready_ = false;
};

TEST_F(MergeE2E, SameReportAtEveryLevelAndSite) {
  const auto per_site = read_file(g_args.at(0)), merged = read_file(g_args.at(1));
  const auto lines = gather17_lines(g_args.at(2));
  ASSERT_FALSE(per_site.empty());
  ASSERT_FALSE(merged.empty());
  ASSERT_EQ(lines.size(), 17u) << "gather17.cl should have 17 checks";
  ASSERT_NE(per_site, merged) << "the pass did not change the module: nothing is being compared";
  for (int level = 0; level <= 2; ++level)
    for (uint32_t site : {0u, 5u, 16u}) {
      SCOPED_TRACE("level " + std::to_string(level) + ", site " + std::to_string(site));
      const uint32_t wi = 3 + site;  // a work-item of group (3 + site) / 8
      zex_report_t a{}, b{};
      ASSERT_NO_FATAL_FAILURE(run(per_site, level, site, wi, &a));
      ASSERT_NO_FATAL_FAILURE(run(merged, level, site, wi, &b));
      EXPECT_EQ(a.status, ZEX_STATUS_THROWN);
      EXPECT_EQ(b.status, ZEX_STATUS_THROWN);
      EXPECT_EQ(a.debug_level, static_cast<uint32_t>(level));  // b's level is in its site word
      EXPECT_EQ(a.launch_id, b.launch_id);
      EXPECT_EQ(a.abi_version, b.abi_version);
      // The per-site module (zex-spirv link --no-merge: neither the numbering nor the merge) records
      // strings by address; the module zex::Module builds numbers its throw paths (in source order
      // here: one function, 17 sites) and records the site's id with the level, at every level.
      EXPECT_EQ(a.name != 0, level >= 1);
      EXPECT_EQ(b.name, 0u);
      EXPECT_EQ(b.site & ZEX_SITE_ID_MASK, site + 1) << "the merged block recorded another site's id";
      EXPECT_EQ(b.site >> ZEX_SITE_LEVEL_SHIFT, static_cast<uint32_t>(level));
      EXPECT_EQ(a.site, 0u);
      if (level >= 1) {
        EXPECT_EQ(a.values[0], b.values[0]);
      }
      if (level == 2) {
        EXPECT_EQ(b.global_id[0], wi);
        EXPECT_EQ(a.global_id[0], b.global_id[0]);
        // b stores the global id only (its group and local ids are the host's to derive).
        ASSERT_EQ(a.frame_count, 1u);
        EXPECT_EQ(a.frames[0].line, lines[site]);
        EXPECT_EQ(b.frame_count, 0u);  // the host takes the frames from the module's site table
      }
    }
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  for (int i = 1; i < argc; ++i) g_args.emplace_back(argv[i]);
  if (g_args.size() != 3) {
    std::fprintf(stderr, "usage: igc_merge_e2e_test <per-site.spv> <merged.spv> <gather17.cl>\n");
    return 2;
  }
  return RUN_ALL_TESTS();
}
