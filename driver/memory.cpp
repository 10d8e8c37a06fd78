// Unified shared memory. Host and shared allocations are PoCL SVM allocations; device allocations of 64
// KiB and more are memfd mappings (so that zeMemGetIpcHandle can hand their pages to another process,
// memory_ipc.cpp), within a budget of file descriptors, and SVM allocations otherwise. On PoCL's CPU device
// all of them are ordinary host memory that kernels receive as raw pointers, so the host may touch any of
// them directly (a difference from a discrete GPU, where device allocations are not host-accessible). The
// allocations live in one ordered map (memory.hpp) so that zeMemGetAddressRange and zeMemGetAllocProperties
// can answer for interior pointers.
#include "kernel.hpp"
#include "memory.hpp"


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

AllocationMap& allocations() {
  static auto* m = new AllocationMap;  // never destroyed: frees may come during static destruction
  return *m;
}
std::atomic<uint64_t> g_next_alloc_id{1};

namespace {

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

/// ZEX_CPU_GUARD_PAGES's allocation: [guard page][slack][allocation][gap][guard page][slack], the
/// allocation as close to a guard page after it as its alignment allows: the gap is (-size) mod
/// min(alignment, page), 0 for the usual sizes. Alignment 0 means kSvmMaxAlign, as on the SVM path
/// (a kernel's widest vector, long16, is 128 bytes and the compiler may load it with aligned
/// instructions). Device allocations are not inherited by fork(), as memfd-backed ones are not; host
/// and shared ones are, as the SVM ones they replace are. nullptr when the mapping or protection fails.
void* map_guarded(size_t size, size_t alignment, bool device, void** raw, size_t* mapped) {
  const size_t align = alignment ? alignment : kSvmMaxAlign;
  const size_t pages = (size + kPageSize - 1) / kPageSize * kPageSize;
  const size_t slack = align > kPageSize ? align : 0;  // room to place an over-page-aligned start
  if (pages < size || pages > SIZE_MAX - 2 * kPageSize - slack) return nullptr;
  const size_t len = kPageSize + pages + slack + kPageSize;
  void* m = mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(m);
  const uintptr_t limit = base + len - kPageSize;  // the last page: the latest a guard can be
  const uintptr_t p = (limit - size) & ~uintptr_t(align - 1);
  // The first page at or after the allocation's end. For an alignment up to a page it is `limit`; above
  // one, p is only aligned so far down, and the guard moves down with it (the pages after stay mapped,
  // unused).
  const uintptr_t guard = (p + size + kPageSize - 1) & ~uintptr_t(kPageSize - 1);
  if (mprotect(m, kPageSize, PROT_NONE) != 0 || mprotect(reinterpret_cast<void*>(guard), kPageSize, PROT_NONE) != 0) {
    munmap(m, len);
    return nullptr;
  }
  if (device) madvise(m, len, MADV_DONTFORK);
  *raw = m;
  *mapped = len;
  return reinterpret_cast<void*>(p);
}

}  // namespace

bool guard_pages() {
  static const bool on = [] {
    const char* v = std::getenv("ZEX_CPU_GUARD_PAGES");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return on;
}

namespace {

/// The checks common to the three allocation entry points, then the SVM allocation itself.
ze_result_t allocate(ze_context_handle_t hContext, ze_memory_type_t type, size_t size, size_t alignment,
                     bool relaxed, ze_device_handle_t device, void** pptr) {
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment & (alignment - 1)) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  if (!relaxed && size > device_info().max_alloc) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  const ze_result_t oom =
      type == ZE_MEMORY_TYPE_HOST ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY : ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  if (size > SIZE_MAX - alignment) return oom;
  if (guard_pages()) {
    // Every kind of allocation (no memfd: a guarded device allocation cannot be exported).
    Allocation a{size, type, 0, device, hContext, nullptr, Backing::Guarded};
    void* p = map_guarded(size, alignment, type == ZE_MEMORY_TYPE_DEVICE, &a.raw, &a.mapped);
    if (p == nullptr) return oom;
    a.id = g_next_alloc_id.fetch_add(1);
    allocations().insert(p, a);
    *pptr = p;
    return ZE_RESULT_SUCCESS;
  }
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
    case Backing::Guarded: munmap(a.raw, a.mapped); break;
  }
}

namespace {

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
