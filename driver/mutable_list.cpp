// Spec 1.9's experimental mutable command lists (ZE_experimental_mutable_command_list, version 1.0), as
// NEO implements them (level_zero/core/source/mutable_cmdlist/mutable_cmdlist_imp.cpp):
// - a regular list created with ze_mutable_command_list_exp_desc_t chained on its descriptor is mutable;
// - zeCommandListGetNextCommandIdExp returns the next id (1, 2, ... per list; after a reset from 1 again)
//   and names the next kernel launch appended, with the mutations its flags allow (0: all zex-cpu does);
// - zeCommandListUpdateMutableCommandsExp changes kernel arguments, group counts and group sizes of named
//   launches, zeCommandListUpdateMutableCommandSignalEventExp / ...WaitEventsExp their events; then the
//   list must be closed again before it is executed.
// Where zex-cpu differs from NEO, it is stricter in a way a correct program never sees: an update is
// checked whole before any of it is applied (NEO applies the descriptors up to the first bad one), an id
// that names nothing is refused (NEO indexes past its table), and a list updated but not closed again is
// refused by zeCommandQueueExecuteCommandLists (NEO runs it half-committed). Flags zex-cpu cannot honour
// (global offset: zex-cpu has no zeKernelSetGlobalOffsetExp) are accepted and dropped as NEO accepts any
// set; an update that needs one is refused. docs/cpu-driver.md.
#include "cmdlist_objects.hpp"
#include "kernel.hpp"

#include <zex/detail/ze_newer.hpp>

#include <cstdlib>
#include <cstring>
#include <type_traits>

namespace zexcpu {

namespace mut = zex::detail::ze_newer;

static_assert(kMutableFlagsSupported == (mut::kMutableKernelArguments | mut::kMutableGroupCount |
                                         mut::kMutableGroupSize | mut::kMutableSignalEvent | mut::kMutableWaitEvents),
              "the flags zex-cpu offers");

bool mutable_lists_offered() {
  // ZEX_CPU_NO_MUTABLE_COMMAND_LIST=1 hides the extension, as a driver without it: not listed, no device
  // property, the descriptor ignored, the functions not found (read on each call).
  const char* v = std::getenv("ZEX_CPU_NO_MUTABLE_COMMAND_LIST");
  return v == nullptr || *v == '\0' || std::strcmp(v, "0") == 0;
}

bool wants_mutable_list(const void* pNext) {
  if (!mutable_lists_offered()) return false;  // a driver that does not know the structure skips it
  for (auto* d = static_cast<const ze_base_desc_t*>(pNext); d != nullptr;
       d = static_cast<const ze_base_desc_t*>(d->pNext))
    if (d->stype == mut::kStypeMutableCommandListDesc) return true;
  return false;
}

void fill_mutable_properties(void* pNext) {
  if (!mutable_lists_offered()) return;
  for (auto* p = static_cast<ze_base_properties_t*>(pNext); p != nullptr;
       p = static_cast<ze_base_properties_t*>(p->pNext)) {
    if (p->stype != mut::kStypeMutableCommandListProperties) continue;
    auto* m = reinterpret_cast<mut::MutableCommandListProperties*>(p);
    m->mutableCommandListFlags = 0;  // ze_mutable_command_list_exp_flags_t: none defined
    m->mutableCommandFlags = kMutableFlagsSupported;
  }
}

void attach_pending_id(ze_command_list_handle_t l, Command* c) {
  l->id_pending = false;
  if (l->mutables.empty()) return;
  l->mutables.back().command = c;
  l->mutables.back().appended_with_signal = c != nullptr && c->signal;
}

namespace {

constexpr uint32_t kFlagKernelInstruction = 1u << 6;  // ZE_MUTABLE_COMMAND_EXP_FLAG_KERNEL_INSTRUCTION (1.1)

/// The launch `id` names in `l`, if its flags allow `flag`; else null (INVALID_ARGUMENT, as NEO).
Command* named(ze_command_list_handle_t l, uint64_t id, uint32_t flag) {
  if (id == 0 || id > l->mutables.size()) return nullptr;
  const MutableCommand& m = l->mutables[id - 1];
  if ((m.flags & flag) == 0 || m.command == nullptr || !m.command->launch) return nullptr;
  return m.command;
}

/// The list's checks shared by the update functions: a live, mutable, regular list.
ze_result_t check_mutable_list(ze_command_list_handle_t l) {
  ZEXCPU_CHECK(check_list(l));
  if (l->immediate || !l->mutable_list) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ENUMERATION (flags beyond version 1.1's),
/// INVALID_ARGUMENT (not a mutable regular list, or closed; KERNEL_INSTRUCTION, which needs version 1.1's
/// zeCommandListGetNextCommandIdWithKernelsExp: NEO refuses it likewise without kernels).
ze_result_t ZE_APICALL zeCommandListGetNextCommandIdExp(ze_command_list_handle_t hCommandList,
                                                       const mut::MutableCommandIdDesc* desc, uint64_t* pCommandId) {
  ZEXCPU_FAULT_POINT("zeCommandListGetNextCommandIdExp");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || pCommandId == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->flags > 0xff) return ZE_RESULT_ERROR_INVALID_ENUMERATION;  // the validation layer's bound
  if (desc->flags & kFlagKernelInstruction) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ZEXCPU_CHECK(check_mutable_list(hCommandList));
  if (hCommandList->closed) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // nothing can be appended to name
  MutableCommand m;
  // 0: everything offered, as NEO. Flags zex-cpu does not offer (GLOBAL_OFFSET: the device property
  // leaves it out) are accepted and dropped, as NEO accepts any set ("all" unions are common, e.g.
  // Intel's compute-benchmarks): an update that needs one is then refused with INVALID_ARGUMENT.
  m.flags = desc->flags == 0 ? kMutableFlagsSupported : desc->flags & kMutableFlagsSupported;
  try {
    // An id taken twice without a launch in between names nothing (its successor takes the launch).
    hCommandList->mutables.push_back(m);
  } catch (const std::bad_alloc&) {
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  hCommandList->id_pending = true;
  *pCommandId = hCommandList->mutables.size();
  return ZE_RESULT_SUCCESS;
}

/// Applies the chain of `desc` (kernel arguments, group counts, group sizes; other structure types are
/// skipped, as NEO does) after checking all of it: a refused update changes nothing. The list must be
/// closed again before it is executed. Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER (no desc, or a
/// group count descriptor without its count), INVALID_ARGUMENT (not a mutable list; an id that names no
/// launch, or whose flags do not allow the change; an argument index the kernel does not have, as NEO),
/// INVALID_KERNEL_ARGUMENT_SIZE, INVALID_GROUP_SIZE_DIMENSION, UNSUPPORTED_FEATURE (an image or sampler
/// argument).
ze_result_t ZE_APICALL zeCommandListUpdateMutableCommandsExp(ze_command_list_handle_t hCommandList,
                                                            const mut::MutableCommandsDesc* desc) {
  ZEXCPU_FAULT_POINT("zeCommandListUpdateMutableCommandsExp");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  ZEXCPU_CHECK(check_mutable_list(hCommandList));
  if (desc->flags != 0) return ZE_RESULT_ERROR_INVALID_ENUMERATION;  // reserved
  ze_command_list_handle_t l = hCommandList;
  for (int apply = 0; apply < 2; ++apply) {
    for (auto* d = static_cast<const ze_base_desc_t*>(desc->pNext); d != nullptr;
         d = static_cast<const ze_base_desc_t*>(d->pNext)) {
      if (d->stype == mut::kStypeMutableKernelArgumentDesc) {
        auto* a = reinterpret_cast<const mut::MutableKernelArgumentDesc*>(d);
        Command* c = named(l, a->commandId, mut::kMutableKernelArguments);
        if (c == nullptr) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        if (apply)
          c->launch->set_argument(a->argIndex, a->argSize, a->pArgValue);
        else if (ze_result_t r = c->launch->check_argument(a->argIndex, a->argSize, a->pArgValue); r != ZE_RESULT_SUCCESS)
          return r == ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX ? ZE_RESULT_ERROR_INVALID_ARGUMENT : r;  // as NEO
      } else if (d->stype == mut::kStypeMutableGroupCountDesc) {
        auto* g = reinterpret_cast<const mut::MutableGroupCountDesc*>(d);
        Command* c = named(l, g->commandId, mut::kMutableGroupCount);
        if (c == nullptr) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        if (g->pGroupCount == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
        if (apply) c->launch->set_group_count(*g->pGroupCount);
      } else if (d->stype == mut::kStypeMutableGroupSizeDesc) {
        auto* g = reinterpret_cast<const mut::MutableGroupSizeDesc*>(d);
        Command* c = named(l, g->commandId, mut::kMutableGroupSize);
        if (c == nullptr) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
        if (apply)
          c->launch->set_group_size(g->groupSizeX, g->groupSizeY, g->groupSizeZ);
        else
          ZEXCPU_CHECK(c->launch->check_group_size(g->groupSizeX, g->groupSizeY, g->groupSizeZ));
      }
    }
  }
  l->updated = true;
  return ZE_RESULT_SUCCESS;
}

/// The launch's new signal event (null: it signals none). As NEO, only for a launch appended with a
/// signal event. Errors: INVALID_NULL_HANDLE, INVALID_ARGUMENT (not a mutable list; the id names no
/// launch, its flags do not allow it, or it was appended without a signal event),
/// INVALID_SYNCHRONIZATION_OBJECT (not a live event).
ze_result_t ZE_APICALL zeCommandListUpdateMutableCommandSignalEventExp(ze_command_list_handle_t hCommandList,
                                                                      uint64_t commandId,
                                                                      ze_event_handle_t hSignalEvent) {
  ZEXCPU_FAULT_POINT("zeCommandListUpdateMutableCommandSignalEventExp");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  ZEXCPU_CHECK(check_mutable_list(hCommandList));
  Command* c = named(hCommandList, commandId, mut::kMutableSignalEvent);
  if (c == nullptr || !hCommandList->mutables[commandId - 1].appended_with_signal) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (hSignalEvent != nullptr && !is_event(hSignalEvent)) return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  c->signal = EventRef(hSignalEvent);
  hCommandList->updated = true;
  return ZE_RESULT_SUCCESS;
}

/// Replaces the launch's first `numWaitEvents` wait events (as NEO: at most as many as it was appended
/// with). Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER (a count without events), INVALID_ARGUMENT
/// (not a mutable list; the id names no launch or its flags do not allow it; more events than it was
/// appended with, as NEO), INVALID_SYNCHRONIZATION_OBJECT (not a live event).
ze_result_t ZE_APICALL zeCommandListUpdateMutableCommandWaitEventsExp(ze_command_list_handle_t hCommandList,
                                                                     uint64_t commandId, uint32_t numWaitEvents,
                                                                     ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListUpdateMutableCommandWaitEventsExp");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (numWaitEvents > 0 && phWaitEvents == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  ZEXCPU_CHECK(check_mutable_list(hCommandList));
  Command* c = named(hCommandList, commandId, mut::kMutableWaitEvents);
  if (c == nullptr) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (numWaitEvents > c->waits.size()) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < numWaitEvents; ++i)
    if (!is_event(phWaitEvents[i])) return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  for (uint32_t i = 0; i < numWaitEvents; ++i) c->waits[i] = EventRef(phWaitEvents[i]);
  hCommandList->updated = true;
  return ZE_RESULT_SUCCESS;
}

// The definitions have the types zex declares (a driver and its client agree on the signature).
static_assert(std::is_same_v<decltype(&zeCommandListGetNextCommandIdExp), mut::GetNextCommandIdFn>);
static_assert(std::is_same_v<decltype(&zeCommandListUpdateMutableCommandsExp), mut::UpdateMutableCommandsFn>);
static_assert(std::is_same_v<decltype(&zeCommandListUpdateMutableCommandSignalEventExp), mut::UpdateMutableSignalEventFn>);
static_assert(std::is_same_v<decltype(&zeCommandListUpdateMutableCommandWaitEventsExp), mut::UpdateMutableWaitEventsFn>);

void* mutable_list_function(const char* name) {
  if (!mutable_lists_offered()) return nullptr;
  if (std::strcmp(name, mut::kGetNextCommandIdName) == 0) return reinterpret_cast<void*>(&zeCommandListGetNextCommandIdExp);
  if (std::strcmp(name, mut::kUpdateMutableCommandsName) == 0)
    return reinterpret_cast<void*>(&zeCommandListUpdateMutableCommandsExp);
  if (std::strcmp(name, mut::kUpdateMutableSignalEventName) == 0)
    return reinterpret_cast<void*>(&zeCommandListUpdateMutableCommandSignalEventExp);
  if (std::strcmp(name, mut::kUpdateMutableWaitEventsName) == 0)
    return reinterpret_cast<void*>(&zeCommandListUpdateMutableCommandWaitEventsExp);
  return nullptr;
}

}  // namespace zexcpu
