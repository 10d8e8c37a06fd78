// Virtual and physical memory (zeVirtualMem*, zePhysicalMem*). A reservation is an inaccessible
// anonymous mapping (PROT_NONE, MAP_NORESERVE); a physical memory object is a memfd of its size; mapping
// one into the other is mmap(MAP_SHARED | MAP_FIXED) of the memfd over the reserved pages, and unmapping
// puts an inaccessible anonymous mapping back, so the range stays reserved and touching it faults, as on a
// GPU. Kernels, copies and fills take these addresses like any other host memory (PoCL's CPU device
// accepts any pointer). The rules are NEO's (compute-runtime's Context::mapVirtualMem and friends) where
// NEO has one, and the specification's where NEO is laxer (docs/cpu-driver.md, "Virtual memory"):
// - page sizes: 64 KiB, and 2 MiB for sizes of 2 MiB and more; a physical object and a mapping must be a
//   whole number of the page size for their size, at an address and offset aligned to it; reservations,
//   frees and access changes a multiple of 64 KiB;
// - a physical object is mapped at most once at a time (NEO refuses a second mapping of device memory);
// - unmapping and access changes take whole mappings, and every page of their range must be mapped.
//
// One mutex guards every reservation and every physical object's mapping count; mmap runs under it, so
// two threads never map over the same pages at once.
#include "objects.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <set>

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif

struct _ze_physical_mem_handle_t {
  uint32_t magic = zexcpu::kPhysicalMemMagic;
  ze_context_handle_t context = nullptr;
  ze_device_handle_t device = nullptr;
  int fd = -1;
  size_t size = 0;
  uint32_t mappings = 0;  // 0 or 1: whether it is mapped (VmState::mutex)
};

namespace zexcpu {
namespace {

constexpr size_t kSmallPage = size_t{64} << 10;
constexpr size_t kLargePage = size_t{2} << 20;

struct Mapping {
  size_t size;
  ze_physical_mem_handle_t phys;
  size_t offset;  // into phys
  ze_memory_access_attribute_t access;
  uint64_t id;    // zeMemGetAllocProperties
};

struct Reservation {
  size_t size;
  ze_context_handle_t context;
  std::map<uintptr_t, Mapping> mappings;  // by start address; disjoint
};

struct VmState {
  std::mutex mutex;
  std::map<uintptr_t, Reservation> reservations;  // by base; disjoint
  std::set<ze_physical_mem_handle_t> physical;     // live objects: a handle is looked up, never trusted
};

VmState& vm() {
  static auto* s = new VmState;  // never destroyed: frees may come during static destruction
  return *s;
}

int prot_of(ze_memory_access_attribute_t a) {
  switch (a) {
    case ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE: return PROT_READ | PROT_WRITE;
    case ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY: return PROT_READ;
    default: return PROT_NONE;
  }
}

/// NEO's page size for `size` (zeVirtualMemQueryPageSize).
size_t page_for(size_t size) { return size >= kLargePage ? kLargePage : kSmallPage; }

/// The checks the range entry points share: a non-zero size that is a multiple of 64 KiB at a 64 KiB
/// aligned address; with `strict` (physical objects, maps, unmaps: NEO's rule), a multiple of the page
/// size for that size, aligned to it.
ze_result_t check_range(const void* ptr, size_t size, bool strict) {
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  const size_t page = strict ? page_for(size) : kSmallPage;
  if (size == 0 || size % page != 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (reinterpret_cast<uintptr_t>(ptr) % page != 0) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  return ZE_RESULT_SUCCESS;
}

/// True for a live physical memory object of `context`. Caller holds the mutex.
bool live_physical(ze_physical_mem_handle_t h, ze_context_handle_t context) {
  return vm().physical.count(h) != 0 && h->context == context;
}

/// The reservation of `context` holding all of [lo, hi), or nullptr. Caller holds the mutex.
Reservation* reservation_of(ze_context_handle_t context, uintptr_t lo, uintptr_t hi) {
  auto& rs = vm().reservations;
  auto it = rs.upper_bound(lo);
  if (it == rs.begin()) return nullptr;
  --it;
  if (it->second.context != context || hi < lo || hi - it->first > it->second.size) return nullptr;
  return &it->second;
}

/// True when [lo, hi) is exactly a run of whole, adjacent mappings of `r`.
bool whole_mappings(const Reservation& r, uintptr_t lo, uintptr_t hi) {
  uintptr_t at = lo;
  for (auto it = r.mappings.find(lo); it != r.mappings.end() && it->first == at && at < hi; ++it)
    at += it->second.size;
  return at == hi;
}

std::atomic<uint64_t> g_next_mapping_id{uint64_t{1} << 62};  // apart from the USM ids

/// Puts an inaccessible anonymous mapping back over [p, p + size) (still reserved, faults when touched).
bool unback(uintptr_t p, size_t size) {
  void* q = mmap(reinterpret_cast<void*>(p), size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
                 -1, 0);
  return q != MAP_FAILED;
}

}  // namespace

/// Answers 64 KiB, or 2 MiB for a size of 2 MiB or more (as NEO does).
ze_result_t ZE_APICALL zeVirtualMemQueryPageSize(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                                 size_t size, size_t* pagesize) {
  ZEXCPU_FAULT_POINT("zeVirtualMemQueryPageSize");
  ZEXCPU_CHECK(check_context(hContext));
  if (hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (pagesize == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (size == 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  *pagesize = size >= kLargePage ? kLargePage : kSmallPage;
  return ZE_RESULT_SUCCESS;
}

/// pStart is a hint (the 1.4 header's @returns lists a null pStart, later versions allow it: zex-cpu does):
/// used when it is page-aligned and free, else another address is chosen. The reservation is aligned to
/// the page size QueryPageSize gives for its size. Errors: UNSUPPORTED_SIZE (0 or not a multiple of
/// 64 KiB), OUT_OF_HOST_MEMORY (no address space).
ze_result_t ZE_APICALL zeVirtualMemReserve(ze_context_handle_t hContext, const void* pStart, size_t size,
                                           void** pptr) {
  ZEXCPU_FAULT_POINT("zeVirtualMemReserve");
  ZEXCPU_CHECK(check_context(hContext));
  if (pptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (size == 0 || size % kSmallPage != 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  const size_t align = size >= kLargePage ? kLargePage : kSmallPage;
  if (size > SIZE_MAX - align) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  std::lock_guard<std::mutex> lock(vm().mutex);
  void* base = MAP_FAILED;
  if (pStart != nullptr && reinterpret_cast<uintptr_t>(pStart) % align == 0) {
    // A plain hint, not MAP_FIXED_NOREPLACE: Linux takes a free hint exactly, and sanitizers (which
    // drop hints outside the application's memory) do not mistake it for a fixed mapping.
    base = mmap(const_cast<void*>(pStart), size, PROT_NONE, kFlags, -1, 0);
    if (base != MAP_FAILED && base != pStart) {
      munmap(base, size);
      base = MAP_FAILED;
    }
  }
  if (base == MAP_FAILED) base = reserve_aligned(size, align);
  if (base == MAP_FAILED) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  vm().reservations.emplace(reinterpret_cast<uintptr_t>(base), Reservation{size, hContext, {}});
  *pptr = base;
  return ZE_RESULT_SUCCESS;
}

/// Frees a whole reservation (ptr and size as zeVirtualMemReserve gave them), unmapping what is mapped
/// in it; the physical memory objects stay. Errors: INVALID_ARGUMENT (not a reservation of this
/// context, or not all of it: nothing is freed), UNSUPPORTED_SIZE / _ALIGNMENT.
ze_result_t ZE_APICALL zeVirtualMemFree(ze_context_handle_t hContext, const void* ptr, size_t size) {
  ZEXCPU_FAULT_POINT("zeVirtualMemFree");
  ZEXCPU_CHECK(check_context(hContext));
  ZEXCPU_CHECK(check_range(ptr, size, false));
  std::lock_guard<std::mutex> lock(vm().mutex);
  auto it = vm().reservations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == vm().reservations.end() || it->second.context != hContext || it->second.size != size)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  for (auto& [start, m] : it->second.mappings) --m.phys->mappings;
  munmap(const_cast<void*>(ptr), size);
  vm().reservations.erase(it);
  return ZE_RESULT_SUCCESS;
}

/// Errors: INVALID_ENUMERATION (flags), UNSUPPORTED_SIZE (0, or not a multiple of the page size for
/// that size: 64 KiB below 2 MiB, 2 MiB from there, as NEO), OUT_OF_DEVICE_MEMORY (no memfd: out of file
/// descriptors or memory).
ze_result_t ZE_APICALL zePhysicalMemCreate(ze_context_handle_t hContext, ze_device_handle_t hDevice,
                                           ze_physical_mem_desc_t* desc, ze_physical_mem_handle_t* phPhysicalMemory) {
  ZEXCPU_FAULT_POINT("zePhysicalMemCreate");
  ZEXCPU_CHECK(check_context(hContext));
  if (hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (desc == nullptr || phPhysicalMemory == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (desc->flags > 0x1) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  if (desc->size == 0 || desc->size % page_for(desc->size) != 0) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  // A memfd reserves nothing: refuse what the machine cannot hold now rather than fault on first touch.
  if (desc->size > device_info().global_mem) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  auto* p = new (std::nothrow) _ze_physical_mem_handle_t;
  if (p == nullptr) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  p->fd = memfd_create("zex-cpu physical memory", MFD_CLOEXEC);
  if (p->fd < 0 || ftruncate(p->fd, static_cast<off_t>(desc->size)) != 0) {
    if (p->fd >= 0) close(p->fd);
    delete p;
    return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  }
  p->context = hContext;
  p->device = hDevice;
  p->size = desc->size;
  {
    std::lock_guard<std::mutex> lock(vm().mutex);
    vm().physical.insert(p);
  }
  *phPhysicalMemory = p;
  return ZE_RESULT_SUCCESS;
}

/// Errors: INVALID_ARGUMENT (not a live physical memory object of this context),
/// HANDLE_OBJECT_IN_USE (still mapped somewhere: unmap it first; nothing is destroyed).
ze_result_t ZE_APICALL zePhysicalMemDestroy(ze_context_handle_t hContext, ze_physical_mem_handle_t hPhysicalMemory) {
  ZEXCPU_DESTROY_POINT("zePhysicalMemDestroy", hPhysicalMemory);
  ZEXCPU_CHECK(check_context(hContext));
  if (hPhysicalMemory == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard<std::mutex> lock(vm().mutex);
  if (!live_physical(hPhysicalMemory, hContext)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (hPhysicalMemory->mappings != 0) return ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE;
  vm().physical.erase(hPhysicalMemory);
  close(hPhysicalMemory->fd);
  hPhysicalMemory->magic = kDeadMagic;
  delete hPhysicalMemory;
  return ZE_RESULT_SUCCESS;
}

/// Errors: INVALID_ENUMERATION (access), UNSUPPORTED_SIZE (0, or not a multiple of the page size for
/// that size), UNSUPPORTED_ALIGNMENT (ptr not aligned to that page size, offset not to 64 KiB),
/// INVALID_ARGUMENT (not a live physical memory object of this context, or one already mapped (NEO maps
/// device memory once); offset + size beyond it; the range not inside one reservation of this context,
/// or some of it already mapped), OUT_OF_HOST_MEMORY (mmap failed). Nothing changes on an error.
ze_result_t ZE_APICALL zeVirtualMemMap(ze_context_handle_t hContext, const void* ptr, size_t size,
                                       ze_physical_mem_handle_t hPhysicalMemory, size_t offset,
                                       ze_memory_access_attribute_t access) {
  ZEXCPU_FAULT_POINT("zeVirtualMemMap");
  ZEXCPU_CHECK(check_context(hContext));
  if (hPhysicalMemory == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (access > ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  ZEXCPU_CHECK(check_range(ptr, size, true));
  if (offset % kSmallPage != 0) return ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT;
  std::lock_guard<std::mutex> lock(vm().mutex);
  ze_physical_mem_handle_t phys = hPhysicalMemory;
  if (!live_physical(phys, hContext) || phys->mappings != 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (offset > phys->size || size > phys->size - offset) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(ptr);
  if (lo > UINTPTR_MAX - size) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  Reservation* r = reservation_of(hContext, lo, lo + size);
  if (r == nullptr) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  auto next = r->mappings.lower_bound(lo);
  if (next != r->mappings.end() && next->first < lo + size) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (next != r->mappings.begin() && std::prev(next)->first + std::prev(next)->second.size > lo)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  void* q = mmap(const_cast<void*>(ptr), size, prot_of(access), MAP_SHARED | MAP_FIXED, phys->fd,
                 static_cast<off_t>(offset));
  if (q == MAP_FAILED) {
    unback(lo, size);  // a failed MAP_FIXED may have removed the reservation's pages
    return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
  }
  r->mappings.emplace(lo, Mapping{size, phys, offset, access, g_next_mapping_id.fetch_add(1)});
  ++phys->mappings;
  return ZE_RESULT_SUCCESS;
}

/// What zeVirtualMemUnmap, zeVirtualMemSetAccessAttribute and zeVirtualMemGetAccessAttribute share:
/// [ptr, ptr + size) a multiple of 64 KiB (each mapping met its page rule when it was made) inside one
/// reservation of `context`, and with `whole` one or several adjacent whole mappings; then
/// `change(reservation, lo, hi)` runs under the mutex.
template <typename Change>
ze_result_t on_range(ze_context_handle_t context, const void* ptr, size_t size, bool whole, Change change) {
  ZEXCPU_CHECK(check_range(ptr, size, false));
  const uintptr_t lo = reinterpret_cast<uintptr_t>(ptr);
  if (lo > UINTPTR_MAX - size) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  const uintptr_t hi = lo + size;
  std::lock_guard<std::mutex> lock(vm().mutex);
  Reservation* r = reservation_of(context, lo, hi);
  if (r == nullptr || (whole && !whole_mappings(*r, lo, hi))) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return change(*r, lo, hi);
}

/// Unmaps whole mappings: [ptr, ptr + size) must be one mapping or several adjacent ones. Errors:
/// INVALID_ARGUMENT (anything else: nothing changes), UNSUPPORTED_SIZE / _ALIGNMENT (64 KiB),
/// OUT_OF_HOST_MEMORY (mmap failed).
ze_result_t ZE_APICALL zeVirtualMemUnmap(ze_context_handle_t hContext, const void* ptr, size_t size) {
  ZEXCPU_FAULT_POINT("zeVirtualMemUnmap");
  ZEXCPU_CHECK(check_context(hContext));
  return on_range(hContext, ptr, size, true, [](Reservation& r, uintptr_t lo, uintptr_t hi) {
    if (!unback(lo, hi - lo)) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    for (auto it = r.mappings.find(lo); it != r.mappings.end() && it->first < hi;) {
      --it->second.phys->mappings;
      it = r.mappings.erase(it);
    }
    return ZE_RESULT_SUCCESS;
  });
}

/// Takes whole mappings, as zeVirtualMemUnmap (an unmapped page stays inaccessible whatever is asked).
/// Errors: INVALID_ENUMERATION (access), INVALID_ARGUMENT (not one or several adjacent whole mappings of
/// one reservation of this context: nothing changes), UNSUPPORTED_SIZE / _ALIGNMENT (64 KiB).
ze_result_t ZE_APICALL zeVirtualMemSetAccessAttribute(ze_context_handle_t hContext, const void* ptr, size_t size,
                                                      ze_memory_access_attribute_t access) {
  ZEXCPU_FAULT_POINT("zeVirtualMemSetAccessAttribute");
  ZEXCPU_CHECK(check_context(hContext));
  if (access > ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  return on_range(hContext, ptr, size, true, [access](Reservation& r, uintptr_t lo, uintptr_t hi) {
    if (mprotect(reinterpret_cast<void*>(lo), hi - lo, prot_of(access)) != 0) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    for (auto it = r.mappings.find(lo); it != r.mappings.end() && it->first < hi; ++it) it->second.access = access;
    return ZE_RESULT_SUCCESS;
  });
}

/// *access is the attribute of the page at ptr (NONE when it is not mapped), *outSize how many bytes
/// from ptr, at most size, share it (as the specification words it; NEO answers the reservation's
/// size). Errors: INVALID_ARGUMENT (not inside one reservation of this context), UNSUPPORTED_SIZE /
/// _ALIGNMENT.
ze_result_t ZE_APICALL zeVirtualMemGetAccessAttribute(ze_context_handle_t hContext, const void* ptr, size_t size,
                                                      ze_memory_access_attribute_t* access, size_t* outSize) {
  ZEXCPU_FAULT_POINT("zeVirtualMemGetAccessAttribute");
  ZEXCPU_CHECK(check_context(hContext));
  if (access == nullptr || outSize == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return on_range(hContext, ptr, size, false, [access, outSize](Reservation& r, uintptr_t lo, uintptr_t hi) {
    // Walk the pages' attributes from lo: a mapping's own, NONE in the gaps between mappings.
    auto it = r.mappings.upper_bound(lo);
    if (it != r.mappings.begin() && std::prev(it)->first + std::prev(it)->second.size > lo) --it;
    uintptr_t at = lo;
    bool first = true;
    ze_memory_access_attribute_t a = ZE_MEMORY_ACCESS_ATTRIBUTE_NONE;
    while (at < hi) {
      ze_memory_access_attribute_t here = ZE_MEMORY_ACCESS_ATTRIBUTE_NONE;
      uintptr_t end = hi;
      if (it != r.mappings.end() && it->first <= at) {
        here = it->second.access;
        end = std::min<uintptr_t>(hi, it->first + it->second.size);
        ++it;
      } else if (it != r.mappings.end()) {
        end = std::min<uintptr_t>(hi, it->first);
      }
      if (first) a = here;
      else if (here != a) break;
      first = false;
      at = end;
    }
    *access = a;
    *outSize = at - lo;
    return ZE_RESULT_SUCCESS;
  });
}

void* reserve_aligned(size_t len, size_t align) {
  void* raw = mmap(nullptr, len + align, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return MAP_FAILED;
  const uintptr_t r = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t b = (r + align - 1) & ~uintptr_t(align - 1);
  if (b > r) munmap(raw, b - r);
  if (r + len + align > b + len) munmap(reinterpret_cast<void*>(b + len), r + len + align - (b + len));
  return reinterpret_cast<void*>(b);
}

bool virtual_memory_mapping(ze_context_handle_t context, const void* ptr, void** base, size_t* size,
                            ze_device_handle_t* device, uint64_t* id) {
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(vm().mutex);
  auto& rs = vm().reservations;
  auto it = rs.upper_bound(p);
  if (it == rs.begin()) return false;
  --it;
  if (p - it->first >= it->second.size || it->second.context != context) return false;
  auto& ms = it->second.mappings;
  auto m = ms.upper_bound(p);
  if (m == ms.begin()) return false;
  --m;
  if (p - m->first >= m->second.size) return false;
  *base = reinterpret_cast<void*>(m->first);
  *size = m->second.size;
  *device = m->second.phys->device;
  *id = m->second.id;
  return true;
}

void release_virtual_memory(ze_context_handle_t context) {
  std::lock_guard<std::mutex> lock(vm().mutex);
  for (auto it = vm().reservations.begin(); it != vm().reservations.end();) {
    if (it->second.context != context) {
      ++it;
      continue;
    }
    munmap(reinterpret_cast<void*>(it->first), it->second.size);  // and whatever is mapped in it
    it = vm().reservations.erase(it);
  }
  for (auto it = vm().physical.begin(); it != vm().physical.end();) {
    ze_physical_mem_handle_t h = *it;
    if (h->context != context) {
      ++it;
      continue;
    }
    close(h->fd);
    h->magic = kDeadMagic;
    delete h;
    it = vm().physical.erase(it);
  }
}

}  // namespace zexcpu
