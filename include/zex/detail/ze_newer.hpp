// The few Level Zero names zex uses that are newer than the headers it builds against (Debian 12's
// loader and headers implement API 1.4). Values are the Level Zero specification's; zex asks the
// driver at run time (zeDriverGetApiVersion, zeDriverGetExtensionFunctionAddress) before using any.
#pragma once

#include <level_zero/ze_api.h>

#include <cstdint>

namespace zex {
namespace detail {
namespace ze_newer {

/// ZE_MAKE_VERSION(1, 6): zeCommandListHostSynchronize (core since 1.6).
constexpr uint32_t kApiHostSynchronize = (1u << 16) | 6u;
/// ZE_MAKE_VERSION(1, 7): ZE_COMMAND_QUEUE_FLAG_IN_ORDER.
constexpr uint32_t kApiInOrder = (1u << 16) | 7u;
/// ze_command_queue_flag_t ZE_COMMAND_QUEUE_FLAG_IN_ORDER = ZE_BIT(1) (API 1.7): the commands of a
/// queue or immediate list run in order, each after the one before it has finished.
constexpr ze_command_queue_flags_t kCommandQueueFlagInOrder = 1u << 1;

/// ze_result_t zeCommandListHostSynchronize(ze_command_list_handle_t hCommandList, uint64_t timeout)
/// (API 1.6): waits until everything appended to an immediate list has finished; ZE_RESULT_NOT_READY
/// when `timeout` (ns; UINT64_MAX = forever, 0 = a query) passes first. zex calls it only through this
/// pointer type; the declaration above is what the fault sweep's list of calls finds
/// (tests/runtime/fault_sweep_test.cpp).
using CommandListHostSynchronizeFn = ze_result_t(ZE_APICALL*)(ze_command_list_handle_t, uint64_t);
constexpr const char* kHostSynchronizeName = "zeCommandListHostSynchronize";

/// ZE_MAKE_VERSION(1, 9): zeCommandListImmediateAppendCommandListsExp (experimental).
constexpr uint32_t kApiImmediateAppend = (1u << 16) | 9u;
/// ze_result_t zeCommandListImmediateAppendCommandListsExp(ze_command_list_handle_t hCommandListImmediate,
/// uint32_t numCommandLists, ze_command_list_handle_t* phCommandLists, ze_event_handle_t hSignalEvent,
/// uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents) (API 1.9): executes closed regular lists on
/// an immediate list, in its order (Stream::execute).
using CommandListImmediateAppendFn = ze_result_t(ZE_APICALL*)(ze_command_list_handle_t, uint32_t,
                                                              ze_command_list_handle_t*, ze_event_handle_t, uint32_t,
                                                              ze_event_handle_t*);
constexpr const char* kImmediateAppendName = "zeCommandListImmediateAppendCommandListsExp";

/// zex-cpu's driver extension saying its immediate lists run in order without the 1.7 flag
/// (docs/cpu-driver.md).
constexpr const char* kZexCpuInOrderExtension = "ZEX_CPU_in_order_immediate_lists";

}  // namespace ze_newer
}  // namespace detail
}  // namespace zex
