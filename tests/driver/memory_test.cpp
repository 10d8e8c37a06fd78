// USM host/device/shared allocations, zeMemGetAllocProperties and zeMemGetAddressRange.
#include "l0_fixture.hpp"

#include <memory>

using Memory = L0Test;

TEST_F(Memory, HostAllocIsHostAccessibleAndAligned) {
  for (size_t align : {0, 1, 64, 4096}) {
    auto* p = static_cast<uint8_t*>(alloc_host(10000, align));
    ASSERT_NE(p, nullptr) << "align " << align;
    if (align) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << "align " << align;
    }
    std::memset(p, 0xab, 10000);
    EXPECT_EQ(p[9999], 0xab);
  }
}

TEST_F(Memory, SharedAllocIsHostAccessible) {
  auto* p = static_cast<uint32_t*>(alloc_shared(1 << 20, 256));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u);
  for (uint32_t i = 0; i < (1 << 18); ++i) p[i] = i;
  EXPECT_EQ(p[12345], 12345u);
}

TEST_F(Memory, AllocPropertiesReportType) {
  void* h = alloc_host(4096);
  void* d = alloc_device(4096);
  void* s = alloc_shared(4096);
  ASSERT_TRUE(h && d && s);
  EXPECT_NE(h, d);
  EXPECT_NE(d, s);
  struct Case {
    void* p;
    ze_memory_type_t type;
  } cases[] = {{h, ZE_MEMORY_TYPE_HOST}, {d, ZE_MEMORY_TYPE_DEVICE}, {s, ZE_MEMORY_TYPE_SHARED}};
  uint64_t ids[3] = {};
  int i = 0;
  for (const Case& c : cases) {
    ze_memory_allocation_properties_t mp = {ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, nullptr,
                                            ZE_MEMORY_TYPE_FORCE_UINT32, 0, 0};
    ze_device_handle_t dev = nullptr;
    ZE_OK(zeMemGetAllocProperties(context, c.p, &mp, &dev));
    EXPECT_EQ(mp.type, c.type) << "allocation " << i;
    if (c.type != ZE_MEMORY_TYPE_HOST) {
      EXPECT_EQ(dev, device) << "allocation " << i;
    }
    ids[i++] = mp.id;
    // An interior pointer belongs to the same allocation.
    ze_memory_allocation_properties_t inner = {ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, nullptr,
                                               ZE_MEMORY_TYPE_FORCE_UINT32, 0, 0};
    ZE_OK(zeMemGetAllocProperties(context, static_cast<char*>(c.p) + 100, &inner, nullptr));
    EXPECT_EQ(inner.type, c.type);
    EXPECT_EQ(inner.id, mp.id);
  }
  EXPECT_NE(ids[0], ids[1]);
  EXPECT_NE(ids[1], ids[2]);
  EXPECT_NE(ids[0], ids[2]);
}

TEST_F(Memory, AllocPropertiesOfForeignPointerIsUnknown) {
  int on_stack = 0;
  auto on_heap = std::make_unique<int[]>(1024);
  for (void* p : {static_cast<void*>(&on_stack), static_cast<void*>(on_heap.get())}) {
    ze_memory_allocation_properties_t mp = {ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, nullptr,
                                            ZE_MEMORY_TYPE_FORCE_UINT32, 0, 0};
    ZE_OK(zeMemGetAllocProperties(context, p, &mp, nullptr));
    EXPECT_EQ(mp.type, ZE_MEMORY_TYPE_UNKNOWN);
  }
}

TEST_F(Memory, AllocPropertiesAfterFreeIsUnknown) {
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void* p = nullptr;
  ZE_OK(zeMemAllocHost(context, &hd, 4096, 0, &p));
  ZE_OK(zeMemFree(context, p));
  ze_memory_allocation_properties_t mp = {ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, nullptr,
                                          ZE_MEMORY_TYPE_FORCE_UINT32, 0, 0};
  ZE_OK(zeMemGetAllocProperties(context, p, &mp, nullptr));
  EXPECT_EQ(mp.type, ZE_MEMORY_TYPE_UNKNOWN);
}

TEST_F(Memory, AddressRangeOfInteriorPointers) {
  const size_t size = 3 * 4096 + 17;
  void* allocs[] = {alloc_host(size), alloc_device(size), alloc_shared(size)};
  for (void* a : allocs) {
    ASSERT_NE(a, nullptr);
    for (size_t off : {size_t{0}, size_t{1}, size_t{4096}, size - 1}) {
      void* base = nullptr;
      size_t len = 0;
      ZE_OK(zeMemGetAddressRange(context, static_cast<char*>(a) + off, &base, &len)) << "offset " << off;
      EXPECT_EQ(base, a) << "offset " << off;
      EXPECT_GE(len, size) << "offset " << off;
    }
    // Either output is optional.
    void* base = nullptr;
    size_t len = 0;
    ZE_OK(zeMemGetAddressRange(context, static_cast<char*>(a) + 5, &base, nullptr));
    EXPECT_EQ(base, a);
    ZE_OK(zeMemGetAddressRange(context, static_cast<char*>(a) + 5, nullptr, &len));
    EXPECT_GE(len, size);
  }
}

TEST_F(Memory, AddressRangeFailsForStackAndHeap) {
  int on_stack = 0;
  auto on_heap = std::make_unique<char[]>(1 << 16);
  for (void* p : {static_cast<void*>(&on_stack), static_cast<void*>(on_heap.get() + 100)}) {
    void* base = reinterpret_cast<void*>(0x1234);
    size_t len = 77;
    ze_result_t r = zeMemGetAddressRange(context, p, &base, &len);
    EXPECT_NE(r, ZE_RESULT_SUCCESS) << "a non-USM, non-module address must not have an address range";
    EXPECT_TRUE(r == ZE_RESULT_ERROR_INVALID_ARGUMENT || r == ZE_RESULT_ERROR_NOT_AVAILABLE ||
                r == ZE_RESULT_ERROR_UNKNOWN)
        << zt::result_name(r);
  }
}

TEST_F(Memory, AddressRangeFailsAfterFree) {
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  void* p = nullptr;
  ZE_OK(zeMemAllocDevice(context, &dd, 4096, 0, device, &p));
  ZE_OK(zeMemFree(context, p));
  void* base = nullptr;
  size_t len = 0;
  EXPECT_NE(zeMemGetAddressRange(context, static_cast<char*>(p) + 8, &base, &len), ZE_RESULT_SUCCESS);
}

TEST_F(Memory, AllocationsDoNotOverlap) {
  std::vector<std::pair<uintptr_t, size_t>> ranges;
  for (int i = 0; i < 16; ++i) {
    size_t size = 100 + 1000 * i;
    void* p = (i % 3 == 0) ? alloc_host(size) : (i % 3 == 1) ? alloc_device(size) : alloc_shared(size);
    ASSERT_NE(p, nullptr);
    ranges.emplace_back(reinterpret_cast<uintptr_t>(p), size);
  }
  for (size_t i = 0; i < ranges.size(); ++i)
    for (size_t j = i + 1; j < ranges.size(); ++j)
      EXPECT_TRUE(ranges[i].first + ranges[i].second <= ranges[j].first ||
                  ranges[j].first + ranges[j].second <= ranges[i].first)
          << i << " and " << j << " overlap";
}

TEST_F(Memory, ManyAllocFreeCycles) {
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  for (int i = 0; i < 500; ++i) {
    void* p = nullptr;
    ZE_OK(zeMemAllocHost(context, &hd, 1 << 16, 64, &p));
    static_cast<char*>(p)[0] = 1;
    ZE_OK(zeMemFree(context, p));
  }
}
