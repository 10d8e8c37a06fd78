// The few Level Zero names zex uses that are newer than the headers it builds against (Debian 12's
// loader and headers implement API 1.4). Values are the Level Zero specification's; zex asks the
// driver at run time (zeDriverGetApiVersion, zeDriverGetExtensionFunctionAddress) before using any.
#pragma once

#include <level_zero/ze_api.h>

#include <cstddef>
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

/// Spec 1.9's experimental mutable command lists (ZE_experimental_mutable_command_list, version 1.0):
/// Graph::update changes a recorded launch's arguments through them where the device says it can
/// (ze_mutable_command_list_exp_properties_t::mutableCommandFlags has KERNEL_ARGUMENTS), else it
/// records the graph's list again (docs/design.md, "Updating a recorded launch"). Only what zex uses is
/// declared; the layouts are the specification's, pinned below.
constexpr const char* kMutableCommandListExtension = "ZE_experimental_mutable_command_list";
constexpr ze_structure_type_t kStypeMutableCommandListProperties = static_cast<ze_structure_type_t>(0x00020015);
constexpr ze_structure_type_t kStypeMutableCommandListDesc = static_cast<ze_structure_type_t>(0x00020016);
constexpr ze_structure_type_t kStypeMutableCommandIdDesc = static_cast<ze_structure_type_t>(0x00020017);
constexpr ze_structure_type_t kStypeMutableCommandsDesc = static_cast<ze_structure_type_t>(0x00020018);
constexpr ze_structure_type_t kStypeMutableKernelArgumentDesc = static_cast<ze_structure_type_t>(0x00020019);
constexpr ze_structure_type_t kStypeMutableGroupCountDesc = static_cast<ze_structure_type_t>(0x0002001A);
constexpr ze_structure_type_t kStypeMutableGroupSizeDesc = static_cast<ze_structure_type_t>(0x0002001B);
/// ze_mutable_command_exp_flag_t: ZE_MUTABLE_COMMAND_EXP_FLAG_KERNEL_ARGUMENTS = ZE_BIT(0), GROUP_COUNT =
/// ZE_BIT(1), GROUP_SIZE = ZE_BIT(2), GLOBAL_OFFSET = ZE_BIT(3), SIGNAL_EVENT = ZE_BIT(4), WAIT_EVENTS =
/// ZE_BIT(5) (version 1.0; KERNEL_INSTRUCTION, ZE_BIT(6), is version 1.1's).
constexpr uint32_t kMutableKernelArguments = 1u << 0;
constexpr uint32_t kMutableGroupCount = 1u << 1;
constexpr uint32_t kMutableGroupSize = 1u << 2;
constexpr uint32_t kMutableGlobalOffset = 1u << 3;
constexpr uint32_t kMutableSignalEvent = 1u << 4;
constexpr uint32_t kMutableWaitEvents = 1u << 5;

/// ze_mutable_command_list_exp_properties_t, chained on ze_device_properties_t.
struct MutableCommandListProperties {
  ze_structure_type_t stype = kStypeMutableCommandListProperties;
  void* pNext = nullptr;
  uint32_t mutableCommandListFlags = 0;
  uint32_t mutableCommandFlags = 0;
};
/// ze_mutable_command_list_exp_desc_t, chained on ze_command_list_desc_t: the list is mutable.
struct MutableCommandListDesc {
  ze_structure_type_t stype = kStypeMutableCommandListDesc;
  const void* pNext = nullptr;
  uint32_t flags = 0;
};
/// ze_mutable_command_id_exp_desc_t: what the next command's id may change.
struct MutableCommandIdDesc {
  ze_structure_type_t stype = kStypeMutableCommandIdDesc;
  const void* pNext = nullptr;
  uint32_t flags = 0;
};
/// ze_mutable_commands_exp_desc_t: the head of an update's chain.
struct MutableCommandsDesc {
  ze_structure_type_t stype = kStypeMutableCommandsDesc;
  const void* pNext = nullptr;
  uint32_t flags = 0;
};
/// ze_mutable_kernel_argument_exp_desc_t: one argument of one command.
struct MutableKernelArgumentDesc {
  ze_structure_type_t stype = kStypeMutableKernelArgumentDesc;
  const void* pNext = nullptr;
  uint64_t commandId = 0;
  uint32_t argIndex = 0;
  size_t argSize = 0;
  const void* pArgValue = nullptr;
};
/// ze_mutable_group_count_exp_desc_t: a command's new group count.
struct MutableGroupCountDesc {
  ze_structure_type_t stype = kStypeMutableGroupCountDesc;
  const void* pNext = nullptr;
  uint64_t commandId = 0;
  const ze_group_count_t* pGroupCount = nullptr;
};
/// ze_mutable_group_size_exp_desc_t: a command's new group size.
struct MutableGroupSizeDesc {
  ze_structure_type_t stype = kStypeMutableGroupSizeDesc;
  const void* pNext = nullptr;
  uint64_t commandId = 0;
  uint32_t groupSizeX = 0;
  uint32_t groupSizeY = 0;
  uint32_t groupSizeZ = 0;
};
static_assert(sizeof(MutableGroupCountDesc) == 32 && offsetof(MutableGroupCountDesc, pGroupCount) == 24,
              "ze_mutable_group_count_exp_desc_t");
static_assert(sizeof(MutableGroupSizeDesc) == 40 && offsetof(MutableGroupSizeDesc, groupSizeX) == 24 &&
                  offsetof(MutableGroupSizeDesc, groupSizeZ) == 32,
              "ze_mutable_group_size_exp_desc_t");
static_assert(sizeof(MutableCommandListProperties) == 24 && offsetof(MutableCommandListProperties, mutableCommandFlags) == 20,
              "ze_mutable_command_list_exp_properties_t");
static_assert(sizeof(MutableCommandIdDesc) == 24 && offsetof(MutableCommandIdDesc, flags) == 16,
              "ze_mutable_command_id_exp_desc_t");
static_assert(sizeof(MutableKernelArgumentDesc) == 48 && offsetof(MutableKernelArgumentDesc, commandId) == 16 &&
                  offsetof(MutableKernelArgumentDesc, argIndex) == 24 && offsetof(MutableKernelArgumentDesc, argSize) == 32 &&
                  offsetof(MutableKernelArgumentDesc, pArgValue) == 40,
              "ze_mutable_kernel_argument_exp_desc_t");

/// ze_result_t zeCommandListGetNextCommandIdExp(ze_command_list_handle_t hCommandList,
/// const ze_mutable_command_id_exp_desc_t* desc, uint64_t* pCommandId): the id of the command appended next.
using GetNextCommandIdFn = ze_result_t(ZE_APICALL*)(ze_command_list_handle_t, const MutableCommandIdDesc*, uint64_t*);
constexpr const char* kGetNextCommandIdName = "zeCommandListGetNextCommandIdExp";
/// ze_result_t zeCommandListUpdateMutableCommandsExp(ze_command_list_handle_t hCommandList,
/// const ze_mutable_commands_exp_desc_t* desc): applies the chained updates; the list is closed again after.
using UpdateMutableCommandsFn = ze_result_t(ZE_APICALL*)(ze_command_list_handle_t, const MutableCommandsDesc*);
constexpr const char* kUpdateMutableCommandsName = "zeCommandListUpdateMutableCommandsExp";
/// zeCommandListUpdateMutableCommandSignalEventExp, (list, uint64_t commandId, ze_event_handle_t): a
/// command's new signal event; zeCommandListUpdateMutableCommandWaitEventsExp, (list, uint64_t commandId,
/// uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents): its first numWaitEvents wait events. zex
/// itself does not call them (zex-cpu implements them from these declarations).
using UpdateMutableSignalEventFn = ze_result_t(ZE_APICALL*)(ze_command_list_handle_t, uint64_t, ze_event_handle_t);
using UpdateMutableWaitEventsFn = ze_result_t(ZE_APICALL*)(ze_command_list_handle_t, uint64_t, uint32_t,
                                                           ze_event_handle_t*);
constexpr const char* kUpdateMutableSignalEventName = "zeCommandListUpdateMutableCommandSignalEventExp";
constexpr const char* kUpdateMutableWaitEventsName = "zeCommandListUpdateMutableCommandWaitEventsExp";

/// zex-cpu's driver extension saying its immediate lists run in order without the 1.7 flag
/// (docs/cpu-driver.md).
constexpr const char* kZexCpuInOrderExtension = "ZEX_CPU_in_order_immediate_lists";

}  // namespace ze_newer
}  // namespace detail
}  // namespace zex
