// Modules, build logs and kernels of zex-cpu; the capture of a launch at append time and its execution on
// a worker's OpenCL queue; the constant data of built modules for zeMemGetAddressRange.
#include "compiler.hpp"
#include "kernel.hpp"
#include "objects.hpp"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace zexcpu {
namespace {

// ---------------------------------------------------------------------------------------------------
// Objects

struct Module;

// Every object starts with a magic word, checked by the entry points, so a handle of the wrong kind or a
// destroyed one answers ZE_RESULT_ERROR_INVALID_ARGUMENT (as the core's objects do) where that can be
// detected, instead of corrupting memory.
enum : uint32_t {
  kModuleMagic = 0x7a434f4d,  // "MOCz"
  kKernelMagic = 0x7a434e4b,  // "KNCz"
  kLogMagic = 0x7a43474c,     // "LGCz"
  kDeadObject = 0xdeadbeef,
};

/// Where each argument's current value lives in a kernel's argument blob.
struct ArgSlot {
  ArgKind kind;
  size_t size;    // bytes the application passes (Local: 0, the size is the value)
  size_t offset;  // into the blob; Pointer: 8 bytes (the pointer); Local: 8 bytes (the size); Value: size
  size_t width;   // bytes in the blob
};

/// What the kernels of one name in one module share: the argument layout.
struct KernelLayout {
  const KernelInfo* info = nullptr;
  std::vector<ArgSlot> slots;
  size_t blob_size = 0;
};

/// The OpenCL kernel behind one ze kernel. A cl_kernel's arguments cannot be set by two threads at once,
/// and OpenCL captures them at enqueue, so one mutex covers set-arguments + enqueue. `applied` caches what
/// is currently set on the cl_kernel, so repeated launches with the same arguments set nothing.
struct ClKernel {
  cl_kernel kernel = nullptr;
  std::mutex mu;
  std::vector<uint8_t> applied;
  bool applied_valid = false;
  // Group sizes launched so far; for those whose first launch has not completed yet, the PoCL kernel
  // objects of this kernel's name that were loaded before it (see pin_kernel_objects).
  std::vector<std::array<uint32_t, 3>> seen_group_sizes;
  std::map<std::array<uint32_t, 3>, std::vector<std::string>> loaded_before;
  Module* module = nullptr;  // kept alive by the kernel's and the launches' module references
  ~ClKernel() {
    if (kernel) clReleaseKernel(kernel);
  }
};

struct Module {
  uint32_t magic = kModuleMagic;
  cl_program program = nullptr;
  std::vector<KernelInfo> kernels;
  std::vector<KernelLayout> layouts;  // parallel to kernels
  std::vector<GlobalInfo> globals;
  std::string native_binary;
  std::vector<std::string> imports;  // until zeModuleDynamicLink resolves them (program is null until then)
  std::string build_flags;
  uint8_t mid[16] = {};
  // Kernel objects (PoCL's dlopen'ed .so files) that this module pinned with its own dlopen, so PoCL's
  // LRU of 128 handles cannot unload a module's constants while the module lives.
  std::mutex pin_mu;
  std::vector<std::pair<std::string, void*>> pinned;
  std::string program_dir;  // PoCL's cache directory of this module's program, once known
  bool registered = true;  // its pins and storage count for module_constant_range (guarded by pin_mu)
  // Kernels hold a reference: a module destroyed before its kernels goes away with the last kernel.
  std::atomic<int> refs{1};
  ~Module();
};

struct BuildLog {
  uint32_t magic = kLogMagic;
  std::string text;
};

struct Kernel {
  uint32_t magic = kKernelMagic;
  Module* module = nullptr;
  const KernelLayout* layout = nullptr;
  std::shared_ptr<ClKernel> cl;
  std::vector<uint8_t> blob;      // current argument values
  std::vector<uint8_t> is_set;    // per argument
  uint32_t unset = 0;             // arguments never set
  uint32_t group[3] = {1, 1, 1};
  ze_kernel_indirect_access_flags_t indirect = 0;
};

Module* to_module(ze_module_handle_t h) { return reinterpret_cast<Module*>(h); }
Kernel* to_kernel(ze_kernel_handle_t h) { return reinterpret_cast<Kernel*>(h); }
BuildLog* to_log(ze_module_build_log_handle_t h) { return reinterpret_cast<BuildLog*>(h); }

bool is_module(ze_module_handle_t h) { return to_module(h)->magic == kModuleMagic; }
bool is_kernel(ze_kernel_handle_t h) { return to_kernel(h)->magic == kKernelMagic; }
bool is_log(ze_module_build_log_handle_t h) { return to_log(h)->magic == kLogMagic; }

void release_module(Module* m) {
  if (m->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete m;
}

// ---------------------------------------------------------------------------------------------------
// The registry of live modules' pinned kernel objects and program-scope storage, for
// module_constant_range.

struct Registry {
  std::mutex mu;
  std::map<std::string, int> pinned_paths;  // path -> number of live modules that pinned it
  std::map<uintptr_t, size_t> storage;      // program-scope variable storage of live modules: base -> size
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: worker threads may still query at exit
  return *r;
}

// Takes the module's constants and variables out of module_constant_range. Called when the application
// destroys the module: its addresses stop being "allocations" then, even if launches still in flight
// keep the object (and the kernel objects) alive a little longer.
void unregister_module(Module* m) {
  std::lock_guard<std::mutex> plock(m->pin_mu);
  if (!m->registered) return;
  m->registered = false;
  std::lock_guard<std::mutex> lock(registry().mu);
  for (auto& p : m->pinned) {
    auto it = registry().pinned_paths.find(p.first);
    if (it != registry().pinned_paths.end() && --it->second == 0) registry().pinned_paths.erase(it);
  }
  for (auto& g : m->globals)
    if (g.storage) registry().storage.erase(reinterpret_cast<uintptr_t>(g.storage.get()));
}

Module::~Module() {
  unregister_module(this);
  for (auto& p : pinned) dlclose(p.second);
  if (program) clReleaseProgram(program);
  magic = kDeadObject;
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

// <cache>/<xx>/<program hash> of a kernel object's path.
std::string program_dir_of(const std::string& path, const std::string& name) {
  std::string tail = "/" + name + ".so";
  if (path.size() <= tail.size()) return std::string();
  size_t at = path.rfind("/" + name + "/", path.size() - tail.size());
  return at == std::string::npos ? std::string() : path.substr(0, at);
}

// After the first launch of `kernel_name` with a new group size has completed: pins (dlopen with
// RTLD_NOLOAD) the kernel objects that belong to `m`'s program. Which program directory is the module's
// is learnt from the objects that appeared during that launch (`before` is what was loaded before it);
// until it is known, every object of that kernel name counts (several modules may have a kernel of that
// name, and two modules built from identical SPIR-V share PoCL's objects anyway).
void pin_kernel_objects(Module* m, const std::string& kernel_name, const std::vector<std::string>& before) {
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

// ---------------------------------------------------------------------------------------------------
// Device limits (PoCL's), read once after zeInit.

struct Limits {
  size_t max_group = 0;
  size_t max_item[3] = {0, 0, 0};
  cl_ulong local_mem = 0;
};
const Limits& limits() {
  static const Limits l = [] {
    Limits x;
    cl_device_id d = platform().device;
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof x.max_group, &x.max_group, nullptr);
    clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof x.max_item, x.max_item, nullptr);
    clGetDeviceInfo(d, CL_DEVICE_LOCAL_MEM_SIZE, sizeof x.local_mem, &x.local_mem, nullptr);
    if (!x.max_group) x.max_group = 4096;
    for (auto& m : x.max_item)
      if (!m) m = x.max_group;
    return x;
  }();
  return l;
}

void fnv(const void* data, size_t n, uint64_t* h) {
  auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    *h ^= p[i];
    *h *= 0x100000001b3ull;
  }
}
void make_uuid(const std::string& a, const std::string& b, uint8_t out[16]) {
  uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x84222325cbf29ce4ull;
  fnv(a.data(), a.size(), &h1);
  fnv(b.data(), b.size(), &h1);
  fnv(b.data(), b.size(), &h2);
  fnv(a.data(), a.size(), &h2);
  memcpy(out, &h1, 8);
  memcpy(out + 8, &h2, 8);
}

ze_result_t cl_to_ze(cl_int e) {
  switch (e) {
    case CL_SUCCESS: return ZE_RESULT_SUCCESS;
    case CL_OUT_OF_HOST_MEMORY: return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    case CL_OUT_OF_RESOURCES:
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE: return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
    case CL_INVALID_KERNEL_ARGS: return ZE_RESULT_ERROR_INVALID_ARGUMENT;
    default: return ZE_RESULT_ERROR_UNKNOWN;
  }
}

// Copies `s` into a caller's buffer with the Level Zero size-query protocol (*pSize includes the NUL).
template <typename SizeT>
void copy_string(const std::string& s, SizeT* pSize, char* out) {
  if (!out) {
    *pSize = static_cast<SizeT>(s.size() + 1);
    return;
  }
  if (*pSize == 0) return;
  size_t n = std::min<size_t>(s.size(), static_cast<size_t>(*pSize) - 1);
  memcpy(out, s.data(), n);
  out[n] = '\0';
}

// ---------------------------------------------------------------------------------------------------
// The launch captured at append time.

class Launch final : public LaunchCommand {
 public:
  Launch(Kernel* k, const ze_group_count_t& groups, const ze_group_count_t* indirect = nullptr)
      : cl_(k->cl), layout_(k->layout), blob_(k->blob), groups_(groups), indirect_(indirect) {
    memcpy(group_, k->group, sizeof group_);
    // The module (its program, layouts and pins) stays alive while an appended launch exists, even if
    // the application destroys the kernel and module after appending to a regular command list.
    cl_->module->refs.fetch_add(1, std::memory_order_relaxed);
  }
  ~Launch() override { release_module(cl_->module); }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;

  ze_result_t run(cl_command_queue queue) override {
    ze_result_t r = enqueue(queue);
    if (r != ZE_RESULT_SUCCESS) return r;
    cl_int err = clFinish(queue);
    if (err != CL_SUCCESS) return cl_to_ze(err);
    completed();
    return ZE_RESULT_SUCCESS;
  }

  ze_result_t enqueue(cl_command_queue queue) override {
    // An indirect launch reads its group count now: earlier commands of the list may have written it.
    const ze_group_count_t groups = indirect_ ? *indirect_ : groups_;
    if (groups.groupCountX == 0 || groups.groupCountY == 0 || groups.groupCountZ == 0)
      return ZE_RESULT_SUCCESS;  // nothing to run
    size_t local[3] = {group_[0], group_[1], group_[2]};
    size_t global[3] = {size_t(groups.groupCountX) * group_[0], size_t(groups.groupCountY) * group_[1],
                        size_t(groups.groupCountZ) * group_[2]};
    // get_work_dim() as Intel's driver computes it.
    cl_uint dims = global[2] > 1 ? 3 : global[1] > 1 ? 2 : 1;
    cl_int err = CL_SUCCESS;
    {
      std::lock_guard<std::mutex> lock(cl_->mu);
      // The first launch with a new group size makes PoCL load a new kernel object (PoCL may do so
      // within clEnqueueNDRangeKernel): note what was loaded before, to pin the new one when the
      // launch has completed (see Module::pinned).
      std::array<uint32_t, 3> g{group_[0], group_[1], group_[2]};
      auto& seen = cl_->seen_group_sizes;
      bool first = std::find(seen.begin(), seen.end(), g) == seen.end();
      if (first) cl_->loaded_before[g] = loaded_kernel_objects(layout_->info->name);
      err = apply_args();
      if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(queue, cl_->kernel, dims, nullptr, global, local, 0, nullptr, nullptr);
      if (first) {
        if (err == CL_SUCCESS) {
          seen.push_back(g);
          pin_.store(true, std::memory_order_relaxed);
        } else {
          cl_->loaded_before.erase(g);
        }
      }
    }
    return cl_to_ze(err);
  }

  void completed() override {
    if (!pin_.exchange(false, std::memory_order_relaxed)) return;
    std::vector<std::string> before;
    {
      std::lock_guard<std::mutex> lock(cl_->mu);
      auto it = cl_->loaded_before.find({group_[0], group_[1], group_[2]});
      if (it != cl_->loaded_before.end()) {
        before = std::move(it->second);
        cl_->loaded_before.erase(it);
      }
    }
    pin_kernel_objects(cl_->module, layout_->info->name, before);
  }

 private:
  // Called with cl_->mu held: sets on the cl_kernel only the arguments that differ from what is set.
  cl_int apply_args() {
    bool all = !cl_->applied_valid;
    for (cl_uint i = 0; i < layout_->slots.size(); ++i) {
      const ArgSlot& s = layout_->slots[i];
      const uint8_t* v = blob_.data() + s.offset;
      if (!all && memcmp(cl_->applied.data() + s.offset, v, s.width) == 0) continue;
      cl_int e = CL_SUCCESS;
      switch (s.kind) {
        case ArgKind::Pointer: {
          void* p;
          memcpy(&p, v, sizeof p);
          e = clSetKernelArgSVMPointer(cl_->kernel, i, p);
          break;
        }
        case ArgKind::Local: {
          size_t bytes;
          memcpy(&bytes, v, sizeof bytes);
          e = clSetKernelArg(cl_->kernel, i, bytes, nullptr);
          break;
        }
        case ArgKind::Value: e = clSetKernelArg(cl_->kernel, i, s.size, v); break;
        case ArgKind::Unsupported: e = CL_INVALID_ARG_VALUE; break;
      }
      if (e != CL_SUCCESS) {
        cl_->applied_valid = false;
        return e;
      }
    }
    cl_->applied = blob_;
    cl_->applied_valid = true;
    return CL_SUCCESS;
  }

  std::shared_ptr<ClKernel> cl_;
  const KernelLayout* layout_;
  std::vector<uint8_t> blob_;
  ze_group_count_t groups_;
  const ze_group_count_t* indirect_;
  uint32_t group_[3];
  std::atomic<bool> pin_{false};
};

// ---------------------------------------------------------------------------------------------------
// Module entry points

// Takes a built (or linked) program's results into the module and registers its storage.
void adopt_program(Module* m, CompiledProgram* prog) {
  m->program = prog->program;
  prog->program = nullptr;
  m->imports = std::move(prog->imports);
  m->kernels = std::move(prog->kernels);
  m->globals = std::move(prog->globals);
  m->layouts.clear();
  m->layouts.resize(m->kernels.size());
  for (size_t i = 0; i < m->kernels.size(); ++i) {
    KernelLayout& l = m->layouts[i];
    l.info = &m->kernels[i];
    size_t off = 0;
    for (const ArgInfo& a : m->kernels[i].args) {
      size_t width = a.kind == ArgKind::Value ? a.size : sizeof(void*);
      l.slots.push_back(ArgSlot{a.kind, a.size, off, width});
      off += (width + 7) & ~size_t(7);
    }
    l.blob_size = off;
  }
  std::lock_guard<std::mutex> lock(registry().mu);
  for (auto& g : m->globals)
    if (g.storage) registry().storage[reinterpret_cast<uintptr_t>(g.storage.get())] = g.size;
}

}  // namespace

ze_result_t ZE_APICALL zeModuleCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice, const ze_module_desc_t* desc,
                            ze_module_handle_t* phModule, ze_module_build_log_handle_t* phBuildLog) {
  ZEXCPU_FAULT_POINT("zeModuleCreate");
  if (phBuildLog) *phBuildLog = nullptr;
  if (!hContext || !hDevice) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_context(hContext) || !is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!desc || !desc->pInputModule || !phModule) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->format > ZE_MODULE_FORMAT_NATIVE) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (desc->inputSize == 0) return ZE_RESULT_ERROR_INVALID_SIZE;

  auto finish_log = [&](std::string text) {
    if (!phBuildLog) return;
    *phBuildLog = reinterpret_cast<ze_module_build_log_handle_t>(new (std::nothrow) BuildLog{kLogMagic, std::move(text)});
  };
  for (auto* ext = static_cast<const ze_base_desc_t*>(desc->pNext); ext;
       ext = static_cast<const ze_base_desc_t*>(ext->pNext)) {
    if (ext->stype == ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC) {
      finish_log("zex-cpu does not support ze_module_program_exp_desc_t (several input modules); link the "
                 "SPIR-V modules with spirv-link first");
      return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
    }
  }

  SpecConstants sc;
  if (desc->pConstants) {
    sc.count = desc->pConstants->numConstants;
    sc.ids = desc->pConstants->pConstantIds;
    sc.values = desc->pConstants->pConstantValues;
  }
  CompiledProgram prog;
  ze_result_t r;
  try {
    r = compile_module(desc->format, static_cast<const uint8_t*>(desc->pInputModule), desc->inputSize, sc,
                       desc->pBuildFlags, platform().context, platform().device, &prog);
  } catch (const std::bad_alloc&) {
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  if (r != ZE_RESULT_SUCCESS) {
    finish_log(std::move(prog.log));
    return r;
  }
  auto* m = new (std::nothrow) Module;
  if (!m) {
    if (prog.program) clReleaseProgram(prog.program);
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  m->native_binary = std::move(prog.native_binary);
  m->build_flags = desc->pBuildFlags ? desc->pBuildFlags : "";
  make_uuid(m->native_binary, "module", m->mid);
  adopt_program(m, &prog);
  finish_log(std::move(prog.log));
  *phModule = reinterpret_cast<ze_module_handle_t>(m);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleDestroy(ze_module_handle_t hModule) {
  ZEXCPU_FAULT_POINT("zeModuleDestroy");
  if (!hModule) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_module(hModule)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  Module* m = to_module(hModule);
  // The handle dies now; the object lives on while kernels or appended launches still use it.
  m->magic = kDeadObject;
  unregister_module(m);
  release_module(m);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleDynamicLink(uint32_t numModules, ze_module_handle_t* phModules,
                                 ze_module_build_log_handle_t* phLinkLog) {
  ZEXCPU_FAULT_POINT("zeModuleDynamicLink");
  if (phLinkLog) *phLinkLog = nullptr;
  if (!phModules) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (uint32_t i = 0; i < numModules; ++i) {
    if (!phModules[i]) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!is_module(phModules[i])) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  std::string text;
  ze_result_t result = ZE_RESULT_SUCCESS;
  for (uint32_t i = 0; i < numModules; ++i) {
    Module* m = to_module(phModules[i]);
    if (m->imports.empty()) continue;  // built complete, or linked before: modules are linked once
    std::vector<LinkInput> others;
    for (uint32_t j = 0; j < numModules; ++j) {
      Module* o = to_module(phModules[j]);
      if (o == m) continue;
      LinkInput in;
      in.native = &o->native_binary;
      for (const GlobalInfo& g : o->globals) in.globals.push_back(&g);
      others.push_back(std::move(in));
    }
    CompiledProgram prog;
    ze_result_t r;
    try {
      r = link_module(m->native_binary, others, m->build_flags.c_str(), platform().context, platform().device, &prog);
    } catch (const std::bad_alloc&) {
      r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    }
    if (!prog.log.empty()) text += "module " + std::to_string(i) + ": " + prog.log + "\n";
    if (r != ZE_RESULT_SUCCESS) {
      result = r;
      continue;
    }
    adopt_program(m, &prog);
  }
  if (phLinkLog)
    *phLinkLog = reinterpret_cast<ze_module_build_log_handle_t>(new (std::nothrow) BuildLog{kLogMagic, text});
  return result;
}

ze_result_t ZE_APICALL zeModuleBuildLogDestroy(ze_module_build_log_handle_t hModuleBuildLog) {
  ZEXCPU_FAULT_POINT("zeModuleBuildLogDestroy");
  if (!hModuleBuildLog) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_log(hModuleBuildLog)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  BuildLog* log = to_log(hModuleBuildLog);
  log->magic = kDeadObject;
  delete log;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleBuildLogGetString(ze_module_build_log_handle_t hModuleBuildLog, size_t* pSize, char* pBuildLog) {
  ZEXCPU_FAULT_POINT("zeModuleBuildLogGetString");
  if (!hModuleBuildLog) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_log(hModuleBuildLog)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pSize) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  copy_string(to_log(hModuleBuildLog)->text, pSize, pBuildLog);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleGetNativeBinary(ze_module_handle_t hModule, size_t* pSize, uint8_t* pModuleNativeBinary) {
  ZEXCPU_FAULT_POINT("zeModuleGetNativeBinary");
  if (!hModule) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_module(hModule)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pSize) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const std::string& bin = to_module(hModule)->native_binary;
  if (!pModuleNativeBinary) {
    *pSize = bin.size();
    return ZE_RESULT_SUCCESS;
  }
  if (*pSize < bin.size()) return ZE_RESULT_ERROR_INVALID_SIZE;  // a truncated binary is useless
  memcpy(pModuleNativeBinary, bin.data(), bin.size());
  *pSize = bin.size();
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleGetGlobalPointer(ze_module_handle_t hModule, const char* pGlobalName, size_t* pSize,
                                      void** pptr) {
  ZEXCPU_FAULT_POINT("zeModuleGetGlobalPointer");
  if (!hModule) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_module(hModule)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pGlobalName) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (auto& g : to_module(hModule)->globals) {
    if (g.name != pGlobalName) continue;
    if (!g.storage) return ZE_RESULT_ERROR_INVALID_GLOBAL_NAME;
    if (pSize) *pSize = g.size;
    if (pptr) *pptr = g.storage.get();
    return ZE_RESULT_SUCCESS;
  }
  return ZE_RESULT_ERROR_INVALID_GLOBAL_NAME;
}

ze_result_t ZE_APICALL zeModuleGetKernelNames(ze_module_handle_t hModule, uint32_t* pCount, const char** pNames) {
  ZEXCPU_FAULT_POINT("zeModuleGetKernelNames");
  if (!hModule) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_module(hModule)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const auto& ks = to_module(hModule)->kernels;
  uint32_t n = static_cast<uint32_t>(ks.size());
  if (*pCount == 0 || !pNames) {
    *pCount = n;
    return ZE_RESULT_SUCCESS;
  }
  uint32_t out = std::min(*pCount, n);
  for (uint32_t i = 0; i < out; ++i) pNames[i] = ks[i].name.c_str();
  *pCount = out;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeModuleGetProperties(ze_module_handle_t hModule, ze_module_properties_t* pModuleProperties) {
  ZEXCPU_FAULT_POINT("zeModuleGetProperties");
  if (!hModule) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_module(hModule)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pModuleProperties) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  pModuleProperties->flags = to_module(hModule)->imports.empty() ? 0 : ZE_MODULE_PROPERTY_FLAG_IMPORTS;
  return ZE_RESULT_SUCCESS;
}

namespace {

// ---------------------------------------------------------------------------------------------------
// Kernel entry points

}  // namespace

ze_result_t ZE_APICALL zeKernelCreate(ze_module_handle_t hModule, const ze_kernel_desc_t* desc, ze_kernel_handle_t* phKernel) {
  ZEXCPU_FAULT_POINT("zeKernelCreate");
  if (!hModule) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_module(hModule)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!desc || !desc->pKernelName || !phKernel) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->flags > 0x3) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  Module* m = to_module(hModule);
  size_t idx = 0;
  while (idx < m->kernels.size() && m->kernels[idx].name != desc->pKernelName) ++idx;
  if (idx == m->kernels.size()) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  if (!m->imports.empty() || !m->program) return ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED;

  auto cl = std::make_shared<ClKernel>();
  cl_int err = CL_SUCCESS;
  cl->kernel = clCreateKernel(m->program, desc->pKernelName, &err);
  if (!cl->kernel || err != CL_SUCCESS) return err == CL_OUT_OF_HOST_MEMORY ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
                                                                            : ZE_RESULT_ERROR_UNKNOWN;
  cl->module = m;
  auto* k = new (std::nothrow) Kernel;
  if (!k) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  k->module = m;
  k->layout = &m->layouts[idx];
  k->cl = std::move(cl);
  k->blob.assign(k->layout->blob_size, 0);
  k->is_set.assign(k->layout->slots.size(), 0);
  k->unset = static_cast<uint32_t>(k->layout->slots.size());
  const KernelInfo& info = *k->layout->info;
  if (info.reqd_group_size[0]) memcpy(k->group, info.reqd_group_size, sizeof k->group);
  m->refs.fetch_add(1, std::memory_order_relaxed);
  *phKernel = reinterpret_cast<ze_kernel_handle_t>(k);
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelDestroy(ze_kernel_handle_t hKernel) {
  ZEXCPU_FAULT_POINT("zeKernelDestroy");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  Kernel* k = to_kernel(hKernel);
  Module* m = k->module;
  // Launches still queued hold the ClKernel (and so the cl_kernel and its program) alive; the module's
  // pinned objects outlive them only if the application keeps the module, as the specification asks.
  k->magic = kDeadObject;
  delete k;
  release_module(m);
  return ZE_RESULT_SUCCESS;
}

namespace {

ze_result_t check_group_size(const KernelInfo& info, uint32_t x, uint32_t y, uint32_t z) {
  const Limits& l = limits();
  if (x == 0 || y == 0 || z == 0) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  if (x > l.max_item[0] || y > l.max_item[1] || z > l.max_item[2]) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  if (uint64_t(x) * y * z > l.max_group) return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  if (info.reqd_group_size[0] &&
      (x != info.reqd_group_size[0] || y != info.reqd_group_size[1] || z != info.reqd_group_size[2]))
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t ZE_APICALL zeKernelSetGroupSize(ze_kernel_handle_t hKernel, uint32_t groupSizeX, uint32_t groupSizeY,
                                  uint32_t groupSizeZ) {
  ZEXCPU_FAULT_POINT("zeKernelSetGroupSize");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  Kernel* k = to_kernel(hKernel);
  ze_result_t r = check_group_size(*k->layout->info, groupSizeX, groupSizeY, groupSizeZ);
  if (r != ZE_RESULT_SUCCESS) return r;
  k->group[0] = groupSizeX;
  k->group[1] = groupSizeY;
  k->group[2] = groupSizeZ;
  return ZE_RESULT_SUCCESS;
}

namespace {

// The largest divisor of n that is <= cap.
uint32_t largest_divisor(uint32_t n, uint32_t cap) {
  for (uint32_t d = std::min(n, cap); d > 1; --d)
    if (n % d == 0) return d;
  return 1;
}

}  // namespace

ze_result_t ZE_APICALL zeKernelSuggestGroupSize(ze_kernel_handle_t hKernel, uint32_t globalSizeX, uint32_t globalSizeY,
                                      uint32_t globalSizeZ, uint32_t* groupSizeX, uint32_t* groupSizeY,
                                      uint32_t* groupSizeZ) {
  ZEXCPU_FAULT_POINT("zeKernelSuggestGroupSize");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!groupSizeX || !groupSizeY || !groupSizeZ) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (globalSizeX == 0 || globalSizeY == 0 || globalSizeZ == 0) return ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION;
  const KernelInfo& info = *to_kernel(hKernel)->layout->info;
  if (info.reqd_group_size[0]) {
    *groupSizeX = info.reqd_group_size[0];
    *groupSizeY = info.reqd_group_size[1];
    *groupSizeZ = info.reqd_group_size[2];
    return ZE_RESULT_SUCCESS;
  }
  // Sizes that divide the global size evenly (Level Zero launches whole groups). PoCL runs a work-group
  // as loops over its work-items on one thread, so a few hundred items amortise the per-group cost while
  // leaving enough groups to spread over the cores.
  const Limits& l = limits();
  uint32_t budget = static_cast<uint32_t>(std::min<size_t>(l.max_group, 256));
  uint32_t x = largest_divisor(globalSizeX, static_cast<uint32_t>(std::min<size_t>(budget, l.max_item[0])));
  budget /= x;
  uint32_t y = largest_divisor(globalSizeY, static_cast<uint32_t>(std::min<size_t>(budget, l.max_item[1])));
  budget /= y;
  uint32_t z = largest_divisor(globalSizeZ, static_cast<uint32_t>(std::min<size_t>(budget, l.max_item[2])));
  *groupSizeX = x;
  *groupSizeY = y;
  *groupSizeZ = z;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelSuggestMaxCooperativeGroupCount(ze_kernel_handle_t hKernel, uint32_t* totalGroupCount) {
  ZEXCPU_FAULT_POINT("zeKernelSuggestMaxCooperativeGroupCount");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!totalGroupCount) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  // PoCL runs groups on its worker threads, not all at once: only groups that fit at once can wait on
  // each other. One per compute unit is always safe.
  cl_uint cus = 1;
  clGetDeviceInfo(platform().device, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof cus, &cus, nullptr);
  *totalGroupCount = cus ? cus : 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelSetArgumentValue(ze_kernel_handle_t hKernel, uint32_t argIndex, size_t argSize,
                                      const void* pArgValue) {
  ZEXCPU_FAULT_POINT("zeKernelSetArgumentValue");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  Kernel* k = to_kernel(hKernel);
  const auto& slots = k->layout->slots;
  if (argIndex >= slots.size()) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  const ArgSlot& s = slots[argIndex];
  uint8_t* dst = k->blob.data() + s.offset;
  switch (s.kind) {
    case ArgKind::Pointer:
      if (argSize != sizeof(void*)) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      if (pArgValue)
        memcpy(dst, pArgValue, sizeof(void*));
      else
        memset(dst, 0, sizeof(void*));  // a null pointer
      break;
    case ArgKind::Local:
      // The size is the local buffer's size in bytes; the value is not used.
      if (argSize == 0 || argSize > limits().local_mem) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      memcpy(dst, &argSize, sizeof argSize);
      break;
    case ArgKind::Value:
      if (argSize != s.size) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
      if (pArgValue)
        memcpy(dst, pArgValue, s.size);
      else
        memset(dst, 0, s.size);
      break;
    case ArgKind::Unsupported:
      return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;  // images, samplers: zex-cpu has none
  }
  if (!k->is_set[argIndex]) {
    k->is_set[argIndex] = 1;
    --k->unset;
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelSetIndirectAccess(ze_kernel_handle_t hKernel, ze_kernel_indirect_access_flags_t flags) {
  ZEXCPU_FAULT_POINT("zeKernelSetIndirectAccess");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (flags > 0x7) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  to_kernel(hKernel)->indirect = flags;  // every allocation is always accessible on the CPU
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelGetIndirectAccess(ze_kernel_handle_t hKernel, ze_kernel_indirect_access_flags_t* pFlags) {
  ZEXCPU_FAULT_POINT("zeKernelGetIndirectAccess");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pFlags) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  *pFlags = to_kernel(hKernel)->indirect;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelSetCacheConfig(ze_kernel_handle_t hKernel, ze_cache_config_flags_t flags) {
  ZEXCPU_FAULT_POINT("zeKernelSetCacheConfig");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (flags > 0x3) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  return ZE_RESULT_SUCCESS;  // a preference; the CPU's caches are not configurable
}

ze_result_t ZE_APICALL zeKernelGetProperties(ze_kernel_handle_t hKernel, ze_kernel_properties_t* pKernelProperties) {
  ZEXCPU_FAULT_POINT("zeKernelGetProperties");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pKernelProperties) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  Kernel* k = to_kernel(hKernel);
  const KernelInfo& info = *k->layout->info;
  ze_kernel_properties_t& p = *pKernelProperties;
  p.numKernelArgs = static_cast<uint32_t>(info.args.size());
  p.requiredGroupSizeX = info.reqd_group_size[0];
  p.requiredGroupSizeY = info.reqd_group_size[1];
  p.requiredGroupSizeZ = info.reqd_group_size[2];
  p.requiredNumSubGroups = 0;
  p.requiredSubgroupSize = info.reqd_subgroup_size;
  // PoCL's CPU device runs a work-group's items one after another: a sub-group is one work-item.
  p.maxSubgroupSize = 1;
  p.maxNumSubgroups = static_cast<uint32_t>(limits().max_group);
  cl_ulong local = 0, priv = 0;
  clGetKernelWorkGroupInfo(k->cl->kernel, platform().device, CL_KERNEL_LOCAL_MEM_SIZE, sizeof local, &local, nullptr);
  clGetKernelWorkGroupInfo(k->cl->kernel, platform().device, CL_KERNEL_PRIVATE_MEM_SIZE, sizeof priv, &priv, nullptr);
  p.localMemSize = static_cast<uint32_t>(local);
  p.privateMemSize = static_cast<uint32_t>(priv);
  p.spillMemSize = 0;
  memcpy(p.uuid.mid, k->module->mid, sizeof p.uuid.mid);
  make_uuid(std::string(reinterpret_cast<const char*>(k->module->mid), 16), info.name, p.uuid.kid);
  for (auto* ext = static_cast<ze_base_properties_t*>(p.pNext); ext; ext = static_cast<ze_base_properties_t*>(ext->pNext)) {
    if (ext->stype == ZE_STRUCTURE_TYPE_KERNEL_PREFERRED_GROUP_SIZE_PROPERTIES) {
      size_t multiple = 1;
      clGetKernelWorkGroupInfo(k->cl->kernel, platform().device, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                               sizeof multiple, &multiple, nullptr);
      reinterpret_cast<ze_kernel_preferred_group_size_properties_t*>(ext)->preferredMultiple =
          static_cast<uint32_t>(multiple ? multiple : 1);
    }
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelGetSourceAttributes(ze_kernel_handle_t hKernel, uint32_t* pSize, char** pString) {
  ZEXCPU_FAULT_POINT("zeKernelGetSourceAttributes");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pSize) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const std::string& a = to_kernel(hKernel)->layout->info->attributes;
  if (!pString) {  // a size query, as later versions of the specification allow
    *pSize = static_cast<uint32_t>(a.size() + 1);
    return ZE_RESULT_SUCCESS;
  }
  if (!*pString) {
    // This header's form: the string belongs to the kernel object.
    *pString = const_cast<char*>(a.c_str());
    *pSize = static_cast<uint32_t>(a.size() + 1);
    return ZE_RESULT_SUCCESS;
  }
  copy_string(a, pSize, *pString);  // later versions: into the application's buffer of *pSize bytes
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeKernelGetName(ze_kernel_handle_t hKernel, size_t* pSize, char* pName) {
  ZEXCPU_FAULT_POINT("zeKernelGetName");
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!pSize) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  copy_string(to_kernel(hKernel)->layout->info->name, pSize, pName);
  return ZE_RESULT_SUCCESS;
}

// ---------------------------------------------------------------------------------------------------
// Interface with the core (kernel.hpp)

ze_result_t capture_launch(ze_kernel_handle_t hKernel, const ze_group_count_t& groups,
                           std::unique_ptr<LaunchCommand>* out) {
  if (!hKernel) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_kernel(hKernel)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (!out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  Kernel* k = to_kernel(hKernel);
  // Intel's driver launches with whatever the unset arguments hold (zeros); OpenCL refuses to enqueue
  // such a kernel, so zex-cpu reports the mistake at append instead.
  if (k->unset) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  ze_result_t r = check_group_size(*k->layout->info, k->group[0], k->group[1], k->group[2]);
  if (r != ZE_RESULT_SUCCESS) return r;
  try {
    out->reset(new Launch(k, groups));
  } catch (const std::bad_alloc&) {
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  return ZE_RESULT_SUCCESS;
}

ze_result_t capture_launch_indirect(ze_kernel_handle_t hKernel, const ze_group_count_t* groups,
                                    std::unique_ptr<LaunchCommand>* out) {
  if (!groups || !out) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::unique_ptr<LaunchCommand> direct;
  ze_result_t r = capture_launch(hKernel, ze_group_count_t{1, 1, 1}, &direct);  // the same checks
  if (r != ZE_RESULT_SUCCESS) return r;
  try {
    out->reset(new Launch(to_kernel(hKernel), ze_group_count_t{0, 0, 0}, groups));
  } catch (const std::bad_alloc&) {
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  return ZE_RESULT_SUCCESS;
}

bool module_constant_range(const void* ptr, void** base, size_t* size) {
  if (!ptr) return false;
  uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  {
    // Program-scope variables of live modules (zex-cpu's own storage, see compile_module).
    std::lock_guard<std::mutex> lock(registry().mu);
    auto& st = registry().storage;
    auto it = st.upper_bound(p);
    if (it != st.begin()) {
      --it;
      if (p < it->first + it->second) {
        if (base) *base = reinterpret_cast<void*>(it->first);
        if (size) *size = it->second;
        return true;
      }
    }
    if (registry().pinned_paths.empty()) return false;
  }
  // Constants that stay in PoCL's kernel objects: the readable PT_LOAD segment of a kernel object that a
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
