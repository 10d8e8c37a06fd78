// The Worker that runs command lists and queues, and what it runs (Command, Job); used by
// cmdlist_objects.hpp.
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
#pragma once

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
