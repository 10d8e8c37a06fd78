// zex-cpu's unified shared memory, what memory.cpp (allocation, free, lookup) and memory_ipc.cpp (IPC
// handles) share: the allocations' one ordered map (interior pointers resolve to their allocation) and how
// an allocation's pages are backed and freed. docs/cpu-driver.md, "Memory".
#pragma once

#include "objects.hpp"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>

namespace zexcpu {

/// Where an allocation's pages come from, and so how it is freed.
enum class Backing : uint8_t {
  Svm,       // clSVMAlloc (raw: what it returned; the base itself unless over-aligned)
  Heap,      // posix_memalign: relaxed limits above what PoCL's SVM allocator gives
  Memfd,     // a device allocation: mmap of its own memfd (fd), `mapped` bytes; exportable
  Imported,  // zeMemOpenIpcHandle: mmap of another allocation's memfd, `mapped` bytes; no fd kept
  Guarded,   // ZEX_CPU_GUARD_PAGES=1: an anonymous mapping (raw, `mapped` bytes) whose first page and the
             // first page at or after the allocation's end are PROT_NONE
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
  size_t mapped = 0;   // Memfd, Imported, Guarded: the length of the mapping (at raw for Guarded)
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

/// The driver's allocations (never destroyed: frees may come during static destruction).
AllocationMap& allocations();
/// The id of the next allocation (zeMemGetAllocProperties' `id`).
extern std::atomic<uint64_t> g_next_alloc_id;

constexpr uint64_t kPageSize = 4096;

/// ZEX_CPU_GUARD_PAGES=1 (read once): every allocation ends where an inaccessible page begins, and one
/// precedes it, so that an access past either end faults at once instead of reading or writing the host
/// memory beside it (docs/cpu-driver.md, "Guard pages").
bool guard_pages();

/// Frees what the allocation's backing holds (a memfd mapping may go to the reuse cache).
void release(const Allocation& a, void* base);

}  // namespace zexcpu
