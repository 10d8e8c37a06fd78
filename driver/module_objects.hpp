// The module-side objects of zex-cpu (modules, build logs, kernels) and what their files share
// (module.cpp, kernel_api.cpp, launch.cpp, module_registry.cpp). As in objects.hpp, each handle type of
// ze_api.h is defined here: the handle *is* the object, and its magic word (objects.hpp) is checked by
// every entry point.
#pragma once

#include "compiler.hpp"
#include "objects.hpp"

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>
#include <algorithm>
#include <cstring>

namespace zexcpu {

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
  ze_module_handle_t module = nullptr;  // kept alive by the kernel's and the launches' module references
  ~ClKernel() {
    if (kernel) clReleaseKernel(kernel);
  }
};

}  // namespace zexcpu

struct _ze_module_handle_t {
  uint32_t magic = zexcpu::kModuleMagic;
  cl_program program = nullptr;
  std::vector<zexcpu::KernelInfo> kernels;
  std::vector<zexcpu::KernelLayout> layouts;  // parallel to kernels
  std::vector<zexcpu::GlobalInfo> globals;
  std::vector<zexcpu::StorageBlock> blocks;  // their storage: registered with module_constant_range
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
  ~_ze_module_handle_t();
};

struct _ze_module_build_log_handle_t {
  uint32_t magic = zexcpu::kBuildLogMagic;
  std::string text;
};

struct _ze_kernel_handle_t {
  uint32_t magic = zexcpu::kKernelMagic;
  ze_module_handle_t module = nullptr;
  const zexcpu::KernelLayout* layout = nullptr;
  std::shared_ptr<zexcpu::ClKernel> cl;
  std::vector<uint8_t> blob;      // current argument values
  std::vector<uint8_t> is_set;    // per argument
  uint32_t unset = 0;             // arguments never set
  uint32_t group[3] = {1, 1, 1};
  ze_kernel_indirect_access_flags_t indirect = 0;
};

namespace zexcpu {

inline bool is_module(ze_module_handle_t h) { return h != nullptr && h->magic == kModuleMagic; }
inline bool is_kernel(ze_kernel_handle_t h) { return h != nullptr && h->magic == kKernelMagic; }
inline bool is_build_log(ze_module_build_log_handle_t h) { return h != nullptr && h->magic == kBuildLogMagic; }

/// Drops one reference (the application's handle, a kernel's, a launch's); the last one deletes.
void release_module(ze_module_handle_t m);

// --- module_registry.cpp: live modules' constants, for zeMemGetAddressRange ---------------------------

/// Adds the program-scope storage of `m` (just built or linked) to module_constant_range.
void register_module_storage(ze_module_handle_t m);
/// Takes the module's constants and variables out of module_constant_range (zeModuleDestroy).
void unregister_module(ze_module_handle_t m);
/// The PoCL kernel objects of kernel `name` loaded in this process (`name`: PoCL's, KernelInfo::pocl_name).
std::vector<std::string> loaded_kernel_objects(const std::string& name);
/// After the first launch of a kernel with a new group size: pins the kernel objects of `m`'s program
/// (`kernel_name`: PoCL's, KernelInfo::pocl_name, which names PoCL's cache directories and entry points).
void pin_kernel_objects(ze_module_handle_t m, const std::string& kernel_name, const std::vector<std::string>& before);

// --- kernel_api.cpp -----------------------------------------------------------------------------------

/// Device limits (PoCL's), read once after zeInit.
struct Limits {
  size_t max_group = 0;
  size_t max_item[3] = {0, 0, 0};
  cl_ulong local_mem = 0;
};
const Limits& limits();

/// zeKernelSetArgumentValue's checks and encoding of one argument into a blob slot (shared with the
/// mutable command lists' argument updates, mutable_list.cpp): `dst` is the slot's bytes, or null to
/// check only. Errors: INVALID_KERNEL_ARGUMENT_SIZE, UNSUPPORTED_FEATURE (images, samplers).
ze_result_t encode_argument(const ArgSlot& s, size_t argSize, const void* pArgValue, uint8_t* dst);
/// ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION unless (x, y, z) is a group size the kernel can run with.
ze_result_t check_group_size(const KernelInfo& info, uint32_t x, uint32_t y, uint32_t z);

// --- module.cpp ---------------------------------------------------------------------------------------

/// A 16-byte id made of two strings (module and kernel UUIDs).
void make_uuid(const std::string& a, const std::string& b, uint8_t out[16]);

/// Copies `s` into a caller's buffer with the Level Zero size-query protocol (*pSize includes the NUL).
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

}  // namespace zexcpu
