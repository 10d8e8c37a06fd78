// The memory checks' launch half (ModuleOptions::check_memory; docs/design.md, "Automatic memory
// checks"): each checked pointer argument's allocation, looked up with zeMemGetAddressRange and
// cached per Kernel and argument by the pointer's value, passed to the kernel as one hidden by-value
// struct of (base, end) per checked argument after its own arguments; and the bounds a zex::Graph
// records with a launch (looked up at recording and at each update, not cached: the graph keeps them
// with the launch's arguments). Compiled: only modules built with checks come here.
#include <zex/stream.hpp>

#include "runtime/memory_bounds.hpp"

#include <atomic>
#include <cstring>
#include <cstdint>
#include <string>

namespace zex {

namespace {

// Bumped by forget_memory_bounds(): a cached bound of an older generation is looked up again.
std::atomic<uint64_t> g_generation{1};

}  // namespace

void forget_memory_bounds() noexcept { g_generation.fetch_add(1, std::memory_order_relaxed); }

namespace detail {

void MemoryBounds::allocation(const Kernel::State& ks, uint32_t arg, uint64_t p, uint64_t* base_out, uint64_t* end_out) {
  uint64_t base = 0, end = 0;  // a null pointer: an allocation of 0 bytes, every access through it reported
  if (p != 0) {
    void* start = nullptr;
    size_t size = 0;
    const ze_result_t r =
        zeMemGetAddressRange(ks.module->context(), reinterpret_cast<const void*>(static_cast<uintptr_t>(p)), &start, &size);
    // ZE_RESULT_ERROR_UNKNOWN is NEO's (and zex-cpu's) answer for an address no allocation holds;
    // anything else (out of memory, an injected fault) fails the launch before its append.
    if (r != ZE_RESULT_SUCCESS && r != ZE_RESULT_ERROR_UNKNOWN)
      check(r, "zeMemGetAddressRange",
            ("looking up the allocation of argument " + std::to_string(arg) + " of kernel '" + *ks.name +
             "' for its memory checks")
                .c_str());
    if (r == ZE_RESULT_SUCCESS && start != nullptr) {
      base = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(start));
      end = base + size;
    } else {
      // Not memory the driver allocated (a host pointer on a driver with system SVM, an address the
      // driver does not know): left unchecked, as the whole address space.
      base = 0;
      end = UINT64_MAX;
    }
  }
  *base_out = base;
  *end_out = end;
}

std::vector<uint64_t> MemoryBounds::recorded(const Kernel::State& ks, const CapturedArgs& args) {
  std::vector<uint64_t> table(2 * ks.checked.size());
  for (size_t i = 0; i < ks.checked.size(); ++i) {
    const uint32_t a = ks.checked[i];
    if (i < ks.bounds.size() && ks.bounds[i].local) {  // a __local argument: (0, its bytes)
      table[2 * i + 1] = a < args.args.size() ? args.args[a].size : 0;
      continue;
    }
    uint64_t p = 0;
    if (a < args.args.size() && args.args[a].size == sizeof p && args.value(a)) std::memcpy(&p, args.value(a), sizeof p);
    allocation(ks, a, p, &table[2 * i], &table[2 * i + 1]);
  }
  return table;
}

}  // namespace detail

void Stream::set_memory_bounds(Kernel::State& ks, ze_kernel_handle_t k, int variant, const uint64_t* addresses, uint32_t n) {
  const uint64_t generation = g_generation.load(std::memory_order_relaxed);
  size_t slot = 0;
  for (Kernel::State::Bounds& b : ks.bounds) {
    const uint64_t p = b.arg < n ? addresses[b.arg] : 0;
    // Another pointer into the allocation last looked up for this argument (a framework's tensors in one
    // block of its caching allocator, a buffer walked by offset) is that allocation still, until
    // forget_memory_bounds(): no lookup. Not for memory the driver did not know (0, UINT64_MAX), which a
    // later pointer may well be, nor for a __local argument (base 0 too: its "pointer" is its size).
    const bool inside = b.known && b.generation == generation && b.base != 0 && p >= b.base && p < b.end;
    if (inside) {
      b.pointer = p;
    } else if (!b.known || b.pointer != p || b.generation != generation) {
      uint64_t base = 0, end = p;  // a __local argument: (0, its bytes), relative to where the group's memory is
      if (!b.local) detail::MemoryBounds::allocation(ks, b.arg, p, &base, &end);
      // Set again on every variant only when the allocation changed (or forget_memory_bounds() was
      // called): another pointer into the same allocation keeps the argument the kernels hold.
      const bool same = b.known && b.base == base && b.end == end && b.generation == generation;
      if (!same) ks.bounds_set_on = 0;
      b = Kernel::State::Bounds{b.arg, p, base, end, generation, true, b.local};
      ks.bounds_table[slot] = base;
      ks.bounds_table[slot + 1] = end;
    }
    slot += 2;
  }
  const uint32_t bit = 1u << static_cast<unsigned>(variant);
  if (ks.bounds_set_on & bit) return;
  // The hidden parameter follows the kernel's own: one by-value struct of (base, end) per bounded argument.
  const size_t bytes = ks.bounds_table.size() * sizeof(uint64_t);
  const ze_result_t r = zeKernelSetArgumentValue(k, n, bytes, ks.bounds_table.data());
  if (r != ZE_RESULT_SUCCESS) detail::throw_arg_error(r, *ks.name, n, bytes);
  ks.bounds_set_on |= bit;
}

}  // namespace zex
