// Throw sites numbered at link time (issue 15): zex's pass (src/passes/throw_paths.cpp) gives every
// throw path it can identify (a zex_throw with constant strings, reached from a kernel through a
// known chain of calls) a 32-bit id, replaces the call with zex_throw_site(zex, id, ...), and returns
// this table; the device stores only the id (docs/abi.md, version 3), the host prints the name, the
// reason and the whole call chain from here.
#pragma once

#include <zex/exception.hpp>

#include <cstdint>
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

/// The module zex hands the driver and the table of the throw sites numbered in it.
struct LinkedModule {
  std::vector<uint32_t> words;
  SiteTable sites;
};

}  // namespace detail
}  // namespace zex
