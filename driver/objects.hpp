// The Level Zero objects of the zex-cpu core: driver, device, context, event pools, events, fences
// (command lists and queues: cmdlist_objects.hpp; modules, build logs, kernels: module_objects.hpp).
// Each handle type of ze_api.h is an opaque pointer to a struct named _ze_xxx_handle_t; zex-cpu defines
// those structs, so a handle *is* the object and no cast or lookup table sits on the hot path. Every
// object starts with a magic word (the enum below) that entry points check, so a handle of the wrong
// kind (or a destroyed one) answers an error instead of corrupting memory, as far as that can be
// detected.
#pragma once

#include "common.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <cstdint>
#include <string>
#include <utility>

namespace zexcpu {

enum Magic : uint32_t {
  kDriverMagic = 0x7a435244,   // "DRCz"
  kDeviceMagic = 0x7a435644,   // "DVCz"
  kContextMagic = 0x7a435443,  // "CTCz"
  kEventPoolMagic = 0x7a435050,
  kEventMagic = 0x7a435645,
  kFenceMagic = 0x7a434e46,
  kQueueMagic = 0x7a435551,
  kListMagic = 0x7a43534c,
  kModuleMagic = 0x7a434f4d,    // "MOCz"
  kKernelMagic = 0x7a434e4b,    // "KNCz"
  kBuildLogMagic = 0x7a43474c,  // "LGCz"
  kPhysicalMemMagic = 0x7a434d50,  // "PMCz"
  kDeadMagic = 0xdeadbeef,
};

/// Properties of the PoCL device, read once by the first successful zeInit.
struct DeviceInfo {
  std::string cl_name;
  std::string cl_version;
  uint32_t vendor_id = 0;
  uint32_t compute_units = 1;
  uint32_t clock_mhz = 0;
  uint64_t max_alloc = 0;
  uint64_t global_mem = 0;
  uint64_t local_mem = 0;
  uint64_t cache_size = 0;
  uint64_t max_work_group = 1;
  uint64_t max_work_item[3] = {1, 1, 1};
  uint64_t max_parameter_size = 0;
  uint64_t printf_buffer_size = 0;
  uint32_t native_float_width = 1;
  uint64_t fp16_config = 0;  // cl_device_fp_config bits; 0 when the type is unsupported
  uint64_t fp32_config = 0;
  uint64_t fp64_config = 0;
  bool int64_atomics = false;
  uint64_t svm_caps = 0;
  uint8_t uuid[16] = {};
};
/// Valid after a successful zeInit.
const DeviceInfo& device_info();

/// The one command queue group: its largest memory-fill pattern (clEnqueueFillBuffer's limit, the
/// size of a double16) and how many queue indices it accepts.
constexpr size_t kMaxFillPatternSize = 128;
constexpr uint32_t kNumQueues = 4;

/// The address of a function that zex-cpu offers through zeDriverGetExtensionFunctionAddress
/// (entry points newer than the installed loader's DDI tables), or nullptr.
void* extension_function(const char* name);

// Spec 1.9's mutable command lists (mutable_list.cpp).
/// Whether zex-cpu offers ZE_experimental_mutable_command_list (ZEX_CPU_NO_MUTABLE_COMMAND_LIST=1 hides
/// it, as a driver without it; read on each call).
bool mutable_lists_offered();
/// zeDeviceGetProperties' pNext: fills ze_mutable_command_list_exp_properties_t where chained.
void fill_mutable_properties(void* pNext);
/// Its functions by name, for zeDriverGetExtensionFunctionAddress (null when hidden or unknown).
void* mutable_list_function(const char* name);

/// Nanoseconds of the clock that zex-cpu uses for every timestamp (device and kernel timestamps).
inline uint64_t now_ns() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace zexcpu

struct _ze_driver_handle_t {
  uint32_t magic = zexcpu::kDriverMagic;
};
/// A device of the topology chosen at zeInit (ZEX_CPU_DEVICES, ZEX_CPU_SUBDEVICES; docs/cpu-driver.md
/// "Topology"). Every device and sub-device runs on the one PoCL device; each has its own name and UUID.
/// Never destroyed, never moved: handles are addresses into a fixed table.
struct _ze_device_handle_t {
  uint32_t magic = zexcpu::kDeviceMagic;
  uint32_t index = 0;                      // the root device's index
  int32_t sub = -1;                        // the sub-device's index, -1 for a root device
  _ze_device_handle_t* parent = nullptr;   // the root device of a sub-device
  uint32_t sub_count = 0;                  // a root device's sub-devices (0 or 2)
  _ze_device_handle_t* subs = nullptr;     // the first of them
  char name[ZE_MAX_DEVICE_NAME] = {};
  uint8_t uuid[16] = {};
};
struct _ze_context_handle_t {
  uint32_t magic = zexcpu::kContextMagic;
};

struct _ze_event_pool_handle_t {
  uint32_t magic = zexcpu::kEventPoolMagic;
  ze_context_handle_t context = nullptr;
  ze_event_pool_flags_t flags = 0;
  uint32_t count = 0;
};

namespace zexcpu {
/// An OpenCL event's execution status (CL_COMPLETE or a negative error once it has ended), or
/// `if_unknown` when the query fails.
inline cl_int cl_status(cl_event ev, cl_int if_unknown) {
  cl_int status = CL_QUEUED;
  if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr) != CL_SUCCESS)
    return if_unknown;
  return status;
}

/// A signalled launch's claim on its event (arm_event), shared by the event and the launch's
/// Retirement. Whoever ends it (the retiring thread's signal, a host thread's settle_event, a reset, a
/// destroy) sets `live` false under the event's shard mutex; only while it is live does the event
/// exist and wait for this launch, so the retiring thread never touches an event a host thread has
/// seen signalled (and may have destroyed since).
struct ArmedSignal {
  cl_event ev = nullptr;  // retained; released with this record
  uint64_t start_ns = 0;
  bool live = true;
  ArmedSignal(cl_event e, uint64_t start) : ev(e), start_ns(start) {}
  ArmedSignal(const ArmedSignal&) = delete;
  ArmedSignal& operator=(const ArmedSignal&) = delete;
  ~ArmedSignal() { clReleaseEvent(ev); }
};
}  // namespace zexcpu

/// An event. Its lifetime is counted (`refs`), because a command may still signal or wait on an event
/// that the application has destroyed, with its pool (docs/cpu-driver.md "Events destroyed in flight"):
/// zeEventDestroy kills the handle, the object lives until the last command that uses it is done with it,
/// and nothing reads the pool through an event.
struct _ze_event_handle_t {
  uint32_t magic = zexcpu::kEventMagic;
  ze_event_pool_flags_t pool_flags = 0;  // the pool's, copied: the pool may be gone before the event
  uint32_t index = 0;
  /// The handle's own reference (until zeEventDestroy), one per command that signals or waits on the
  /// event (its EventRefs), one per submitted signal not retired yet (`pending`), one per host thread
  /// blocked in zeEventHostSynchronize. The last to go deletes the event (release_event).
  std::atomic<uint32_t> refs{1};
  /// Signals submitted to a worker and not retired yet (begin_signal, end_signal).
  std::atomic<uint32_t> pending{0};
  /// Set by zeEventDestroy. From then on, an event without a pending signal counts as signalled
  /// (abandoned): nothing can signal it any more, and a wait on it must not last for ever.
  std::atomic<bool> destroyed{false};
  /// 0 = not signalled, 1 = signalled. Changed under its waiters shard's mutex (objects.hpp) so that
  /// no wake-up is lost; read lock-free by zeEventQueryStatus.
  std::atomic<uint32_t> signalled{0};
  // Kernel timestamps (ns, now_ns()) of the last command that signalled this event; written before
  // `signalled` is set, so a reader that saw the event signalled sees them.
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  /// The launch in flight that will signal this event, if it is armed (arm_event); under the shard's
  /// mutex. Null otherwise, and always for pools with kernel timestamps.
  std::shared_ptr<zexcpu::ArmedSignal> armed;
};

struct _ze_fence_handle_t {
  uint32_t magic = zexcpu::kFenceMagic;
  ze_command_queue_handle_t queue = nullptr;
  std::atomic<uint32_t> signalled{0};
};

namespace zexcpu {

inline bool is_driver(ze_driver_handle_t h) { return h != nullptr && h->magic == kDriverMagic; }
inline bool is_device(ze_device_handle_t h) { return h != nullptr && h->magic == kDeviceMagic; }
inline bool is_context(ze_context_handle_t h) { return h != nullptr && h->magic == kContextMagic; }
inline bool is_event(ze_event_handle_t h) { return h != nullptr && h->magic == kEventMagic; }
inline bool is_fence(ze_fence_handle_t h) { return h != nullptr && h->magic == kFenceMagic; }
/// The check every entry point taking a context makes first: INVALID_NULL_HANDLE, INVALID_ARGUMENT.
inline ze_result_t check_context(ze_context_handle_t h) {
  if (h == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_context(h)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

// --- event lifetimes (event_fence.cpp; docs/cpu-driver.md "Events destroyed in flight") -----------

/// Drops a reference to `e` (_ze_event_handle_t::refs); the last one deletes it.
void release_event(ze_event_handle_t e) noexcept;

/// A counted reference to an event: what every command that signals or waits on an event holds, so that
/// the event outlives its handle while the command may still use it. Copying takes another reference.
class EventRef {
 public:
  EventRef() = default;
  explicit EventRef(ze_event_handle_t e) noexcept : e_(e) {
    if (e_ != nullptr) e_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  EventRef(const EventRef& o) noexcept : EventRef(o.e_) {}
  EventRef(EventRef&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  EventRef& operator=(EventRef o) noexcept {
    std::swap(e_, o.e_);
    return *this;
  }
  ~EventRef() {
    if (e_ != nullptr) release_event(e_);
  }
  ze_event_handle_t get() const noexcept { return e_; }
  ze_event_handle_t operator->() const noexcept { return e_; }
  explicit operator bool() const noexcept { return e_ != nullptr; }

 private:
  ze_event_handle_t e_ = nullptr;
};

/// A command that signals `e` is submitted to a worker (Worker::submit). Until end_signal, the event
/// lives, and once destroyed it is not abandoned: a wait on it waits for this signal, in order.
inline void begin_signal(ze_event_handle_t e) noexcept {
  e->refs.fetch_add(1, std::memory_order_relaxed);
  e->pending.fetch_add(1, std::memory_order_seq_cst);
}
/// Ends what begin_signal began: the signal happened (the retiring thread), or never will (the command
/// was dropped by a stopping worker). The last pending signal of a destroyed event that leaves it
/// unsignalled abandons it (signals it), so that no wait on it lasts for ever.
void end_signal(ze_event_handle_t e) noexcept;

ze_driver_handle_t the_driver();
/// Root device 0.
ze_device_handle_t the_device();
/// The number of root devices (ZEX_CPU_DEVICES, default 1), and root device i.
uint32_t device_count();
ze_device_handle_t root_device(uint32_t i);
/// The reported device type (ZEX_CPU_DEVICE_TYPE=cpu|gpu, default cpu).
ze_device_type_t device_type();
/// True when `ptr` lies in a mapping of a virtual memory reservation of `context` (virtual_memory.cpp);
/// then *base and *size describe that mapping (as NEO's zeMemGetAddressRange), *device is its physical
/// memory's device and *id its allocation id. Addresses reserved but not mapped are not found. Thread-safe.
bool virtual_memory_mapping(ze_context_handle_t context, const void* ptr, void** base, size_t* size,
                            ze_device_handle_t* device, uint64_t* id);
/// An inaccessible anonymous mapping (PROT_NONE, MAP_NORESERVE) of `len` bytes at an address aligned to
/// `align` (a power of two, at least a page), or MAP_FAILED: over-reserves by `align`, then gives back
/// what lies outside. Virtual memory reservations and over-aligned device allocations start so.
void* reserve_aligned(size_t len, size_t align);
/// zeContextDestroy: frees the context's reservations (and so its mappings) and physical memory objects,
/// which the application should have released; nothing of another context is touched.
void release_virtual_memory(ze_context_handle_t context);
/// True for a live command queue of zex-cpu (command_queue.cpp).
bool is_command_queue(ze_command_queue_handle_t h);
/// Registered with atexit() by zeInit: stops every list's and queue's worker before exit() tears
/// down LLVM and PoCL (jobs not started are dropped; kernels in flight finish).
void stop_all_workers();

// --- host synchronization (event_fence.cpp) ---------------------------------------------------
// Every blocking wait in zex-cpu (host waits on events, fences, lists and queues; workers waiting
// on events) sleeps on a condition variable, and every state change that could end a wait happens
// under the matching mutex and notifies it: no wake-up is lost, nothing polls. The mutex/condition
// variable pairs are sharded by the address of the object waited on, so that a signal wakes only the
// threads waiting on objects of its shard (with one shared variable, N threads each synchronizing
// their own list would all wake on every completion).

/// A mutex and the condition variable of the threads that wait under it.
struct Waiters {
  std::mutex mutex;
  std::condition_variable cv;
};
/// The shard of the waiters of `object` (an event, a fence, a worker).
Waiters& waiters(const void* object);
/// Wakes every waiter of every shard (rare: a worker that must give up its waits).
void notify_all_waiters();

/// Runs `change` under the mutex of `object`'s shard, then wakes that shard: the way to change any
/// state that a host_wait() or wait_events() predicate on `object` reads.
template <typename Change> void change_and_notify(const void* object, Change change) {
  Waiters& w = waiters(object);
  {
    std::lock_guard<std::mutex> lock(w.mutex);
    change();
  }
  w.cv.notify_all();
}

/// Marks `e` signalled (recording [start_ns, end_ns] as its kernel timestamps) and wakes its waiters.
void signal_event(ze_event_handle_t e, uint64_t start_ns, uint64_t end_ns);
/// Marks `e` not signalled (and ends its armed launch's claim: its retirement then signals nothing),
/// unless it is destroyed with no signal pending: an abandoned event stays signalled.
void reset_event(ze_event_handle_t e);
/// Arms `e` with the OpenCL event `ev` of the launch that signals it (retained here), so that a host
/// thread waiting for `e` can wait on `ev` itself (settle_event) instead of waiting for the retiring
/// thread to notice, signal and wake it: two thread hand-offs less per waited launch. Returns the
/// claim for the launch's Retirement, or null if not armed (then `e` is signalled as usual).
std::shared_ptr<ArmedSignal> arm_event(ze_event_handle_t e, cl_event ev, uint64_t start_ns) noexcept;
/// The retiring thread's signal of an armed event: signals `e` only if `claim` is still live
/// (not settled by a waiter, not ended by a reset or destroy); touches `e` only then.
void signal_armed_event(ze_event_handle_t e, const ArmedSignal& claim, uint64_t end_ns);
/// If `e` is armed: with `block`, waits for the launch's OpenCL event; without, only looks. Once that
/// event is complete, signals `e` (as the retiring thread would: an in-order queue completes the
/// launch after everything before it). Returns true if `e` is signalled afterwards.
bool settle_event(ze_event_handle_t e, bool block);
/// Blocks until every event has been seen signalled (true; the events are waited for one after the
/// other) or *abort becomes true (false). Whoever sets *abort then calls notify_all_waiters().
bool wait_events(const EventRef* events, size_t n, const std::atomic<bool>* abort);
/// Marks `f` signalled and wakes its waiters.
void signal_fence(ze_fence_handle_t f);

/// Waits until done() is true, sleeping in `object`'s shard: timeout 0 polls, UINT64_MAX waits
/// forever, otherwise waits at most `timeout_ns`. Returns ZE_RESULT_SUCCESS or ZE_RESULT_NOT_READY.
/// done() runs under the shard's mutex.
template <typename Done> ze_result_t host_wait(const void* object, uint64_t timeout_ns, Done done) {
  Waiters& w = waiters(object);
  std::unique_lock<std::mutex> lock(w.mutex);
  if (done()) return ZE_RESULT_SUCCESS;
  if (timeout_ns == 0) return ZE_RESULT_NOT_READY;
  if (timeout_ns == UINT64_MAX || timeout_ns > (uint64_t(1) << 62)) {  // forever, or as good as
    w.cv.wait(lock, done);
    return ZE_RESULT_SUCCESS;
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(timeout_ns);
  return w.cv.wait_until(lock, deadline, done) ? ZE_RESULT_SUCCESS : ZE_RESULT_NOT_READY;
}

}  // namespace zexcpu
