// What the C API's entry points share (private to src/c_api/): the handle types, each owning one C++
// object; the thread's last error; and the guards that catch every exception at the boundary and turn
// it into a zex_result_t. The entry points: c_api.cpp (errors, kernel exceptions, slots) and
// c_api_objects.cpp (contexts, devices, modules, kernels, streams, events, raw handles).
#pragma once

// The function zex_stream_launch is defined here: not the macro that makes callers' calls record their line.
#ifndef ZEX_NO_LAUNCH_SITE
#define ZEX_NO_LAUNCH_SITE
#endif
#include <zex/zex.h>
#include <zex/zex.hpp>

#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

struct zex_device_s {
  explicit zex_device_s(zex::Device d) : dev(std::move(d)) {}
  zex::Device dev;
  // The sub-devices' handles, made on first use (any thread may ask) and owned here, so that they live
  // as long as the context handle, like the devices'.
  std::mutex subs_mu;
  bool subs_listed = false;
  std::vector<std::unique_ptr<zex_device_s>> subs;
  /// The sub-device handles, listing them on the first call. @throws as Device::sub_devices
  const std::vector<std::unique_ptr<zex_device_s>>& sub_devices() {
    std::lock_guard<std::mutex> lock(subs_mu);
    if (!subs_listed) {
      for (const zex::Device& d : dev.sub_devices()) subs.push_back(std::make_unique<zex_device_s>(d));
      subs_listed = true;
    }
    return subs;
  }
};

struct zex_context_s {
  zex::Context ctx;
  // One handle per device, made with the context: the API has no zex_device_destroy, so devices are
  // owned here and live as long as the context handle.
  std::vector<std::unique_ptr<zex_device_s>> devices;
};

struct zex_module_s {
  zex::Module mod;
  std::mutex mu;          // build_log
  std::string build_log;  // of the last failed build, for zex_module_build_log
};

struct zex_kernel_s {
  zex::Kernel k;  // holds the module's state: the module handle may be destroyed first
};

struct zex_stream_s {
  zex::Stream s;
  zex::Language lang = zex::Language::C;  // what its launch errors name (zex_stream_set_language)
  bool stop_on_throw = false;             // zex_stream_set_stop_on_throw: launches from now on
};

struct zex_graph_s {
  zex::Graph g;
  zex::Language lang = zex::Language::C;
};

struct zex_queue_s {
  zex::Queue q;
};

struct zex_event_s {
  zex::Device dev;  // keeps the context's state alive: the event may outlive its context handle
  zex::Event ev;    // destroyed first (it waits for its mark, then frees its pool)
};

struct zex_exception_s {
  zex::KernelExceptionInfo info;
  // Every language's text, made at once: the handle is then immutable, so any thread may read it.
  std::string messages[4];
  // The C view of `info` (project()), pointing into it: what zex_exception_info copies and every
  // zex_exception_* accessor reads. The handle is never copied or moved, so the pointers stay valid.
  zex_exception_info_t view;
  std::vector<zex_exception_frame_t> frames;
  // A graph queue's other kept reports (KernelException::others(), bounded by Graph::kMaxKept).
  std::vector<zex::KernelExceptionInfo> others;
};

struct zex_slot_s {
  zex::Device dev;       // keeps the context's state, and so the slab pool, alive; destroyed last
  zex::UniqueSlot slot;  // released (an unchecked throw discarded) when the handle is destroyed
};

namespace zex_c {

// The thread's last error. `set` keeps a successful call to one load and one branch: the strings are
// cleared only when an error was recorded.
struct LastError {
  bool set = false;
  std::string message;
  ze_result_t ze = ZE_RESULT_SUCCESS;
  std::string call;
  std::shared_ptr<const zex::DeviceReport> report;  // a device loss's, else null
};
inline thread_local LastError t_error;

inline zex_result_t ok() noexcept {
  LastError& e = t_error;
  if (__builtin_expect(e.set, 0)) {
    e.set = false;
    e.message.clear();
    e.call.clear();
    e.ze = ZE_RESULT_SUCCESS;
    e.report.reset();
  }
  return ZEX_SUCCESS;
}

inline zex_result_t fail(zex_result_t r, const char* message, ze_result_t ze = ZE_RESULT_SUCCESS,
                  const char* call = "") noexcept {
  LastError& e = t_error;
  e.set = true;
  e.ze = ze;
  e.report.reset();
  try {
    e.message = message;
    e.call = call;
  } catch (...) {  // no memory for the text: the result still says what happened
    e.message.clear();
    e.call.clear();
  }
  return r;
}

inline zex_result_t null_argument(const char* function, const char* parameter) noexcept {
  char buf[160];
  std::snprintf(buf, sizeof buf, "zex: %s: `%s` is NULL", function, parameter);
  return fail(ZEX_ERROR_INVALID_ARGUMENT, buf);
}

// zex_launch_config_t as the C++ launch takes it. The debug level, the extents and the count are
// checked by the C++ launch (the one copy of those checks), its messages naming the fields as the
// caller's language spells them.
inline zex::LaunchConfig launch_config(const zex_launch_config_t& c) noexcept {
  zex::LaunchConfig cfg;  // fields assigned: the uint32_t extents need none of Dim3's narrowing checks
  cfg.groups.x = c.groups[0];
  cfg.groups.y = c.groups[1];
  cfg.groups.z = c.groups[2];
  cfg.group_size.x = c.group_size[0];
  cfg.group_size.y = c.group_size[1];
  cfg.group_size.z = c.group_size[2];
  cfg.debug_level = c.debug_level;
  return cfg;
}

// zex_stream_set_language, zex_graph_set_language: `language` into `lang`, or INVALID_ARGUMENT.
inline zex_result_t set_language(const char* function, zex::Language& lang, zex_language_t language) noexcept {
  const int l = static_cast<int>(language);
  if (l < 0 || l > static_cast<int>(zex::Language::Julia)) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "zex: %s: %d is not a zex_language_t", function, l);
    return fail(ZEX_ERROR_INVALID_ARGUMENT, buf);
  }
  lang = static_cast<zex::Language>(l);
  return ok();
}

#define ZEX_REQUIRE(p)                                      \
  do {                                                      \
    if (__builtin_expect((p) == nullptr, 0)) return null_argument(__func__, #p); \
  } while (0)

// A thrown kernel exception as a result: the handle to `out` (if wanted), the C text as the last
// error (c_api.cpp).
// A new exception handle for `info` (c_api.cpp). @throws std::bad_alloc
zex_exception_s* make_exception(const zex::KernelExceptionInfo& info);
zex_result_t kernel_exception(const zex::KernelExceptionInfo& info, zex_exception_t* out,
                              const std::vector<zex::KernelExceptionInfo>* others = nullptr);

// Runs `f` (which returns a zex_result_t and records its own errors) with every exception caught:
// nothing may unwind into C. The order matters: std::out_of_range is a std::logic_error but means a
// bad argument here.
template <class F>
zex_result_t guard(F&& f) noexcept {
  try {
    zex_result_t r = f();
    return r == ZEX_SUCCESS ? ok() : r;
  } catch (const zex::KernelException& e) {
    // Only waits and checks throw these, and they catch them first (guard_raising); kept for safety.
    return fail(ZEX_ERROR_KERNEL_EXCEPTION, zex::format_kernel_exception(e.info(), zex::Language::C).c_str());
  } catch (const zex::ZeError& e) {
    zex_result_t r = fail(ZEX_ERROR_LEVEL_ZERO, e.what(), e.result(), e.call().c_str());
    t_error.report = e.shared_device_report();
    return r;
  } catch (const std::bad_alloc&) {
    return fail(ZEX_ERROR_OUT_OF_HOST_MEMORY, "zex: out of host memory");
  } catch (const std::invalid_argument& e) {
    return fail(ZEX_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const std::out_of_range& e) {
    return fail(ZEX_ERROR_INVALID_ARGUMENT, e.what());
  } catch (const std::logic_error& e) {
    return fail(ZEX_ERROR_INVALID_STATE, e.what());
  } catch (const std::exception& e) {
    return fail(ZEX_ERROR_UNKNOWN, e.what());
  } catch (...) {
    return fail(ZEX_ERROR_UNKNOWN, "zex: an unknown C++ exception was caught at the C API boundary");
  }
}

// A wait that may raise the stream's kernel exception: runs `f` (returning nothing) under guard(), a
// KernelException becoming ZEX_ERROR_KERNEL_EXCEPTION with the exception handed to `exception_out`.
template <class F>
zex_result_t guard_raising(zex_exception_t* exception_out, F&& f) noexcept {
  return guard([&] {
    try {
      f();
    } catch (const zex::KernelException& e) {
      return kernel_exception(e.info(), exception_out, &e.others());
    }
    return ZEX_SUCCESS;
  });
}

// The handle getters return a handle, not a result: NULL and the last error on failure.
template <class H, class F>
H handle_or_null(F&& f) noexcept {
  H h = nullptr;
  guard([&] {
    h = f();
    return ZEX_SUCCESS;
  });
  return h;
}

}  // namespace zex_c
