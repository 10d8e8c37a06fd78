// Spec 1.9's zeCommandListImmediateAppendCommandListsExp, offered through zeDriverGetExtensionFunctionAddress
// (issue 26 item 4): regular lists executed on an immediate list, after its earlier appends and before
// its later ones, waiting for the wait events and signalling the signal event as NEO's immediate list
// does; the same list appended many times and to several immediate lists; the checks of
// zeCommandQueueExecuteCommandLists. Also run as CTest driver_no_immediate_append with
// ZEX_CPU_NO_IMMEDIATE_APPEND=1, where the name is refused as by a driver without it.
#include "l0_fixture.hpp"

#include <cstdlib>
#include <string>

using ImmediateAppend = L0Test;

namespace {

using AppendListsFn = ze_result_t(ZE_APICALL*)(ze_command_list_handle_t, uint32_t, ze_command_list_handle_t*,
                                               ze_event_handle_t, uint32_t, ze_event_handle_t*);

bool hidden() {
  const char* v = std::getenv("ZEX_CPU_NO_IMMEDIATE_APPEND");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

}  // namespace

TEST_F(ImmediateAppend, RunsRegularListsInTheImmediateListsOrder) {
  void* fn = nullptr;
  ze_result_t r = zeDriverGetExtensionFunctionAddress(driver, "zeCommandListImmediateAppendCommandListsExp", &fn);
  if (hidden()) {
    EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, r);
    EXPECT_EQ(fn, nullptr);
    return;
  }
  ZE_OK(r);
  ASSERT_NE(fn, nullptr);
  auto append = reinterpret_cast<AppendListsFn>(fn);
  // add_value adds 3 to each element; the regular list does it twice.
  ze_kernel_handle_t k = kernel(module("basic"), "add_value");
  ASSERT_NE(k, nullptr);
  const uint32_t n = 256;
  auto* p = static_cast<int*>(alloc_shared(n * sizeof(int)));
  std::fill(p, p + n, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 3));
  ze_command_list_handle_t regular = regular_list();
  ASSERT_NE(regular, nullptr);
  ZE_OK(launch(regular, k, n / 64, 64));
  ZE_OK(zeCommandListAppendBarrier(regular, nullptr, 0, nullptr));
  ZE_OK(launch(regular, k, n / 64, 64));
  ze_command_list_handle_t imm = immediate_list();
  ASSERT_NE(imm, nullptr);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, append(imm, 1, &regular, nullptr, 0, nullptr)) << "not closed";
  ZE_OK(zeCommandListClose(regular));
  // Behind a gate: nothing runs until the host signals it; the signal event comes after the lists.
  ze_event_pool_handle_t pool = event_pool(2);
  ze_event_handle_t gate = host_event(pool, 0);
  ze_event_handle_t done = host_event(pool, 1);
  ASSERT_TRUE(gate && done);
  ZE_OK(append(imm, 1, &regular, done, 1, &gate));
  for (int i = 0; i < 9; ++i) ZE_OK(append(imm, 1, &regular, nullptr, 0, nullptr));
  ze_command_list_handle_t two[2] = {regular, regular};
  ZE_OK(append(imm, 2, two, nullptr, 0, nullptr));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(done));
  EXPECT_EQ(p[0], 0) << "the wait event holds the lists";
  ZE_OK(zeEventHostSignal(gate));
  ZE_OK(zeEventHostSynchronize(done, 60'000'000'000ull));
  // `done` follows the first list only: at least its 6, in order (each list adds 6).
  EXPECT_GE(p[0], 6);
  // An append after the lists runs after them: its event means all 12 executions are done.
  ze_event_handle_t after = make_event();
  ZE_OK(zeCommandListAppendBarrier(imm, after, 0, nullptr));
  ZE_OK(zeEventHostSynchronize(after, 60'000'000'000ull));
  EXPECT_EQ(p[0], 72);
  EXPECT_EQ(p[n - 1], 72);
  // A second immediate list executes the same regular list too.
  ze_command_list_handle_t imm2 = immediate_list(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
  ASSERT_NE(imm2, nullptr);
  ZE_OK(append(imm2, 1, &regular, nullptr, 0, nullptr));
  EXPECT_EQ(p[n / 2], 78) << "a synchronous immediate list returns when the lists are done";
}

TEST_F(ImmediateAppend, ChecksAsExecuteCommandListsDoes) {
  void* fn = nullptr;
  if (hidden() || zeDriverGetExtensionFunctionAddress(driver, "zeCommandListImmediateAppendCommandListsExp", &fn) !=
                      ZE_RESULT_SUCCESS)
    GTEST_SKIP() << "zeCommandListImmediateAppendCommandListsExp is hidden (ZEX_CPU_NO_IMMEDIATE_APPEND)";
  auto append = reinterpret_cast<AppendListsFn>(fn);
  ze_command_list_handle_t regular = regular_list();
  ASSERT_NE(regular, nullptr);
  ZE_OK(zeCommandListClose(regular));
  ze_command_list_handle_t imm = immediate_list();
  ASSERT_NE(imm, nullptr);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, append(nullptr, 1, &regular, nullptr, 0, nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, append(imm, 1, nullptr, nullptr, 0, nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_SIZE, append(imm, 0, &regular, nullptr, 0, nullptr));
  ze_command_list_handle_t other = regular_list();
  ASSERT_NE(other, nullptr);
  ZE_OK(zeCommandListClose(other));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, append(regular, 1, &other, nullptr, 0, nullptr))
      << "the target must be an immediate list";
  ze_command_list_handle_t imm_other = immediate_list();
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE, append(imm, 1, &imm_other, nullptr, 0, nullptr));
  ze_command_list_handle_t with_null[2] = {regular, nullptr};
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, append(imm, 2, with_null, nullptr, 0, nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_SIZE, append(imm, 1, &regular, nullptr, 2, nullptr)) << "wait count without events";
  // Refused appends submitted nothing: the list is idle.
  ze_event_handle_t done = make_event();
  ZE_OK(zeCommandListAppendBarrier(imm, done, 0, nullptr));
  ZE_OK(zeEventHostSynchronize(done, 60'000'000'000ull));
}
