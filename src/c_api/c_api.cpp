// The C API (<zex/zex.h>) over the C++ objects: each handle owns one C++ object, and every entry point
// catches every exception at the boundary and turns it into a zex_result_t and the thread's last error
// (docs/integration.md, "C API"; the mapping in docs/decisions.md). Built into libzex.so, whose version
// script (zex_c.map) exports the zex_* names and nothing else: the C++ library inside, SPIRV-Tools and
// the standard library's inline code stay private, so a C program or a Python process can load it next
// to any other C++ code.
// The function zex_stream_launch is defined here: not the macro that makes callers' calls record their line.
#define ZEX_NO_LAUNCH_SITE
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
};

struct zex_slot_s {
  zex::Device dev;       // keeps the context's state, and so the slab pool, alive; destroyed last
  zex::UniqueSlot slot;  // released (an unchecked throw discarded) when the handle is destroyed
};

namespace {

// The thread's last error. `set` keeps a successful call to one load and one branch: the strings are
// cleared only when an error was recorded.
struct LastError {
  bool set = false;
  std::string message;
  ze_result_t ze = ZE_RESULT_SUCCESS;
  std::string call;
  std::shared_ptr<const zex::DeviceReport> report;  // a device loss's, else null
};
thread_local LastError t_error;

zex_result_t ok() noexcept {
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

zex_result_t fail(zex_result_t r, const char* message, ze_result_t ze = ZE_RESULT_SUCCESS,
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

zex_result_t null_argument(const char* function, const char* parameter) noexcept {
  char buf[160];
  std::snprintf(buf, sizeof buf, "zex: %s: `%s` is NULL", function, parameter);
  return fail(ZEX_ERROR_INVALID_ARGUMENT, buf);
}

#define ZEX_REQUIRE(p)                                      \
  do {                                                      \
    if (__builtin_expect((p) == nullptr, 0)) return null_argument(__func__, #p); \
  } while (0)

// The one projection of a zex::KernelExceptionInfo into C (issue 25): e->view, which
// zex_exception_info copies out and every accessor reads, Python's ctypes included. A field added to
// KernelExceptionInfo is added to zex_exception_info_t (at the end) and set here; python/tests/
// test_header.py fails until zex.h's struct projects it, this function sets every field of that struct
// (`v.<field> =`), and _library.py's ctypes struct matches zex.h's.
void project(zex_exception_s& e) {
  const zex::KernelExceptionInfo& i = e.info;
  e.frames.reserve(i.frames.size());
  for (const zex::Frame& f : i.frames) e.frames.push_back({f.function.c_str(), f.file.c_str(), f.line});
  zex_exception_info_t& v = e.view;
  v = zex_exception_info_t{};
  v.size = sizeof v;
  v.debug_level = i.debug_level;
  v.abi_version = i.abi_version;
  v.name = i.name.c_str();
  v.reason = i.reason.c_str();
  v.kernel_name = i.kernel_name.c_str();
  v.device_name = i.device_name.c_str();
  v.launch_id = i.launch_id;
  v.global_id = i.global_id ? i.global_id->data() : nullptr;
  v.group_id = i.group_id ? i.group_id->data() : nullptr;
  v.local_id = i.local_id ? i.local_id->data() : nullptr;
  v.frames = e.frames.empty() ? nullptr : e.frames.data();
  v.frame_count = static_cast<uint32_t>(e.frames.size());
  v.frame_depth = i.frame_depth;
  v.values = i.values.empty() ? nullptr : i.values.data();
  v.value_count = static_cast<uint32_t>(i.values.size());
  v.value_kind = i.value_kind;
  v.thrower_count = i.thrower_count;
  v.launch_site_file = i.launch_site ? i.launch_site->file.c_str() : nullptr;
  v.launch_site_line = i.launch_site ? i.launch_site->line : 0;
}

zex_exception_s* make_exception(const zex::KernelExceptionInfo& info) {
  auto e = std::make_unique<zex_exception_s>();
  e->info = info;
  for (int l = 0; l < 4; ++l) e->messages[l] = zex::format_kernel_exception(info, static_cast<zex::Language>(l));
  project(*e);
  return e.release();
}

// A thrown kernel exception as a result: the handle to `out` (if wanted), the C text as the last error.
zex_result_t kernel_exception(const zex::KernelExceptionInfo& info, zex_exception_t* out) {
  if (out) {
    *out = make_exception(info);
    return fail(ZEX_ERROR_KERNEL_EXCEPTION, (*out)->messages[static_cast<int>(zex::Language::C)].c_str());
  }
  return fail(ZEX_ERROR_KERNEL_EXCEPTION, zex::format_kernel_exception(info, zex::Language::C).c_str());
}

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
      return kernel_exception(e.info(), exception_out);
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

}  // namespace

extern "C" {

uint32_t zex_c_api_version(void) { return ZEX_C_API_VERSION; }
const char* zex_last_error_message(void) { return t_error.message.c_str(); }
ze_result_t zex_last_ze_result(void) { return t_error.ze; }
const char* zex_last_error_call(void) { return t_error.call.c_str(); }

int zex_last_device_report(const char** device, const char** state, uint32_t* counter_count,
                           uint32_t* record_count) {
  const zex::DeviceReport* r = t_error.report.get();
  if (!r) return 0;
  if (device) *device = r->device.c_str();
  if (state) *state = r->state.c_str();
  if (counter_count) *counter_count = static_cast<uint32_t>(r->counters.size());
  if (record_count) *record_count = static_cast<uint32_t>(r->records.size());
  return 1;
}

int zex_last_device_counter(uint32_t i, const char** set, const char** category, uint64_t* at_creation,
                            uint64_t* now) {
  const zex::DeviceReport* r = t_error.report.get();
  if (!r || i >= r->counters.size()) return 0;
  const zex::RasCounter& c = r->counters[i];
  if (set) *set = c.set.c_str();
  if (category) *category = c.category.c_str();
  if (at_creation) *at_creation = c.at_creation;
  if (now) *now = c.now;
  return 1;
}

const char* zex_last_device_info_log(void) {
  const zex::DeviceReport* r = t_error.report.get();
  return r ? r->info_log.c_str() : nullptr;
}

const char* zex_last_device_note(uint32_t i) {
  const zex::DeviceReport* r = t_error.report.get();
  return r && i < r->notes.size() ? r->notes[i].c_str() : nullptr;
}

int zex_last_device_record(uint32_t i, const char** format, const uint8_t** bytes, size_t* size,
                           const char** summary) {
  const zex::DeviceReport* r = t_error.report.get();
  if (!r || i >= r->records.size()) return 0;
  const zex::DeviceRecord& d = r->records[i];
  if (format) *format = d.format.c_str();
  if (bytes) *bytes = d.bytes.data();
  if (size) *size = d.bytes.size();
  if (summary) *summary = d.summary.c_str();
  return 1;
}

// ---- contexts and devices ----------------------------------------------------------------------------

static zex_result_t wrap_context(zex::Context ctx, zex_context_t* out) {
  auto c = std::make_unique<zex_context_s>(zex_context_s{std::move(ctx), {}});
  for (size_t i = 0; i < c->ctx.device_count(); ++i)
    c->devices.push_back(std::make_unique<zex_device_s>(c->ctx.device(i)));
  *out = c.release();
  return ZEX_SUCCESS;
}

zex_result_t zex_context_create(zex_context_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  return guard([&] { return wrap_context(zex::Context(), out); });
}

zex_result_t zex_context_adopt(ze_driver_handle_t driver, ze_context_handle_t context, zex_context_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(driver);
  ZEX_REQUIRE(context);
  return guard([&] { return wrap_context(zex::Context(driver, context), out); });
}

void zex_context_destroy(zex_context_t context) { delete context; }

zex_result_t zex_device_count(zex_context_t context, uint32_t* out) {
  ZEX_REQUIRE(context);
  ZEX_REQUIRE(out);
  *out = static_cast<uint32_t>(context->devices.size());
  return ok();
}

zex_result_t zex_device_get(zex_context_t context, uint32_t index, zex_device_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(context);
  if (index >= context->devices.size()) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "zex: zex_device_get: index %u, but the driver has %zu device(s)", index,
                  context->devices.size());
    return fail(ZEX_ERROR_INVALID_ARGUMENT, buf);
  }
  *out = context->devices[index].get();
  return ok();
}

zex_result_t zex_device_sub_device_count(zex_device_t device, uint32_t* out) {
  ZEX_REQUIRE(out);
  *out = 0;
  ZEX_REQUIRE(device);
  return guard([&] {
    *out = static_cast<uint32_t>(device->sub_devices().size());
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_device_sub_device_get(zex_device_t device, uint32_t index, zex_device_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(device);
  return guard([&] {
    const auto& subs = device->sub_devices();
    if (index >= subs.size()) {
      char buf[192];
      std::snprintf(buf, sizeof buf, "zex: zex_device_sub_device_get: index %u, but device '%s' has %zu sub-device(s)",
                    index, device->dev.name().c_str(), subs.size());
      return fail(ZEX_ERROR_INVALID_ARGUMENT, buf);
    }
    *out = subs[index].get();
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_device_for_handle(zex_context_t context, ze_device_handle_t handle, zex_device_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(context);
  ZEX_REQUIRE(handle);
  return guard([&] {
    for (const auto& d : context->devices) {
      if (d->dev.handle() == handle) {
        *out = d.get();
        return ZEX_SUCCESS;
      }
      for (const auto& s : d->sub_devices())
        if (s->dev.handle() == handle) {
          *out = s.get();
          return ZEX_SUCCESS;
        }
    }
    return fail(ZEX_ERROR_INVALID_ARGUMENT,
                "zex: zex_device_for_handle: the handle is neither a device nor a sub-device of the context's driver");
  });
}

zex_result_t zex_context_alloc_shared(zex_context_t context, zex_device_t device, size_t size, size_t alignment,
                                      void** out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(context);
  if (!device && context->devices.empty())
    return fail(ZEX_ERROR_INVALID_ARGUMENT, "zex: zex_context_alloc_shared: the context has no device");
  ze_device_handle_t dev = (device ? device : context->devices[0].get())->dev.handle();
  ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  return guard([&] {
    zex::check(zeMemAllocShared(context->ctx.handle(), &dd, &hd, size, alignment, dev, out), "zeMemAllocShared",
               "allocating shared memory for zex_context_alloc_shared");
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_context_free(zex_context_t context, void* ptr) {
  ZEX_REQUIRE(context);
  if (!ptr) return ok();
  return guard([&] {
    zex::check(zeMemFree(context->ctx.handle(), ptr), "zeMemFree", "freeing memory for zex_context_free");
    return ZEX_SUCCESS;
  });
}

// ---- modules and kernels -------------------------------------------------------------------------------

zex_result_t zex_module_create(zex_device_t device, const void* spirv, size_t size, zex_module_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(device);
  ZEX_REQUIRE(spirv);
  return guard([&] {
    *out = new zex_module_s{zex::Module(device->dev, spirv, size), {}, {}};
    return ZEX_SUCCESS;
  });
}

void zex_module_destroy(zex_module_t module) { delete module; }

zex_result_t zex_module_build_log(zex_module_t module, const char** out) {
  ZEX_REQUIRE(out);
  *out = "";
  ZEX_REQUIRE(module);
  return guard([&] {
    try {
      module->mod.handle(1);
    } catch (const zex::ZeError& e) {
      if (!e.build_log().empty()) {
        std::lock_guard<std::mutex> lock(module->mu);
        module->build_log = e.build_log();
        *out = module->build_log.c_str();
      }
      throw;
    }
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_kernel_create(zex_module_t module, const char* name, zex_kernel_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(module);
  ZEX_REQUIRE(name);
  return guard([&] {
    *out = new zex_kernel_s{module->mod.kernel(name)};
    return ZEX_SUCCESS;
  });
}

void zex_kernel_destroy(zex_kernel_t kernel) { delete kernel; }

// ---- streams ---------------------------------------------------------------------------------------------

zex_result_t zex_stream_create(zex_device_t device, zex_stream_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(device);
  return guard([&] {
    *out = new zex_stream_s{zex::Stream(device->dev)};
    return ZEX_SUCCESS;
  });
}

void zex_stream_destroy(zex_stream_t stream) { delete stream; }  // ~Stream never throws

zex_result_t zex_stream_set_language(zex_stream_t stream, zex_language_t language) {
  ZEX_REQUIRE(stream);
  const int l = static_cast<int>(language);
  if (l < 0 || l > static_cast<int>(zex::Language::Julia)) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "zex: zex_stream_set_language: %d is not a zex_language_t", l);
    return fail(ZEX_ERROR_INVALID_ARGUMENT, buf);
  }
  stream->lang = static_cast<zex::Language>(l);
  return ok();
}

static zex_result_t launch(const char* function, zex_stream_t stream, zex_kernel_t kernel,
                           const zex_launch_config_t* config, uint32_t num_args, const zex_arg_t* args,
                           const char* file, uint32_t line) {
  if (__builtin_expect(stream == nullptr, 0)) return null_argument(function, "stream");
  if (__builtin_expect(kernel == nullptr, 0)) return null_argument(function, "kernel");
  if (__builtin_expect(config == nullptr, 0)) return null_argument(function, "config");
  if (num_args != 0 && args == nullptr) return null_argument(function, "args");
  return guard([&] {
    // The debug level, the extents and the count are checked by the C++ launch (the one copy of those
    // checks), its messages naming the fields as the stream's language spells them.
    const uint32_t* g = config->groups;
    const uint32_t* b = config->group_size;
    zex::LaunchConfig cfg;
    cfg.groups.x = g[0];
    cfg.groups.y = g[1];
    cfg.groups.z = g[2];
    cfg.group_size.x = b[0];
    cfg.group_size.y = b[1];
    cfg.group_size.z = b[2];
    cfg.debug_level = config->debug_level;
    // Read in place, and only once the count is the kernel's: a wrong num_args (0xffffffff) must neither
    // allocate nor read past the caller's array.
    stream->s.launch_args(kernel->k, cfg, args, num_args, file, line, stream->lang);
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_stream_launch(zex_stream_t stream, zex_kernel_t kernel, const zex_launch_config_t* config,
                               uint32_t num_args, const zex_arg_t* args) {
  return launch(__func__, stream, kernel, config, num_args, args, nullptr, 0);
}

zex_result_t zex_stream_launch_at(zex_stream_t stream, zex_kernel_t kernel, const zex_launch_config_t* config,
                                  uint32_t num_args, const zex_arg_t* args, const char* file, uint32_t line) {
  return launch(__func__, stream, kernel, config, num_args, args, file, line);
}

zex_result_t zex_stream_synchronize(zex_stream_t stream, zex_exception_t* exception_out) {
  if (exception_out) *exception_out = nullptr;
  ZEX_REQUIRE(stream);
  return guard_raising(exception_out, [&] { stream->s.synchronize(); });
}

zex_result_t zex_stream_synchronize_for(zex_stream_t stream, uint64_t timeout_ns, int* done_out,
                                        zex_exception_t* exception_out) {
  if (exception_out) *exception_out = nullptr;
  if (done_out) *done_out = 0;
  ZEX_REQUIRE(stream);
  const zex_result_t r = guard_raising(exception_out, [&] {
    const bool done = stream->s.synchronize_for_ns(timeout_ns);
    if (done_out) *done_out = done ? 1 : 0;
  });
  if (r == ZEX_ERROR_KERNEL_EXCEPTION && done_out) *done_out = 1;  // it threw: the work has finished
  return r;
}

// ---- events ----------------------------------------------------------------------------------------------

zex_result_t zex_stream_record(zex_stream_t stream, zex_event_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(stream);
  return guard([&] {
    auto e = std::make_unique<zex_event_s>();
    e->dev = stream->s.device();
    e->ev = stream->s.record();
    *out = e.release();
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_event_synchronize(zex_event_t event, zex_exception_t* exception_out) {
  if (exception_out) *exception_out = nullptr;
  ZEX_REQUIRE(event);
  return guard_raising(exception_out, [&] { event->ev.synchronize(); });
}

zex_result_t zex_event_ready(zex_event_t event, int* ready_out) {
  ZEX_REQUIRE(ready_out);
  *ready_out = 0;
  ZEX_REQUIRE(event);
  return guard([&] {
    *ready_out = event->ev.ready() ? 1 : 0;
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_stream_wait_event(zex_stream_t stream, zex_event_t event) {
  ZEX_REQUIRE(stream);
  ZEX_REQUIRE(event);
  return guard([&] {
    stream->s.wait(event->ev);
    return ZEX_SUCCESS;
  });
}

ze_event_handle_t zex_event_handle(zex_event_t event) { return event ? event->ev.handle() : nullptr; }

void zex_event_destroy(zex_event_t event) { delete event; }  // ~EventState waits for the mark; never throws

// ---- kernel exceptions -----------------------------------------------------------------------------------

const char* zex_exception_message(zex_exception_t e) {
  return e ? e->messages[static_cast<int>(zex::Language::C)].c_str() : "";
}

const char* zex_exception_message_for(zex_exception_t e, zex_language_t language) {
  if (!e) return "";
  const int l = static_cast<int>(language);
  return e->messages[l >= 0 && l < 4 ? l : static_cast<int>(zex::Language::C)].c_str();
}

// The accessors of the first C API, each one field of the projection (e->view).
const char* zex_exception_name(zex_exception_t e) { return e ? e->view.name : ""; }
const char* zex_exception_reason(zex_exception_t e) { return e ? e->view.reason : ""; }
const char* zex_exception_kernel_name(zex_exception_t e) { return e ? e->view.kernel_name : ""; }
int zex_exception_debug_level(zex_exception_t e) { return e ? e->view.debug_level : 0; }

static int copy_id(const uint64_t* id, uint64_t out[3]) {
  if (!id) return 0;
  if (out)
    for (int i = 0; i < 3; ++i) out[i] = id[i];
  return 1;
}

int zex_exception_global_id(zex_exception_t e, uint64_t out[3]) { return e ? copy_id(e->view.global_id, out) : 0; }
int zex_exception_group_id(zex_exception_t e, uint64_t out[3]) { return e ? copy_id(e->view.group_id, out) : 0; }
int zex_exception_local_id(zex_exception_t e, uint64_t out[3]) { return e ? copy_id(e->view.local_id, out) : 0; }

uint32_t zex_exception_frame_count(zex_exception_t e) { return e ? e->view.frame_count : 0; }

uint32_t zex_exception_frame_depth(zex_exception_t e) { return e ? e->view.frame_depth : 0; }

int zex_exception_frame(zex_exception_t e, uint32_t i, const char** function, const char** file, uint32_t* line) {
  if (!e || i >= e->view.frame_count) return 0;
  const zex_exception_frame_t& f = e->view.frames[i];
  if (function) *function = f.function;
  if (file) *file = f.file;
  if (line) *line = f.line;
  return 1;
}

uint32_t zex_exception_values(zex_exception_t e, uint64_t* out, uint32_t capacity) {
  if (!e) return 0;
  const zex_exception_info_t& v = e->view;
  if (out)
    for (uint32_t i = 0; i < v.value_count && i < capacity; ++i) out[i] = v.values[i];
  return v.value_count;
}

uint64_t zex_exception_thrower_count(zex_exception_t e) { return e ? e->view.thrower_count : 0; }

int zex_exception_launch_site(zex_exception_t e, const char** file, uint32_t* line) {
  if (!e || !e->view.launch_site_file) return 0;
  if (file) *file = e->view.launch_site_file;
  if (line) *line = e->view.launch_site_line;
  return 1;
}

zex_result_t zex_exception_info(zex_exception_t e, zex_exception_info_t* out) {
  ZEX_REQUIRE(e);
  ZEX_REQUIRE(out);
  if (out->size < sizeof out->size) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "zex: zex_exception_info: out->size is %zu; set it to sizeof(zex_exception_info_t) (%zu)",
                  out->size, sizeof(zex_exception_info_t));
    return fail(ZEX_ERROR_INVALID_ARGUMENT, buf);
  }
  // The fields that lie within the caller's struct: a struct of an older zex.h ends before the newer
  // fields (anything of ours past its last field falls in its own tail padding, or past its end).
  zex_exception_info_t v = e->view;
  const size_t n = out->size < sizeof v ? out->size : sizeof v;
  v.size = n;
  std::memcpy(out, &v, n);
  return ok();
}

void zex_exception_destroy(zex_exception_t e) { delete e; }

// ---- raw handles -------------------------------------------------------------------------------------------

#define ZEX_REQUIRE_HANDLE(p)                       \
  do {                                              \
    if ((p) == nullptr) {                           \
      null_argument(__func__, #p);                  \
      return nullptr;                               \
    }                                               \
  } while (0)

ze_context_handle_t zex_context_handle(zex_context_t context) {
  ZEX_REQUIRE_HANDLE(context);
  ok();
  return context->ctx.handle();
}

ze_driver_handle_t zex_driver_handle(zex_context_t context) {
  ZEX_REQUIRE_HANDLE(context);
  ok();
  return context->ctx.driver();
}

ze_device_handle_t zex_device_handle(zex_device_t device) {
  ZEX_REQUIRE_HANDLE(device);
  ok();
  return device->dev.handle();
}

ze_command_list_handle_t zex_stream_handle(zex_stream_t stream) {
  ZEX_REQUIRE_HANDLE(stream);
  ok();
  return stream->s.handle();
}

ze_kernel_handle_t zex_kernel_handle(zex_kernel_t kernel) {
  ZEX_REQUIRE_HANDLE(kernel);
  return handle_or_null<ze_kernel_handle_t>([&] { return kernel->k.handle(1); });
}

// ---- slots ----------------------------------------------------------------------------------------------

zex_result_t zex_slot_acquire(zex_device_t device, zex_slot_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(device);
  return guard([&] {
    auto s = std::make_unique<zex_slot_s>();
    s->dev = device->dev;
    s->slot = zex::UniqueSlot(s->dev.slab_pool());
    *out = s.release();
    return ZEX_SUCCESS;
  });
}

void zex_slot_release(zex_slot_t slot) { delete slot; }  // ~UniqueSlot: SlabPool::release, noexcept

zex_result_t zex_slot_state(zex_slot_t slot, uint64_t launch_id, zex_state_t* out) {
  ZEX_REQUIRE(slot);
  ZEX_REQUIRE(out);
  if (launch_id == 0) return fail(ZEX_ERROR_INVALID_ARGUMENT, "zex: zex_slot_state: launch_id must not be 0");
  *out = slot->slot.state(launch_id);
  return ok();
}

int zex_slot_thrown(zex_slot_t slot) { return slot && slot->slot.thrown() ? 1 : 0; }

zex_result_t zex_slot_append_reset(zex_slot_t slot, ze_command_list_handle_t list, ze_event_handle_t signal,
                                   ze_event_handle_t wait) {
  ZEX_REQUIRE(slot);
  ZEX_REQUIRE(list);
  return guard([&] {
    slot->slot.pool()->append_reset(list, slot->slot.get(), signal, wait);
    return ZEX_SUCCESS;
  });
}

static zex_result_t check_slot(zex_slot_t slot, zex::SlabPool::KernelNameFn name_of, const void* ctx,
                               ze_command_list_handle_t reset_list, int launch_level, zex_exception_t* out) {
  if (launch_level < 0 || launch_level > 2) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "zex: zex_slot_check: launch_level is %d; use 0, 1 or 2", launch_level);
    return fail(ZEX_ERROR_INVALID_ARGUMENT, buf);
  }
  return guard([&] {
    if (!slot->slot.thrown()) return ZEX_SUCCESS;
    zex::KernelExceptionInfo info =
        slot->slot.pool()->read_and_reset(slot->slot.get(), name_of, ctx, launch_level, reset_list);
    return kernel_exception(info, out);
  });
}

zex_result_t zex_slot_check(zex_slot_t slot, const char* kernel_name, ze_command_list_handle_t reset_list,
                            int launch_level, zex_exception_t* exception_out) {
  if (exception_out) *exception_out = nullptr;
  ZEX_REQUIRE(slot);
  ZEX_REQUIRE(kernel_name);
  return check_slot(
      slot, [](const void* name, uint64_t) { return std::string(static_cast<const char*>(name)); }, kernel_name,
      reset_list, launch_level, exception_out);
}

zex_result_t zex_slot_check_with(zex_slot_t slot, zex_kernel_name_fn name_of, void* user,
                                 ze_command_list_handle_t reset_list, int launch_level,
                                 zex_exception_t* exception_out) {
  if (exception_out) *exception_out = nullptr;
  ZEX_REQUIRE(slot);
  ZEX_REQUIRE(name_of);
  struct Callback {
    zex_kernel_name_fn fn;
    void* user;
  } cb{name_of, user};
  return check_slot(
      slot,
      [](const void* c, uint64_t id) {
        const Callback* f = static_cast<const Callback*>(c);
        const char* n = f->fn(f->user, id);
        return n ? std::string(n) : std::string();
      },
      &cb, reset_list, launch_level, exception_out);
}

}  // extern "C"
