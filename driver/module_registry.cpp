// The registry of live modules' constant data, for zeMemGetAddressRange (module_constant_range in
// kernel.hpp): the storage blocks of program-scope variables and constants (program_globals.cpp), of
// which only those NEO registers count by default, and, for ZEX_CPU_LENIENT_ADDRESS_RANGE=1, the PoCL
// kernel objects that each module pins with its own dlopen (so that PoCL's LRU of 128 handles cannot
// unload them while the module lives).
#include "kernel.hpp"
#include "module_objects.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <set>

namespace zexcpu {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, int> pinned_paths;  // path -> number of live modules that pinned it
  struct Block {
    size_t size;
    bool strings;  // NEO's .data.const.string: found only in lenient mode
  };
  std::map<uintptr_t, Block> storage;  // storage blocks of live modules, by base
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: worker threads may still query at exit
  return *r;
}

// ZEX_CPU_LENIENT_ADDRESS_RANGE=1: answer as zex-cpu did before it followed NEO (strings and the
// readable segments of pinned kernel objects are found). Read on each call, so a test can switch it.
bool lenient() {
  const char* v = getenv("ZEX_CPU_LENIENT_ADDRESS_RANGE");
  return v && *v && strcmp(v, "0") != 0;
}

// True for what may be a PoCL kernel object of kernel `name`: PoCL 3.1 names them
// <cache>/<xx>/<program hash>/<name>/<group size variant>/<name>.so (lib/CL/pocl_cache.c). The path is
// only a first filter; pin_kernel_objects also checks the work-group function PoCL looks up in it.
bool is_pocl_kernel_object(const char* path, const std::string& name) {
  if (!path || !*path || name.empty()) return false;
  std::string p(path);
  std::string tail = "/" + name + ".so";
  if (p.size() <= tail.size() || p.compare(p.size() - tail.size(), tail.size(), tail) != 0) return false;
  return p.rfind("/" + name + "/", p.size() - tail.size()) != std::string::npos;
}

// <cache>/<xx>/<program hash> of a kernel object's path.
std::string program_dir_of(const std::string& path, const std::string& name) {
  std::string tail = "/" + name + ".so";
  if (path.size() <= tail.size()) return std::string();
  size_t at = path.rfind("/" + name + "/", path.size() - tail.size());
  return at == std::string::npos ? std::string() : path.substr(0, at);
}

}  // namespace

void release_module(ze_module_handle_t m) {
  if (m->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete m;
}

void register_module_storage(ze_module_handle_t m) {
  std::lock_guard<std::mutex> lock(registry().mu);
  for (auto& b : m->blocks)
    registry().storage[reinterpret_cast<uintptr_t>(b.mem.get())] = {b.size, b.segment == Segment::Strings};
}

// Takes the module's constants and variables out of module_constant_range. Called when the application
// destroys the module: its addresses stop being "allocations" then, even if launches still in flight
// keep the object (and the kernel objects) alive a little longer.
void unregister_module(ze_module_handle_t m) {
  std::lock_guard<std::mutex> plock(m->pin_mu);
  if (!m->registered) return;
  m->registered = false;
  std::lock_guard<std::mutex> lock(registry().mu);
  for (auto& p : m->pinned) {
    auto it = registry().pinned_paths.find(p.first);
    if (it != registry().pinned_paths.end() && --it->second == 0) registry().pinned_paths.erase(it);
  }
  for (auto& b : m->blocks) registry().storage.erase(reinterpret_cast<uintptr_t>(b.mem.get()));
}

// The PoCL kernel objects of kernel `name` loaded in this process.
std::vector<std::string> loaded_kernel_objects(const std::string& name) {
  struct Ctx {
    const std::string* name;
    std::vector<std::string> paths;
  } ctx{&name, {}};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* c = static_cast<Ctx*>(data);
        if (is_pocl_kernel_object(info->dlpi_name, *c->name)) c->paths.emplace_back(info->dlpi_name);
        return 0;
      },
      &ctx);
  return ctx.paths;
}

// After the first launch of `kernel_name` with a new group size has completed: pins (dlopen with
// RTLD_NOLOAD) the kernel objects that belong to `m`'s program. Which program directory is the module's
// is learnt from the objects that appeared during that launch (`before` is what was loaded before it);
// until it is known, every object of that kernel name counts (several modules may have a kernel of that
// name, and two modules built from identical SPIR-V share PoCL's objects anyway).
void pin_kernel_objects(ze_module_handle_t m, const std::string& kernel_name, const std::vector<std::string>& before) {
  std::vector<std::string> now = loaded_kernel_objects(kernel_name);
  std::lock_guard<std::mutex> lock(m->pin_mu);
  if (!m->registered) return;  // destroyed by the application while this launch ran
  if (m->program_dir.empty()) {
    std::set<std::string> fresh, all;
    for (const std::string& p : now) {
      std::string d = program_dir_of(p, kernel_name);
      all.insert(d);
      if (std::find(before.begin(), before.end(), p) == before.end()) fresh.insert(d);
    }
    if (fresh.size() == 1)
      m->program_dir = *fresh.begin();
    else if (fresh.empty() && all.size() == 1)
      m->program_dir = *all.begin();
  }
  for (const std::string& path : now) {
    if (!m->program_dir.empty() && program_dir_of(path, kernel_name) != m->program_dir) continue;
    bool have = std::any_of(m->pinned.begin(), m->pinned.end(), [&](const auto& p) { return p.first == path; });
    if (have) continue;
    void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) continue;
    // The entry point PoCL's CPU device calls (lib/CL/devices/common.c): a kernel object indeed.
    if (!dlsym(h, ("_pocl_kernel_" + kernel_name + "_workgroup").c_str()) &&
        !dlsym(h, ("pocl_kernel_" + kernel_name + "_workgroup").c_str())) {
      dlclose(h);
      continue;
    }
    m->pinned.emplace_back(path, h);
    std::lock_guard<std::mutex> rlock(registry().mu);
    ++registry().pinned_paths[path];
  }
}

bool module_constant_range(const void* ptr, void** base, size_t* size) {
  if (!ptr) return false;
  uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  bool lax = lenient();
  {
    // The storage blocks of live modules (program_globals.cpp).
    std::lock_guard<std::mutex> lock(registry().mu);
    auto& st = registry().storage;
    auto it = st.upper_bound(p);
    if (it != st.begin()) {
      --it;
      if (p < it->first + it->second.size) {
        if (it->second.strings && !lax) return false;  // NEO: a host pointer it does not know
        if (base) *base = reinterpret_cast<void*>(it->first);
        if (size) *size = it->second.size;
        return true;
      }
    }
    if (!lax || registry().pinned_paths.empty()) return false;
  }
  // Lenient mode only: whatever stays in PoCL's kernel objects: the readable PT_LOAD segment of a kernel object that a
  // live module pinned. Any other object (the application, libc, PoCL itself) does not count.
  struct Ctx {
    uintptr_t p;
    uintptr_t base = 0;
    size_t size = 0;
    bool found = false;
  } ctx{p};
  std::lock_guard<std::mutex> lock(registry().mu);  // keeps the set of accepted objects (and them) loaded
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* c = static_cast<Ctx*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_R)) continue;
          uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          if (c->p < lo || c->p >= lo + ph.p_memsz) continue;
          if (!info->dlpi_name || !registry().pinned_paths.count(info->dlpi_name)) return 1;  // not ours
          c->base = lo;
          c->size = ph.p_memsz;
          c->found = true;
          return 1;
        }
        return 0;
      },
      &ctx);
  if (!ctx.found) return false;
  if (base) *base = reinterpret_cast<void*>(ctx.base);
  if (size) *size = ctx.size;
  return true;
}

}  // namespace zexcpu

// The last reference is gone (release_module): the program and the pins go with it.
_ze_module_handle_t::~_ze_module_handle_t() {
  zexcpu::unregister_module(this);
  for (auto& p : pinned) dlclose(p.second);
  if (program) clReleaseProgram(program);
  magic = zexcpu::kDeadMagic;
}
