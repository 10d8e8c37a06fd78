// Contexts and unified shared memory. Host and shared allocations are PoCL SVM allocations; device
// allocations of 64 KiB and more are memfd mappings (so that zeMemGetIpcHandle can hand their pages to
// another process), within a budget of file descriptors, and SVM allocations otherwise. On PoCL's CPU device all of them are ordinary host memory
// that kernels receive as raw pointers, so the host may touch any of them directly (a difference from a
// discrete GPU, where device allocations are not host-accessible). The allocations live in one ordered
// map so that zeMemGetAddressRange and zeMemGetAllocProperties can answer for interior pointers.
#include "kernel.hpp"
#include "objects.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <shared_mutex>

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif

namespace zexcpu {
namespace {

/// Where an allocation's pages come from, and so how it is freed.
enum class Backing : uint8_t {
  Svm,       // clSVMAlloc (raw: what it returned; the base itself unless over-aligned)
  Heap,      // posix_memalign: relaxed limits above what PoCL's SVM allocator gives
  Memfd,     // a device allocation: mmap of its own memfd (fd), `mapped` bytes; exportable
  Imported,  // zeMemOpenIpcHandle: mmap of another allocation's memfd, `mapped` bytes; no fd kept
};

struct Allocation {
  size_t size;
  ze_memory_type_t type;
  uint64_t id;
  ze_device_handle_t device;  // nullptr for host allocations and unassociated shared ones
  ze_context_handle_t context;
  void* raw;
  Backing backing;
  int fd = -1;         // Memfd
  size_t mapped = 0;   // Memfd, Imported: the length of the mapping at the base
  uint64_t inode = 0;  // Memfd: the memfd's, read when it was made (an IPC handle carries it)
  size_t align = 0;    // Memfd: the mapping's alignment (the reuse cache's key, with `mapped`)
  bool exported = false;  // Memfd: zeMemGetIpcHandle has named it (its memfd is never reused)
};

class AllocationMap {
 public:
  void insert(void* base, const Allocation& a) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    map_.emplace(reinterpret_cast<uintptr_t>(base), a);
  }
  /// Removes the allocation that starts exactly at `base` and is (`imported`) or is not an opened IPC
  /// handle, and gives it; false (nothing removed) if there is none. Any context of the driver may free
  /// an allocation, as on NEO (whose allocations are the driver's).
  bool erase(void* base, bool imported, Allocation* out) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = map_.find(reinterpret_cast<uintptr_t>(base));
    if (it == map_.end() || (it->second.backing == Backing::Imported) != imported) return false;
    *out = it->second;
    map_.erase(it);
    return true;
  }
  /// Marks the allocation at `base` exported; false if there is none.
  bool mark_exported(void* base) {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = map_.find(reinterpret_cast<uintptr_t>(base));
    if (it == map_.end()) return false;
    it->second.exported = true;
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

/// Device allocations of at least this size are memfds (exportable): below it, the page, the mapping and
/// the three system calls a memfd costs outweigh the allocation (NEO pools small allocations too).
constexpr size_t kMemfdMinSize = size_t{64} << 10;

/// The file descriptors device allocations may hold at once: a quarter of the soft RLIMIT_NOFILE, at most
/// 4096, placed at the top of that range (F_DUPFD_CLOEXEC), so that the application keeps the low numbers
/// (and select()'s FD_SETSIZE) and its own files never run out because of us.
struct FdBudget {
  int limit = 0;   // memfds at once
  int lowest = 0;  // the lowest number one takes
  std::atomic<int> used{0};
  FdBudget() {
    rlimit r{};
    const rlim_t soft = getrlimit(RLIMIT_NOFILE, &r) == 0 ? r.rlim_cur : 1024;
    const rlim_t cap = soft == RLIM_INFINITY ? rlim_t{1} << 20 : soft;
    limit = static_cast<int>(std::min<rlim_t>(4096, cap / 4));
    lowest = static_cast<int>(std::min<rlim_t>(16384, cap - static_cast<rlim_t>(limit)));
  }
  bool take() {
    if (used.fetch_add(1) < limit) return true;
    used.fetch_sub(1);
    return false;
  }
  void give() { used.fetch_sub(1); }
};
FdBudget& fd_budget() {
  static auto* b = new FdBudget;
  return *b;
}

/// A freed memfd mapping, kept for the next allocation of the same length and alignment: a new memfd's
/// pages fault in (and are zeroed) on first touch, about 2 us a page, where a reused one's are resident
/// (docs/benchmarks.md: a 16 MiB allocate-touch-free cycle). Never an exported one: a stale handle
/// would name the new allocation. Bounded: 32 mappings, 128 MiB.
struct MemfdMapping {
  void* p;
  int fd;
  uint64_t inode;
};
class MemfdCache {
 public:
  bool put(size_t len, size_t align, const MemfdMapping& m) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.size() >= 32 || bytes_ + len > (size_t{128} << 20)) return false;
    entries_.emplace(std::make_pair(len, align), m);
    bytes_ += len;
    return true;
  }
  bool take(size_t len, size_t align, MemfdMapping* m) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(std::make_pair(len, align));
    if (it == entries_.end()) return false;
    *m = it->second;
    bytes_ -= len;
    entries_.erase(it);
    return true;
  }
  /// Gives back one cached mapping (its fd to the budget); false if there is none.
  bool evict_one();

 private:
  std::mutex mutex_;
  std::multimap<std::pair<size_t, size_t>, MemfdMapping> entries_;
  size_t bytes_ = 0;
};
MemfdCache& memfd_cache() {
  static auto* c = new MemfdCache;
  return *c;
}
bool MemfdCache::evict_one() {
  MemfdMapping m{};
  size_t len = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (entries_.empty()) return false;
    auto it = entries_.begin();
    m = it->second;
    len = it->first.first;
    bytes_ -= len;
    entries_.erase(it);
  }
  munmap(m.p, len);
  close(m.fd);
  fd_budget().give();
  return true;
}

/// A shared mapping of a new memfd of `size` bytes (rounded up to pages) at an address aligned to
/// `alignment` (at least a page), not inherited by fork() (the translator's child, an application's
/// children: as on a GPU, device memory is not theirs); *fd, *mapped and *inode describe it. nullptr
/// when the fd budget is spent or any step fails (nothing is left behind).
void* map_memfd(size_t size, size_t alignment, int* fd, size_t* mapped, uint64_t* inode) {
  const size_t len = (size + kPageSize - 1) & ~size_t(kPageSize - 1);
  const size_t align = std::max<size_t>(alignment, kPageSize);
  if (len < size || len > SIZE_MAX - align) return nullptr;
  MemfdMapping reused{};
  if (memfd_cache().take(len, align, &reused)) {
    *fd = reused.fd;
    *mapped = len;
    *inode = reused.inode;
    return reused.p;
  }
  if (!fd_budget().take() && !(memfd_cache().evict_one() && fd_budget().take())) return nullptr;
  int f = memfd_create("zex-cpu device memory", MFD_CLOEXEC);
  if (f >= 0 && f < fd_budget().lowest) {  // move it up, out of the application's way
    const int high = fcntl(f, F_DUPFD_CLOEXEC, fd_budget().lowest);
    close(f);
    f = high;
  }
  struct stat st{};
  if (f < 0 || ftruncate(f, static_cast<off_t>(len)) != 0 || fstat(f, &st) != 0) {
    if (f >= 0) close(f);
    fd_budget().give();
    return nullptr;
  }
  void* p = MAP_FAILED;
  if (align == kPageSize) {
    p = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
  } else if (void* r = reserve_aligned(len, align); r != MAP_FAILED) {  // then the memfd over it
    p = mmap(r, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, f, 0);
    if (p == MAP_FAILED) munmap(r, len);
  }
  if (p == MAP_FAILED) {
    close(f);
    fd_budget().give();
    return nullptr;
  }
  madvise(p, len, MADV_DONTFORK);
  *fd = f;
  *mapped = len;
  *inode = static_cast<uint64_t>(st.st_ino);
  return p;
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
  // Device allocations from 64 KiB up to maxMemAllocSize (a relaxed one above it could overcommit: a
  // memfd reserves nothing, so it stays heap memory, which fails at once when there is none).
  if (type == ZE_MEMORY_TYPE_DEVICE && size >= kMemfdMinSize && size <= device_info().max_alloc) {
    Allocation a{size, type, 0, device, hContext, nullptr, Backing::Memfd};
    a.align = std::max<size_t>(alignment, kPageSize);
    if (void* p = map_memfd(size, alignment, &a.fd, &a.mapped, &a.inode)) {
      a.raw = p;
      a.id = g_next_alloc_id.fetch_add(1);
      allocations().insert(p, a);
      *pptr = p;
      return ZE_RESULT_SUCCESS;
    }
    // Out of the fd budget, file descriptors or mappings: SVM memory works just as well, only not for IPC.
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
  allocations().insert(reinterpret_cast<void*>(p), Allocation{size, type, g_next_alloc_id.fetch_add(1), device,
                                                              hContext, raw, svm ? Backing::Svm : Backing::Heap});
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
  ZEXCPU_DESTROY_POINT("zeContextDestroy", hContext);
  ZEXCPU_CHECK(check_context(hContext));
  release_virtual_memory(hContext);
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

/// Frees what the allocation's backing holds.
void release(const Allocation& a, void* base) {
  switch (a.backing) {
    case Backing::Svm: clSVMFree(platform().context, a.raw); break;
    case Backing::Heap: std::free(a.raw); break;
    case Backing::Memfd:
      if (!a.exported && memfd_cache().put(a.mapped, a.align, MemfdMapping{base, a.fd, a.inode})) break;
      munmap(base, a.mapped);
      close(a.fd);
      fd_budget().give();
      break;
    case Backing::Imported: munmap(base, a.mapped); break;
  }
}

ze_result_t free_allocation(void* ptr) {
  // Remove from the map first: a concurrent lookup then never finds memory that is being freed.
  Allocation a{};
  if (!allocations().erase(ptr, false, &a)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // not a USM base
  release(a, ptr);
  return ZE_RESULT_SUCCESS;
}

}  // namespace

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ARGUMENT (ptr is not the base of a live
/// allocation, or was opened with zeMemOpenIpcHandle (close it with zeMemCloseIpcHandle):
/// nothing is freed).
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
  size_t vsize = 0;
  ze_device_handle_t vdevice = nullptr;
  uint64_t vid = 0;
  if (allocations().find(ptr, &base, &a)) {
    props->type = a.type;
    props->id = a.id;
    props->pageSize = kPageSize;
    if (phDevice != nullptr) *phDevice = a.device;
  } else if (virtual_memory_mapping(hContext, ptr, &base, &vsize, &vdevice, &vid)) {  // as NEO: device memory, 64 KiB pages
    props->type = ZE_MEMORY_TYPE_DEVICE;
    props->id = vid;
    props->pageSize = size_t{64} << 10;
    if (phDevice != nullptr) *phDevice = vdevice;
  } else {
    props->type = ZE_MEMORY_TYPE_UNKNOWN;
    props->id = 0;
    props->pageSize = 0;
    if (phDevice != nullptr) *phDevice = nullptr;
  }
  return ZE_RESULT_SUCCESS;
}

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, ZE_RESULT_ERROR_UNKNOWN when ptr lies neither in
/// a USM allocation, nor in a virtual memory mapping (the mapping's range is answered, as NEO), nor in a
/// built module's constant data (what Intel's driver answers).
ze_result_t ZE_APICALL zeMemGetAddressRange(ze_context_handle_t hContext, const void* ptr, void** pBase,
                                            size_t* pSize) {
  ZEXCPU_FAULT_POINT("zeMemGetAddressRange");
  ZEXCPU_CHECK(check_context(hContext));
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  void* base = nullptr;
  size_t size = 0;
  Allocation a{};
  ze_device_handle_t vdevice = nullptr;
  uint64_t vid = 0;
  if (allocations().find(ptr, &base, &a)) {
    size = a.size;
  } else if (!virtual_memory_mapping(hContext, ptr, &base, &size, &vdevice, &vid) && !module_constant_range(ptr, &base, &size)) {
    return ZE_RESULT_ERROR_UNKNOWN;
  }
  if (pBase != nullptr) *pBase = base;
  if (pSize != nullptr) *pSize = size;
  return ZE_RESULT_SUCCESS;
}

}  // namespace zexcpu

// ---------------------------------------------------------------------------------------------
// IPC. A handle is laid out as NEO's opaque IPC handle on Linux (compute-runtime's
// IpcOpaqueMemoryData), so code written for Intel's driver reads it the same way: the exporter's memfd
// number at offset 0 and again at 22, the exporter's pid at 16, handle type 0 (fd) at 20, memory type 0
// (device) at 21; zex-cpu's own words sit in NEO's reserved bytes (30..61): "zex-cpu\0", the size, the
// id, and the memfd's inode (so a number reused by another file after a free is refused, not mapped).
// The importer fetches the memfd itself with pidfd_getfd, as NEO does; an application that moved the fd
// itself (SCM_RIGHTS) and wrote its own number at offset 0 is honoured too (the two copies then differ).

namespace zexcpu {
namespace {

constexpr size_t kIpcFd = 0, kIpcPid = 16, kIpcType = 20, kIpcMemType = 21, kIpcFdCopy = 22, kIpcMagic = 30,
                 kIpcSize = 38, kIpcId = 46, kIpcInode = 54;
constexpr char kIpcMagicText[8] = {'z', 'e', 'x', '-', 'c', 'p', 'u', '\0'};

template <typename T> void put(ze_ipc_mem_handle_t* h, size_t off, T v) { std::memcpy(h->data + off, &v, sizeof v); }
template <typename T> T get(const ze_ipc_mem_handle_t& h, size_t off) {
  T v;
  std::memcpy(&v, h.data + off, sizeof v);
  return v;
}

/// An fd of this process for the memfd a handle names, and whether the caller must close it; -1 if none.
int ipc_fd(const ze_ipc_mem_handle_t& h, bool* owned) {
  const int fd = get<int>(h, kIpcFd);
  const int copy = get<int>(h, kIpcFdCopy);
  const auto pid = get<uint32_t>(h, kIpcPid);
  *owned = false;
  if (fd != copy || pid == static_cast<uint32_t>(getpid())) return fd;  // moved by the application, or ours
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  const int local = pidfd < 0 ? -1 : static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, fd, 0));
  if (pidfd >= 0) close(pidfd);
  *owned = local >= 0;
  // The exporter has exited or may not be read (ptrace rules, a kernel before 5.6): the application may
  // still have moved the fd here under the same number. The caller's inode check tells.
  return local >= 0 ? local : fd;
}

}  // namespace

/// Any pointer into a device allocation (the handle names the whole allocation, as NEO's does). Errors:
/// INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ARGUMENT (no allocation holds ptr),
/// UNSUPPORTED_FEATURE (a host or shared allocation, an opened IPC handle, a device allocation below
/// 64 KiB, or one made when the fd budget was spent or no memfd could be had: zex-cpu exports
/// memfd-backed device allocations only; docs/cpu-driver.md, "Memory IPC").
ze_result_t ZE_APICALL zeMemGetIpcHandle(ze_context_handle_t hContext, const void* ptr, ze_ipc_mem_handle_t* pIpcHandle) {
  ZEXCPU_FAULT_POINT("zeMemGetIpcHandle");
  ZEXCPU_CHECK(check_context(hContext));
  if (ptr == nullptr || pIpcHandle == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  void* base = nullptr;
  Allocation a{};
  if (!allocations().find(ptr, &base, &a)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (a.backing != Backing::Memfd) return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
  // As NEO: let any process of the user read the fd with pidfd_getfd where Yama restricts ptrace (else
  // this fails harmlessly).
  static const bool ptracer = [] {
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    return true;
  }();
  (void)ptracer;
  if (!allocations().mark_exported(base)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // freed meanwhile
  std::memset(pIpcHandle->data, 0, sizeof pIpcHandle->data);
  put<int>(pIpcHandle, kIpcFd, a.fd);
  put<uint32_t>(pIpcHandle, kIpcPid, static_cast<uint32_t>(getpid()));
  put<uint8_t>(pIpcHandle, kIpcType, 0);
  put<uint8_t>(pIpcHandle, kIpcMemType, 0);
  put<int>(pIpcHandle, kIpcFdCopy, a.fd);
  std::memcpy(pIpcHandle->data + kIpcMagic, kIpcMagicText, sizeof kIpcMagicText);
  put<uint64_t>(pIpcHandle, kIpcSize, a.size);
  put<uint64_t>(pIpcHandle, kIpcId, a.id);
  put<uint64_t>(pIpcHandle, kIpcInode, a.inode);  // read when the memfd was made: its fd number may be reused
  return ZE_RESULT_SUCCESS;
}

/// Maps the allocation a handle names (each call a new mapping, as the specification says); close it
/// with zeMemCloseIpcHandle. Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ENUMERATION
/// (flags), INVALID_ARGUMENT (not a zex-cpu handle; the exporter has exited or freed the allocation, or
/// may not be read with pidfd_getfd; the fd is not that memfd), OUT_OF_HOST_MEMORY (mmap).
ze_result_t ZE_APICALL zeMemOpenIpcHandle(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                          ze_ipc_mem_handle_t handle, ze_ipc_memory_flags_t flags, void** pptr) {
  ZEXCPU_FAULT_POINT("zeMemOpenIpcHandle");
  ZEXCPU_CHECK(check_context(hContext));
  if (hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (pptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (flags > 0x3) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (!is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (std::memcmp(handle.data + kIpcMagic, kIpcMagicText, sizeof kIpcMagicText) != 0 ||
      get<uint8_t>(handle, kIpcType) != 0 || get<uint8_t>(handle, kIpcMemType) != 0)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  const auto size = get<uint64_t>(handle, kIpcSize);
  bool owned = false;
  const int fd = ipc_fd(handle, &owned);
  if (fd < 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  struct stat st{};
  const size_t mapped = (size + kPageSize - 1) & ~size_t(kPageSize - 1);
  // Only a memfd answers F_GET_SEALS: a stale or forged number naming some other file is refused.
  const bool ok = size > 0 && mapped >= size && fcntl(fd, F_GET_SEALS) >= 0 && fstat(fd, &st) == 0 &&
                  static_cast<uint64_t>(st.st_ino) == get<uint64_t>(handle, kIpcInode) &&
                  static_cast<uint64_t>(st.st_size) >= mapped;
  void* p = ok ? mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (owned) close(fd);  // the mapping keeps the memory
  if (!ok) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (p == MAP_FAILED) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  madvise(p, mapped, MADV_DONTFORK);
  Allocation a{size, ZE_MEMORY_TYPE_DEVICE, g_next_alloc_id.fetch_add(1), hDevice, hContext, p, Backing::Imported};
  a.mapped = mapped;
  allocations().insert(p, a);
  *pptr = p;
  return ZE_RESULT_SUCCESS;
}

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_ARGUMENT (ptr is not what
/// zeMemOpenIpcHandle gave on this context: nothing is freed; NEO would free any allocation here).
ze_result_t ZE_APICALL zeMemCloseIpcHandle(ze_context_handle_t hContext, const void* ptr) {
  ZEXCPU_FAULT_POINT("zeMemCloseIpcHandle");
  ZEXCPU_CHECK(check_context(hContext));
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  Allocation a{};
  void* base = const_cast<void*>(ptr);
  if (!allocations().erase(base, true, &a)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  release(a, base);
  return ZE_RESULT_SUCCESS;
}

}  // namespace zexcpu
