// Turning a report (zex_report_t in host USM) into a KernelException without ever trusting it.
//
// A report is written by device code; a buggy or hostile kernel can leave any bits in it. So every
// string address is first placed in an allocation (zeMemGetAddressRange), read only up to that
// allocation's end and at most kMaxString bytes, with a device-to-host copy (never a host
// dereference), cut at the first NUL, and escaped. The frame count is clamped. The memory-reading
// part is an interface so that unit tests feed hostile reports without a device.
#pragma once

#include <zex/abi.h>
#include <zex/error.hpp>
#include <zex/exception.hpp>

#include <level_zero/ze_api.h>

#include <algorithm>
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
};

/// Decodes `r` (a host copy of the report), reading strings through `mem`. Never throws on
/// hostile content (only std::bad_alloc).
inline DecodedReport decode_report(const zex_report_t& r, MemoryReader& mem) {
  DecodedReport d;
  d.status = r.status;
  d.debug_level = r.debug_level;
  d.abi_version = r.abi_version;
  d.launch_id = r.launch_id;
  for (int i = 0; i < 3; ++i) {
    d.global_id[i] = r.global_id[i];
    d.group_id[i] = r.group_id[i];
    d.local_id[i] = r.local_id[i];
  }
  d.frame_count = std::min<uint32_t>(r.frame_count, ZEX_MAX_FRAMES);

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
/// what the module was specialized for.
inline KernelExceptionInfo exception_info(DecodedReport d, std::string kernel_name,
                                          std::string device_name, int launch_level) {
  KernelExceptionInfo e;
  int level = d.debug_level <= 2 ? static_cast<int>(d.debug_level) : launch_level;
  if (level < 0 || level > 2) level = 1;
  e.debug_level = level;
  e.kernel_name = std::move(kernel_name);
  e.device_name = std::move(device_name);
  e.launch_id = d.launch_id;
  if (level >= 1) {
    e.name = std::move(d.name);
    e.reason = std::move(d.reason);
  }
  if (level >= 2) {
    e.global_id = d.global_id;
    e.group_id = d.group_id;
    e.local_id = d.local_id;
    e.frames = std::move(d.frames);
  }
  return e;
}

/// Appends a barrier that signals `event` to the immediate list `list`, waits for the event on the
/// host and resets it: waits for everything appended to `list` before. (The Level Zero API 1.4 of
/// Debian's loader has no zeCommandListHostSynchronize.)
inline ze_result_t drain(ze_command_list_handle_t list, ze_event_handle_t event) {
  ze_result_t r = zeCommandListAppendBarrier(list, event, 0, nullptr);
  if (r != ZE_RESULT_SUCCESS) return r;
  r = zeEventHostSynchronize(event, UINT64_MAX);
  ze_result_t r2 = zeEventHostReset(event);
  return r != ZE_RESULT_SUCCESS ? r : r2;
}

/// MemoryReader over Level Zero: zeMemGetAddressRange for validation; one device-to-host copy per
/// string into a host-USM staging buffer, all appended to `list` (an immediate command list that
/// is otherwise idle) and waited for once through `event`.
class ZeMemoryReader : public MemoryReader {
 public:
  ZeMemoryReader(ze_context_handle_t ctx, ze_command_list_handle_t list, ze_event_handle_t event,
                 void*& staging, size_t& staging_size)
      : ctx_(ctx), list_(list), event_(event), staging_(staging), staging_size_(staging_size) {}

  std::optional<std::pair<uint64_t, uint64_t>> range(uint64_t address) override {
    void* base = nullptr;
    size_t size = 0;
    if (zeMemGetAddressRange(ctx_, reinterpret_cast<const void*>(static_cast<uintptr_t>(address)),
                             &base, &size) != ZE_RESULT_SUCCESS ||
        base == nullptr)
      return std::nullopt;
    return std::make_pair(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(base)),
                          static_cast<uint64_t>(size));
  }

  void read(std::vector<ReadRequest>& reqs) override {
    size_t total = 0;
    for (auto& q : reqs) total += (q.size + 7) & ~size_t(7);
    if (total > staging_size_) {
      // Grown only on the throw path and kept, so repeated exceptions allocate nothing.
      if (staging_) zeMemFree(ctx_, staging_);
      staging_ = nullptr;
      staging_size_ = 0;
      ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
      void* p = nullptr;
      if (zeMemAllocHost(ctx_, &hd, total, 64, &p) != ZE_RESULT_SUCCESS) return;  // all invalid
      staging_ = p;
      staging_size_ = total;
    }
    size_t off = 0;
    bool appended = true;
    for (auto& q : reqs) {
      auto* dst = static_cast<unsigned char*>(staging_) + off;
      if (zeCommandListAppendMemoryCopy(list_, dst,
                                        reinterpret_cast<const void*>(static_cast<uintptr_t>(q.address)),
                                        q.size, nullptr, 0, nullptr) != ZE_RESULT_SUCCESS) {
        appended = false;
        break;
      }
      off += (q.size + 7) & ~size_t(7);
    }
    if (drain(list_, event_) != ZE_RESULT_SUCCESS || !appended) return;
    off = 0;
    for (auto& q : reqs) {
      auto* src = static_cast<const unsigned char*>(staging_) + off;
      q.out.assign(src, src + q.size);
      q.ok = true;
      off += (q.size + 7) & ~size_t(7);
    }
  }

 private:
  ze_context_handle_t ctx_;
  ze_command_list_handle_t list_;
  ze_event_handle_t event_;
  void*& staging_;
  size_t& staging_size_;
};

}  // namespace detail
}  // namespace zex
