// zex::Stream, cold half: creating and destroying a stream, raising a thrown report (through
// SlabPool::read_and_reset, the one path from report to exception), and the messages of a launch
// that cannot be made. The launch and synchronize paths are inline in <zex/stream.hpp>.
#include <zex/stream.hpp>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

namespace zex {

namespace {

struct EnvLevel {
  int level = 1;
  std::string error;  // non-empty if ZEX_DEBUG_LEVEL is set to something else than 0, 1 or 2
};

EnvLevel read_env_level() {
  EnvLevel e;
  const char* v = std::getenv("ZEX_DEBUG_LEVEL");
  if (!v || !*v) return e;  // unset (or empty): the default, 1
  if ((v[0] == '0' || v[0] == '1' || v[0] == '2') && v[1] == '\0') {
    e.level = v[0] - '0';
  } else {
    e.error = std::string("zex: the environment variable ZEX_DEBUG_LEVEL is set to '") + v +
              "', which is not a debug level: set it to 0, 1 or 2, or unset it for the default (1)";
  }
  return e;
}

}  // namespace

int default_debug_level() {
  EnvLevel e = read_env_level();
  if (!e.error.empty()) throw zex::InvalidArgument(e.error);
  return e.level;
}

namespace detail {

void throw_bad_extent(long long v) {
  throw zex::InvalidArgument("zex: a launch extent (" + std::to_string(v) +
                              ") is negative or does not fit in 32 bits");
}
void throw_bad_extent(unsigned long long v) {
  throw zex::InvalidArgument("zex: a launch extent (" + std::to_string(v) +
                              ") is negative or does not fit in 32 bits");
}

void throw_bad_signature(const std::string& kernel, uint32_t expected, size_t given, bool takes_state) {
  if (!takes_state && expected != 0)
    throw zex::InvalidArgument(
        "zex: kernel '" + kernel + "' does not take a zex_state_t as its last parameter (it has " +
        std::to_string(expected) +
        " parameter(s)), so zex cannot pass it the stream's report: declare `zex_state_t zex` as the "
        "kernel's last parameter (OpenCL C: #include <zex/device.h>; other compilers: a by-value struct "
        "of three 64-bit integers, docs/abi.md)");
  if (expected == 0)
    throw zex::InvalidArgument("zex: kernel '" + kernel +
                                "' has no parameters; a kernel launched through zex takes a zex_state_t "
                                "as its last parameter");
  throw zex::InvalidArgument("zex: kernel '" + kernel + "' expects " + std::to_string(expected - 1) +
                              " argument(s) plus the trailing zex_state_t (" + std::to_string(expected) +
                              " parameters in all), but the launch passed " + std::to_string(given) +
                              " argument(s)");
}

void throw_arg_error(ze_result_t r, const std::string& kernel, uint32_t index, size_t size) {
  throw ZeError(r, "zeKernelSetArgumentValue",
                "setting argument " + std::to_string(index) + " (" + std::to_string(size) + " bytes) of kernel '" +
                    kernel + "'");
}

void throw_zero_extent(const std::string& kernel, Language lang) {
  const LaunchNames& names = launch_names(lang);
  throw zex::InvalidArgument("zex: launch of kernel '" + kernel + "': every component of " + names.extents +
                              " must be at least 1 (" + names.one_dimension + ")");
}

void throw_too_many_work_items(const std::string& kernel, const Dim3& g, const Dim3& b) {
  auto dims = [](const Dim3& d) {
    return std::to_string(d.x) + " x " + std::to_string(d.y) + " x " + std::to_string(d.z);
  };
  throw zex::InvalidArgument("zex: launch of kernel '" + kernel + "': " + dims(g) + " work-groups of " + dims(b) +
                              " work-items is 2^64 work-items or more, which zex's device ABI cannot number "
                              "(64-bit work-item ids); launch fewer work-items and let each cover more of "
                              "the data");
}

void throw_launch_error(ze_result_t r, const std::string& kernel) {
  throw ZeError(r, "zeCommandListAppendLaunchKernel", "launching kernel '" + kernel + "'");
}

void throw_wrong_device(const std::string& kernel, const DeviceInfo& module_device, const DeviceInfo& stream_device) {
  throw zex::InvalidArgument("zex: kernel '" + kernel + "' belongs to a zex::Module built for device '" +
                             module_device.name + "', but the stream runs on device '" + stream_device.name +
                             "': build a zex::Module for each device and launch each device's kernels on its "
                             "own streams. Nothing was appended.");
}

void throw_group_size_error(ze_result_t r, const std::string& kernel) {
  throw ZeError(r, "zeKernelSetGroupSize", "setting the group size of kernel '" + kernel + "'");
}

namespace {
// An integer argument of `size` bytes (1, 2, 4; anything else is read as 8), widened to 64 bits as a
// signed and as an unsigned value of its own width would be.
void widen(const void* v, size_t size, int64_t* s, uint64_t* u) {
  switch (size) {
    case 1: { int8_t a; uint8_t b; std::memcpy(&a, v, 1); std::memcpy(&b, v, 1); *s = a; *u = b; return; }
    case 2: { int16_t a; uint16_t b; std::memcpy(&a, v, 2); std::memcpy(&b, v, 2); *s = a; *u = b; return; }
    case 4: { int32_t a; uint32_t b; std::memcpy(&a, v, 4); std::memcpy(&b, v, 4); *s = a; *u = b; return; }
    default: std::memcpy(s, v, 8); std::memcpy(u, v, 8); return;
  }
}
}  // namespace

void set_arg_converted(ze_kernel_handle_t k, uint32_t i, const void* v, size_t size, bool is_signed_int,
                       bool is_unsigned_int, bool is_float, ze_result_t r, const std::string& kernel) {
  if (r == ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE) {
    if (is_signed_int || is_unsigned_int) {
      if (size != 1 && size != 2 && size != 4 && size != 8) throw_arg_error(r, kernel, i, size);
      int64_t s = 0;
      uint64_t u = 0;
      widen(v, size, &s, &u);
      if (size == 8) {
        const bool fits = is_signed_int ? (s >= INT32_MIN && s <= static_cast<int64_t>(UINT32_MAX)) : u <= UINT32_MAX;
        const uint32_t w = static_cast<uint32_t>(is_signed_int ? static_cast<uint64_t>(s) : u);
        if (fits && zeKernelSetArgumentValue(k, i, sizeof w, &w) == ZE_RESULT_SUCCESS) return;
      } else {
        const uint64_t w = is_signed_int ? static_cast<uint64_t>(s) : u;
        if (zeKernelSetArgumentValue(k, i, sizeof w, &w) == ZE_RESULT_SUCCESS) return;
      }
    } else if (is_float && size == sizeof(double)) {
      double d;
      std::memcpy(&d, v, sizeof d);
      const float f = static_cast<float>(d);
      if (zeKernelSetArgumentValue(k, i, sizeof f, &f) == ZE_RESULT_SUCCESS) return;
    } else if (is_float && size == sizeof(float)) {
      float f;
      std::memcpy(&f, v, sizeof f);
      const double d = f;
      if (zeKernelSetArgumentValue(k, i, sizeof d, &d) == ZE_RESULT_SUCCESS) return;
    }
  }
  throw_arg_error(r, kernel, i, size);
}

namespace {

namespace pk = param_kind;

// "a double", "a 64-bit signed integer": the C++ side of a mismatch.
std::string given_name(uint8_t given, bool is_signed) {
  const unsigned bytes = given & pk::kSizeMask;
  if ((given & pk::kClassMask) == pk::kFloat)
    return bytes == 4 ? "a float" : bytes == 8 ? "a double" : "a long double";
  return (bytes == 1 ? "an " : "a ") + std::to_string(bytes * 8) + "-bit " + (is_signed ? "signed" : "unsigned") +
         " integer";
}

// "a 32-bit integer (uint or int)": the kernel side, with the OpenCL C names (SPIR-V has no signedness).
std::string param_name(uint8_t param) {
  const unsigned bytes = param & pk::kSizeMask;
  if ((param & pk::kClassMask) == pk::kFloat)
    return bytes == 2 ? "a 16-bit float (half)" : bytes == 4 ? "a 32-bit float (float)" : "a 64-bit float (double)";
  const char* names = bytes == 1 ? "uchar or char" : bytes == 2 ? "ushort or short" : bytes == 4 ? "uint or int" : "ulong or long";
  return (bytes == 1 ? "an " : "a ") + std::to_string(bytes * 8) + "-bit integer (" + names + ")";
}

[[noreturn]] void throw_mismatch(uint32_t i, const std::string& kernel, const std::string& given, uint8_t param,
                                 const char* advice) {
  throw zex::InvalidArgument("zex: argument " + std::to_string(i) + " of kernel '" + kernel + "' is " + given +
                              ", but the kernel's parameter " + std::to_string(i) + " is " + param_name(param) +
                              ": " + advice);
}

void set_or_throw(ze_kernel_handle_t k, uint32_t i, size_t size, const void* v, const std::string& kernel) {
  ze_result_t r = zeKernelSetArgumentValue(k, i, size, v);
  if (r != ZE_RESULT_SUCCESS) throw_arg_error(r, kernel, i, size);
}

}  // namespace

void set_arg_mismatched(ze_kernel_handle_t k, uint32_t i, const void* v, uint8_t given, bool is_signed,
                        uint8_t param, const std::string& kernel) {
  const uint8_t given_class = given & pk::kClassMask, param_class = param & pk::kClassMask;
  const size_t given_size = given & pk::kSizeMask, param_size = param & pk::kSizeMask;
  if (param_class != pk::kInt && param_class != pk::kFloat) {
    // Unknown, a pointer (a uintptr_t device address is the user's business), a struct: the driver's
    // size check as before this check existed.
    ze_result_t r = zeKernelSetArgumentValue(k, i, given_size, v);
    if (r != ZE_RESULT_SUCCESS)
      set_arg_converted(k, i, v, given_size, given_class == pk::kInt && is_signed,
                        given_class == pk::kInt && !is_signed, given_class == pk::kFloat, r, kernel);
    return;
  }
  if (given_class == pk::kInt && param_class == pk::kInt) {
    // The value widened to 64 bits as its own type would be; it fits the parameter if some integer
    // of the parameter's width, signed or unsigned, holds it (as the kernel may read either).
    int64_t s = 0;
    uint64_t u = 0;
    widen(v, given_size, &s, &u);
    const unsigned bits = static_cast<unsigned>(param_size * 8);
    const uint64_t umax = bits == 64 ? UINT64_MAX : (uint64_t(1) << bits) - 1;
    const int64_t smin = bits == 64 ? INT64_MIN : -(int64_t(1) << (bits - 1));
    const bool fits = is_signed ? (s >= smin && (s < 0 || static_cast<uint64_t>(s) <= umax)) : u <= umax;
    if (!fits)
      throw zex::InvalidArgument("zex: argument " + std::to_string(i) + " of kernel '" + kernel + "' is " +
                                  given_name(given, is_signed) + " whose value " +
                                  (is_signed ? std::to_string(s) : std::to_string(u)) +
                                  " does not fit the kernel's parameter " + std::to_string(i) + ", " +
                                  param_name(param));
    // Little-endian: the low bytes of the two's-complement value are the narrower integer's.
    const uint64_t w = is_signed ? static_cast<uint64_t>(s) : u;
    return set_or_throw(k, i, param_size, &w, kernel);
  }
  if (given_class == pk::kFloat && param_class == pk::kFloat && (param_size == 4 || param_size == 8)) {
    long double x = 0;
    if (given_size == 4) { float f; std::memcpy(&f, v, 4); x = f; }
    else if (given_size == 8) { double d; std::memcpy(&d, v, 8); x = d; }
    else { std::memcpy(&x, v, sizeof x); }
    if (param_size == 4) {
      const float f = static_cast<float>(x);
      return set_or_throw(k, i, 4, &f, kernel);
    }
    const double d = static_cast<double>(x);
    return set_or_throw(k, i, 8, &d, kernel);
  }
  throw_mismatch(i, kernel, given_name(given, is_signed), param,
                 param_class == pk::kInt ? "pass an integer"
                 : param_size == 2       ? "zex does not convert to half: pass its bits as a uint16_t to a ushort parameter"
                                         : "pass a float or a double");
}

}  // namespace detail

namespace detail {

struct StreamLink {
  Mutex mu;             // held by a raising Event::synchronize, and by the stream's destructor to detach
  void* impl = nullptr;  // the stream's Impl; null once its destructor has begun
};

struct EventState {
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t event = nullptr;
  uint64_t mark = 0;                  // the stream's next launch id when recorded
  std::shared_ptr<StreamLink> link;  // the stream to raise through, while it lives
  bool armed = false;           // the barrier that signals the event was appended

  EventState() = default;
  EventState(const EventState&) = delete;
  EventState& operator=(const EventState&) = delete;
  ~EventState() {
    // The device may still have to signal the event: destroying it under a pending signal is undefined,
    // so the last handle waits for its mark first (the stream's own destructor waits the same way).
    if (armed) zeEventHostSynchronize(event, UINT64_MAX);
    if (event) zeEventDestroy(event);
    if (pool) zeEventPoolDestroy(pool);
  }
};

}  // namespace detail

namespace {
[[noreturn]] void throw_empty_event(const char* what) {
  throw std::logic_error(std::string("zex: Event::") + what + "() on an empty zex::Event (default-constructed "
                         "or moved from); get one from Stream::record()");
}
}  // namespace

void Event::synchronize() {
  if (!s_) throw_empty_event("synchronize");
  check(zeEventHostSynchronize(s_->event, UINT64_MAX), "zeEventHostSynchronize", "waiting for a zex::Event");
  // Every launch before the mark has finished: its throw, if any, is in the report (status last).
  // The stream may be being destroyed on another thread: under the link's lock it is either still
  // whole (its destructor waits for this raise to end) or detached, never half freed.
  detail::StreamLink& link = *s_->link;
  detail::LockGuard lock(link.mu);
  auto* impl = static_cast<Stream::Impl*>(link.impl);
  if (impl && SlabPool::thrown(impl->slot)) impl->raise_before(s_->mark);
}

bool Event::ready() const {
  if (!s_) throw_empty_event("ready");
  ze_result_t r = zeEventQueryStatus(s_->event);
  if (r == ZE_RESULT_NOT_READY) return false;
  check(r, "zeEventQueryStatus", "polling a zex::Event");
  return true;
}

ze_event_handle_t Event::handle() const noexcept { return s_ ? s_->event : nullptr; }
uint64_t Event::mark_launch_id() const noexcept { return s_ ? s_->mark : 0; }

Event Stream::record() {
  Impl& s = live();
  Impl::Use use(s);
  auto st = std::make_shared<detail::EventState>();
  ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
  ze_device_handle_t h = s.dev.handle();
  check(zeEventPoolCreate(s.dev.context_handle(), &pd, 1, &h, &st->pool), "zeEventPoolCreate",
        "creating a zex::Event");
  ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
  check(zeEventCreate(st->pool, &ed, &st->event), "zeEventCreate", "creating a zex::Event");
  if (!s.link) {
    s.link = std::make_shared<detail::StreamLink>();
    s.link->impl = &s;
  }
  st->link = s.link;
  st->mark = s.next_id;
  s.append_signal(st->event);  // the one append: a barrier after everything so far
  st->armed = true;
  return Event(std::move(st));
}

void Stream::wait(const Event& event) {
  Impl& s = live();
  Impl::Use use(s);
  if (__builtin_expect(!event.s_, 0)) throw_empty_event("wait");
  s.held.reserve(s.held.size() + 1);  // so that joining the wait list is all that can fail after
  s.user_waits.push_back(event.s_->event);
  s.held.push_back(event.s_);
}

void Stream::Impl::raise_before(uint64_t mark) {
  Use use(*this);
  // Raised already (by synchronize() or another Event), or thrown by a launch after the mark, whose
  // own waits raise it. Status is read first (acquire): the launch id it publishes is then complete.
  if (!SlabPool::thrown(slot) || slot.report->launch_id >= mark) return;
  raise(false);
}

Stream::Stream(const Device& dev) : s_(std::make_unique<Impl>(dev)) {}
Stream::Stream(Stream&&) noexcept = default;
Stream& Stream::operator=(Stream&&) noexcept = default;
Stream::~Stream() = default;

void Stream::launch_args(const Kernel& kernel, const LaunchConfig& cfg, const KernelArg* args, size_t n,
                         const char* file, uint32_t line) {
  launch_args<KernelArg>(kernel, cfg, args, n, file, line);
}

void Stream::Impl::throw_concurrent_use() {
  throw zex::LogicError(
      "zex: two threads used one zex::Stream at the same time; a stream is used by one thread at a time: "
      "give each thread its own stream, or serialize the calls with a mutex. This call did nothing, and "
      "the stream stays usable.");
}

void Stream::throw_moved_from() { throw zex::LogicError("zex: use of a moved-from zex::Stream"); }

void Stream::throw_null_event(const char* what) {
  throw zex::InvalidArgument(std::string("zex: Stream::") + what + "() was given a null event handle");
}

Stream::Impl::Impl(const Device& d) : dev(d), device(&d.info()), pool(&d.slab_pool()) {
  EnvLevel env = read_env_level();
  env_level = env.level;
  env_error = std::move(env.error);
  const detail::DeviceInfo& info = d.info();
  host_sync = info.lists_in_order ? info.host_synchronize : nullptr;
  chain = !info.lists_in_order;
  events.assign(kEvents, nullptr);  // before anything that needs undoing; unused on the list path
  slot = pool->acquire();
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, d.compute_ordinal(), 0, info.list_flags,
                             ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_result_t r = zeCommandListCreateImmediate(d.context_handle(), d.handle(), &qd, &list);
  if (r == ZE_RESULT_ERROR_INVALID_ENUMERATION && info.list_flags != 0) {
    // A layer or driver older than the API version the driver reported refuses the in-order flag:
    // an ordinary list, chained through events.
    qd.flags = 0;
    host_sync = nullptr;
    chain = true;
    r = zeCommandListCreateImmediate(d.context_handle(), d.handle(), &qd, &list);
  }
  if (r != ZE_RESULT_SUCCESS) {
    pool->release(slot);
    throw ZeError(r, "zeCommandListCreateImmediate", "creating a zex::Stream's command list");
  }
  if (host_sync) return;
  ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, kEvents};
  ze_device_handle_t h = d.handle();
  r = zeEventPoolCreate(d.context_handle(), &pd, 1, &h, &event_pool);
  if (r != ZE_RESULT_SUCCESS) {
    zeCommandListDestroy(list);
    pool->release(slot);
    throw ZeError(r, "zeEventPoolCreate", "creating a zex::Stream's events");
  }
}

Stream::Impl::~Impl() {
  // Events outlive their stream: from now on they only wait. Under the link's lock, so that an Event
  // raising through the stream on another thread finishes first (and none starts after).
  if (link) {
    detail::LockGuard lock(link->mu);
    link->impl = nullptr;
  }
  // The slot may only go back to the pool once no kernel can write it any more, and the list may be
  // destroyed only once nothing on it runs.
  bool idle = true;
  try {
    if (unwaited_barrier) {
      // The last command is a signal() barrier, which signals the caller's event, not one of ours: one
      // more barrier (it waits for everything before it) that signals ours.
      check(zeCommandListAppendBarrier(list, next_event(), 0, nullptr), "zeCommandListAppendBarrier",
            "waiting for a zex::Stream's last signal");
      ++seq;
    }
    if (seq != done) wait_all();
    if (SlabPool::thrown(slot)) {
      // An exception nobody synchronized for: clean the slot for its next owner, on the same path a
      // synchronize takes (reset appended before the report is cleared), then wait for the reset.
      pool->discard(slot, list, host_sync ? nullptr : next_event());
      ++seq;
      wait_all();
    }
  } catch (...) {
    idle = false;
  }
  for (auto e : events)
    if (e) zeEventDestroy(e);
  if (event_pool) zeEventPoolDestroy(event_pool);
  for (auto p : grown_pools) zeEventPoolDestroy(p);
  zeCommandListDestroy(list);
  // A slot whose state is unknown (the device failed) is leaked rather than handed to a new stream
  // that a late write could corrupt.
  if (idle) pool->release(slot);
}

ze_event_handle_t Stream::Impl::create_event() {
  // Only the first kEvents are created here, lazily, from the first pool: grow() fills the ring.
  ze_event_handle_t& e = ring(seq);
  ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, static_cast<uint32_t>(seq % kEvents),
                     ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
  check(zeEventCreate(event_pool, &ed, &e), "zeEventCreate", "creating a zex::Stream's event");
  return e;
}

void Stream::Impl::make_room() {
  // A launch in the window waits for a runtime's event, and the oldest half has not finished: it may
  // be waiting for an event that only this thread will signal, after more launches. Waiting here
  // would deadlock; grow instead (bounded by kMaxEvents; the common case, no wait(), never grows).
  if (user_wait_end > done && events.size() < kMaxEvents) {
    ze_result_t r = zeEventQueryStatus(ring(done + events.size() / 2));
    if (r == ZE_RESULT_NOT_READY) return grow();
    if (r != ZE_RESULT_SUCCESS) detail::throw_ze_error(r, "zeEventQueryStatus", "waiting for a zex::Stream");
  }
  retire_oldest();
}

void Stream::Impl::grow() {
  // Every event is pending (seq - done == n). The new ring keeps each one at its new position
  // q & (2n - 1) and gets n new events from a new pool of n. Built aside, so that a failure leaves
  // the stream as it was.
  const size_t n = events.size();
  ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                          static_cast<uint32_t>(n)};
  ze_device_handle_t h = dev.handle();
  ze_event_pool_handle_t p = nullptr;
  check(zeEventPoolCreate(dev.context_handle(), &pd, 1, &h, &p), "zeEventPoolCreate", "growing a zex::Stream's events");
  std::vector<ze_event_handle_t> grown(2 * n, nullptr);
  auto fail = [&](ze_result_t r, const char* call) {
    for (uint64_t q = seq; q < done + 2 * n; ++q)
      if (grown[q & (2 * n - 1)]) zeEventDestroy(grown[q & (2 * n - 1)]);
    zeEventPoolDestroy(p);
    throw ZeError(r, call, "growing a zex::Stream's events");
  };
  try {
    grown_pools.reserve(grown_pools.size() + 1);
  } catch (...) {
    fail(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, "std::vector::reserve");
  }
  for (uint64_t q = done; q < seq; ++q) grown[q & (2 * n - 1)] = ring(q);
  uint32_t index = 0;
  for (uint64_t q = seq; q < done + 2 * n; ++q) {
    ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, index++, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
    ze_result_t r = zeEventCreate(p, &ed, &grown[q & (2 * n - 1)]);
    if (r != ZE_RESULT_SUCCESS) {
      grown[q & (2 * n - 1)] = nullptr;
      fail(r, "zeEventCreate");
    }
  }
  grown_pools.push_back(p);
  events.swap(grown);
}

void Stream::Impl::retire_oldest() {
  // Every event is pending. Wait for the command at done + n/2: once it has finished, so has every
  // command before it (the chain, or an in-order list), and each of those commands' events has been
  // waited for by its successor, so the oldest half can be reset and reused. The newest half stays
  // queued: the device never runs dry here.
  const uint64_t half = events.size() / 2;
  ze_result_t r = zeEventHostSynchronize(ring(done + half), UINT64_MAX);
  if (r != ZE_RESULT_SUCCESS) detail::throw_ze_error(r, "zeEventHostSynchronize", "waiting for a zex::Stream");
  for (uint64_t q = done; q < done + half; ++q)
    check(zeEventHostReset(ring(q)), "zeEventHostReset", "resetting a zex::Stream's event");
  done += half;
}

bool Stream::Impl::query() const {
  ze_result_t r = host_sync ? host_sync(list, 0) : zeEventQueryStatus(ring(seq - 1));
  if (r == ZE_RESULT_NOT_READY) return false;
  check(r, host_sync ? "zeCommandListHostSynchronize" : "zeEventQueryStatus", "polling a zex::Stream");
  return true;
}

void Stream::Impl::gather_waits(Command& c) {
  user_wait_end = seq + 1;  // this command (or, for a signal() barrier, the next one) waits for them
  wait_buf.assign(user_waits.begin(), user_waits.end());
  if (c.prev) wait_buf.push_back(c.prev);
  c.num_waits = static_cast<uint32_t>(wait_buf.size());
  c.waits = wait_buf.data();
}

void Stream::Impl::append_signal(ze_event_handle_t event) {
  // A barrier with wait events waits only for those (the specification), so on a chained list it
  // waits for the newest launch, whose completion means all have finished; on an in-order list it
  // follows everything before it anyway. Either way it holds back every later command.
  Command c;
  c.prev = chain ? previous_event() : nullptr;
  gather_waits(c);
  ze_result_t r = zeCommandListAppendBarrier(list, event, c.num_waits, c.num_waits ? c.waits : nullptr);
  if (r != ZE_RESULT_SUCCESS) throw ZeError(r, "zeCommandListAppendBarrier", "signalling an event after a zex::Stream's launches");
  user_waits.clear();
  if (host_sync)
    ++seq;  // pending work: the list's host synchronize (and the destructor's) covers the barrier too
  else
    unwaited_barrier = true;  // no ring event follows it yet: the destructor adds one
}

void Stream::Impl::throw_bad_level(int requested, Language lang) const {
  if (requested == -1) throw zex::InvalidArgument(env_error);
  throw zex::InvalidArgument(std::string("zex: ") + detail::launch_names(lang).debug_level + " is " +
                              std::to_string(requested) + "; use 0, 1, 2, or -1 for the default (ZEX_DEBUG_LEVEL)");
}

const Stream::Impl::Run* Stream::Impl::find(uint64_t id) const {
  // Runs are in launch order; the run of `id` is the last one that starts at or before it.
  if (id == 0 || id >= next_id) return nullptr;
  auto it = std::upper_bound(runs.begin(), runs.end(), id, [](uint64_t v, const Run& r) { return v < r.first_id; });
  return it == runs.begin() ? nullptr : &*(it - 1);
}

void Stream::Impl::raise(bool all_done) {
  const Run* e = find(slot.report->launch_id);
  // The reset is a fill: on the event path it signals the stream's next event, which the next launch
  // waits for; on an in-order list later launches follow it anyway. So later launches may throw again
  // only once the claim word is 0 again, and the next synchronize (or the destructor) waits for it
  // too. One append.
  ze_event_handle_t ev = host_sync ? nullptr : next_event();
  const int level = e ? e->level : env_level;
  const detail::KnownStrings* known = e ? e->kernel->module->known_strings(level) : nullptr;
  const detail::SiteTable* sites = e ? &e->kernel->module->sites() : nullptr;
  KernelExceptionInfo info = pool->read_and_reset(
      slot,
      [](const void* self, uint64_t id) {
        const Run* f = static_cast<const Impl*>(self)->find(id);
        return f ? *f->kernel->name : std::string();
      },
      this, level, list, ev, known, sites, e ? e->kernel->module->site_base() : 0);
  ++seq;
  if (e && e->file) info.launch_site = SourceLocation{e->file, e->line};
  // A numbered throw site stores the global id only (docs/abi.md): zex launches have no global offset,
  // so the group and local ids follow from the launch's group size.
  if (e && info.global_id && !info.group_id && e->group[0] && e->group[1] && e->group[2]) {
    std::array<uint64_t, 3> g{}, l{};
    for (int k = 0; k < 3; ++k) {
      g[k] = (*info.global_id)[k] / e->group[k];
      l[k] = (*info.global_id)[k] % e->group[k];
    }
    info.group_id = g;
    info.local_id = l;
  }
  // After synchronize every launch has finished (the reset is zex's own command); after an Event's
  // wait, later launches may still run and throw, and their runs name them.
  if (all_done) runs.clear();
  throw KernelException(std::move(info));
}

}  // namespace zex
