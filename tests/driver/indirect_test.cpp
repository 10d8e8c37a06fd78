// Indirect launches (zeCommandListAppendLaunchKernelIndirect, ...MultipleKernelsIndirect): the group
// counts and the kernel count are read when the launches run, so commands before them may write them.
#include "l0_fixture.hpp"

#include <cstring>

namespace {

class Indirect : public L0Test {};

TEST_F(Indirect, GroupCountIsReadWhenTheLaunchRuns) {
  ze_module_handle_t m = module("basic");
  ze_kernel_handle_t k = kernel(m, "store_value");
  ASSERT_NE(k, nullptr);
  int* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::memset(p, 0, 64 * sizeof(int));
  auto* groups = static_cast<ze_group_count_t*>(alloc_shared(sizeof(ze_group_count_t)));
  *groups = ze_group_count_t{1, 1, 1};
  ZE_OK(zeKernelSetGroupSize(k, 8, 1, 1));
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 5));
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t gate = host_event(), done = make_event();
  ZE_OK(zeCommandListAppendBarrier(l, nullptr, 1, &gate));
  ZE_OK(zeCommandListAppendLaunchKernelIndirect(l, k, groups, done, 0, nullptr));
  *groups = ze_group_count_t{3, 1, 1};  // after the append, before the launch runs
  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(p[i], 5) << i;
  EXPECT_EQ(p[24], 0);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeCommandListAppendLaunchKernelIndirect(l, k, nullptr, nullptr, 0, nullptr));
}

TEST_F(Indirect, MultipleKernelsRunUpToTheCountReadWhenTheyRun) {
  ze_module_handle_t m = module("basic");
  ze_kernel_handle_t k[3] = {kernel(m, "store_value"), kernel(m, "store_value"), kernel(m, "store_value")};
  int* p = static_cast<int*>(alloc_shared(3 * 8 * sizeof(int)));
  std::memset(p, 0, 3 * 8 * sizeof(int));
  auto* groups = static_cast<ze_group_count_t*>(alloc_shared(3 * sizeof(ze_group_count_t)));
  auto* count = static_cast<uint32_t*>(alloc_shared(sizeof(uint32_t)));
  for (int i = 0; i < 3; ++i) {
    ASSERT_NE(k[i], nullptr);
    groups[i] = ze_group_count_t{1, 1, 1};
    ZE_OK(zeKernelSetGroupSize(k[i], 8, 1, 1));
    ZE_OK(set_ptr(k[i], 0, p + 8 * i));
    ZE_OK(set_val(k[i], 1, 10 + i));
  }
  *count = 3;
  ze_command_list_handle_t l = immediate_list();
  ze_event_handle_t gate = host_event(), done = make_event();
  ZE_OK(zeCommandListAppendBarrier(l, nullptr, 1, &gate));
  ZE_OK(zeCommandListAppendLaunchMultipleKernelsIndirect(l, 3, k, count, groups, done, 0, nullptr));
  *count = 2;  // read when the launches run: the third does not
  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(zeEventHostSynchronize(done, UINT64_MAX));
  EXPECT_EQ(p[0], 10);
  EXPECT_EQ(p[8 + 7], 11);
  EXPECT_EQ(p[16], 0) << "the third kernel ran although the count said 2";
  ze_kernel_handle_t bad[2] = {k[0], nullptr};
  EXPECT_NE(ZE_RESULT_SUCCESS, zeCommandListAppendLaunchMultipleKernelsIndirect(l, 2, bad, count, groups, nullptr, 0, nullptr));
}

}  // namespace
