// What a SlabPool holds (private to the runtime): its slots' storage and the helper command list that
// fills claim words and reads report strings, each under its own lock. Shared by slab.cpp (slots) and
// report_reading.cpp (the report path).
#pragma once

#include <zex/slab.hpp>

#include "runtime/helper_list.hpp"
#include "runtime/slab_storage.hpp"

#include <mutex>

namespace zex {

struct SlabPool::Impl {
  Impl(ze_context_handle_t ctx, ze_device_handle_t dev, uint32_t ordinal)
      : storage(ctx, dev), helper(ctx, dev, ordinal) {}
  // Destroyed last-declared first: the helper list (which may have filled a slab) goes before the
  // slabs.
  std::mutex storage_mu;  // storage
  detail::SlabStorage storage;
  std::mutex helper_mu;  // helper
  detail::HelperList helper;
};

}  // namespace zex
