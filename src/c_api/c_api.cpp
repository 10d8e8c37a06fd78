// The C API (<zex/zex.h>) over the C++ objects: each handle owns one C++ object, and every entry point
// catches every exception at the boundary and turns it into a zex_result_t and the thread's last error
// (docs/integration.md, "C API"; the mapping in docs/decisions.md). Built into libzex.so, whose version
// script (zex_c.map) exports the zex_* names and nothing else: the C++ library inside, SPIRV-Tools and
// the standard library's inline code stay private, so a C program or a Python process can load it next
// to any other C++ code. This file: the thread's last error, kernel exceptions (the one projection into
// C) and slots; c_api_objects.cpp the objects.
#include "c_api/boundary.hpp"

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

namespace zex_c {

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
  v.execution_known = i.execution ? 1u : 0u;
  v.execution_index = i.execution ? *i.execution : 0;
  v.executions_thrown = i.executions_thrown;
  v.executions_synchronized = i.executions_synchronized;
  v.graph_name = i.graph_name.c_str();
}

zex_exception_s* make_exception(const zex::KernelExceptionInfo& info) {
  auto e = std::make_unique<zex_exception_s>();
  e->info = info;
  for (int l = 0; l < 4; ++l) e->messages[l] = zex::format_kernel_exception(info, static_cast<zex::Language>(l));
  project(*e);
  return e.release();
}

zex_result_t kernel_exception(const zex::KernelExceptionInfo& info, zex_exception_t* out,
                              const std::vector<zex::KernelExceptionInfo>* others) {
  if (out) {
    *out = make_exception(info);
    if (others) (*out)->others = *others;
    return fail(ZEX_ERROR_KERNEL_EXCEPTION, (*out)->messages[static_cast<int>(zex::Language::C)].c_str());
  }
  return fail(ZEX_ERROR_KERNEL_EXCEPTION, zex::format_kernel_exception(info, zex::Language::C).c_str());
}

}  // namespace zex_c

using namespace zex_c;

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
