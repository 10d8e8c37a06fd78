// zex's own immediate command list on one context+device, for the few commands zex issues outside a
// stream: zeroing a new slab's claim words, resetting a claim word for a runtime that passed no list,
// and the device-to-host copies that read a report's strings. Cold: used when a slab is added and
// when an exception is decoded, never on the launch or synchronize path. Included by src/ only.
#pragma once

#include "runtime/decoder.hpp"
#include <zex/error.hpp>

#include <level_zero/ze_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace zex {
namespace detail {

/// The helper list of one SlabPool, created on first need. Not thread-safe: the pool serializes it.
class HelperList {
 public:
  HelperList(ze_context_handle_t ctx, ze_device_handle_t dev, uint32_t ordinal)
      : ctx_(ctx), dev_(dev), ordinal_(ordinal) {}
  HelperList(const HelperList&) = delete;
  HelperList& operator=(const HelperList&) = delete;
  ~HelperList() {
    // Copies a failed drain left unwaited may still write the staging buffer: wait for them, and if
    // that fails too, leave the buffer to them (leaked) rather than free it under a queued copy.
    bool idle = !unwaited_;
    if (!idle && list_) {
      try {
        drain("destroying zex's helper command list");
        idle = true;
      } catch (...) {
      }
    }
    if (event_) zeEventDestroy(event_);
    if (events_) zeEventPoolDestroy(events_);
    if (list_) zeCommandListDestroy(list_);
    if (staging_ && idle) zeMemFree(ctx_, staging_);
  }

  /// The list; created on the first call.
  /// @throws ZeError naming the call that failed (creation is retried on the next call)
  ze_command_list_handle_t list() {
    if (list_) return list_;
    ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, ordinal_, 0, 0,
                               ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_event_pool_desc_t pd{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
    ze_event_desc_t ed{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST,
                       ZE_EVENT_SCOPE_FLAG_HOST};
    ze_device_handle_t dev = dev_;
    ze_command_list_handle_t list = nullptr;
    ze_event_pool_handle_t pool = nullptr;
    ze_event_handle_t ev = nullptr;
    const char* call = "zeCommandListCreateImmediate";
    ze_result_t r = zeCommandListCreateImmediate(ctx_, dev_, &qd, &list);
    if (r == ZE_RESULT_SUCCESS) r = zeEventPoolCreate(ctx_, &pd, 1, &dev, &pool), call = "zeEventPoolCreate";
    if (r == ZE_RESULT_SUCCESS) r = zeEventCreate(pool, &ed, &ev), call = "zeEventCreate";
    if (r != ZE_RESULT_SUCCESS) {
      if (pool) zeEventPoolDestroy(pool);
      if (list) zeCommandListDestroy(list);
      throw_ze_error(r, call, "creating zex's helper command list");
    }
    list_ = list;
    events_ = pool;
    event_ = ev;
    return list_;
  }

  /// Waits for everything appended to the list: a barrier that signals the helper event, a host wait
  /// on it, and its reset (API 1.4, Debian's loader, has no zeCommandListHostSynchronize).
  /// @throws ZeError naming the call that failed; `what` says what zex was doing
  void drain(const char* what) {
    unwaited_ = true;  // until the wait below returns, what was appended may still run
    // A drain whose wait or reset failed after its barrier was appended left the event signalled (or
    // about to be): this drain's wait would then return at once, before the commands it is meant to
    // wait for have run (a string read would see the staging buffer's old bytes). So wait for that
    // barrier and reset the event first.
    if (event_stale_) {
      check(zeEventHostSynchronize(event_, UINT64_MAX), "zeEventHostSynchronize", what);
      check(zeEventHostReset(event_), "zeEventHostReset", what);
      event_stale_ = false;
    }
    check(zeCommandListAppendBarrier(list_, event_, 0, nullptr), "zeCommandListAppendBarrier", what);
    event_stale_ = true;
    check(zeEventHostSynchronize(event_, UINT64_MAX), "zeEventHostSynchronize", what);
    unwaited_ = false;
    check(zeEventHostReset(event_), "zeEventHostReset", what);
    event_stale_ = false;
  }

  /// A host-USM buffer of at least `bytes`, grown on the throw path only and kept, so repeated
  /// exceptions allocate nothing. nullptr if the allocation failed.
  void* staging(size_t bytes) noexcept {
    if (bytes <= staging_size_) return staging_;
    if (staging_ && unwaited_) {
      // A failed drain left copies into this buffer unwaited: wait for them before freeing it, or
      // leave it to them (leaked) if that fails; a queued copy must never write freed memory.
      try {
        drain("replacing zex's staging buffer");
      } catch (...) {
        staging_ = nullptr;
      }
    }
    if (staging_) zeMemFree(ctx_, staging_);
    staging_ = nullptr;
    staging_size_ = 0;
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    void* p = nullptr;
    if (zeMemAllocHost(ctx_, &hd, bytes, 64, &p) != ZE_RESULT_SUCCESS) return nullptr;
    staging_ = p;
    staging_size_ = bytes;
    return staging_;
  }

  ze_context_handle_t context() const noexcept { return ctx_; }

 private:
  ze_context_handle_t ctx_;
  ze_device_handle_t dev_;
  uint32_t ordinal_;
  ze_command_list_handle_t list_ = nullptr;
  ze_event_pool_handle_t events_ = nullptr;
  ze_event_handle_t event_ = nullptr;
  bool event_stale_ = false;  // a barrier signals (or signalled) event_ and nobody reset it since
  bool unwaited_ = false;     // a drain failed: commands appended before it may still be running
  void* staging_ = nullptr;
  size_t staging_size_ = 0;
};

/// MemoryReader over Level Zero: zeMemGetAddressRange for validation; one device-to-host copy per
/// string into the helper list's host-USM staging buffer, all appended to the helper list and
/// waited for once. A failure anywhere leaves the strings unread (shown as invalid addresses).
class ZeMemoryReader : public MemoryReader {
 public:
  explicit ZeMemoryReader(HelperList& helper) : helper_(helper) {}

  std::optional<std::pair<uint64_t, uint64_t>> range(uint64_t address) override {
    void* base = nullptr;
    size_t size = 0;
    // Any result but success is "not found": NEO answers ZE_RESULT_ERROR_UNKNOWN for an address it
    // does not know in some releases and ZE_RESULT_ERROR_ADDRESS_NOT_FOUND in others.
    if (zeMemGetAddressRange(helper_.context(), reinterpret_cast<const void*>(static_cast<uintptr_t>(address)),
                             &base, &size) != ZE_RESULT_SUCCESS ||
        base == nullptr)
      return std::nullopt;
    return std::make_pair(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(base)),
                          static_cast<uint64_t>(size));
  }

  void read(std::vector<ReadRequest>& reqs) override {
    size_t total = 0;
    for (auto& q : reqs) total += (q.size + 7) & ~size_t(7);
    auto* staging = static_cast<unsigned char*>(helper_.staging(total));
    if (!staging) return;  // all unread
    try {
      ze_command_list_handle_t list = helper_.list();
      size_t off = 0;
      bool appended = true;
      for (auto& q : reqs) {
        if (zeCommandListAppendMemoryCopy(list, staging + off,
                                          reinterpret_cast<const void*>(static_cast<uintptr_t>(q.address)),
                                          q.size, nullptr, 0, nullptr) != ZE_RESULT_SUCCESS) {
          appended = false;
          break;
        }
        off += (q.size + 7) & ~size_t(7);
      }
      helper_.drain("reading a zex report's strings");  // also after a failed append: copies may be queued
      if (!appended) return;
    } catch (const ZeError&) {
      return;  // the strings show as invalid addresses; the exception itself is not lost
    }
    size_t off = 0;
    for (auto& q : reqs) {
      q.out.assign(staging + off, staging + off + q.size);
      q.ok = true;
      off += (q.size + 7) & ~size_t(7);
    }
  }

 private:
  HelperList& helper_;
};

}  // namespace detail
}  // namespace zex
