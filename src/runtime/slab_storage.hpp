// The slabs behind a SlabPool: USM allocated kSlotsPerSlab slots at a time (one host-USM slab of
// reports, one device-USM slab of claim words) and the free list of slot indices. Cold; not
// thread-safe (the pool holds its lock). Included by src/ only.
#pragma once

#include <zex/abi.h>
#include "runtime/helper_list.hpp"
#include <zex/error.hpp>
#include <zex/slab.hpp>

#include <level_zero/ze_api.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace zex {
namespace detail {

class SlabStorage {
 public:
  static constexpr uint32_t kSlotsPerSlab = SlabPool::kSlotsPerSlab;

  SlabStorage(ze_context_handle_t ctx, ze_device_handle_t dev) : ctx_(ctx), dev_(dev) {}
  SlabStorage(const SlabStorage&) = delete;
  SlabStorage& operator=(const SlabStorage&) = delete;
  /// Frees every slab: the owner guarantees that no kernel uses them any more.
  ~SlabStorage() {
    for (auto& s : slabs_) {
      zeMemFree(ctx_, s.reports);
      zeMemFree(ctx_, s.claims);
    }
  }

  /// A free slot, growing by one slab through `helper` when none is free.
  /// @throws ZeError naming the call that failed
  Slot take(HelperList& helper) {
    if (free_.empty()) grow(helper);
    const uint32_t i = free_.back();
    free_.pop_back();
    ++live_;
    return slot_at(i);
  }
  void give_back(uint32_t index) {
    free_.push_back(index);
    --live_;
  }

  size_t slabs() const noexcept { return slabs_.size(); }
  size_t live() const noexcept { return live_; }

 private:
  struct Slab {
    zex_report_t* reports;
    uint32_t* claims;
  };

  Slot slot_at(uint32_t i) const {
    const Slab& s = slabs_[i / kSlotsPerSlab];
    // Each slot's claim area is ZEX_CLAIM_BYTES: the claim word, then the thrower count (abi.h).
    return Slot{s.reports + i % kSlotsPerSlab, s.claims + (i % kSlotsPerSlab) * (ZEX_CLAIM_BYTES / sizeof(uint32_t)), i};
  }

  void grow(HelperList& helper) {
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    void* reports = nullptr;
    check(zeMemAllocHost(ctx_, &hd, kSlotsPerSlab * sizeof(zex_report_t), 4096, &reports), "zeMemAllocHost",
          "allocating a slab of zex reports");
    std::memset(reports, 0, kSlotsPerSlab * sizeof(zex_report_t));
    ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    void* claims = nullptr;
    ze_result_t r = zeMemAllocDevice(ctx_, &dd, kSlotsPerSlab * ZEX_CLAIM_BYTES, 64, dev_, &claims);
    if (r != ZE_RESULT_SUCCESS) {
      zeMemFree(ctx_, reports);
      throw_ze_error(r, "zeMemAllocDevice", "allocating a slab of zex claim words");
    }
    // Device memory starts undefined: zero every claim word before any slot is handed out.
    static const uint32_t zero = 0;
    ze_command_list_handle_t list = nullptr;
    try {
      list = helper.list();
      check(zeCommandListAppendMemoryFill(list, claims, &zero, sizeof zero, kSlotsPerSlab * ZEX_CLAIM_BYTES,
                                          nullptr, 0, nullptr),
            "zeCommandListAppendMemoryFill", "zeroing a slab of zex claim words");
    } catch (...) {
      zeMemFree(ctx_, reports);  // nothing was queued
      zeMemFree(ctx_, claims);
      throw;
    }
    try {
      helper.drain("zeroing a slab of zex claim words");
    } catch (...) {
      // The fill may still be queued and would write freed memory: the claim slab is leaked on
      // purpose (the device is failing anyway); the report slab is not the fill's target.
      zeMemFree(ctx_, reports);
      throw;
    }
    const uint32_t first = static_cast<uint32_t>(slabs_.size()) * kSlotsPerSlab;
    slabs_.push_back(Slab{static_cast<zex_report_t*>(reports), static_cast<uint32_t*>(claims)});
    // Highest index first so that take() (which pops the back) hands out low indices first.
    for (uint32_t i = kSlotsPerSlab; i-- > 0;) free_.push_back(first + i);
  }

  ze_context_handle_t ctx_;
  ze_device_handle_t dev_;
  std::vector<Slab> slabs_;
  std::vector<uint32_t> free_;
  size_t live_ = 0;
};

}  // namespace detail
}  // namespace zex
