// Turning a report (zex_report_t in host USM) into a KernelException without ever trusting it: the
// middle of an exception's data path (device library -> <zex/abi.h> report -> here ->
// <zex/exception.hpp>). Included by src/runtime/slab.cpp and the decoder's tests, not by <zex/zex.hpp>.
//
// A report is written by device code; a buggy or hostile kernel can leave any bits in it. So every
// string address is first placed in an allocation (zeMemGetAddressRange), read only up to that
// allocation's end and at most kMaxString bytes, with a device-to-host copy (never a host
// dereference), cut at the first NUL, and escaped. The frame count is clamped. A report whose
// abi_version this host does not know is not interpreted past the version (docs/abi.md). The
// memory-reading part is an interface so that unit tests feed hostile reports without a device.
#pragma once

#include <zex/abi.h>
#include <zex/detail/sites.hpp>
#include <zex/error.hpp>
#include <zex/exception.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace zex {
namespace detail {

/// Longest string read from a report, in bytes (before escaping).
constexpr size_t kMaxString = 4096;

/// One bounded read the decoder asks for: `size` bytes at device address `address` into `out`.
struct ReadRequest {
  uint64_t address = 0;
  size_t size = 0;
  std::vector<unsigned char> out;  // filled by MemoryReader::read, resized to size
  bool ok = false;                 // set by MemoryReader::read
};

/// Where the decoder gets device memory from. The Level Zero implementation is ZeMemoryReader;
/// tests implement it with a fake address space.
class MemoryReader {
 public:
  virtual ~MemoryReader() = default;
  /// The allocation containing `address`, as {base, size}, or nullopt if none does.
  virtual std::optional<std::pair<uint64_t, uint64_t>> range(uint64_t address) = 0;
  /// Performs every request (already validated and bounded); sets ok and out for each.
  virtual void read(std::vector<ReadRequest>& requests) = 0;
};

inline std::string invalid_address(uint64_t a) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "<invalid address 0x%llx>", static_cast<unsigned long long>(a));
  return buf;
}

/// Bytes up to the first NUL, printable ASCII kept, anything else as \xNN; "..." marks a string
/// that was cut before its NUL.
inline std::string printable(const unsigned char* p, size_t n) {
  std::string s;
  size_t i = 0;
  for (; i < n && p[i] != 0; ++i) {
    unsigned char c = p[i];
    if (c >= 0x20 && c < 0x7f) {
      s += static_cast<char>(c);
    } else {
      char esc[8];
      std::snprintf(esc, sizeof esc, "\\x%02x", c);
      s += esc;
    }
  }
  if (i == n) s += "...";
  return s;
}

/// The strings zex's passes placed in a built module (`__zex_str_<n>`), by the address the driver
/// relocated each to (zeModuleGetGlobalPointer) and their bytes from the module's SPIR-V. An address
/// inside one of them is decoded from these bytes, on the host, without asking the driver: Intel's
/// driver places some constants where zeMemGetAddressRange cannot see them (docs/design.md, "Where
/// strings live").
struct KnownStrings {
  std::vector<std::pair<uint64_t, std::string>> entries;  // address, bytes (with their NUL)

  void add(uint64_t address, std::string bytes) { entries.emplace_back(address, std::move(bytes)); }
  bool empty() const noexcept { return entries.empty(); }
  /// The bytes from `a` to the end of the known string that contains it, or nullptr.
  const std::string* find(uint64_t a, size_t* offset) const noexcept {
    for (const auto& [base, bytes] : entries)
      if (a >= base && a - base < bytes.size()) {
        *offset = static_cast<size_t>(a - base);
        return &bytes;
      }
    return nullptr;
  }
};

/// A decoded report; strings already safe to print. Ids and frames are only meaningful when the
/// level says so.
struct DecodedReport {
  uint32_t status = 0;
  uint32_t debug_level = 0;  // as written by the device (may be out of range in a hostile report)
  uint32_t abi_version = 0;
  uint64_t launch_id = 0;
  std::string name, reason;  // empty when the address was 0
  std::array<uint64_t, 3> global_id{}, group_id{}, local_id{};
  uint32_t frame_count = 0;  // clamped to ZEX_MAX_FRAMES
  std::vector<Frame> frames;
  uint32_t site = 0;         // throw-site id (version >= 3; 0 = none), without the level bits
  bool ids_global_only = false;  // zex_throw_site: the global id only; group and local ids derive from it
  bool frames_from_site = false;  // frames came from the site table (shown from level 1), not the device
  uint32_t frame_depth = 0;  // frames in the site's whole chain (0 = not known / frames.size())
  uint32_t value_count = 0;  // clamped to ZEX_MAX_VALUES; 0 for a version-1 report
  uint32_t value_kind = ZEX_VALUES_PLAIN;
  std::array<uint64_t, ZEX_MAX_VALUES> values{};
  uint64_t thrower_count = 0;  // read from device memory by SlabPool (0: not read or not counted)
};

/// True if this host reads reports of `version` (ZEX_ABI_VERSION_MIN .. ZEX_ABI_VERSION).
inline bool known_abi_version(uint32_t version) noexcept {
  return version >= ZEX_ABI_VERSION_MIN && version <= ZEX_ABI_VERSION;
}

/// A site table's string, made safe to print as the device's strings are: the table is the host's
/// own, but its bytes come from the user's module.
inline std::string table_string(const std::string& s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.c_str());
  // Up to and with the terminating NUL, so that a whole string is not marked as cut.
  return s.size() < kMaxString ? printable(p, s.size() + 1) : printable(p, kMaxString);
}

/// What a report says for a site id its module's table does not have: a hostile report, a table
/// missing (a module zex did not link, a runtime that checks slots without passing it), or a direct
/// call of zex_throw_site. Says so rather than show nothing.
inline std::string unknown_site_reason(uint32_t site, const SiteTable* sites) {
  std::string t = "unknown throw site " + std::to_string(site);
  if (!sites || sites->empty())
    t += " (the module numbered none)";
  else
    t += " (the module numbered " + std::to_string(sites->size()) + ")";
  return t;
}

/// Decodes `r` (a host copy of the report), reading strings from `known` where it holds them and
/// through `mem` otherwise. A version-3 report with a site takes its name, reason and frames from
/// `sites` (the throwing module's table, whose ids the device offset by `site_base`) and reads no
/// string at all. Never throws on hostile
/// content (only std::bad_alloc).
inline DecodedReport decode_report(const zex_report_t& r, MemoryReader& mem, const KnownStrings* known = nullptr,
                                   const SiteTable* sites = nullptr, uint32_t site_base = 0) {
  DecodedReport d;
  d.status = r.status;
  d.debug_level = r.debug_level;
  d.abi_version = r.abi_version;
  d.launch_id = r.launch_id;
  if (!known_abi_version(r.abi_version)) return d;  // the layout past the version is unknown
  // Version 1 had reserved bytes where version 2 keeps values: a version-1 report never has any,
  // whatever those bytes hold.
  if (r.abi_version >= 2) {
    d.value_count = std::min<uint32_t>(r.value_count, ZEX_MAX_VALUES);
    d.value_kind = r.value_kind;
    for (uint32_t i = 0; i < d.value_count; ++i) d.values[i] = r.values[i];
  }
  for (int i = 0; i < 3; ++i) {
    d.global_id[i] = r.global_id[i];
    d.group_id[i] = r.group_id[i];
    d.local_id[i] = r.local_id[i];
  }
  d.frame_count = std::min<uint32_t>(r.frame_count, ZEX_MAX_FRAMES);
  // Versions 1 and 2 had reserved bytes where version 3 keeps the site: never read them as one.
  if (r.abi_version >= 3 && r.site != 0) {
    // The site wins over any string address, frame or id the report also holds: zex_throw_site writes
    // none of them but the global id, so they can only be stale or hostile. Its debug level is in the
    // site word (zex_throw_site stores no debug_level), and so are its value count and kind, through
    // the table.
    d.site = r.site & ZEX_SITE_ID_MASK;
    d.debug_level = r.site >> ZEX_SITE_LEVEL_SHIFT;
    d.frame_count = 0;
    d.ids_global_only = true;
    d.group_id = {};
    d.local_id = {};
    d.values = {r.values[0], r.values[1]};
    d.value_count = ZEX_MAX_VALUES;  // an unknown site: both values, plain
    d.value_kind = ZEX_VALUES_PLAIN;
    // The device stored `site_base + k` for the table's site k (the module's ZEX_SPEC_ID_SITE_BASE).
    if (sites && d.site > site_base && d.site - site_base <= sites->size()) {
      const ThrowSite& t = (*sites)[d.site - site_base - 1];
      d.value_count = std::min<uint32_t>(t.value_count, ZEX_MAX_VALUES);
      d.value_kind = t.value_kind;
      d.name = table_string(t.name);
      d.reason = table_string(t.reason);
      const size_t n = std::min<size_t>(t.frames.size(), ZEX_MAX_FRAMES);
      for (size_t i = 0; i < n; ++i)
        d.frames.push_back(Frame{table_string(t.frames[i].function), table_string(t.frames[i].file), t.frames[i].line});
      d.frame_count = static_cast<uint32_t>(n);
      d.frame_depth = std::max<uint32_t>(t.depth, d.frame_count);
      d.frames_from_site = true;
    } else {
      d.reason = unknown_site_reason(d.site, sites);
    }
    return d;
  }

  // Every distinct non-zero address once: a file name is usually shared by all frames.
  std::vector<uint64_t> addrs;
  auto want = [&](uint64_t a) {
    if (a != 0 && std::find(addrs.begin(), addrs.end(), a) == addrs.end()) addrs.push_back(a);
  };
  want(r.name);
  want(r.reason);
  for (uint32_t i = 0; i < d.frame_count; ++i) {
    want(r.frames[i].function);
    want(r.frames[i].file);
  }

  std::vector<ReadRequest> reqs;
  std::vector<std::string> text(addrs.size());
  std::vector<int> req_of(addrs.size(), -1);
  for (size_t i = 0; i < addrs.size(); ++i) {
    const uint64_t a = addrs[i];
    size_t off = 0;
    if (const std::string* k = known ? known->find(a, &off) : nullptr) {
      const size_t n = std::min(k->size() - off, kMaxString);
      text[i] = printable(reinterpret_cast<const unsigned char*>(k->data()) + off, n);
      continue;
    }
    auto rg = mem.range(a);
    // Overflow-safe: base <= a < base + size, and the readable length is what is left.
    if (!rg || rg->second == 0 || a < rg->first || a - rg->first >= rg->second) {
      text[i] = invalid_address(a);
      continue;
    }
    const uint64_t left = rg->second - (a - rg->first);
    ReadRequest q;
    q.address = a;
    q.size = static_cast<size_t>(std::min<uint64_t>(left, kMaxString));
    req_of[i] = static_cast<int>(reqs.size());
    reqs.push_back(std::move(q));
  }
  if (!reqs.empty()) mem.read(reqs);
  for (size_t i = 0; i < addrs.size(); ++i) {
    if (req_of[i] < 0) continue;
    const ReadRequest& q = reqs[static_cast<size_t>(req_of[i])];
    if (!q.ok || q.out.size() < q.size)
      text[i] = invalid_address(addrs[i]);
    else
      text[i] = printable(q.out.data(), q.size);
  }
  auto str = [&](uint64_t a) -> std::string {
    if (a == 0) return {};
    return text[static_cast<size_t>(std::find(addrs.begin(), addrs.end(), a) - addrs.begin())];
  };
  d.name = str(r.name);
  d.reason = str(r.reason);
  for (uint32_t i = 0; i < d.frame_count; ++i) {
    Frame f;
    f.function = r.frames[i].function ? str(r.frames[i].function) : "<unknown function>";
    f.file = r.frames[i].file ? str(r.frames[i].file) : "<unknown file>";
    f.line = r.frames[i].line;
    d.frames.push_back(std::move(f));
  }
  return d;
}

/// The exception for a decoded report. `launch_level` is the level the host launched with, used
/// when the report's own level is out of range; the report's level wins otherwise, since it is
/// what the module was specialized for. A report of an unknown ABI version yields only the kernel,
/// device, launch id and version.
inline KernelExceptionInfo exception_info(DecodedReport d, std::string kernel_name,
                                          std::string device_name, int launch_level) {
  KernelExceptionInfo e;
  const bool known = known_abi_version(d.abi_version);
  int level = known && d.debug_level <= 2 ? static_cast<int>(d.debug_level) : launch_level;
  if (level < 0 || level > 2) level = 1;
  e.debug_level = level;
  e.kernel_name = std::move(kernel_name);
  e.device_name = std::move(device_name);
  e.launch_id = d.launch_id;
  e.abi_version = d.abi_version;
  if (!known) return e;
  // A numbered site's name, reason and frames cost the device nothing but the id, which it stores at
  // every level: shown from level 0 up (full backtraces at level-0 cost). Strings and frames the
  // device wrote by address stay level 1 and 2 matters.
  if (level >= 1 || d.site != 0) {
    e.name = std::move(d.name);
    e.reason = std::move(d.reason);
    if (d.frames_from_site) {
      e.frames = std::move(d.frames);
      e.frame_depth = d.frame_depth;
    }
  }
  if (level >= 1) {
    e.values.assign(d.values.begin(), d.values.begin() + d.value_count);
    e.value_kind = d.value_kind;
    // The claimant counted itself: a count of 0 (not read, or a hostile or version-1 device) is 1.
    e.thrower_count = d.thrower_count == 0 ? 1 : d.thrower_count;
  }
  if (level >= 2) {
    e.global_id = d.global_id;
    if (!d.ids_global_only) {  // else the caller derives them from the launch's group size, if it knows it
      e.group_id = d.group_id;
      e.local_id = d.local_id;
    }
    if (!d.frames_from_site) e.frames = std::move(d.frames);
  }
  return e;
}

}  // namespace detail
}  // namespace zex
