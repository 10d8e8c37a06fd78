// The Worker's issuing and retiring threads (worker.hpp describes the execution model).
#include "worker.hpp"

namespace zexcpu {

void Worker::stop_all_workers() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (Worker* w : registry_set()) w->stop(/*discard=*/true);
}

ze_result_t Worker::submit(Job&& job) {
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

ze_result_t Worker::wait_idle(uint64_t timeout) {
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

void Worker::stop(bool discard) {
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

void Worker::set_newest_launch(cl_event ev) {
  if (clRetainEvent(ev) != CL_SUCCESS) return;
  cl_event old;
  {
    std::lock_guard<std::mutex> lock(newest_mutex_);
    old = newest_;
    newest_ = ev;
  }
  if (old != nullptr) clReleaseEvent(old);
}

void Worker::submit_locked(Job& job, bool* here) {
  submitted_.fetch_add(1, std::memory_order_relaxed);
  *here = ready_ && issuer_ == Issuer::none && jobs_.empty() && issuable_here(job) && device_idle();
  if (*here) {
    issuer_ = Issuer::caller;  // the issuing state (queue_, taken_, ...) is this thread's until released
    ++taken_;
  } else {
    jobs_.push_back(std::move(job));
  }
}

bool Worker::issuable_here(const Job& job) {
  const Command* c = job.command.get();
  if (c == nullptr || !c->launch) return false;
  if (c->signal && (c->signal->pool_flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP)) return false;
  for (const EventRef& e : c->waits)
    if (!e->signalled.load(std::memory_order_acquire)) return false;
  return true;
}

ze_result_t Worker::issue_here(Job&& job) {
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

void Worker::loop() {
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

void Worker::hand_off(Retirement&& r) {
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

void Worker::retire_all() {
  if (unretired()) hand_off(Retirement{});
  if (!retirer_.joinable()) return;
  std::unique_lock<std::mutex> lock(retire_mutex_);
  issuer_waiting_ = true;
  retired_cv_.wait(lock, [&] { return retired_ == handed_off_; });
  issuer_waiting_ = false;
}

bool Worker::execute(const Command& c, bool* job_done, bool here) {
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

void Worker::retire_front(std::unique_lock<std::mutex>& lock) {
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

void Worker::retire_completed_here() {
  std::unique_lock<std::mutex> lock(retire_mutex_);
  while (!retire_busy_ && !retire_queue_.empty() &&
         (retire_queue_.front().event == nullptr || complete(retire_queue_.front().event)))
    retire_front(lock);
}

void Worker::retire_loop() {
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

void Worker::retire(Retirement& r) {
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

void Worker::registry(Worker* w, bool add) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  if (add)
    registry_set().insert(w);
  else
    registry_set().erase(w);
}

}  // namespace zexcpu
