// Contexts and unified shared memory. Every USM allocation (host, device or shared) is a PoCL SVM
// allocation: on PoCL's CPU device all three are ordinary host memory that kernels receive as raw
// pointers, so the host may touch any of them directly (a difference from a discrete GPU, where
// device allocations are not host-accessible). The allocations live in one ordered map so that
// zeMemGetAddressRange and zeMemGetAllocProperties can answer for interior pointers.
#include "kernel.hpp"
#include "objects.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace zexcpu {
namespace {

struct Allocation {
  size_t size;
  ze_memory_type_t type;
  uint64_t id;
  ze_device_handle_t device;  // nullptr for host allocations and unassociated shared ones
  ze_context_handle_t context;
  void* raw;  // what clSVMAlloc returned (the base itself unless over-aligned)
  bool svm;   // false: posix_memalign (relaxed limits above what PoCL's SVM allocator gives)
};

class AllocationMap {
 public:
  void insert(void* base, const Allocation& a) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    map_.emplace(reinterpret_cast<uintptr_t>(base), a);
  }
  /// Removes the allocation that starts exactly at `base` and gives its raw SVM pointer; false if
  /// there is none.
  bool erase(void* base, void** raw, bool* svm) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = map_.find(reinterpret_cast<uintptr_t>(base));
    if (it == map_.end()) return false;
    *raw = it->second.raw;
    *svm = it->second.svm;
    map_.erase(it);
    return true;
  }
  /// The allocation holding `ptr` (any byte of it); false if none does.
  bool find(const void* ptr, void** base, Allocation* out) const {
    uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = map_.upper_bound(p);
    if (it == map_.begin()) return false;
    --it;
    if (p - it->first >= it->second.size) return false;
    *base = reinterpret_cast<void*>(it->first);
    *out = it->second;
    return true;
  }

 private:
  mutable std::shared_mutex mutex_;
  std::map<uintptr_t, Allocation> map_;
};

AllocationMap& allocations() {
  static auto* m = new AllocationMap;  // never destroyed: frees may come during static destruction
  return *m;
}
std::atomic<uint64_t> g_next_alloc_id{1};

constexpr uint64_t kPageSize = 4096;
constexpr size_t kSvmMaxAlign = 128;  // PoCL 3.1: CL_DEVICE_MEM_BASE_ADDR_ALIGN is 1024 bits

/// True when `pNext` chains a relaxed-allocation-limits descriptor that lifts the size limit.
bool relaxed_max_size(const void* pNext) {
  for (auto* s = static_cast<const ze_base_desc_t*>(pNext); s != nullptr;
       s = static_cast<const ze_base_desc_t*>(s->pNext))
    if (s->stype == ZE_STRUCTURE_TYPE_RELAXED_ALLOCATION_LIMITS_EXP_DESC &&
        (reinterpret_cast<const ze_relaxed_allocation_limits_exp_desc_t*>(s)->flags &
         ZE_RELAXED_ALLOCATION_LIMITS_EXP_FLAG_MAX_SIZE))
      return true;
  return false;
}

/// The checks common to the three allocation entry points, then the SVM allocation itself.
ze_result_t allocate(ze_context_handle_t hContext, ze_memory_type_t type, size_t size, size_t alignment,
                     bool relaxed, ze_device_handle_t device, void** pptr) {
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment & (alignment - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  if (!relaxed && size > device_info().max_alloc) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  const ze_result_t oom =
      type == ZE_MEMORY_TYPE_HOST ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY : ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  if (size > SIZE_MAX - alignment) return oom;
  cl_svm_mem_flags flags = CL_MEM_READ_WRITE;
  if (device_info().svm_caps & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) {
    flags |= CL_MEM_SVM_FINE_GRAIN_BUFFER;
    if (device_info().svm_caps & CL_DEVICE_SVM_ATOMICS) flags |= CL_MEM_SVM_ATOMICS;
  }
  // PoCL's SVM allocator aligns to at most kSvmMaxAlign bytes; a larger alignment over-allocates and
  // hands out an aligned interior pointer (PoCL's CPU device accepts any pointer into an SVM block).
  // PoCL also refuses SVM blocks above maxMemAllocSize; a larger allocation (relaxed limits) is plain
  // aligned host memory, which PoCL's CPU device takes as a kernel argument all the same.
  const size_t padded = alignment <= kSvmMaxAlign ? size : size + alignment;
  const bool svm = padded <= device_info().max_alloc;
  void* raw = nullptr;
  if (svm) {
    raw = clSVMAlloc(platform().context, flags, padded, kSvmMaxAlign);
  } else if (posix_memalign(&raw, std::max(alignment, kSvmMaxAlign), size) != 0) {
    raw = nullptr;
  }
  uintptr_t p = reinterpret_cast<uintptr_t>(raw);
  if (svm && alignment > kSvmMaxAlign) p = (p + alignment - 1) & ~uintptr_t(alignment - 1);
  if (raw == nullptr) return oom;
  allocations().insert(reinterpret_cast<void*>(p),
                       Allocation{size, type, g_next_alloc_id.fetch_add(1), device, hContext, raw, svm});
  *pptr = reinterpret_cast<void*>(p);
  return ZE_RESULT_SUCCESS;
}

ze_result_t check_context(ze_context_handle_t h) {
  if (h == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_context(h)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

// ---------------------------------------------------------------------------------------------
// Contexts

ze_result_t create_context(ze_driver_handle_t hDriver, const ze_context_desc_t* desc, uint32_t numDevices,
                           ze_device_handle_t* phDevices, ze_context_handle_t* phContext) {
  if (hDriver == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || phContext == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!is_driver(hDriver)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (desc->flags & ~ze_context_flags_t(ZE_CONTEXT_FLAG_TBD)) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (numDevices > 0 && phDevices == nullptr) return ZE_RESULT_ERROR_INVALID_SIZE;
  for (uint32_t i = 0; i < numDevices; ++i) {
    if (phDevices[i] == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
    if (!is_device(phDevices[i])) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  }
  auto* c = new (std::nothrow) _ze_context_handle_t;
  if (c == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  *phContext = c;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

/// Errors: INVALID_NULL_HANDLE (hDriver), INVALID_NULL_POINTER (desc, phContext),
/// INVALID_ENUMERATION (desc->flags), INVALID_ARGUMENT (not a zex-cpu driver).
ze_result_t ZE_APICALL zeContextCreate(ze_driver_handle_t hDriver, const ze_context_desc_t* desc,
                                       ze_context_handle_t* phContext) {
  ZEXCPU_FAULT_POINT("zeContextCreate");
  return create_context(hDriver, desc, 0, nullptr, phContext);
}

/// As zeContextCreate, plus INVALID_SIZE (phDevices null with numDevices > 0).
ze_result_t ZE_APICALL zeContextCreateEx(ze_driver_handle_t hDriver, const ze_context_desc_t* desc,
                                         uint32_t numDevices, ze_device_handle_t* phDevices,
                                         ze_context_handle_t* phContext) {
  ZEXCPU_FAULT_POINT("zeContextCreateEx");
  return create_context(hDriver, desc, numDevices, phDevices, phContext);
}

ze_result_t ZE_APICALL zeContextDestroy(ze_context_handle_t hContext) {
  ZEXCPU_FAULT_POINT("zeContextDestroy");
  ZEXCPU_CHECK(check_context(hContext));
  hContext->magic = kDeadMagic;
  delete hContext;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeContextGetStatus(ze_context_handle_t hContext) {
  ZEXCPU_FAULT_POINT("zeContextGetStatus");
  ZEXCPU_CHECK(check_context(hContext));
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeContextSystemBarrier(ze_context_handle_t hContext, ze_device_handle_t hDevice) {
  ZEXCPU_FAULT_POINT("zeContextSystemBarrier");
  ZEXCPU_CHECK(check_context(hContext));
  if (hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return ZE_RESULT_SUCCESS;
}

namespace {

// Residency is a GPU concern; on the CPU everything is always resident, so these only validate.
ze_result_t residency(ze_context_handle_t hContext, ze_device_handle_t hDevice, void* ptr) {
  ZEXCPU_CHECK(check_context(hContext));
  if (hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

}  // namespace

ze_result_t ZE_APICALL zeContextMakeMemoryResident(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                                   void* ptr, size_t) {
  ZEXCPU_FAULT_POINT("zeContextMakeMemoryResident");
  return residency(hContext, hDevice, ptr);
}

ze_result_t ZE_APICALL zeContextEvictMemory(ze_context_handle_t hContext, ze_device_handle_t hDevice, void* ptr,
                                            size_t) {
  ZEXCPU_FAULT_POINT("zeContextEvictMemory");
  return residency(hContext, hDevice, ptr);
}

namespace {

// ---------------------------------------------------------------------------------------------
// Memory

}  // namespace

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ENUMERATION (flags),
/// UNSUPPORTED_SIZE (0, or above maxMemAllocSize without relaxed limits), UNSUPPORTED_ALIGNMENT
/// (not 0 or a power of two), INVALID_ARGUMENT (foreign device, memory ordinal), OUT_OF_*_MEMORY.
ze_result_t ZE_APICALL zeMemAllocShared(ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t* device_desc,
                                        const ze_host_mem_alloc_desc_t* host_desc, size_t size, size_t alignment,
                                        ze_device_handle_t hDevice, void** pptr) {
  ZEXCPU_FAULT_POINT("zeMemAllocShared");
  ZEXCPU_CHECK(check_context(hContext));
  if (device_desc == nullptr || host_desc == nullptr || pptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (device_desc->flags > 0x7 || host_desc->flags > 0xf) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (hDevice != nullptr && !is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (device_desc->ordinal != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  bool relaxed = relaxed_max_size(device_desc->pNext) || relaxed_max_size(host_desc->pNext);
  return allocate(hContext, ZE_MEMORY_TYPE_SHARED, size, alignment, relaxed, hDevice, pptr);
}

ze_result_t ZE_APICALL zeMemAllocDevice(ze_context_handle_t hContext, const ze_device_mem_alloc_desc_t* device_desc,
                                        size_t size, size_t alignment, ze_device_handle_t hDevice, void** pptr) {
  ZEXCPU_FAULT_POINT("zeMemAllocDevice");
  ZEXCPU_CHECK(check_context(hContext));
  if (hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (device_desc == nullptr || pptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (device_desc->flags > 0x7) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (!is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (device_desc->ordinal != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return allocate(hContext, ZE_MEMORY_TYPE_DEVICE, size, alignment, relaxed_max_size(device_desc->pNext), hDevice,
                  pptr);
}

ze_result_t ZE_APICALL zeMemAllocHost(ze_context_handle_t hContext, const ze_host_mem_alloc_desc_t* host_desc,
                                      size_t size, size_t alignment, void** pptr) {
  ZEXCPU_FAULT_POINT("zeMemAllocHost");
  ZEXCPU_CHECK(check_context(hContext));
  if (host_desc == nullptr || pptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (host_desc->flags > 0xf) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  return allocate(hContext, ZE_MEMORY_TYPE_HOST, size, alignment, relaxed_max_size(host_desc->pNext), nullptr, pptr);
}

namespace {

ze_result_t free_allocation(void* ptr) {
  // Remove from the map first: a concurrent lookup then never finds memory that is being freed.
  void* raw = nullptr;
  bool svm = true;
  if (!allocations().erase(ptr, &raw, &svm)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // not a USM base
  if (svm)
    clSVMFree(platform().context, raw);
  else
    std::free(raw);
  return ZE_RESULT_SUCCESS;
}

}  // namespace

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ARGUMENT (ptr is not the base of a live
/// allocation: nothing is freed).
ze_result_t ZE_APICALL zeMemFree(ze_context_handle_t hContext, void* ptr) {
  ZEXCPU_FAULT_POINT("zeMemFree");
  ZEXCPU_CHECK(check_context(hContext));
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return free_allocation(ptr);
}

/// As zeMemFree, plus INVALID_ENUMERATION (freePolicy). Both policies free at once: zex-cpu does not
/// track which commands use an allocation, so the application must have synchronized, as with zeMemFree.
ze_result_t ZE_APICALL zeMemFreeExt(ze_context_handle_t hContext, const ze_memory_free_ext_desc_t* desc, void* ptr) {
  ZEXCPU_FAULT_POINT("zeMemFreeExt");
  ZEXCPU_CHECK(check_context(hContext));
  if (desc == nullptr || ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (desc->freePolicy > 0x3) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  return free_allocation(ptr);
}

/// Unknown pointers answer ZE_MEMORY_TYPE_UNKNOWN (success), as the specification says.
ze_result_t ZE_APICALL zeMemGetAllocProperties(ze_context_handle_t hContext, const void* ptr,
                                               ze_memory_allocation_properties_t* props,
                                               ze_device_handle_t* phDevice) {
  ZEXCPU_FAULT_POINT("zeMemGetAllocProperties");
  ZEXCPU_CHECK(check_context(hContext));
  if (ptr == nullptr || props == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  void* base = nullptr;
  Allocation a{};
  if (allocations().find(ptr, &base, &a)) {
    props->type = a.type;
    props->id = a.id;
    props->pageSize = kPageSize;
    if (phDevice != nullptr) *phDevice = a.device;
  } else {
    props->type = ZE_MEMORY_TYPE_UNKNOWN;
    props->id = 0;
    props->pageSize = 0;
    if (phDevice != nullptr) *phDevice = nullptr;
  }
  return ZE_RESULT_SUCCESS;
}

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, ZE_RESULT_ERROR_UNKNOWN when ptr lies neither in
/// a USM allocation nor in a built module's constant data (what Intel's driver answers).
ze_result_t ZE_APICALL zeMemGetAddressRange(ze_context_handle_t hContext, const void* ptr, void** pBase,
                                            size_t* pSize) {
  ZEXCPU_FAULT_POINT("zeMemGetAddressRange");
  ZEXCPU_CHECK(check_context(hContext));
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  void* base = nullptr;
  size_t size = 0;
  Allocation a{};
  if (allocations().find(ptr, &base, &a)) {
    size = a.size;
  } else if (!module_constant_range(ptr, &base, &size)) {
    return ZE_RESULT_ERROR_UNKNOWN;
  }
  if (pBase != nullptr) *pBase = base;
  if (pSize != nullptr) *pSize = size;
  return ZE_RESULT_SUCCESS;
}

}  // namespace zexcpu
