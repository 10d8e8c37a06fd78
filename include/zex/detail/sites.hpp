// Throw sites numbered at link time (issue 15): zex's pass (src/spirv/passes/throw_paths.cpp) gives every
// throw path it can identify (a zex_throw with constant strings, reached from a kernel through a
// known chain of calls) a 32-bit id, replaces the call with zex_throw_site(zex, id, ...), and returns
// this table; the device stores only the id (docs/abi.md, version 3), the host prints the name, the
// reason and the whole call chain from here.
#pragma once

#include <zex/exception.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace zex {
namespace detail {

/// One numbered throw path: what the report of site id k (k >= 1) means.
struct ThrowSite {
  std::string name, reason;
  /// Innermost first: the throw's own frame, then each caller up to the kernel; at most
  /// ZEX_MAX_FRAMES. A frame's line is 0 when it is not known (a caller in a module without debug
  /// information); its file is then empty too.
  std::vector<Frame> frames;
  /// Frames in the whole chain: more than frames.size() when the chain was cut at ZEX_MAX_FRAMES.
  uint32_t depth = 0;
  /// How many of the report's two values the site recorded (0..ZEX_MAX_VALUES), and how to label
  /// them (ZEX_VALUES_*): constants at the site, so kept here rather than stored by the device.
  uint32_t value_count = 0;
  uint32_t value_kind = 0;
};

/// Site id k is sites[k - 1]; id 0 is "no site" (a throw zex could not number).
using SiteTable = std::vector<ThrowSite>;

/// Registers a module's table for the life of the process's reference to it and returns its base:
/// the module is built with the spec constant ZEX_SPEC_ID_SITE_BASE set to it, so that its device
/// stores base + k for its site k and ids are unique in the process (src/runtime/module.cpp). 0 (and nothing
/// registered) for an empty table, or once 2^30 ids have been handed out.
uint32_t register_site_table(const std::shared_ptr<const SiteTable>& table);
/// The registered table whose ids hold `id` (base < id <= base + size), with its base; null if none
/// is alive. For reports decoded without their module (SlabPool::check).
std::shared_ptr<const SiteTable> find_site_table(uint32_t id, uint32_t* base);

}  // namespace detail
}  // namespace zex
