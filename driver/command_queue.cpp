// Command queues: creation, zeCommandQueueExecuteCommandLists (the lists run in order on the queue's
// worker), synchronization. The execution model is in cmdlist_objects.hpp.
#include "device_loss.hpp"
#include "cmdlist_objects.hpp"
#include "fork.hpp"

namespace zexcpu {

/// The checks of a queue descriptor shared by zeCommandQueueCreate and zeCommandListCreateImmediate.
ze_result_t check_queue_desc(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                             const ze_command_queue_desc_t* desc) {
  if (desc->flags & ~(ze_command_queue_flags_t(ZE_COMMAND_QUEUE_FLAG_EXPLICIT_ONLY) | kQueueFlagInOrder) ||
      uint32_t(desc->mode) > kMaxMode || uint32_t(desc->priority) > kMaxPriority)
    return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (!is_context(hContext) || !is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  // One queue group; any index below numQueues is accepted, EXPLICIT_ONLY or not (as Intel's driver).
  if (desc->ordinal != 0 || desc->index >= kNumQueues) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

bool is_command_queue(ze_command_queue_handle_t h) { return h != nullptr && h->magic == kQueueMagic; }

ze_result_t check_lists_to_execute(uint32_t n, const ze_command_list_handle_t* lists) {
  for (uint32_t i = 0; i < n; ++i) {
    ze_command_list_handle_t l = lists[i];
    if (l == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!is_list(l)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (l->immediate) return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
    // A mutable list updated since its last close is not executable until closed again (NEO would run
    // it half-updated; the specification asks for the close).
    if (!l->closed || l->updated) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  return ZE_RESULT_SUCCESS;
}

void stop_all_workers() {
  // At a fork() child's exit the workers are the parent's: there are no threads to stop or join.
  if (forked_child()) return;
  Worker::stop_all_workers();
}

bool Worker::execute_list(ze_command_list_handle_t list) {
  const auto& commands = list->commands;
  for (size_t i = 0; i < commands.size(); ++i) {
    if (execute(*commands[i])) continue;
    for (size_t j = i + 1; j < commands.size(); ++j)
      if (commands[j]->signal) end_signal(commands[j]->signal.get());
    return false;
  }
  return true;
}

void Worker::for_each_signal(const Job& job, size_t first_list, void (*f)(ze_event_handle_t) noexcept) {
  if (job.command) {
    if (job.command->signal) f(job.command->signal.get());
    return;
  }
  for (size_t i = first_list; i < job.lists.size(); ++i)
    for (const auto& c : job.lists[i]->commands)
      if (c->signal) f(c->signal.get());
}

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ENUMERATION (flags, mode, priority),
/// INVALID_ARGUMENT (ordinal != 0, index >= numQueues, foreign context/device), OUT_OF_HOST_MEMORY.
ze_result_t ZE_APICALL zeCommandQueueCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                            const ze_command_queue_desc_t* desc,
                                            ze_command_queue_handle_t* phCommandQueue) {
  ZEXCPU_FAULT_POINT("zeCommandQueueCreate");
  ZEXCPU_CHECK(check_context_device(hContext, hDevice));
  if (desc == nullptr || phCommandQueue == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  ZEXCPU_CHECK(check_queue_desc(hContext, hDevice, desc));
  auto* q = new (std::nothrow) _ze_command_queue_handle_t;
  if (q == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  q->context = hContext;
  q->synchronous = desc->mode == ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS;
  *phCommandQueue = q;
  return ZE_RESULT_SUCCESS;
}

/// Joins the queue's worker (work still queued runs first, except work blocked on events).
ze_result_t ZE_APICALL zeCommandQueueDestroy(ze_command_queue_handle_t hCommandQueue) {
  ZEXCPU_DESTROY_POINT("zeCommandQueueDestroy", hCommandQueue);
  if (hCommandQueue == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_command_queue(hCommandQueue)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  hCommandQueue->worker.stop();
  hCommandQueue->magic = kDeadMagic;
  delete hCommandQueue;
  return ZE_RESULT_SUCCESS;
}

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_SIZE (no lists), INVALID_ARGUMENT (a list
/// that is not closed, or not a list), INVALID_COMMAND_LIST_TYPE (an immediate list),
/// INVALID_SYNCHRONIZATION_OBJECT (a fence of another queue). A synchronous queue returns when done.
ze_result_t ZE_APICALL zeCommandQueueExecuteCommandLists(ze_command_queue_handle_t hCommandQueue,
                                                         uint32_t numCommandLists,
                                                         ze_command_list_handle_t* phCommandLists,
                                                         ze_fence_handle_t hFence) {
  ZEXCPU_FAULT_POINT("zeCommandQueueExecuteCommandLists");
  if (hCommandQueue == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (phCommandLists == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (numCommandLists == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  if (!is_command_queue(hCommandQueue)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ZEXCPU_CHECK(check_lists_to_execute(numCommandLists, phCommandLists));
  if (hFence != nullptr && (!is_fence(hFence) || hFence->queue != hCommandQueue))
    return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  Job job;
  job.lists.assign(phCommandLists, phCommandLists + numCommandLists);
  job.fence = hFence;
  ZEXCPU_CHECK(hCommandQueue->worker.submit(std::move(job)));
  if (hCommandQueue->synchronous) return hCommandQueue->worker.wait_idle(UINT64_MAX);
  return ZE_RESULT_SUCCESS;
}

/// Errors: INVALID_NULL_HANDLE; NOT_READY on timeout; the first error of a failed command since the
/// last synchronization (e.g. a kernel that PoCL could not run).
ze_result_t ZE_APICALL zeCommandQueueSynchronize(ze_command_queue_handle_t hCommandQueue, uint64_t timeout) {
  ZEXCPU_FAULT_POINT("zeCommandQueueSynchronize");
  if (hCommandQueue == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_command_queue(hCommandQueue)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return after_wait(hCommandQueue->worker.wait_idle(timeout));
}

/// Spec 1.9's experimental zeCommandListImmediateAppendCommandListsExp, offered through
/// zeDriverGetExtensionFunctionAddress (the installed loader is older). As NEO's immediate list does
/// (CommandListCoreFamilyImmediate::appendCommandLists): the wait events first, then the lists in order
/// with zeCommandQueueExecuteCommandLists's checks, then the signal event, all in the immediate list's
/// order. Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_SIZE (no lists), INVALID_ARGUMENT
/// (a regular list in place of the immediate one; a list not closed), INVALID_COMMAND_LIST_TYPE (an
/// immediate list among the lists), and begin_command's for the events. A synchronous list returns when done.
ze_result_t ZE_APICALL zeCommandListImmediateAppendCommandListsExp(ze_command_list_handle_t hCommandListImmediate,
                                                                  uint32_t numCommandLists,
                                                                  ze_command_list_handle_t* phCommandLists,
                                                                  ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                                  ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListImmediateAppendCommandListsExp");
  if (hCommandListImmediate == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (phCommandLists == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (numCommandLists == 0) return ZE_RESULT_ERROR_INVALID_SIZE;
  ze_command_list_handle_t h = hCommandListImmediate;
  if (!is_list(h) || !h->immediate) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ZEXCPU_CHECK(check_lists_to_execute(numCommandLists, phCommandLists));
  // Everything checked and built before the first submission: a refused append submits nothing.
  std::unique_ptr<Command> before, after;
  ZEXCPU_CHECK(begin_command(h, nullptr, numWaitEvents, phWaitEvents, &before));
  ZEXCPU_CHECK(begin_command(h, hSignalEvent, 0, nullptr, &after));
  Job run;
  try {
    run.lists.assign(phCommandLists, phCommandLists + numCommandLists);
  } catch (const std::bad_alloc&) {
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (numWaitEvents > 0) {
    Job wait;
    wait.command = std::move(before);
    ZEXCPU_CHECK(h->worker->submit(std::move(wait)));
  }
  ZEXCPU_CHECK(h->worker->submit(std::move(run)));
  if (hSignalEvent != nullptr) {
    Job signal;
    signal.command = std::move(after);
    ZEXCPU_CHECK(h->worker->submit(std::move(signal)));
  }
  if (h->synchronous) return after_wait(h->worker->wait_idle(UINT64_MAX));
  return ZE_RESULT_SUCCESS;
}

}  // namespace zexcpu
