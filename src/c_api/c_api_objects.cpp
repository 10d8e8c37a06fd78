// The C API's objects (<zex/zex.h>): contexts and devices, modules and kernels, streams, events, and
// raw handles for interop, each entry point guarded at the boundary (boundary.hpp).
#include "c_api/boundary.hpp"
#include <cstdio>
#include <string>

using namespace zex_c;

extern "C" {

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

zex_result_t zex_module_create_with_options(zex_device_t device, const void* spirv, size_t size, uint32_t flags,
                                            zex_module_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(device);
  ZEX_REQUIRE(spirv);
  return guard([&] {
    if (flags & ~ZEX_MODULE_CHECK_MEMORY)
      throw zex::InvalidArgument("zex_module_create_with_options: flags 0x" + [&] {
        char b[16];
        std::snprintf(b, sizeof b, "%x", flags);
        return std::string(b);
      }() + " has bits this libzex does not know; pass 0 or ZEX_MODULE_CHECK_MEMORY");
    zex::ModuleOptions o;
    o.check_memory = (flags & ZEX_MODULE_CHECK_MEMORY) != 0;
    *out = new zex_module_s{zex::Module(device->dev, spirv, size, o), {}, {}};
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_module_memory_checks(zex_module_t module, zex_memory_checks_t* out) {
  ZEX_REQUIRE(out);
  *out = zex_memory_checks_t{};
  ZEX_REQUIRE(module);
  return guard([&] {
    const zex::MemoryCheckCounts& c = module->mod.memory_checks();
    *out = zex_memory_checks_t{c.enabled ? 1 : 0, c.checked, c.loaded, c.from_integer, c.untraced, c.local};
    return ZEX_SUCCESS;
  });
}

void zex_forget_memory_bounds(void) { zex::forget_memory_bounds(); }

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

zex_result_t zex_kernel_hidden_argument_count(zex_kernel_t kernel, uint32_t* out) {
  ZEX_REQUIRE(out);
  *out = 0;
  ZEX_REQUIRE(kernel);
  return guard([&] {
    *out = kernel->k.hidden_argument_count();
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_kernel_checked_arguments(zex_kernel_t kernel, uint32_t* indices, uint32_t capacity, uint32_t* count) {
  ZEX_REQUIRE(count);
  *count = 0;
  ZEX_REQUIRE(kernel);
  if (capacity != 0) ZEX_REQUIRE(indices);  // NULL with a capacity of 0: just the count
  return guard([&] {
    const std::vector<uint32_t>& c = kernel->k.checked_arguments();
    *count = static_cast<uint32_t>(c.size());
    for (size_t i = 0; i < c.size() && i < capacity; ++i) indices[i] = c[i];
    return ZEX_SUCCESS;
  });
}

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
  return set_language(__func__, stream->lang, language);
}

zex_result_t zex_stream_set_stop_on_throw(zex_stream_t stream, int on) {
  ZEX_REQUIRE(stream);
  stream->stop_on_throw = on != 0;
  return ZEX_SUCCESS;
}

static zex_result_t launch(const char* function, zex_stream_t stream, zex_kernel_t kernel,
                           const zex_launch_config_t* config, uint32_t num_args, const zex_arg_t* args,
                           const char* file, uint32_t line) {
  if (__builtin_expect(stream == nullptr, 0)) return null_argument(function, "stream");
  if (__builtin_expect(kernel == nullptr, 0)) return null_argument(function, "kernel");
  if (__builtin_expect(config == nullptr, 0)) return null_argument(function, "config");
  if (num_args != 0 && args == nullptr) return null_argument(function, "args");
  return guard([&] {
    zex::LaunchConfig cfg = launch_config(*config);
    cfg.stop_on_throw = stream->stop_on_throw;
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

}  // extern "C"
