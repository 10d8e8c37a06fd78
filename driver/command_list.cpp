// Command lists: creation, close/reset, host synchronization, and the appends that are not memory
// operations (kernel launches, barriers). Memory copies and fills: command_list_copy.cpp.
#include "device_loss.hpp"
#include "cmdlist_objects.hpp"

#include <cstdlib>

namespace zexcpu {

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ENUMERATION (flags), INVALID_ARGUMENT
/// (queue group ordinal != 0, foreign context/device), OUT_OF_HOST_MEMORY.
ze_result_t ZE_APICALL zeCommandListCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                           const ze_command_list_desc_t* desc,
                                           ze_command_list_handle_t* phCommandList) {
  ZEXCPU_FAULT_POINT("zeCommandListCreate");
  ZEXCPU_CHECK(check_context_device(hContext, hDevice));
  if (desc == nullptr || phCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  // RELAXED_ORDERING, MAXIMIZE_THROUGHPUT, EXPLICIT_ONLY (hints: commands run in order) and 1.7's IN_ORDER.
  if (desc->flags & ~(ze_command_list_flags_t(0x7) | kListFlagInOrder)) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (!is_context(hContext) || !is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (desc->commandQueueGroupOrdinal != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  auto* l = new (std::nothrow) _ze_command_list_handle_t;
  if (l == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  l->context = hContext;
  l->mutable_list = wants_mutable_list(desc->pNext);
  *phCommandList = l;
  return ZE_RESULT_SUCCESS;
}

/// As zeCommandQueueCreate. ASYNCHRONOUS and DEFAULT lists return from appends at once; SYNCHRONOUS
/// lists return when the appended command has run (and return its error).
ze_result_t ZE_APICALL zeCommandListCreateImmediate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                                    const ze_command_queue_desc_t* altdesc,
                                                    ze_command_list_handle_t* phCommandList) {
  ZEXCPU_FAULT_POINT("zeCommandListCreateImmediate");
  ZEXCPU_CHECK(check_context_device(hContext, hDevice));
  if (altdesc == nullptr || phCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  ZEXCPU_CHECK(check_queue_desc(hContext, hDevice, altdesc));
  auto* l = new (std::nothrow) _ze_command_list_handle_t;
  if (l == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  l->worker.reset(new (std::nothrow) Worker);
  if (l->worker == nullptr) {
    delete l;
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  l->context = hContext;
  l->immediate = true;
  l->synchronous = altdesc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
  *phCommandList = l;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeCommandListDestroy(ze_command_list_handle_t hCommandList) {
  ZEXCPU_DESTROY_POINT("zeCommandListDestroy", hCommandList);
  ZEXCPU_CHECK(check_list(hCommandList));
  if (hCommandList->worker) hCommandList->worker->stop();
  hCommandList->magic = kDeadMagic;
  delete hCommandList;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeCommandListClose(ze_command_list_handle_t hCommandList) {
  ZEXCPU_FAULT_POINT("zeCommandListClose");
  ZEXCPU_CHECK(check_list(hCommandList));
  if (!hCommandList->immediate) hCommandList->closed = true;
  hCommandList->updated = false;  // a mutable list's updates are committed
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeCommandListReset(ze_command_list_handle_t hCommandList) {
  ZEXCPU_FAULT_POINT("zeCommandListReset");
  ZEXCPU_CHECK(check_list(hCommandList));
  if (hCommandList->immediate) {
    // Nothing is recorded; wait for what was submitted, and forget its errors.
    hCommandList->worker->wait_idle(UINT64_MAX);
    return ZE_RESULT_SUCCESS;
  }
  hCommandList->commands.clear();
  hCommandList->closed = false;
  // A mutable list's ids name nothing any more; they start again at 1, as NEO's do after a reset.
  hCommandList->mutables.clear();
  hCommandList->id_pending = false;
  hCommandList->updated = false;
  return ZE_RESULT_SUCCESS;
}

/// Waits for everything submitted to an immediate list (timeout as zeEventHostSynchronize). Offered
/// through zeDriverGetExtensionFunctionAddress("zeCommandListHostSynchronize"): the installed loader's
/// tables predate this entry point. Errors: INVALID_NULL_HANDLE, INVALID_ARGUMENT (a regular list),
/// NOT_READY on timeout, the first error of a failed command.
ze_result_t ZE_APICALL zeCommandListHostSynchronize(ze_command_list_handle_t hCommandList, uint64_t timeout) {
  ZEXCPU_FAULT_POINT("zeCommandListHostSynchronize");
  ZEXCPU_CHECK(check_list(hCommandList));
  if (!hCommandList->immediate) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return after_wait(hCommandList->worker->wait_idle(timeout));
}

ze_result_t begin_command(ze_command_list_handle_t l, ze_event_handle_t signal, uint32_t numWaits,
                          const ze_event_handle_t* waits, std::unique_ptr<Command>* out) {
  if (numWaits > 0 && waits == nullptr) return ZE_RESULT_ERROR_INVALID_SIZE;
  if (!is_list(l)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!l->immediate && l->closed) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (signal != nullptr && !is_event(signal)) return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  for (uint32_t i = 0; i < numWaits; ++i)
    if (!is_event(waits[i])) return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  auto c = std::unique_ptr<Command>(new (std::nothrow) Command);
  if (!c) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  c->waits.reserve(numWaits);
  for (uint32_t i = 0; i < numWaits; ++i) c->waits.emplace_back(waits[i]);
  c->signal = EventRef(signal);
  *out = std::move(c);
  return ZE_RESULT_SUCCESS;
}

ze_result_t finish_command(ze_command_list_handle_t l, std::unique_ptr<Command> c) {
  if (!l->immediate) {
    l->commands.push_back(std::move(c));
    return ZE_RESULT_SUCCESS;
  }
  Job job;
  job.command = std::move(c);
  ZEXCPU_CHECK(l->worker->submit(std::move(job)));
  if (l->synchronous) return after_wait(l->worker->wait_idle(UINT64_MAX));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeCommandListAppendLaunchKernel(ze_command_list_handle_t hCommandList,
                                                       ze_kernel_handle_t hKernel,
                                                       const ze_group_count_t* pLaunchFuncArgs,
                                                       ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                       ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendLaunchKernel");  // an injected failure changes nothing
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::unique_ptr<Command> c;
  std::unique_ptr<LaunchCommand> launch;
  ze_result_t r = hKernel == nullptr          ? ZE_RESULT_ERROR_INVALID_NULL_HANDLE
                  : pLaunchFuncArgs == nullptr ? ZE_RESULT_ERROR_INVALID_NULL_POINTER
                                               : begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c);
  if (r == ZE_RESULT_SUCCESS) r = capture_launch(hKernel, *pLaunchFuncArgs, &launch);
  Command* appended = nullptr;
  if (r == ZE_RESULT_SUCCESS) {
    c->launch = std::move(launch);
    appended = c.get();  // a regular list keeps it in `commands`
    r = finish_command(hCommandList, std::move(c));
  }
  if (is_list(hCommandList) && hCommandList->id_pending)
    attach_pending_id(hCommandList, r == ZE_RESULT_SUCCESS ? appended : nullptr);
  return r;
}

/// The group count is read when the launch runs (an earlier command may have written it).
ze_result_t ZE_APICALL zeCommandListAppendLaunchKernelIndirect(ze_command_list_handle_t hCommandList,
                                                               ze_kernel_handle_t hKernel,
                                                               const ze_group_count_t* pLaunchArgumentsBuffer,
                                                               ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                               ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendLaunchKernelIndirect");
  if (hCommandList == nullptr || hKernel == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (pLaunchArgumentsBuffer == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (is_list(hCommandList) && hCommandList->id_pending) {
    attach_pending_id(hCommandList, nullptr);  // as NEO: an indirect launch cannot be mutable
    return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  }
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  std::unique_ptr<LaunchCommand> launch;
  ZEXCPU_CHECK(capture_launch_indirect(hKernel, pLaunchArgumentsBuffer, &launch));
  c->launch = std::move(launch);
  return finish_command(hCommandList, std::move(c));
}

/// `numKernels` indirect launches, the i-th running only if i < *pCountBuffer (read when it runs); the
/// first waits for the wait events, the last signals. Every kernel is checked before anything is
/// appended, so a rejected one appends nothing.
ze_result_t ZE_APICALL zeCommandListAppendLaunchMultipleKernelsIndirect(
    ze_command_list_handle_t hCommandList, uint32_t numKernels, ze_kernel_handle_t* phKernels,
    const uint32_t* pCountBuffer, const ze_group_count_t* pLaunchArgumentsBuffer, ze_event_handle_t hSignalEvent,
    uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendLaunchMultipleKernelsIndirect");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (phKernels == nullptr || pCountBuffer == nullptr || pLaunchArgumentsBuffer == nullptr)
    return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (is_list(hCommandList) && hCommandList->id_pending) {
    attach_pending_id(hCommandList, nullptr);  // as NEO: indirect launches cannot be mutable
    return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  }
  std::vector<std::unique_ptr<Command>> cs;
  try {
    for (uint32_t i = 0; i < numKernels; ++i) {
      std::unique_ptr<Command> c;
      const bool first = i == 0, last = i + 1 == numKernels;
      ZEXCPU_CHECK(begin_command(hCommandList, last ? hSignalEvent : nullptr, first ? numWaitEvents : 0,
                                 first ? phWaitEvents : nullptr, &c));
      std::unique_ptr<LaunchCommand> launch;
      ZEXCPU_CHECK(capture_launch_indirect(phKernels[i], pLaunchArgumentsBuffer + i, &launch, pCountBuffer, i));
      c->launch = std::move(launch);
      cs.push_back(std::move(c));
    }
  } catch (const std::bad_alloc&) {
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (numKernels == 0) {  // nothing to launch: the signal and waits still happen, as a barrier
    std::unique_ptr<Command> c;
    ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
    return finish_command(hCommandList, std::move(c));
  }
  for (auto& c : cs) ZEXCPU_CHECK(finish_command(hCommandList, std::move(c)));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeCommandListAppendBarrier(ze_command_list_handle_t hCommandList,
                                                  ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                  ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendBarrier");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  // Commands already run one at a time, in order: a barrier is only its waits and its signal.
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  return finish_command(hCommandList, std::move(c));
}

ze_result_t ZE_APICALL zeCommandListAppendMemoryRangesBarrier(ze_command_list_handle_t hCommandList,
                                                              uint32_t, const size_t* pRangeSizes,
                                                              const void** pRanges, ze_event_handle_t hSignalEvent,
                                                              uint32_t numWaitEvents,
                                                              ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemoryRangesBarrier");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (pRangeSizes == nullptr || pRanges == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  return finish_command(hCommandList, std::move(c));
}

void* extension_function(const char* name) {
  // ZEX_CPU_NO_HOST_SYNCHRONIZE=1 hides the entry point, as a driver without it would, so that tests can
  // cover a client's fallback path (read on each call, like ZEX_CPU_LENIENT_ADDRESS_RANGE).
  const char* hide = std::getenv("ZEX_CPU_NO_HOST_SYNCHRONIZE");
  bool hidden = hide != nullptr && *hide != '\0' && std::strcmp(hide, "0") != 0;
  if (std::strcmp(name, "zeCommandListHostSynchronize") == 0 && !hidden)
    return reinterpret_cast<void*>(&zeCommandListHostSynchronize);
  // ZEX_CPU_NO_IMMEDIATE_APPEND=1 hides spec 1.9's immediate append the same way.
  const char* no_append = std::getenv("ZEX_CPU_NO_IMMEDIATE_APPEND");
  const bool append_hidden = no_append != nullptr && *no_append != '\0' && std::strcmp(no_append, "0") != 0;
  if (std::strcmp(name, "zeCommandListImmediateAppendCommandListsExp") == 0 && !append_hidden)
    return reinterpret_cast<void*>(&zeCommandListImmediateAppendCommandListsExp);
  if (void* m = mutable_list_function(name)) return m;
  void* f = nullptr;
  if (info_log_function(name, &f)) return f;
  return nullptr;
}

}  // namespace zexcpu
