// The memory checks' allocation lookup, shared by Stream's launches (cached per argument) and
// zex::Graph's recorded launches (src/runtime/memory_bounds.cpp). Internal.
#pragma once

#include <zex/detail/launch_args.hpp>
#include <zex/module.hpp>

#include <cstdint>
#include <vector>

namespace zex::detail {

struct MemoryBounds {
  // The allocation `p` (argument `arg` of ks's kernel) points into, as [base, end): (0, 0) for null,
  // (0, UINT64_MAX) for memory the driver does not know. @throws ZeError if the lookup fails otherwise
  static void allocation(const Kernel::State& ks, uint32_t arg, uint64_t p, uint64_t* base, uint64_t* end);
  // The hidden bounds struct's value for the arguments `args` (ks.checked's order, two words each).
  // @throws ZeError as allocation
  static std::vector<uint64_t> recorded(const Kernel::State& ks, const CapturedArgs& args);
};

}  // namespace zex::detail
