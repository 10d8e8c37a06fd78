// Command lists (immediate and regular) and command queues.
//
// Execution model: every immediate list and every command queue owns a Worker, one thread that runs
// its jobs in submission order, and one in-order OpenCL queue on which kernel launches are enqueued.
// So work is in order per list or queue and concurrent across lists and queues, as on a GPU with
// several engines. Launches are enqueued without waiting (LaunchCommand::enqueue); the worker drains
// its OpenCL queue only when something must see them finished, so a stream of launches costs one
// clFinish, not one per launch. Copies and fills are memcpy/pattern loops on the worker: all USM is
// host memory. A wait on events blocks the worker on a condition variable (the sharded waiters of
// objects.hpp); nothing polls or sleeps.
//
// A regular list is a vector of commands, built at append time (kernel arguments are captured then,
// as the specification says) and run, without change, by every zeCommandQueueExecuteCommandLists.
#include "kernel.hpp"
#include "objects.hpp"

#include <pthread.h>

#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <thread>
#include <utility>
#include <vector>

namespace zexcpu {

/// One appended command: wait for `waits`, run its kernel `launch` or its `body` (if any), then
/// signal `signal` (if any).
struct Command {
  std::vector<ze_event_handle_t> waits;
  ze_event_handle_t signal = nullptr;
  std::shared_ptr<LaunchCommand> launch;
  std::function<ze_result_t(cl_command_queue)> body;
};

}  // namespace zexcpu

struct _ze_command_list_handle_t;

namespace zexcpu {

/// What a worker runs: one command of an immediate list, or the lists of one queue execution.
struct Job {
  std::unique_ptr<Command> command;
  std::vector<ze_command_list_handle_t> lists;
  ze_fence_handle_t fence = nullptr;
};

class Worker {
 public:
  Worker() { registry(this, true); }
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  ~Worker() {
    registry(this, false);  // first: stop_all_workers() may be stopping this worker right now
    stop();
  }

  /// At process exit: stops every worker, discarding the jobs that have not started, and waits for
  /// the kernels in flight. Without this, an application that exits with work queued (a failed test
  /// returning early) would have PoCL compile or run kernels while exit() destroys LLVM and PoCL.
  static void stop_all_workers() {
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (Worker* w : registry_set()) w->stop(/*discard=*/true);
  }

  /// Queues `job`; starts the thread on first use (lists that never submit cost no thread).
  /// Errors: ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY when no thread can be started,
  /// ZE_RESULT_ERROR_DEVICE_LOST after stop_all_workers() (the process is exiting).
  ze_result_t submit(Job&& job) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return ZE_RESULT_ERROR_DEVICE_LOST;
      if (!thread_.joinable()) {
        try {
          thread_ = std::thread([this] { loop(); });
        } catch (...) {
          return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        }
      }
      jobs_.push_back(std::move(job));
      submitted_.fetch_add(1, std::memory_order_relaxed);
    }
    cv_.notify_one();
    return ZE_RESULT_SUCCESS;
  }

  /// Waits until every submitted job has run (timeout as host_wait). On success returns, and clears,
  /// the first error a job met since the last call (a failed kernel launch: DEVICE_LOST-like).
  ze_result_t wait_idle(uint64_t timeout) {
    ze_result_t r = host_wait(this, timeout, [&] { return idle(); });
    if (r != ZE_RESULT_SUCCESS) return r;
    ze_result_t err = ZE_RESULT_SUCCESS;
    change_and_notify(this, [&] { std::swap(err, error_); });
    return err;
  }

  /// Lets queued jobs run (or, with `discard`, drops those that have not started), except those
  /// still waiting on events (they are dropped: the application destroys a list or queue that the
  /// device still references, which the specification forbids), then joins the thread.
  /// Idempotent and thread-safe.
  void stop(bool discard = false) {
    std::lock_guard<std::mutex> stop_lock(stop_mutex_);
    uint64_t dropped = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      if (discard) {
        dropped = jobs_.size();
        jobs_.clear();
      }
    }
    cv_.notify_all();
    abort_.store(true, std::memory_order_release);
    notify_all_waiters();  // the worker may wait on any event, in any shard
    if (thread_.joinable()) thread_.join();
    if (dropped > 0)
      change_and_notify(this, [&] { finished_.fetch_add(dropped, std::memory_order_release); });
    if (queue_ != nullptr) {
      clReleaseCommandQueue(queue_);
      queue_ = nullptr;
    }
  }

 private:
  // Launches enqueued on queue_ whose completion the worker has not seen yet: at most this many
  // before it drains the queue (bounds the latency of a long stream of appends).
  static constexpr size_t kMaxInFlight = 256;

  bool idle() const {
    return finished_.load(std::memory_order_acquire) == submitted_.load(std::memory_order_acquire);
  }

  void loop() {
    pthread_setname_np(pthread_self(), "zex-cpu worker");  // what debuggers and top show
    cl_int err = CL_SUCCESS;
    queue_ = clCreateCommandQueueWithProperties(platform().context, platform().device, nullptr, &err);
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        while (jobs_.empty() && !stopping_) {
          if (unfinished_jobs_ > 0) {  // nothing else to do: finish the batch before sleeping
            lock.unlock();
            drain();
            lock.lock();
            continue;
          }
          cv_.wait(lock);
        }
        if (jobs_.empty()) {  // stopping, and everything queued has run
          lock.unlock();
          drain();
          return;
        }
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      bool completed = true;
      if (job.command) {
        completed = execute(*job.command);
      } else {
        for (ze_command_list_handle_t list : job.lists)
          if (!(completed = execute_list(list))) break;
      }
      if (job.fence != nullptr && completed) {
        complete_launches();  // the fence says that everything of this execution has finished
        signal_fence(job.fence);
      }
      ++unfinished_jobs_;
      if (in_flight_.empty()) drain();  // nothing in flight: count the job finished now
    }
  }

  /// Waits for the launches in flight, then counts every job run so far as finished.
  void drain() {
    complete_launches();
    uint64_t n = unfinished_jobs_;
    unfinished_jobs_ = 0;
    ze_result_t e = error_pending_;
    error_pending_ = ZE_RESULT_SUCCESS;
    change_and_notify(this, [&] {
      if (e != ZE_RESULT_SUCCESS && error_ == ZE_RESULT_SUCCESS) error_ = e;
      finished_.fetch_add(n, std::memory_order_release);
    });
  }

  /// Waits until the launches enqueued on queue_ have finished.
  void complete_launches() {
    if (in_flight_.empty()) return;
    cl_int e = clFinish(queue_);
    if (e != CL_SUCCESS) record(ZE_RESULT_ERROR_DEVICE_LOST);
    for (const auto& l : in_flight_) l->completed();
    in_flight_.clear();
  }

  void record(ze_result_t r) {
    if (r != ZE_RESULT_SUCCESS && error_pending_ == ZE_RESULT_SUCCESS) error_pending_ = r;
  }

  bool execute_list(ze_command_list_handle_t list);

  /// Runs one command; false if it was abandoned because the worker is stopping.
  bool execute(const Command& c) {
    if (!c.waits.empty()) {
      complete_launches();  // do not hold back finished work while blocked
      if (!wait_events(c.waits.data(), c.waits.size(), &abort_)) return false;
    }
    uint64_t start = 0;
    if (c.signal != nullptr) {
      // A kernel timestamp starts when the command starts, not while earlier kernels still run.
      if (c.signal->pool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) complete_launches();
      start = now_ns();
    }
    if (queue_ == nullptr && (c.launch || c.body)) {
      record(ZE_RESULT_ERROR_DEVICE_LOST);  // no OpenCL queue: nothing can run
    } else if (c.launch) {
      // Enqueued without waiting: back-to-back launches form a batch that the worker drains (clFinish)
      // once, before anything that must see them finished (a host-side body, an event, a fence, a
      // wait, going idle), instead of once per launch.
      ze_result_t r = c.launch->enqueue(queue_);
      record(r);
      if (r == ZE_RESULT_SUCCESS) in_flight_.push_back(c.launch);
      if (in_flight_.size() >= kMaxInFlight) complete_launches();  // e.g. a long regular list
    } else if (c.body) {
      complete_launches();  // copies and fills run on this thread: earlier kernels must be done
      record(c.body(queue_));
    }
    if (c.signal != nullptr) {
      // The event says that this command and everything before it (barriers included) has finished.
      complete_launches();
      // Signalled even when the command failed, so that nothing waits forever on a failed command.
      signal_event(c.signal, start, now_ns());
    }
    return true;
  }

  // Every live worker, for stop_all_workers(); both never destroyed (used during exit).
  static std::mutex& registry_mutex() {
    static auto* m = new std::mutex;
    return *m;
  }
  static std::set<Worker*>& registry_set() {
    static auto* s = new std::set<Worker*>;
    return *s;
  }
  static void registry(Worker* w, bool add) {
    std::lock_guard<std::mutex> lock(registry_mutex());
    if (add)
      registry_set().insert(w);
    else
      registry_set().erase(w);
  }

  std::mutex stop_mutex_;  // serializes stop(): the application and the exit handler may race
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::atomic<bool> abort_{false};
  std::atomic<uint64_t> submitted_{0};
  std::atomic<uint64_t> finished_{0};
  ze_result_t error_ = ZE_RESULT_SUCCESS;  // under the mutex of this worker's waiters shard
  std::thread thread_;
  // Worker thread only:
  cl_command_queue queue_ = nullptr;
  std::vector<std::shared_ptr<LaunchCommand>> in_flight_;  // enqueued, completion not yet seen
  uint64_t unfinished_jobs_ = 0;           // run (or in flight), not yet counted in finished_
  ze_result_t error_pending_ = ZE_RESULT_SUCCESS;
};

}  // namespace zexcpu

struct _ze_command_list_handle_t {
  uint32_t magic = zexcpu::kListMagic;
  ze_context_handle_t context = nullptr;
  bool immediate = false;
  bool synchronous = false;  // immediate lists only
  bool closed = false;       // regular lists only
  std::vector<std::unique_ptr<zexcpu::Command>> commands;  // regular lists only
  std::unique_ptr<zexcpu::Worker> worker;                  // immediate lists only
};

struct _ze_command_queue_handle_t {
  uint32_t magic = zexcpu::kQueueMagic;
  ze_context_handle_t context = nullptr;
  bool synchronous = false;
  zexcpu::Worker worker;
};

namespace zexcpu {

bool is_command_queue(ze_command_queue_handle_t h) { return h != nullptr && h->magic == kQueueMagic; }

void stop_all_workers() { Worker::stop_all_workers(); }

bool Worker::execute_list(ze_command_list_handle_t list) {
  for (const auto& c : list->commands)
    if (!execute(*c)) return false;
  return true;
}

namespace {

#define ZEXCPU_CHECK(expr)                                \
  do {                                                    \
    ze_result_t zexcpu_r_ = (expr);                       \
    if (zexcpu_r_ != ZE_RESULT_SUCCESS) return zexcpu_r_; \
  } while (0)

bool is_list(ze_command_list_handle_t h) { return h != nullptr && h->magic == kListMagic; }

constexpr uint32_t kMaxMode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
constexpr uint32_t kMaxPriority = ZE_COMMAND_QUEUE_PRIORITY_PRIORITY_HIGH;

ze_result_t check_context_device(ze_context_handle_t hContext, ze_device_handle_t hDevice) {
  if (hContext == nullptr || hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  return ZE_RESULT_SUCCESS;
}

/// The checks of a queue descriptor shared by zeCommandQueueCreate and zeCommandListCreateImmediate.
ze_result_t check_queue_desc(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                             const ze_command_queue_desc_t* desc) {
  if (desc->flags & ~ze_command_queue_flags_t(ZE_COMMAND_QUEUE_FLAG_EXPLICIT_ONLY) ||
      uint32_t(desc->mode) > kMaxMode || uint32_t(desc->priority) > kMaxPriority)
    return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (!is_context(hContext) || !is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  // One queue group; any index below numQueues is accepted, EXPLICIT_ONLY or not (as Intel's driver).
  if (desc->ordinal != 0 || desc->index >= kNumQueues) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Command queues

}  // namespace

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
  ZEXCPU_FAULT_POINT("zeCommandQueueDestroy");
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
  for (uint32_t i = 0; i < numCommandLists; ++i) {
    ze_command_list_handle_t l = phCommandLists[i];
    if (l == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!is_list(l)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    if (l->immediate) return ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE;
    if (!l->closed) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
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
  return hCommandQueue->worker.wait_idle(timeout);
}

namespace {

// ---------------------------------------------------------------------------------------------
// Command lists: creation and state

}  // namespace

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ENUMERATION (flags), INVALID_ARGUMENT
/// (queue group ordinal != 0, foreign context/device), OUT_OF_HOST_MEMORY.
ze_result_t ZE_APICALL zeCommandListCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                           const ze_command_list_desc_t* desc,
                                           ze_command_list_handle_t* phCommandList) {
  ZEXCPU_FAULT_POINT("zeCommandListCreate");
  ZEXCPU_CHECK(check_context_device(hContext, hDevice));
  if (desc == nullptr || phCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->flags > 0x7) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (!is_context(hContext) || !is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (desc->commandQueueGroupOrdinal != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  auto* l = new (std::nothrow) _ze_command_list_handle_t;
  if (l == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  l->context = hContext;
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

namespace {

ze_result_t check_list(ze_command_list_handle_t h) {
  if (h == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_list(h)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t ZE_APICALL zeCommandListDestroy(ze_command_list_handle_t hCommandList) {
  ZEXCPU_FAULT_POINT("zeCommandListDestroy");
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
  return hCommandList->worker->wait_idle(timeout);
}

namespace {

// ---------------------------------------------------------------------------------------------
// Appending

/// Checks the list and the events of an append and builds its command (without a body).
/// Errors: INVALID_SIZE (waits null with a count), INVALID_SYNCHRONIZATION_OBJECT (an event that is
/// not a live event), INVALID_ARGUMENT (a closed regular list).
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
  if (numWaits > 0) c->waits.assign(waits, waits + numWaits);
  c->signal = signal;
  *out = std::move(c);
  return ZE_RESULT_SUCCESS;
}

/// Records a regular list's command, or runs an immediate list's (waiting for it when synchronous).
ze_result_t finish_command(ze_command_list_handle_t l, std::unique_ptr<Command> c) {
  if (!l->immediate) {
    l->commands.push_back(std::move(c));
    return ZE_RESULT_SUCCESS;
  }
  Job job;
  job.command = std::move(c);
  ZEXCPU_CHECK(l->worker->submit(std::move(job)));
  if (l->synchronous) return l->worker->wait_idle(UINT64_MAX);
  return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t ZE_APICALL zeCommandListAppendLaunchKernel(ze_command_list_handle_t hCommandList,
                                                       ze_kernel_handle_t hKernel,
                                                       const ze_group_count_t* pLaunchFuncArgs,
                                                       ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                       ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendLaunchKernel");
  if (hCommandList == nullptr || hKernel == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (pLaunchFuncArgs == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  std::unique_ptr<LaunchCommand> launch;
  ZEXCPU_CHECK(capture_launch(hKernel, *pLaunchFuncArgs, &launch));
  c->launch = std::move(launch);
  return finish_command(hCommandList, std::move(c));
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

namespace {

ze_result_t append_copy(ze_command_list_handle_t hCommandList, void* dstptr, const void* srcptr, size_t size,
                        ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents) {
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  if (size > 0)
    c->body = [dstptr, srcptr, size](cl_command_queue) {
      std::memmove(dstptr, srcptr, size);
      return ZE_RESULT_SUCCESS;
    };
  return finish_command(hCommandList, std::move(c));
}

}  // namespace

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_SIZE, INVALID_SYNCHRONIZATION_OBJECT,
/// INVALID_ARGUMENT (closed list). Any host-addressable pointers work (all USM is host memory).
ze_result_t ZE_APICALL zeCommandListAppendMemoryCopy(ze_command_list_handle_t hCommandList, void* dstptr,
                                                     const void* srcptr, size_t size,
                                                     ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                     ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemoryCopy");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (dstptr == nullptr || srcptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return append_copy(hCommandList, dstptr, srcptr, size, hSignalEvent, numWaitEvents, phWaitEvents);
}

ze_result_t ZE_APICALL zeCommandListAppendMemoryCopyFromContext(ze_command_list_handle_t hCommandList,
                                                                void* dstptr, ze_context_handle_t hContextSrc,
                                                                const void* srcptr, size_t size,
                                                                ze_event_handle_t hSignalEvent,
                                                                uint32_t numWaitEvents,
                                                                ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemoryCopyFromContext");
  if (hCommandList == nullptr || hContextSrc == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (dstptr == nullptr || srcptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!is_context(hContextSrc)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return append_copy(hCommandList, dstptr, srcptr, size, hSignalEvent, numWaitEvents, phWaitEvents);
}

namespace {

/// Fills `size` bytes with the pattern repeated; a last partial repetition takes the pattern's first
/// bytes (as Intel's driver does; the specification leaves it open).
void fill(unsigned char* dst, size_t size, const unsigned char* pattern, size_t pattern_size) {
  if (pattern_size == 1) {
    std::memset(dst, pattern[0], size);
    return;
  }
  size_t done = std::min(size, pattern_size);
  std::memcpy(dst, pattern, done);
  while (done < size) {  // double the filled prefix: O(log n) memcpy calls
    size_t n = std::min(done, size - done);
    std::memcpy(dst + done, dst, n);
    done += n;
  }
}

}  // namespace

/// Errors: as zeCommandListAppendMemoryCopy, plus INVALID_SIZE when pattern_size is not a power of two
/// or exceeds maxMemoryFillPatternSize (128).
ze_result_t ZE_APICALL zeCommandListAppendMemoryFill(ze_command_list_handle_t hCommandList, void* ptr,
                                                     const void* pattern, size_t pattern_size, size_t size,
                                                     ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                     ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemoryFill");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (ptr == nullptr || pattern == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (pattern_size == 0 || (pattern_size & (pattern_size - 1)) || pattern_size > kMaxFillPatternSize)
    return ZE_RESULT_ERROR_INVALID_SIZE;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  if (size > 0) {
    struct Pattern {
      unsigned char bytes[kMaxFillPatternSize];
    } p;
    std::memcpy(p.bytes, pattern, pattern_size);  // the pattern is captured at append time
    auto* dst = static_cast<unsigned char*>(ptr);
    c->body = [dst, p, pattern_size, size](cl_command_queue) {
      fill(dst, size, p.bytes, pattern_size);
      return ZE_RESULT_SUCCESS;
    };
  }
  return finish_command(hCommandList, std::move(c));
}

namespace {

bool regions_overlap(const ze_copy_region_t& a, const ze_copy_region_t& b) {
  auto overlap = [](uint32_t a0, uint32_t an, uint32_t b0, uint32_t bn) {
    return uint64_t(a0) < uint64_t(b0) + bn && uint64_t(b0) < uint64_t(a0) + an;
  };
  return overlap(a.originX, a.width, b.originX, b.width) && overlap(a.originY, a.height, b.originY, b.height) &&
         overlap(a.originZ, a.depth, b.originZ, b.depth);
}

}  // namespace

/// Errors: as zeCommandListAppendMemoryCopy, plus INVALID_ARGUMENT (regions of different extents) and
/// OVERLAPPING_REGIONS (same buffer, same pitches, intersecting boxes).
ze_result_t ZE_APICALL zeCommandListAppendMemoryCopyRegion(
    ze_command_list_handle_t hCommandList, void* dstptr, const ze_copy_region_t* dstRegion, uint32_t dstPitch,
    uint32_t dstSlicePitch, const void* srcptr, const ze_copy_region_t* srcRegion, uint32_t srcPitch,
    uint32_t srcSlicePitch, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
    ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemoryCopyRegion");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (dstptr == nullptr || srcptr == nullptr || dstRegion == nullptr || srcRegion == nullptr)
    return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (dstRegion->width != srcRegion->width || dstRegion->height != srcRegion->height ||
      dstRegion->depth != srcRegion->depth)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (dstptr == srcptr && dstPitch == srcPitch && dstSlicePitch == srcSlicePitch &&
      regions_overlap(*dstRegion, *srcRegion))
    return ZE_RESULT_ERROR_OVERLAPPING_REGIONS;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  ze_copy_region_t d = *dstRegion, s = *srcRegion;
  auto* dst = static_cast<unsigned char*>(dstptr);
  auto* src = static_cast<const unsigned char*>(srcptr);
  c->body = [=](cl_command_queue) {
    uint32_t depth = std::max<uint32_t>(1, d.depth), height = std::max<uint32_t>(1, d.height);
    for (uint32_t z = 0; z < depth; ++z)
      for (uint32_t y = 0; y < height; ++y)
        std::memmove(dst + (uint64_t(d.originZ) + z) * dstSlicePitch + (uint64_t(d.originY) + y) * dstPitch + d.originX,
                     src + (uint64_t(s.originZ) + z) * srcSlicePitch + (uint64_t(s.originY) + y) * srcPitch + s.originX,
                     d.width);
    return ZE_RESULT_SUCCESS;
  };
  return finish_command(hCommandList, std::move(c));
}

ze_result_t ZE_APICALL zeCommandListAppendSignalEvent(ze_command_list_handle_t hCommandList,
                                                      ze_event_handle_t hEvent) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendSignalEvent");
  if (hCommandList == nullptr || hEvent == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hEvent, 0, nullptr, &c));
  return finish_command(hCommandList, std::move(c));
}

ze_result_t ZE_APICALL zeCommandListAppendWaitOnEvents(ze_command_list_handle_t hCommandList, uint32_t numEvents,
                                                       ze_event_handle_t* phEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendWaitOnEvents");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (phEvents == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, nullptr, numEvents, phEvents, &c));
  return finish_command(hCommandList, std::move(c));
}

ze_result_t ZE_APICALL zeCommandListAppendEventReset(ze_command_list_handle_t hCommandList,
                                                     ze_event_handle_t hEvent) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendEventReset");
  if (hCommandList == nullptr || hEvent == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_event(hEvent)) return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, nullptr, 0, nullptr, &c));
  c->body = [hEvent](cl_command_queue) {
    reset_event(hEvent);
    return ZE_RESULT_SUCCESS;
  };
  return finish_command(hCommandList, std::move(c));
}

ze_result_t ZE_APICALL zeCommandListAppendWriteGlobalTimestamp(ze_command_list_handle_t hCommandList,
                                                               uint64_t* dstptr, ze_event_handle_t hSignalEvent,
                                                               uint32_t numWaitEvents,
                                                               ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendWriteGlobalTimestamp");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (dstptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  c->body = [dstptr](cl_command_queue) {
    *dstptr = now_ns();
    return ZE_RESULT_SUCCESS;
  };
  return finish_command(hCommandList, std::move(c));
}

ze_result_t ZE_APICALL zeCommandListAppendQueryKernelTimestamps(ze_command_list_handle_t hCommandList,
                                                                uint32_t numEvents, ze_event_handle_t* phEvents,
                                                                void* dstptr, const size_t* pOffsets,
                                                                ze_event_handle_t hSignalEvent,
                                                                uint32_t numWaitEvents,
                                                                ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendQueryKernelTimestamps");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (phEvents == nullptr || dstptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (uint32_t i = 0; i < numEvents; ++i)
    if (!is_event(phEvents[i]) || !(phEvents[i]->pool->flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP))
      return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  std::vector<ze_event_handle_t> events(phEvents, phEvents + numEvents);
  std::vector<size_t> offsets;
  if (pOffsets != nullptr) offsets.assign(pOffsets, pOffsets + numEvents);
  auto* dst = static_cast<unsigned char*>(dstptr);
  c->body = [events, offsets, dst](cl_command_queue) {
    for (size_t i = 0; i < events.size(); ++i) {
      ze_kernel_timestamp_result_t r{};
      r.global.kernelStart = r.context.kernelStart = events[i]->start_ns;
      r.global.kernelEnd = r.context.kernelEnd = events[i]->end_ns;
      size_t off = offsets.empty() ? i * sizeof(r) : offsets[i];
      std::memcpy(dst + off, &r, sizeof(r));
    }
    return ZE_RESULT_SUCCESS;
  };
  return finish_command(hCommandList, std::move(c));
}

// Prefetch and advice are performance hints; on the CPU there is nothing to move.
ze_result_t ZE_APICALL zeCommandListAppendMemoryPrefetch(ze_command_list_handle_t hCommandList, const void* ptr,
                                                         size_t) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemoryPrefetch");
  ZEXCPU_CHECK(check_list(hCommandList));
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeCommandListAppendMemAdvise(ze_command_list_handle_t hCommandList, ze_device_handle_t hDevice,
                                                    const void* ptr, size_t, ze_memory_advice_t advice) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemAdvise");
  if (hCommandList == nullptr || hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (uint32_t(advice) > uint32_t(ZE_MEMORY_ADVICE_BIAS_UNCACHED)) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  ZEXCPU_CHECK(check_list(hCommandList));
  if (!is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

void* extension_function(const char* name) {
  if (std::strcmp(name, "zeCommandListHostSynchronize") == 0)
    return reinterpret_cast<void*>(&zeCommandListHostSynchronize);
  return nullptr;
}

}  // namespace zexcpu
