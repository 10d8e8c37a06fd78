// The Worker that runs command lists and queues, and what it runs (Command, Job); used by
// cmdlist_objects.hpp. The threads' code is in worker.cpp (execute_list and for_each_signal, which
// need the list object, in command_queue.cpp).
//
// Execution model: every immediate list and every command queue owns a Worker: one in-order OpenCL
// queue and two threads. The *issuing* thread runs the jobs in submission order: it waits for each
// command's wait events, enqueues kernel launches on the OpenCL queue without waiting for them
// (LaunchCommand::enqueue), and runs copies and fills itself (memcpy/pattern loops: all USM is host
// memory). (A signalled launch submitted to an idle worker is issued on the application's thread
// instead: submit/issue_here.) The *retiring* thread finishes commands in the same order: the issuing thread hands it a
// Retirement (an OpenCL event, the Level Zero event to signal, the launches to mark completed, the
// jobs to count finished), and the retiring thread waits for the OpenCL event, then signals. So an
// event signalled by a launch costs a hand-off, not a drain of the OpenCL queue: signalled launches
// pipeline like unsignalled ones, as a post-sync write does on a GPU. Work is in order per list or
// queue and concurrent across lists and queues, as on a GPU with several engines. A wait on events
// blocks the issuing thread on a condition variable (the sharded waiters of objects.hpp); nothing
// polls or sleeps.
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
/// signal `signal` (if any). It holds its events (EventRef): the application may destroy them first.
struct Command {
  std::vector<EventRef> waits;
  EventRef signal;
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

/// What the retiring thread finishes, in order: once `event` is complete (null: nothing beyond the
/// earlier retirements), everything enqueued before it has finished, so it marks `launches` completed,
/// signals `signal` and `fence`, and counts `jobs` finished (recording `error` first).
struct Retirement {
  cl_event event = nullptr;  // owned: released once waited for
  ze_event_handle_t signal = nullptr;  // held by its submission (begin_signal) until retired (end_signal)
  std::shared_ptr<ArmedSignal> armed;  // `signal`'s claim (arm_event): signalled only while it is live
  uint64_t start_ns = 0;  // the signal's kernel timestamp start; the end is when `event` is seen complete
  ze_fence_handle_t fence = nullptr;
  std::vector<std::shared_ptr<LaunchCommand>> launches;
  uint64_t jobs = 0;
  ze_result_t error = ZE_RESULT_SUCCESS;
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
  static void stop_all_workers();

  /// Queues `job`; starts the threads on first use (lists that never submit cost no thread).
  /// Errors: ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY when no thread can be started,
  /// ZE_RESULT_ERROR_DEVICE_LOST after stop_all_workers() (the process is exiting).
  ///
  /// A launch that waits for nothing pending, submitted while the worker has nothing to do and the
  /// device has finished everything issued, is issued on the calling thread instead (see issue_here):
  /// a launch the host then waits for costs the application thread -> PoCL -> application thread round
  /// trip of clEnqueueNDRangeKernel + clFinish, not one more thread hand-off first. In a stream of
  /// appends (launches still running) the application thread only queues; the issuing thread issues.
  ze_result_t submit(Job&& job);

  /// Calls f(e) for the signal event e of every command of `job` (of its lists from `first_list` on).
  static void for_each_signal(const Job& job, size_t first_list, void (*f)(ze_event_handle_t) noexcept);

  /// Waits until every submitted job has finished (timeout as host_wait). On success returns, and
  /// clears, the first error a job met since the last call (a failed kernel launch: DEVICE_LOST-like).
  ze_result_t wait_idle(uint64_t timeout);

  /// Lets queued jobs run (or, with `discard`, drops those that have not started), except those
  /// still waiting on events (they are dropped: the application destroys a list or queue that the
  /// device still references, which the specification forbids), then joins the threads once what
  /// was issued has retired. Idempotent and thread-safe.
  void stop(bool discard = false);

 private:
  // Unsignalled launches enqueued since the last retirement: at most this many before the issuing
  // thread hands them to the retiring thread under a marker (so their completed() bookkeeping and
  // the jobs they finish are not held back by a long stream of appends).
  static constexpr size_t kMaxUnretired = 256;
  // Launches handed to the retiring thread and not retired yet: above this many the issuing thread
  // waits until half have retired, so PoCL's queue (and the Retirement queue) stay bounded when the
  // application appends faster than kernels run.
  static constexpr size_t kMaxRetiring = 1024;

  /// Keeps `ev` (retained) as the newest launch's OpenCL event.
  void set_newest_launch(cl_event ev);
  /// The newest launch's OpenCL event, retained for the caller (null if none).
  cl_event newest_launch() {
    std::lock_guard<std::mutex> lock(newest_mutex_);
    if (newest_ != nullptr && clRetainEvent(newest_) != CL_SUCCESS) return nullptr;
    return newest_;
  }
  /// True when every launch issued so far has finished (or failed).
  bool device_idle() {
    std::lock_guard<std::mutex> lock(newest_mutex_);
    return newest_ == nullptr || cl_status(newest_, CL_QUEUED) <= CL_COMPLETE;
  }

  bool idle() const {
    return finished_.load(std::memory_order_acquire) == submitted_.load(std::memory_order_acquire);
  }

  // Who holds the issuing state (queue_, taken_, unretired_launches_, unfinished_jobs_, error_pending_):
  // the issuing thread while it runs a job or hands off, an application thread in issue_here, or
  // nobody while the issuing thread sleeps. Changed under mutex_, which orders the holders.
  enum class Issuer { none, worker, caller };

  /// submit's part under mutex_: queues `job`, or takes the issuing state to issue it here (*here).
  void submit_locked(Job& job, bool* here);

  /// What submit may issue on the calling thread: one launch, without a kernel timestamp (those drain
  /// first: retire_all blocks), whose waits are all signalled already (a blocking wait would block the
  /// application's append).
  static bool issuable_here(const Job& job);

  /// Runs `job` on the calling thread, which holds the issuing state (Issuer::caller), as the issuing
  /// thread would; then gives the state back and wakes the issuing thread if jobs were queued meanwhile.
  ze_result_t issue_here(Job&& job);

  // ---- the issuing thread --------------------------------------------------------------------------

  void loop();

  /// True when something ran that no Retirement covers yet.
  bool unretired() const {
    return !unretired_launches_.empty() || unfinished_jobs_ > 0 || error_pending_ != ZE_RESULT_SUCCESS;
  }

  void record(ze_result_t r) {
    if (r != ZE_RESULT_SUCCESS && error_pending_ == ZE_RESULT_SUCCESS) error_pending_ = r;
  }

  /// Gives `r` everything not yet retired (launches, finished jobs, error) and queues it for the
  /// retiring thread. Without an event of its own, `r` gets a marker when launches are in flight: on
  /// the in-order queue, the marker completes when they have.
  void hand_off(Retirement&& r);

  /// Hands off what is not retired yet and waits until the retiring thread has retired everything
  /// handed to it: every earlier command has finished and signalled its event.
  void retire_all();

  /// Runs the commands of a regular list; false if one was abandoned (the worker is stopping): the
  /// signals of those after it end unsignalled.
  bool execute_list(ze_command_list_handle_t list);

  /// Runs one command; false if it was abandoned because the worker is stopping (its signal then ends
  /// unsignalled: end_signal). With `job_done`, the command is the whole job: a signal's Retirement then
  /// also counts the job finished (*job_done = true), so a signalled append costs one hand-off, not a
  /// second one when the worker goes idle.
  bool execute(const Command& c, bool* job_done = nullptr, bool here = false);

  // ---- the retiring thread -------------------------------------------------------------------------

  // Retirements are taken from the front of retire_queue_ one at a time, under retire_mutex_, by the
  // retiring thread or by a host thread in wait_idle (retire_completed_here); retire_busy_ lets only
  // one of them retire at a time, so that signals keep their order.

  static bool complete(cl_event ev) {
    return cl_status(ev, CL_COMPLETE) <= CL_COMPLETE;  // a failed query: retire() finds out what went wrong
  }

  /// Retires the front of retire_queue_; `lock` holds retire_mutex_ (released meanwhile).
  void retire_front(std::unique_lock<std::mutex>& lock);

  /// A host thread that has seen the newest launch complete retires what has completed itself,
  /// instead of sleeping until the retiring thread (woken by the same completion) has.
  void retire_completed_here();

  void retire_loop();

  /// Finishes one Retirement (on the retiring thread, or on the issuing thread when there is none).
  void retire(Retirement& r);

  // Every live worker, for stop_all_workers(); both never destroyed (used during exit).
  static std::mutex& registry_mutex() {
    static auto* m = new std::mutex;
    return *m;
  }
  static std::set<Worker*>& registry_set() {
    static auto* s = new std::set<Worker*>;
    return *s;
  }
  static void registry(Worker* w, bool add);

  std::mutex stop_mutex_;  // serializes stop(): the application and the exit handler may race
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  bool ready_ = false;
  std::mutex newest_mutex_;
  cl_event newest_ = nullptr;  // the newest job's launch (retained), under newest_mutex_  // the OpenCL queue and the retiring thread exist (under mutex_)
  Issuer issuer_ = Issuer::none;  // under mutex_
  std::atomic<bool> abort_{false};
  std::atomic<uint64_t> submitted_{0};
  std::atomic<uint64_t> finished_{0};
  ze_result_t error_ = ZE_RESULT_SUCCESS;  // under the mutex of this worker's waiters shard
  std::thread thread_;
  // The issuing state: the issuing thread's, or an application thread's in issue_here (issuer_):
  cl_command_queue queue_ = nullptr;
  std::thread retirer_;
  std::vector<std::shared_ptr<LaunchCommand>> unretired_launches_;  // enqueued, in no Retirement yet
  uint64_t unfinished_jobs_ = 0;  // run (or in flight), in no Retirement yet
  uint64_t taken_ = 0;            // jobs taken from jobs_ (== submitted_: this is the newest job)
  // Unarmed signals handed off and not yet signalled (the issuing thread arms a signal only when there
  // are none, so that a host's early settle of it cannot overtake them).
  std::atomic<uint64_t> unarmed_pending_{0};
  ze_result_t error_pending_ = ZE_RESULT_SUCCESS;
  // Between the issuing and the retiring thread, under retire_mutex_:
  std::mutex retire_mutex_;
  std::condition_variable retire_cv_;   // the retiring thread waits for Retirements
  std::condition_variable retired_cv_;  // the issuing thread waits for retirements (retire_all, back pressure)
  std::deque<Retirement> retire_queue_;
  uint64_t handed_off_ = 0;  // Retirements queued, merged ones not counted
  uint64_t retired_ = 0;
  size_t retiring_launches_ = 0;  // launches in queued Retirements not retired yet
  bool retire_stop_ = false;
  bool retirer_sleeping_ = false;
  bool retire_busy_ = false;  // a Retirement taken from the queue is being retired
  bool issuer_waiting_ = false;
};

}  // namespace zexcpu
