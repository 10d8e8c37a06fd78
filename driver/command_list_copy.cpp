// Memory commands of command lists: copies (linear, 2D/3D regions, from another context), fills,
// global timestamps, kernel timestamp queries, events, prefetch and advice. All USM is host memory, so
// each runs as memcpy or a pattern loop on the list's or queue's worker.
#include "cmdlist_objects.hpp"

#include <cstring>

namespace zexcpu {

namespace {

ze_result_t append_copy(ze_command_list_handle_t hCommandList, void* dstptr, const void* srcptr, size_t size,
                        ze_event_handle_t hSignalEvent, uint32_t numWaitEvents, ze_event_handle_t* phWaitEvents) {
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  if (size > 0)
    c->body = [dstptr, srcptr, size](cl_command_queue) {
      std::memmove(dstptr, srcptr, size);
      return ZE_RESULT_SUCCESS;
    };
  return finish_command(hCommandList, std::move(c));
}

}  // namespace

/// Errors: INVALID_NULL_HANDLE, INVALID_NULL_POINTER, INVALID_SIZE, INVALID_SYNCHRONIZATION_OBJECT,
/// INVALID_ARGUMENT (closed list). Any host-addressable pointers work (all USM is host memory).
ze_result_t ZE_APICALL zeCommandListAppendMemoryCopy(ze_command_list_handle_t hCommandList, void* dstptr,
                                                     const void* srcptr, size_t size,
                                                     ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                     ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemoryCopy");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (dstptr == nullptr || srcptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return append_copy(hCommandList, dstptr, srcptr, size, hSignalEvent, numWaitEvents, phWaitEvents);
}

ze_result_t ZE_APICALL zeCommandListAppendMemoryCopyFromContext(ze_command_list_handle_t hCommandList,
                                                                void* dstptr, ze_context_handle_t hContextSrc,
                                                                const void* srcptr, size_t size,
                                                                ze_event_handle_t hSignalEvent,
                                                                uint32_t numWaitEvents,
                                                                ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemoryCopyFromContext");
  if (hCommandList == nullptr || hContextSrc == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (dstptr == nullptr || srcptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (!is_context(hContextSrc)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return append_copy(hCommandList, dstptr, srcptr, size, hSignalEvent, numWaitEvents, phWaitEvents);
}

namespace {

/// Fills `size` bytes with the pattern repeated; a last partial repetition takes the pattern's first
/// bytes (as Intel's driver does; the specification leaves it open).
void fill(unsigned char* dst, size_t size, const unsigned char* pattern, size_t pattern_size) {
  if (pattern_size == 1) {
    std::memset(dst, pattern[0], size);
    return;
  }
  size_t done = std::min(size, pattern_size);
  std::memcpy(dst, pattern, done);
  while (done < size) {  // double the filled prefix: O(log n) memcpy calls
    size_t n = std::min(done, size - done);
    std::memcpy(dst + done, dst, n);
    done += n;
  }
}

}  // namespace

/// Errors: as zeCommandListAppendMemoryCopy, plus INVALID_SIZE when pattern_size is not a power of two
/// or exceeds maxMemoryFillPatternSize (128).
ze_result_t ZE_APICALL zeCommandListAppendMemoryFill(ze_command_list_handle_t hCommandList, void* ptr,
                                                     const void* pattern, size_t pattern_size, size_t size,
                                                     ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
                                                     ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemoryFill");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (ptr == nullptr || pattern == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (pattern_size == 0 || (pattern_size & (pattern_size - 1)) || pattern_size > kMaxFillPatternSize)
    return ZE_RESULT_ERROR_INVALID_SIZE;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  if (size > 0) {
    struct Pattern {
      unsigned char bytes[kMaxFillPatternSize];
    } p;
    std::memcpy(p.bytes, pattern, pattern_size);  // the pattern is captured at append time
    auto* dst = static_cast<unsigned char*>(ptr);
    c->body = [dst, p, pattern_size, size](cl_command_queue) {
      fill(dst, size, p.bytes, pattern_size);
      return ZE_RESULT_SUCCESS;
    };
  }
  return finish_command(hCommandList, std::move(c));
}

namespace {

bool regions_overlap(const ze_copy_region_t& a, const ze_copy_region_t& b) {
  auto overlap = [](uint32_t a0, uint32_t an, uint32_t b0, uint32_t bn) {
    return uint64_t(a0) < uint64_t(b0) + bn && uint64_t(b0) < uint64_t(a0) + an;
  };
  return overlap(a.originX, a.width, b.originX, b.width) && overlap(a.originY, a.height, b.originY, b.height) &&
         overlap(a.originZ, a.depth, b.originZ, b.depth);
}

}  // namespace

/// Errors: as zeCommandListAppendMemoryCopy, plus INVALID_ARGUMENT (regions of different extents) and
/// OVERLAPPING_REGIONS (same buffer, same pitches, intersecting boxes).
ze_result_t ZE_APICALL zeCommandListAppendMemoryCopyRegion(
    ze_command_list_handle_t hCommandList, void* dstptr, const ze_copy_region_t* dstRegion, uint32_t dstPitch,
    uint32_t dstSlicePitch, const void* srcptr, const ze_copy_region_t* srcRegion, uint32_t srcPitch,
    uint32_t srcSlicePitch, ze_event_handle_t hSignalEvent, uint32_t numWaitEvents,
    ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemoryCopyRegion");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (dstptr == nullptr || srcptr == nullptr || dstRegion == nullptr || srcRegion == nullptr)
    return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (dstRegion->width != srcRegion->width || dstRegion->height != srcRegion->height ||
      dstRegion->depth != srcRegion->depth)
    return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  if (dstptr == srcptr && dstPitch == srcPitch && dstSlicePitch == srcSlicePitch &&
      regions_overlap(*dstRegion, *srcRegion))
    return ZE_RESULT_ERROR_OVERLAPPING_REGIONS;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  ze_copy_region_t d = *dstRegion, s = *srcRegion;
  auto* dst = static_cast<unsigned char*>(dstptr);
  auto* src = static_cast<const unsigned char*>(srcptr);
  c->body = [=](cl_command_queue) {
    uint32_t depth = std::max<uint32_t>(1, d.depth), height = std::max<uint32_t>(1, d.height);
    for (uint32_t z = 0; z < depth; ++z)
      for (uint32_t y = 0; y < height; ++y)
        std::memmove(dst + (uint64_t(d.originZ) + z) * dstSlicePitch + (uint64_t(d.originY) + y) * dstPitch + d.originX,
                     src + (uint64_t(s.originZ) + z) * srcSlicePitch + (uint64_t(s.originY) + y) * srcPitch + s.originX,
                     d.width);
    return ZE_RESULT_SUCCESS;
  };
  return finish_command(hCommandList, std::move(c));
}

ze_result_t ZE_APICALL zeCommandListAppendSignalEvent(ze_command_list_handle_t hCommandList,
                                                      ze_event_handle_t hEvent) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendSignalEvent");
  if (hCommandList == nullptr || hEvent == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hEvent, 0, nullptr, &c));
  return finish_command(hCommandList, std::move(c));
}

ze_result_t ZE_APICALL zeCommandListAppendWaitOnEvents(ze_command_list_handle_t hCommandList, uint32_t numEvents,
                                                       ze_event_handle_t* phEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendWaitOnEvents");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (phEvents == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, nullptr, numEvents, phEvents, &c));
  return finish_command(hCommandList, std::move(c));
}

ze_result_t ZE_APICALL zeCommandListAppendEventReset(ze_command_list_handle_t hCommandList,
                                                     ze_event_handle_t hEvent) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendEventReset");
  if (hCommandList == nullptr || hEvent == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (!is_event(hEvent)) return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, nullptr, 0, nullptr, &c));
  c->body = [event = EventRef(hEvent)](cl_command_queue) {  // held: the event may be destroyed first
    reset_event(event.get());
    return ZE_RESULT_SUCCESS;
  };
  return finish_command(hCommandList, std::move(c));
}

ze_result_t ZE_APICALL zeCommandListAppendWriteGlobalTimestamp(ze_command_list_handle_t hCommandList,
                                                               uint64_t* dstptr, ze_event_handle_t hSignalEvent,
                                                               uint32_t numWaitEvents,
                                                               ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendWriteGlobalTimestamp");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (dstptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  c->body = [dstptr](cl_command_queue) {
    *dstptr = now_ns();
    return ZE_RESULT_SUCCESS;
  };
  return finish_command(hCommandList, std::move(c));
}

ze_result_t ZE_APICALL zeCommandListAppendQueryKernelTimestamps(ze_command_list_handle_t hCommandList,
                                                                uint32_t numEvents, ze_event_handle_t* phEvents,
                                                                void* dstptr, const size_t* pOffsets,
                                                                ze_event_handle_t hSignalEvent,
                                                                uint32_t numWaitEvents,
                                                                ze_event_handle_t* phWaitEvents) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendQueryKernelTimestamps");
  if (hCommandList == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (phEvents == nullptr || dstptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  for (uint32_t i = 0; i < numEvents; ++i)
    if (!is_event(phEvents[i]) || !(phEvents[i]->pool_flags & ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP))
      return ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT;
  std::unique_ptr<Command> c;
  ZEXCPU_CHECK(begin_command(hCommandList, hSignalEvent, numWaitEvents, phWaitEvents, &c));
  std::vector<EventRef> events(phEvents, phEvents + numEvents);  // held: they may be destroyed first
  std::vector<size_t> offsets;
  if (pOffsets != nullptr) offsets.assign(pOffsets, pOffsets + numEvents);
  auto* dst = static_cast<unsigned char*>(dstptr);
  c->body = [events, offsets, dst](cl_command_queue) {
    for (size_t i = 0; i < events.size(); ++i) {
      ze_kernel_timestamp_result_t r{};
      r.global.kernelStart = r.context.kernelStart = events[i]->start_ns;
      r.global.kernelEnd = r.context.kernelEnd = events[i]->end_ns;
      size_t off = offsets.empty() ? i * sizeof(r) : offsets[i];
      std::memcpy(dst + off, &r, sizeof(r));
    }
    return ZE_RESULT_SUCCESS;
  };
  return finish_command(hCommandList, std::move(c));
}

// Prefetch and advice are performance hints; on the CPU there is nothing to move.
ze_result_t ZE_APICALL zeCommandListAppendMemoryPrefetch(ze_command_list_handle_t hCommandList, const void* ptr,
                                                         size_t) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemoryPrefetch");
  ZEXCPU_CHECK(check_list(hCommandList));
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  return ZE_RESULT_SUCCESS;
}

ze_result_t ZE_APICALL zeCommandListAppendMemAdvise(ze_command_list_handle_t hCommandList, ze_device_handle_t hDevice,
                                                    const void* ptr, size_t, ze_memory_advice_t advice) {
  ZEXCPU_FAULT_POINT("zeCommandListAppendMemAdvise");
  if (hCommandList == nullptr || hDevice == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  if (ptr == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
  if (uint32_t(advice) > uint32_t(ZE_MEMORY_ADVICE_BIAS_UNCACHED)) return ZE_RESULT_ERROR_INVALID_ENUMERATION;
  ZEXCPU_CHECK(check_list(hCommandList));
  if (!is_device(hDevice)) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  return ZE_RESULT_SUCCESS;
}

}  // namespace zexcpu
