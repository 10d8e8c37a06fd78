// The Worker that runs command lists and queues, and what it runs (Command, Job); used by
// cmdlist_objects.hpp.
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
  static void stop_all_workers() {
    std::lock_guard<std::mutex> lock(registry_mutex());
    for (Worker* w : registry_set()) w->stop(/*discard=*/true);
  }

  /// Queues `job`; starts the threads on first use (lists that never submit cost no thread).
  /// Errors: ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY when no thread can be started,
  /// ZE_RESULT_ERROR_DEVICE_LOST after stop_all_workers() (the process is exiting).
  ///
  /// A launch that waits for nothing pending, submitted while the worker has nothing to do and the
  /// device has finished everything issued, is issued on the calling thread instead (see issue_here):
  /// a launch the host then waits for costs the application thread -> PoCL -> application thread round
  /// trip of clEnqueueNDRangeKernel + clFinish, not one more thread hand-off first. In a stream of
  /// appends (launches still running) the application thread only queues; the issuing thread issues.
  ze_result_t submit(Job&& job) {
    // Before the job can run: a destroy of one of its signal events from now on waits for its signal.
    for_each_signal(job, 0, begin_signal);
    bool here = false;
    ze_result_t refused = ZE_RESULT_SUCCESS;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) refused = ZE_RESULT_ERROR_DEVICE_LOST;
      if (refused == ZE_RESULT_SUCCESS && !thread_.joinable()) {
        try {
          thread_ = std::thread([this] { loop(); });
        } catch (...) {
          refused = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
        }
      }
      if (refused == ZE_RESULT_SUCCESS) submit_locked(job, &here);
    }
    if (refused != ZE_RESULT_SUCCESS) {
      for_each_signal(job, 0, end_signal);
      return refused;
    }
    if (here) return issue_here(std::move(job));
    cv_.notify_one();
    return ZE_RESULT_SUCCESS;
  }

  /// Calls f(e) for the signal event e of every command of `job` (of its lists from `first_list` on).
  static void for_each_signal(const Job& job, size_t first_list, void (*f)(ze_event_handle_t) noexcept);

  /// Waits until every submitted job has finished (timeout as host_wait). On success returns, and
  /// clears, the first error a job met since the last call (a failed kernel launch: DEVICE_LOST-like).
  ze_result_t wait_idle(uint64_t timeout) {
    if (timeout == UINT64_MAX && !idle()) {
      // Wait on the newest launch's OpenCL event here, as clFinish would, and retire what completed
      // on this thread: not PoCL -> retiring thread -> this thread.
      if (cl_event ev = newest_launch()) {
        clWaitForEvents(1, &ev);  // a failed launch: retire() records the error
        clReleaseEvent(ev);
        retire_completed_here();
      }
    }
    ze_result_t r = host_wait(this, timeout, [&] { return idle(); });
    if (r != ZE_RESULT_SUCCESS) return r;
    ze_result_t err = ZE_RESULT_SUCCESS;
    change_and_notify(this, [&] { std::swap(err, error_); });
    return err;
  }

  /// Lets queued jobs run (or, with `discard`, drops those that have not started), except those
  /// still waiting on events (they are dropped: the application destroys a list or queue that the
  /// device still references, which the specification forbids), then joins the threads once what
  /// was issued has retired. Idempotent and thread-safe.
  void stop(bool discard = false) {
    std::lock_guard<std::mutex> stop_lock(stop_mutex_);
    uint64_t dropped = 0;
    std::deque<Job> discarded;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
      if (discard) {
        dropped = jobs_.size();
        discarded.swap(jobs_);
      }
    }
    for (const Job& job : discarded) for_each_signal(job, 0, end_signal);  // they never signal
    cv_.notify_all();
    abort_.store(true, std::memory_order_release);
    notify_all_waiters();  // the worker may wait on any event, in any shard
    if (thread_.joinable()) thread_.join();  // it joins the retiring thread before it returns
    if (dropped > 0)
      change_and_notify(this, [&] { finished_.fetch_add(dropped, std::memory_order_release); });
    if (newest_ != nullptr) {
      clReleaseEvent(newest_);
      newest_ = nullptr;
    }
    if (queue_ != nullptr) {
      clReleaseCommandQueue(queue_);
      queue_ = nullptr;
    }
  }

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
  void set_newest_launch(cl_event ev) {
    if (clRetainEvent(ev) != CL_SUCCESS) return;
    cl_event old;
    {
      std::lock_guard<std::mutex> lock(newest_mutex_);
      old = newest_;
      newest_ = ev;
    }
    if (old != nullptr) clReleaseEvent(old);
  }
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
  void submit_locked(Job& job, bool* here) {
    submitted_.fetch_add(1, std::memory_order_relaxed);
    *here = ready_ && issuer_ == Issuer::none && jobs_.empty() && issuable_here(job) && device_idle();
    if (*here) {
      issuer_ = Issuer::caller;  // the issuing state (queue_, taken_, ...) is this thread's until released
      ++taken_;
    } else {
      jobs_.push_back(std::move(job));
    }
  }

  /// What submit may issue on the calling thread: one launch, without a kernel timestamp (those drain
  /// first: retire_all blocks), whose waits are all signalled already (a blocking wait would block the
  /// application's append).
  static bool issuable_here(const Job& job) {
    const Command* c = job.command.get();
    if (c == nullptr || !c->launch) return false;
    if (c->signal && (c->signal->pool_flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP)) return false;
    for (const EventRef& e : c->waits)
      if (!e->signalled.load(std::memory_order_acquire)) return false;
    return true;
  }

  /// Runs `job` on the calling thread, which holds the issuing state (Issuer::caller), as the issuing
  /// thread would; then gives the state back and wakes the issuing thread if jobs were queued meanwhile.
  ze_result_t issue_here(Job&& job) {
    bool counted = false;
    execute(*job.command, &counted, /*here=*/true);  // its own hand-off counts the job (counted)
    if (!counted) ++unfinished_jobs_;
    if (unretired()) hand_off(Retirement{});
    bool wake;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      issuer_ = Issuer::none;
      wake = !jobs_.empty() || stopping_;
    }
    if (wake) cv_.notify_one();
    return ZE_RESULT_SUCCESS;
  }

  // ---- the issuing thread --------------------------------------------------------------------------

  void loop() {
    pthread_setname_np(pthread_self(), "zex-cpu worker");  // what debuggers and top show
    cl_int err = CL_SUCCESS;
    queue_ = clCreateCommandQueueWithProperties(platform().context, platform().device, nullptr, &err);
    try {
      retirer_ = std::thread([this] { retire_loop(); });
    } catch (...) {
      // No second thread: hand_off() retires on this thread (each signal then waits, as a drain).
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready_ = true;  // submit may issue on the application's thread from now on
    }
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (issuer_ == Issuer::worker) issuer_ = Issuer::none;  // the job it ran has been issued
        for (;;) {
          if (issuer_ == Issuer::caller) {  // an application thread issues: it wakes this one after
            cv_.wait(lock);
            continue;
          }
          if (!jobs_.empty() || stopping_) break;
          if (unretired()) {  // nothing else to do: hand over what ran before sleeping
            issuer_ = Issuer::worker;
            lock.unlock();
            hand_off(Retirement{});
            lock.lock();
            issuer_ = Issuer::none;
            continue;
          }
          cv_.wait(lock);
        }
        if (jobs_.empty()) break;  // stopping, and everything queued has run
        job = std::move(jobs_.front());
        jobs_.pop_front();
        ++taken_;
        issuer_ = Issuer::worker;
      }
      bool completed = true;
      bool counted = false;  // the job's last command counted it already (see execute)
      if (job.command) {
        completed = execute(*job.command, &counted);
      } else {
        for (size_t i = 0; i < job.lists.size(); ++i)
          if (!(completed = execute_list(job.lists[i]))) {
            for_each_signal(job, i + 1, end_signal);  // the lists after it do not run
            break;
          }
      }
      if (!counted) ++unfinished_jobs_;
      if (job.fence != nullptr && completed) {
        Retirement r;  // the fence says that everything of this execution has finished
        r.fence = job.fence;
        hand_off(std::move(r));
      }
    }
    if (unretired()) hand_off(Retirement{});
    if (retirer_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(retire_mutex_);
        retire_stop_ = true;
      }
      retire_cv_.notify_one();
      retirer_.join();
    }
  }

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
  void hand_off(Retirement&& r) {
    r.launches.swap(unretired_launches_);
    r.jobs = unfinished_jobs_;
    unfinished_jobs_ = 0;
    r.error = error_pending_;
    error_pending_ = ZE_RESULT_SUCCESS;
    if (r.event == nullptr && !r.launches.empty() && queue_ != nullptr) {
      if (clEnqueueMarkerWithWaitList(queue_, 0, nullptr, &r.event) != CL_SUCCESS) {
        r.event = nullptr;  // no marker: wait here instead
        if (clFinish(queue_) != CL_SUCCESS && r.error == ZE_RESULT_SUCCESS) r.error = ZE_RESULT_ERROR_DEVICE_LOST;
      }
    }
    if (!retirer_.joinable()) {
      retire(r);
      return;
    }
    const size_t n = r.launches.size();
    bool wake;
    {
      std::unique_lock<std::mutex> lock(retire_mutex_);
      // A Retirement that only counts jobs joins the last one queued, if the retiring thread has not
      // taken it yet: one wake-up instead of two for a signalled launch followed by going idle.
      bool merge = r.event == nullptr && r.signal == nullptr && r.fence == nullptr && n == 0 &&
                   !retire_queue_.empty();
      if (merge) {
        Retirement& last = retire_queue_.back();
        last.jobs += r.jobs;
        if (last.error == ZE_RESULT_SUCCESS) last.error = r.error;
      } else {
        retire_queue_.push_back(std::move(r));
        ++handed_off_;
        retiring_launches_ += n;
      }
      wake = retirer_sleeping_;
      if (retiring_launches_ > kMaxRetiring) {  // back pressure (see kMaxRetiring)
        if (wake) retire_cv_.notify_one();  // it must run for the wait to end
        wake = false;
        issuer_waiting_ = true;
        retired_cv_.wait(lock, [&] { return retiring_launches_ <= kMaxRetiring / 2; });
        issuer_waiting_ = false;
      }
    }
    if (wake) retire_cv_.notify_one();
  }

  /// Hands off what is not retired yet and waits until the retiring thread has retired everything
  /// handed to it: every earlier command has finished and signalled its event.
  void retire_all() {
    if (unretired()) hand_off(Retirement{});
    if (!retirer_.joinable()) return;
    std::unique_lock<std::mutex> lock(retire_mutex_);
    issuer_waiting_ = true;
    retired_cv_.wait(lock, [&] { return retired_ == handed_off_; });
    issuer_waiting_ = false;
  }

  /// Runs the commands of a regular list; false if one was abandoned (the worker is stopping): the
  /// signals of those after it end unsignalled.
  bool execute_list(ze_command_list_handle_t list);

  /// Runs one command; false if it was abandoned because the worker is stopping (its signal then ends
  /// unsignalled: end_signal). With `job_done`, the command is the whole job: a signal's Retirement then
  /// also counts the job finished (*job_done = true), so a signalled append costs one hand-off, not a
  /// second one when the worker goes idle.
  bool execute(const Command& c, bool* job_done = nullptr, bool here = false) {
    if (!c.waits.empty()) {
      bool ready = true;
      for (const EventRef& e : c.waits) ready = ready && e->signalled.load(std::memory_order_acquire);
      // About to block: do not hold back the retirement of what already ran (jobs, launches) meanwhile.
      if (!ready && unretired()) hand_off(Retirement{});
      if (!wait_events(c.waits.data(), c.waits.size(), &abort_)) {
        if (c.signal) end_signal(c.signal.get());
        return false;
      }
    }
    uint64_t start = 0;
    if (c.signal) {
      // A kernel timestamp starts when the command starts, not while earlier commands still run: the
      // one case where the issuing thread drains (pools without timestamps pipeline).
      if (c.signal->pool_flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) retire_all();
      start = now_ns();
    }
    Retirement r;
    r.signal = c.signal.get();
    r.start_ns = start;
    if (queue_ == nullptr && (c.launch || c.body)) {
      record(ZE_RESULT_ERROR_DEVICE_LOST);  // no OpenCL queue: nothing can run
    } else if (c.launch) {
      // Enqueued without waiting. A signalled launch hands its own OpenCL event to the retiring thread:
      // on the in-order queue, its completion means that it and everything before it has finished.
      //
      // The newest job's launch also keeps its event for a host's wait_idle (newest_launch), and a launch
      // issued on the application's thread is retired on its own event (no marker).
      const bool newest = submitted_.load(std::memory_order_relaxed) == taken_;
      const bool own_event = c.signal || here || newest;
      ze_result_t e = c.launch->enqueue(queue_, own_event ? &r.event : nullptr);
      record(e);
      if (e == ZE_RESULT_SUCCESS && r.event != nullptr && newest) set_newest_launch(r.event);
      // A host thread waiting for the signal may then wait on the OpenCL event itself (settle_event).
      // Only for the newest job (a host that waits typically waits for that one; arming costs an
      // allocation and two locks, which a stream of appends the issuing thread lags behind would pay
      // per launch), and only with no unarmed signal still to retire: a host wait must not see this
      // signal before an earlier one of the list. Not for timestamp pools: their end time is when this
      // thread sees the launch complete.
      if (e == ZE_RESULT_SUCCESS && r.event != nullptr && c.signal && !(c.signal->pool_flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP) &&
          newest && unarmed_pending_.load(std::memory_order_acquire) == 0) {
        r.armed = arm_event(r.signal, r.event, start);
      }
      if (e == ZE_RESULT_SUCCESS) unretired_launches_.push_back(c.launch);
      if (!c.signal && !here && r.event != nullptr) {  // kept by newest_launch only
        clReleaseEvent(r.event);
        r.event = nullptr;
      }
      if (!c.signal && !here && unretired_launches_.size() >= kMaxUnretired) hand_off(Retirement{});
    } else if (c.body) {
      // Copies and fills run on this thread: earlier kernels must have finished, and earlier signals
      // must have happened (an event reset, or a timestamp query, reads what they wrote).
      retire_all();
      record(c.body(queue_));
    }
    // Signalled even when the command failed, so that nothing waits forever on a failed command.
    if (c.signal || here) {
      if (c.signal && !r.armed) unarmed_pending_.fetch_add(1, std::memory_order_relaxed);
      if (job_done != nullptr) {
        ++unfinished_jobs_;
        *job_done = true;
      }
      hand_off(std::move(r));
    }
    return true;
  }

  // ---- the retiring thread -------------------------------------------------------------------------

  // Retirements are taken from the front of retire_queue_ one at a time, under retire_mutex_, by the
  // retiring thread or by a host thread in wait_idle (retire_completed_here); retire_busy_ lets only
  // one of them retire at a time, so that signals keep their order.

  static bool complete(cl_event ev) {
    return cl_status(ev, CL_COMPLETE) <= CL_COMPLETE;  // a failed query: retire() finds out what went wrong
  }

  /// Retires the front of retire_queue_; `lock` holds retire_mutex_ (released meanwhile).
  void retire_front(std::unique_lock<std::mutex>& lock) {
    Retirement r = std::move(retire_queue_.front());
    retire_queue_.pop_front();
    retire_busy_ = true;
    lock.unlock();
    const size_t n = r.launches.size();
    retire(r);
    lock.lock();
    retire_busy_ = false;
    ++retired_;
    retiring_launches_ -= n;
    if (issuer_waiting_) retired_cv_.notify_all();
    if (retirer_sleeping_) retire_cv_.notify_one();  // a host thread retired: the retiring thread goes on
  }

  /// A host thread that has seen the newest launch complete retires what has completed itself,
  /// instead of sleeping until the retiring thread (woken by the same completion) has.
  void retire_completed_here() {
    std::unique_lock<std::mutex> lock(retire_mutex_);
    while (!retire_busy_ && !retire_queue_.empty() &&
           (retire_queue_.front().event == nullptr || complete(retire_queue_.front().event)))
      retire_front(lock);
  }

  void retire_loop() {
    pthread_setname_np(pthread_self(), "zex-cpu retire");
    std::unique_lock<std::mutex> lock(retire_mutex_);
    bool force = false;  // the last wait on the front failed: retire it as it is (retire() records why)
    for (;;) {
      if (retire_busy_ || retire_queue_.empty()) {
        if (retire_stop_ && !retire_busy_) return;  // stopping, and everything handed off has retired
        retirer_sleeping_ = true;
        retire_cv_.wait(lock);
        retirer_sleeping_ = false;
        continue;
      }
      cl_event ev = retire_queue_.front().event;
      if (!force && ev != nullptr && !complete(ev)) {
        // Wait without taking it: a host thread woken by the same completion may retire it first.
        // The flush of clWaitForEvents also makes PoCL run what was enqueued even if nothing else waits.
        clRetainEvent(ev);
        lock.unlock();
        force = clWaitForEvents(1, &ev) != CL_SUCCESS;
        clReleaseEvent(ev);
        lock.lock();
        if (force && (retire_queue_.empty() || retire_queue_.front().event != ev)) force = false;
        continue;
      }
      force = false;
      retire_front(lock);
    }
  }

  /// Finishes one Retirement (on the retiring thread, or on the issuing thread when there is none).
  void retire(Retirement& r) {
    ze_result_t err = r.error;
    if (r.event != nullptr) {
      // Completed already (the common case in a stream of short launches)? Then no clWaitForEvents, whose
      // flush of the queue would wake PoCL's threads for nothing. Otherwise wait: the flush makes PoCL run
      // what was enqueued even if nothing else ever waits on it. A negative status is a failed command.
      cl_int status = cl_status(r.event, CL_QUEUED);
      if (status > CL_COMPLETE && clWaitForEvents(1, &r.event) != CL_SUCCESS) status = -1;
      if (status < CL_COMPLETE && err == ZE_RESULT_SUCCESS) err = ZE_RESULT_ERROR_DEVICE_LOST;
    }
    for (const auto& l : r.launches) l->completed();
    r.launches.clear();
    if (r.signal != nullptr) {
      if (r.armed) {
        signal_armed_event(r.signal, *r.armed, now_ns());
      } else {
        signal_event(r.signal, r.start_ns, now_ns());
        unarmed_pending_.fetch_sub(1, std::memory_order_release);
      }
      end_signal(r.signal);  // may free the event: nothing reads r.signal after this
    }
    if (r.event != nullptr) {
      clReleaseEvent(r.event);
      r.event = nullptr;
    }
    if (r.fence != nullptr) signal_fence(r.fence);
    if (r.jobs > 0 || err != ZE_RESULT_SUCCESS) {
      change_and_notify(this, [&] {
        if (err != ZE_RESULT_SUCCESS && error_ == ZE_RESULT_SUCCESS) error_ = err;
        finished_.fetch_add(r.jobs, std::memory_order_release);
      });
    }
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
