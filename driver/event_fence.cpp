// Event pools, events and fences. An event is a flag plus kernel timestamps; a fence is a flag that a
// command queue sets when an execution finishes. All waiting, on the host and on the workers that run
// command lists, goes through the sharded waiters of objects.hpp: no polling, no sleeps.
#include "device_loss.hpp"
#include "objects.hpp"

#include <new>

namespace zexcpu {

namespace {
constexpr size_t kShards = 64;
Waiters* shards() {
  static auto* w = new Waiters[kShards];  // never destroyed: workers may still wait during exit
  return w;
}
}  // namespace

Waiters& waiters(const void* object) {
  auto p = reinterpret_cast<uintptr_t>(object);
  return shards()[((p >> 6) ^ (p >> 12) ^ (p >> 20)) % kShards];
}

void notify_all_waiters() {
  Waiters* w = shards();
  for (size_t i = 0; i < kShards; ++i) {
    // Taking the mutex orders this wake-up after any waiter's predicate check: none is lost.
    { std::lock_guard<std::mutex> lock(w[i].mutex); }
    w[i].cv.notify_all();
  }
}

void signal_event(ze_event_handle_t e, uint64_t start_ns, uint64_t end_ns) {
  change_and_notify(e, [&] {
    e->start_ns = start_ns;
    e->end_ns = end_ns;
    e->signalled.store(1, std::memory_order_release);
  });
}

void reset_event(ze_event_handle_t e) {
  std::shared_ptr<ArmedSignal> claim;  // released after the mutex
  change_and_notify(e, [&] {
    // A queued reset of an event destroyed since: with no signal to come, it stays signalled (abandoned).
    if (e->destroyed.load(std::memory_order_seq_cst) && e->pending.load(std::memory_order_seq_cst) == 0) return;
    if (e->armed) e->armed->live = false;
    claim.swap(e->armed);
    e->signalled.store(0, std::memory_order_release);
  });
}

void release_event(ze_event_handle_t e) noexcept {
  if (e->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete e;
}

namespace {
/// Signals a destroyed event that nothing will signal any more, unless it is signalled already.
void abandon(ze_event_handle_t e) {
  change_and_notify(e, [&] {
    if (e->signalled.load(std::memory_order_acquire)) return;
    e->start_ns = e->end_ns = now_ns();
    e->signalled.store(1, std::memory_order_release);
  });
}
}  // namespace

void end_signal(ze_event_handle_t e) noexcept {
  // seq_cst here and in zeEventDestroy (destroyed, then pending): of a destroy and the last end racing,
  // at least one sees the other, so an event that nothing signals is abandoned by one of them.
  if (e->pending.fetch_sub(1, std::memory_order_seq_cst) == 1 && e->destroyed.load(std::memory_order_seq_cst))
    abandon(e);
  release_event(e);
}

std::shared_ptr<ArmedSignal> arm_event(ze_event_handle_t e, cl_event ev, uint64_t start_ns) noexcept {
  if (clRetainEvent(ev) != CL_SUCCESS) return nullptr;
  std::shared_ptr<ArmedSignal> claim;
  try {
    claim = std::make_shared<ArmedSignal>(ev, start_ns);
  } catch (...) {
    clReleaseEvent(ev);
    return nullptr;  // not armed: the retiring thread signals as usual
  }
  std::shared_ptr<ArmedSignal> old = claim;
  // Notified: a host thread that reached zeEventHostSynchronize before the launch was armed sleeps
  // until it is signalled or armed, and then waits on the OpenCL event itself (settle_event).
  change_and_notify(e, [&] {
    if (e->armed) e->armed->live = false;  // the event reused without a reset: the newer launch counts
    std::swap(old, e->armed);
  });
  return claim;
}

void signal_armed_event(ze_event_handle_t e, const ArmedSignal& claim, uint64_t end_ns) {
  std::shared_ptr<ArmedSignal> ended;  // released after the mutex
  // waiters(e) only hashes the address: `e` itself is read only once the claim is known live.
  change_and_notify(e, [&] {
    if (!claim.live) return;
    ended.swap(e->armed);  // == &claim
    ended->live = false;
    e->start_ns = claim.start_ns;
    e->end_ns = end_ns;
    e->signalled.store(1, std::memory_order_release);
  });
}

bool settle_event(ze_event_handle_t e, bool block) {
  std::shared_ptr<ArmedSignal> claim;
  {
    std::lock_guard<std::mutex> lock(waiters(e).mutex);
    if (e->signalled.load(std::memory_order_acquire)) return true;
    if (!e->armed) return false;
    claim = e->armed;
  }
  cl_int status = cl_status(claim->ev, CL_QUEUED);
  // A failed launch (negative status) signals too, as the retiring thread does; the list reports it.
  if (status > CL_COMPLETE && block && clWaitForEvents(1, &claim->ev) != CL_SUCCESS) status = -1;
  if (status <= CL_COMPLETE) signal_armed_event(e, *claim, now_ns());
  return e->signalled.load(std::memory_order_acquire) != 0;
}

bool wait_events(const EventRef* events, size_t n, const std::atomic<bool>* abort) {
  for (size_t i = 0; i < n; ++i) {
    ze_event_handle_t e = events[i].get();
    if (e->signalled.load(std::memory_order_acquire)) continue;  // the common case takes no lock
    Waiters& w = waiters(e);
    std::unique_lock<std::mutex> lock(w.mutex);
    w.cv.wait(lock, [&] {
      return e->signalled.load(std::memory_order_acquire) != 0 || abort->load(std::memory_order_acquire);
    });
    if (e->signalled.load(std::memory_order_acquire) == 0) return false;
  }
  return true;
}

void signal_fence(ze_fence_handle_t f) {
  change_and_notify(f, [&] { f->signalled.store(1, std::memory_order_release); });
}

namespace {

constexpr ze_event_pool_flags_t kPoolFlags =
    ZE_EVENT_POOL_FLAG_HOST_VISIBLE | ZE_EVENT_POOL_FLAG_IPC | ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
constexpr ze_event_scope_flags_t kScopeFlags =
    ZE_EVENT_SCOPE_FLAG_SUBDEVICE | ZE_EVENT_SCOPE_FLAG_DEVICE | ZE_EVENT_SCOPE_FLAG_HOST;

ze_result_t check_event(ze_event_handle_t h) {
  if (h == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_event(h)) return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  return ZE_RESULT_SUCCESS;
}

ze_result_t check_fence(ze_fence_handle_t h) {
  if (h == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_fence(h)) return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  return ZE_RESULT_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Event pools

}  // namespace

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ENUMERATION (flags), INVALID_SIZE (count
/// 0, or phDevices null with numDevices > 0), INVALID_ARGUMENT (foreign context or device).
ze_result_t ZE_APICALL zeEventPoolCreate(ze_context_handle_t hContext, const ze_event_pool_desc_t* desc,
                                         uint32_t numDevices, ze_device_handle_t* phDevices,
                                         ze_event_pool_handle_t* phEventPool) {
  ZEXCPU_FAULT_POINT("zeEventPoolCreate");
  if (hContext == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || phEventPool == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->flags & ~kPoolFlags) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (desc->count == 0 || (numDevices > 0 && phDevices == nullptr)) return ZE_RESULT_ERROR_INVALID_SIZE;
  if (!is_context(hContext)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < numDevices; ++i) {
    if (phDevices[i] == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!is_device(phDevices[i])) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  auto* p = new (std::nothrow) _ze_event_pool_handle_t;
  if (p == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  p->context = hContext;
  p->flags = desc->flags;
  p->count = desc->count;
  *phEventPool = p;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeEventPoolDestroy(ze_event_pool_handle_t hEventPool) {
  ZEXCPU_DESTROY_POINT("zeEventPoolDestroy", hEventPool);
  if (hEventPool == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (hEventPool->magic != kEventPoolMagic) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  hEventPool->magic = kDeadMagic;
  delete hEventPool;
  return ZE_RESULT_SUCCESS;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Events

}  // namespace

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ENUMERATION (signal/wait scopes),
/// INVALID_ARGUMENT (index >= the pool's count, as Intel's driver answers).
ze_result_t ZE_APICALL zeEventCreate(ze_event_pool_handle_t hEventPool, const ze_event_desc_t* desc,
                                     ze_event_handle_t* phEvent) {
  ZEXCPU_FAULT_POINT("zeEventCreate");
  if (hEventPool == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || phEvent == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if ((desc->signal & ~kScopeFlags) || (desc->wait & ~kScopeFlags)) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (hEventPool->magic != kEventPoolMagic) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (desc->index >= hEventPool->count) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  auto* e = new (std::nothrow) _ze_event_handle_t;
  if (e == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  e->pool_flags = hEventPool->flags;
  e->index = desc->index;
  *phEvent = e;
  return ZE_RESULT_SUCCESS;
}

/// The handle dies; the event lives on while commands still signal or wait on it (docs/cpu-driver.md
/// "Events destroyed in flight"): a signal submitted before still happens (an armed launch stays armed),
/// and with none to come, the event is abandoned (signalled) so that no wait on it lasts for ever.
ze_result_t ZE_APICALL zeEventDestroy(ze_event_handle_t hEvent) {
  ZEXCPU_DESTROY_POINT("zeEventDestroy", hEvent);
  ZEXCPU_CHECK(check_event(hEvent));
  // Under the shard's mutex: a host thread blocked in zeEventHostSynchronize read the magic before it
  // took that mutex to wait, so its read is ordered before this write.
  {
    std::lock_guard<std::mutex> lock(waiters(hEvent).mutex);
    hEvent->magic = kDeadMagic;
  }
  hEvent->destroyed.store(true, std::memory_order_seq_cst);
  if (hEvent->pending.load(std::memory_order_seq_cst) == 0) abandon(hEvent);
  release_event(hEvent);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeEventHostSignal(ze_event_handle_t hEvent) {
  ZEXCPU_FAULT_POINT("zeEventHostSignal");
  ZEXCPU_CHECK(check_event(hEvent));
  uint64_t t = now_ns();
  signal_event(hEvent, t, t);
  return ZE_RESULT_SUCCESS;
}

/// Errors: INVALID_NULL_HANDLE, INVALID_SYNCHRONIZATION_OBJECT; ZE_RESULT_NOT_READY on timeout
/// (0 polls, UINT64_MAX waits forever).
ze_result_t ZE_APICALL zeEventHostSynchronize(ze_event_handle_t hEvent, uint64_t timeout) {
  ZEXCPU_FAULT_POINT("zeEventHostSynchronize");
  ZEXCPU_CHECK(check_event(hEvent));
  // On a lost device a wait still waits (launches complete at once, running nothing), so that the work
  // before it has ended when it answers DEVICE_LOST and the application may destroy what it used.
  if (hEvent->signalled.load(std::memory_order_acquire)) return after_wait(ZE_RESULT_SUCCESS);
  // Blocking: held, so that another thread's zeEventDestroy meanwhile does not free what this one reads
  // (the wait then ends with the signal still to come, or at once: see zeEventDestroy).
  EventRef hold(hEvent);
  if (timeout != UINT64_MAX)
    return after_wait(
        host_wait(hEvent, timeout, [&] { return hEvent->signalled.load(std::memory_order_acquire) != 0; }));
  // Waiting for good on a pending launch: wait on its OpenCL event here, as clFinish would, rather
  // than for the retiring thread to see it complete and wake this thread. A host that gets here
  // before the worker has enqueued (and armed) the launch sleeps until it is signalled or armed.
  // Each round ends signalled, or with a claim that ended (reset, reuse): no round repeats itself.
  while (!settle_event(hEvent, /*block=*/true))
    host_wait(hEvent, UINT64_MAX, [&] {
      return hEvent->signalled.load(std::memory_order_acquire) != 0 || hEvent->armed != nullptr;
    });
  return after_wait(ZE_RESULT_SUCCESS);
}

ze_result_t ZE_APICALL zeEventQueryStatus(ze_event_handle_t hEvent) {
  ZEXCPU_FAULT_POINT("zeEventQueryStatus");
  ZEXCPU_CHECK(check_event(hEvent));
  if (hEvent->signalled.load(std::memory_order_acquire)) return after_wait(ZE_RESULT_SUCCESS);
  return after_wait(settle_event(hEvent, /*block=*/false) ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY);
}

ze_result_t ZE_APICALL zeEventHostReset(ze_event_handle_t hEvent) {
  ZEXCPU_FAULT_POINT("zeEventHostReset");
  ZEXCPU_CHECK(check_event(hEvent));
  reset_event(hEvent);
  return ZE_RESULT_SUCCESS;
}

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_SYNCHRONIZATION_OBJECT (the pool was not
/// created with ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP), NOT_READY (not signalled; dstptr untouched).
ze_result_t ZE_APICALL zeEventQueryKernelTimestamp(ze_event_handle_t hEvent, ze_kernel_timestamp_result_t* dstptr) {
  ZEXCPU_FAULT_POINT("zeEventQueryKernelTimestamp");
  ZEXCPU_CHECK(check_event(hEvent));
  if (dstptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!(hEvent->pool_flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP))
    return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  if (!hEvent->signalled.load(std::memory_order_acquire)) return ZE_RESULT_NOT_READY;
  dstptr->global.kernelStart = dstptr->context.kernelStart = hEvent->start_ns;
  dstptr->global.kernelEnd = dstptr->context.kernelEnd = hEvent->end_ns;
  return ZE_RESULT_SUCCESS;
}

namespace {

// ---------------------------------------------------------------------------------------------
// Fences

}  // namespace

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ENUMERATION (flags), INVALID_ARGUMENT
/// (not a zex-cpu queue).
ze_result_t ZE_APICALL zeFenceCreate(ze_command_queue_handle_t hCommandQueue, const ze_fence_desc_t* desc,
                                     ze_fence_handle_t* phFence) {
  ZEXCPU_FAULT_POINT("zeFenceCreate");
  if (hCommandQueue == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || phFence == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->flags & ~ze_fence_flags_t(ZE_FENCE_FLAG_SIGNALED)) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (!is_command_queue(hCommandQueue)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  auto* f = new (std::nothrow) _ze_fence_handle_t;
  if (f == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  f->queue = hCommandQueue;
  f->signalled.store((desc->flags & ZE_FENCE_FLAG_SIGNALED) ? 1 : 0);
  *phFence = f;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeFenceDestroy(ze_fence_handle_t hFence) {
  ZEXCPU_DESTROY_POINT("zeFenceDestroy", hFence);
  ZEXCPU_CHECK(check_fence(hFence));
  change_and_notify(hFence, [&] { hFence->magic = kDeadMagic; });
  delete hFence;
  return ZE_RESULT_SUCCESS;
}

/// Errors: INVALID_NULL_HANDLE, INVALID_SYNCHRONIZATION_OBJECT; NOT_READY on timeout.
ze_result_t ZE_APICALL zeFenceHostSynchronize(ze_fence_handle_t hFence, uint64_t timeout) {
  ZEXCPU_FAULT_POINT("zeFenceHostSynchronize");
  ZEXCPU_CHECK(check_fence(hFence));
  if (hFence->signalled.load(std::memory_order_acquire)) return after_wait(ZE_RESULT_SUCCESS);
  return after_wait(host_wait(hFence, timeout, [&] { return hFence->signalled.load(std::memory_order_acquire) != 0; }));
}

ze_result_t ZE_APICALL zeFenceQueryStatus(ze_fence_handle_t hFence) {
  ZEXCPU_FAULT_POINT("zeFenceQueryStatus");
  ZEXCPU_CHECK(check_fence(hFence));
  return after_wait(hFence->signalled.load(std::memory_order_acquire) ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY);
}

ze_result_t ZE_APICALL zeFenceReset(ze_fence_handle_t hFence) {
  ZEXCPU_FAULT_POINT("zeFenceReset");
  ZEXCPU_CHECK(check_fence(hFence));
  change_and_notify(hFence, [&] { hFence->signalled.store(0, std::memory_order_release); });
  return ZE_RESULT_SUCCESS;
}

}  // namespace zexcpu
