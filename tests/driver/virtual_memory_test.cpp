// Virtual and physical memory: reservations, physical objects, maps, access attributes, and kernels,
// copies and queries on mapped addresses. The result codes are the specification's, and where it is
// silent NEO's (compute-runtime's Context::reserveVirtualMem, mapVirtualMem & co.), which zex-cpu follows.
#include "l0_fixture.hpp"

#include <sys/mman.h>

#include <csignal>
#include <thread>

namespace {

constexpr size_t k64K = size_t{64} << 10;
constexpr size_t k2M = size_t{2} << 20;

// The 1.4 header's @returns lists a null pStart (so the validation layer refuses it): always pass a hint.
void exit_on_segv() {
  struct sigaction sa = {};
  sa.sa_handler = [](int) { std::_Exit(42); };
  sigaction(SIGSEGV, &sa, nullptr);
  sigaction(SIGBUS, &sa, nullptr);
}

const void* hint(uintptr_t tib = 1) { return reinterpret_cast<const void*>(tib << 40); }

/// A 2 MiB-aligned address where `size` bytes are free right now (fixed addresses are not: a sanitizer's
/// shadow memory takes terabytes), for the tests that check a hint is taken exactly.
const void* free_hint(size_t size) {
  void* p = mmap(nullptr, size + k2M, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return hint();
  munmap(p, size + k2M);
  return reinterpret_cast<const void*>((reinterpret_cast<uintptr_t>(p) + k2M - 1) & ~uintptr_t(k2M - 1));
}

class VirtualMemory : public L0Test {
 protected:
  void* reserve(size_t size, const void* at = hint()) {
    void* p = nullptr;
    ze_result_t r = zeVirtualMemReserve(context, at, size, &p);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeVirtualMemReserve(" << size << ")";
    if (r != ZE_RESULT_SUCCESS) return nullptr;
    defer([this, p, size] { zeVirtualMemFree(context, p, size); });
    return p;
  }
  ze_physical_mem_handle_t physical(size_t size) {
    ze_physical_mem_desc_t d = {ZE_STRUCTURE_TYPE_PHYSICAL_MEM_DESC, nullptr, 0, size};
    ze_physical_mem_handle_t h = nullptr;
    ze_result_t r = zePhysicalMemCreate(context, device, &d, &h);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zePhysicalMemCreate(" << size << ")";
    if (r != ZE_RESULT_SUCCESS) return nullptr;
    defer([this, h] { zePhysicalMemDestroy(context, h); });
    return h;
  }
  static char* at(void* p, size_t off) { return static_cast<char*>(p) + off; }
};

}  // namespace

TEST_F(VirtualMemory, PageSizesAreNeos) {
  size_t page = 0;
  ZE_OK(zeVirtualMemQueryPageSize(context, device, 1, &page));
  EXPECT_EQ(page, k64K);
  ZE_OK(zeVirtualMemQueryPageSize(context, device, k2M - 1, &page));
  EXPECT_EQ(page, k64K);
  ZE_OK(zeVirtualMemQueryPageSize(context, device, k2M, &page));
  EXPECT_EQ(page, k2M);
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, zeVirtualMemQueryPageSize(context, device, 0, &page));
}

TEST_F(VirtualMemory, KernelsCopiesAndQueriesWorkOnMappedMemory) {
  const size_t size = 2 * k2M;
  char* va = static_cast<char*>(reserve(size));
  ASSERT_NE(va, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(va) % k2M, 0u) << "a reservation is aligned to its page size";
  ze_physical_mem_handle_t a = physical(k2M), b = physical(k2M);
  ASSERT_TRUE(a && b);
  ZE_OK(zeVirtualMemMap(context, va, k2M, a, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));
  ZE_OK(zeVirtualMemMap(context, va + k2M, k2M, b, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));
  // One kernel over both mappings, as one array.
  const uint32_t n = static_cast<uint32_t>(size / sizeof(int));
  auto* p = reinterpret_cast<int*>(va);
  for (uint32_t i = 0; i < n; ++i) p[i] = static_cast<int>(i);
  add_value(p, n, 1000);
  // A copy out of the mapped range, across the boundary between the two physical objects.
  auto* host = static_cast<int*>(alloc_host(2 * k64K));
  ze_command_list_handle_t l = immediate_list(ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS);
  ZE_OK(zeCommandListAppendMemoryCopy(l, host, va + k2M - k64K, 2 * k64K, nullptr, 0, nullptr));
  const uint32_t first = static_cast<uint32_t>((k2M - k64K) / sizeof(int));
  for (uint32_t i = 0; i < 2 * k64K / sizeof(int); i += 997) ASSERT_EQ(host[i], static_cast<int>(first + i) + 1000) << i;
  // Queries answer for the mapping, as NEO's do.
  ze_memory_allocation_properties_t props = {ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, nullptr, ZE_MEMORY_TYPE_UNKNOWN, 0, 0};
  ze_device_handle_t owner = nullptr;
  ZE_OK(zeMemGetAllocProperties(context, va + k2M + 12, &props, &owner));
  EXPECT_EQ(props.type, ZE_MEMORY_TYPE_DEVICE);
  EXPECT_EQ(props.pageSize, k64K);
  EXPECT_EQ(owner, device);
  void* base = nullptr;
  size_t range = 0;
  ZE_OK(zeMemGetAddressRange(context, va + k2M + 12, &base, &range));
  EXPECT_EQ(base, va + k2M);
  EXPECT_EQ(range, k2M);
  ZE_OK(zeVirtualMemUnmap(context, va, size));  // two adjacent whole mappings at once
  ZE_OK(zeMemGetAllocProperties(context, va + 12, &props, &owner));
  EXPECT_EQ(props.type, ZE_MEMORY_TYPE_UNKNOWN) << "reserved, not mapped";
}

TEST_F(VirtualMemory, PhysicalMemoryKeepsItsContentsAcrossMappings) {
  char* va = static_cast<char*>(reserve(4 * k64K));
  ze_physical_mem_handle_t pm = physical(2 * k64K);
  ASSERT_TRUE(va && pm);
  ZE_OK(zeVirtualMemMap(context, va, k64K, pm, k64K, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));  // its second page
  std::memcpy(va, "second page", 12);
  ZE_OK(zeVirtualMemUnmap(context, va, k64K));
  ZE_OK(zeVirtualMemMap(context, va + 2 * k64K, 2 * k64K, pm, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));
  EXPECT_STREQ(va + 3 * k64K, "second page") << "the same pages, seen at another address and offset";
  ZE_OK(zeVirtualMemUnmap(context, va + 2 * k64K, 2 * k64K));
}

TEST_F(VirtualMemory, AccessAttributesAreEnforcedAndReported) {
  char* va = static_cast<char*>(reserve(4 * k64K));
  ze_physical_mem_handle_t pm = physical(2 * k64K);
  ASSERT_TRUE(va && pm);
  ze_memory_access_attribute_t a = ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE;
  size_t out = 0;
  ZE_OK(zeVirtualMemGetAccessAttribute(context, va, 4 * k64K, &a, &out));
  EXPECT_EQ(a, ZE_MEMORY_ACCESS_ATTRIBUTE_NONE) << "a reservation starts inaccessible";
  EXPECT_EQ(out, 4 * k64K);
  ZE_OK(zeVirtualMemMap(context, va + k64K, 2 * k64K, pm, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));
  va[k64K] = 42;
  ZE_OK(zeVirtualMemGetAccessAttribute(context, va, 4 * k64K, &a, &out));
  EXPECT_EQ(a, ZE_MEMORY_ACCESS_ATTRIBUTE_NONE);
  EXPECT_EQ(out, k64K) << "the unmapped first page, up to the mapping";
  ZE_OK(zeVirtualMemGetAccessAttribute(context, va + k64K, 3 * k64K, &a, &out));
  EXPECT_EQ(a, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE);
  EXPECT_EQ(out, 2 * k64K);
  ZE_OK(zeVirtualMemSetAccessAttribute(context, va + k64K, 2 * k64K, ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY));
  ZE_OK(zeVirtualMemGetAccessAttribute(context, va + k64K, 2 * k64K, &a, &out));
  EXPECT_EQ(a, ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY);
  EXPECT_EQ(out, 2 * k64K);
  EXPECT_EQ(va[k64K], 42) << "read-only pages still read";
  // Enforced, not just recorded: a store faults. The death test re-runs this test in a child process;
  // there a SIGSEGV handler exits with 42 (a sanitizer's own handler would report and exit otherwise).
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        exit_on_segv();
        volatile char* q = va + k64K;
        *q = 1;
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(42), "");
  EXPECT_EXIT(
      {
        exit_on_segv();
        volatile char* q = va;  // reserved, not mapped
        std::_Exit(*q);
      },
      ::testing::ExitedWithCode(42), "");
  ZE_OK(zeVirtualMemUnmap(context, va + k64K, 2 * k64K));
}

TEST_F(VirtualMemory, AHintThatIsFreeIsHonouredAndOneThatIsTakenIsNot) {
  const void* at = free_hint(k2M);
  void* first = reserve(k2M, at);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first, at);
  void* second = reserve(k2M, at);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(second, first) << "a taken hint is not an error (the specification: another address is found)";
}

TEST_F(VirtualMemory, BadInputIsRefusedAndChangesNothing) {
  char* va = static_cast<char*>(reserve(8 * k64K));
  ze_physical_mem_handle_t pm = physical(2 * k64K);
  ASSERT_TRUE(va && pm);
  void* p = nullptr;
  ze_physical_mem_handle_t h = nullptr;
  ze_physical_mem_desc_t d = {ZE_STRUCTURE_TYPE_PHYSICAL_MEM_DESC, nullptr, 0, 100 << 10};
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, zePhysicalMemCreate(context, device, &d, &h)) << "not a page multiple";
  d.size = 3 * k2M + k64K;
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, zePhysicalMemCreate(context, device, &d, &h)) << "2 MiB pages above 2 MiB";
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, zeVirtualMemReserve(context, hint(), 4096, &p));
  const auto rw = ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE;
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT, zeVirtualMemMap(context, va + 4096, k64K, pm, 0, rw));
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT, zeVirtualMemMap(context, va, k64K, pm, 4096, rw));
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, zeVirtualMemMap(context, va, 4096, pm, 0, rw));
  if (!zt::under_validation()) {  // the validation layer answers this one itself
    EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ENUMERATION,
              zeVirtualMemMap(context, va, k64K, pm, 0, static_cast<ze_memory_access_attribute_t>(7)));
  }
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeVirtualMemMap(context, va, 4 * k64K, pm, 0, rw)) << "beyond the object";
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeVirtualMemMap(context, va, k64K, pm, 2 * k64K, rw)) << "offset beyond";
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeVirtualMemMap(context, va + 7 * k64K, 2 * k64K, pm, 0, rw))
      << "past the reservation's end";
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeVirtualMemUnmap(context, va, k64K))
      << "nothing mapped there (NEO answers SUCCESS; zex-cpu is stricter)";
  ZE_OK(zeVirtualMemMap(context, va + 2 * k64K, 2 * k64K, pm, 0, rw));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeVirtualMemMap(context, va + 4 * k64K, 2 * k64K, pm, 0, rw))
      << "a physical object is mapped once at a time, as NEO";
  ze_physical_mem_handle_t other = physical(2 * k64K);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeVirtualMemMap(context, va + k64K, 2 * k64K, other, 0, rw))
      << "overlaps the mapping";
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeVirtualMemUnmap(context, va + 2 * k64K, k64K)) << "half a mapping";
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT,
            zeVirtualMemSetAccessAttribute(context, va + 2 * k64K, k64K, ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY));
  EXPECT_ZE(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE, zePhysicalMemDestroy(context, pm)) << "still mapped";
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeVirtualMemFree(context, va, 4 * k64K)) << "not the whole reservation";
  // Nothing changed: the mapping still holds memory.
  va[2 * k64K] = 7;
  EXPECT_EQ(va[2 * k64K], 7);
  ze_context_handle_t other_ctx = nullptr;
  ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ZE_OK(zeContextCreate(driver, &cd, &other_ctx));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeVirtualMemUnmap(other_ctx, va + 2 * k64K, 2 * k64K))
      << "another context's reservation";
  EXPECT_ZE_OK(zeContextDestroy(other_ctx));
}

TEST_F(VirtualMemory, FreeUnmapsWhatIsStillMappedAndLeavesThePhysicalMemory) {
  ze_physical_mem_handle_t pm = physical(k64K);
  ASSERT_NE(pm, nullptr);
  void* va = nullptr;
  ZE_OK(zeVirtualMemReserve(context, hint(), 2 * k64K, &va));
  ZE_OK(zeVirtualMemMap(context, va, k64K, pm, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));
  static_cast<char*>(va)[0] = 9;
  ZE_OK(zeVirtualMemFree(context, va, 2 * k64K));
  void* again = nullptr;
  ZE_OK(zeVirtualMemReserve(context, va, k64K, &again));
  ZE_OK(zeVirtualMemMap(context, again, k64K, pm, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE))
      << "the free unmapped it, so it may be mapped again";
  EXPECT_EQ(static_cast<char*>(again)[0], 9);
  ZE_OK(zeVirtualMemUnmap(context, again, k64K));
  ZE_OK(zeVirtualMemFree(context, again, k64K));
}

TEST_F(VirtualMemory, ThreadsMapAndUnmapTheirOwnRangesAtOnce) {
  constexpr int kThreads = 4, kRounds = 200;
  char* va = static_cast<char*>(reserve(kThreads * k64K));
  ASSERT_NE(va, nullptr);
  std::vector<ze_physical_mem_handle_t> pm;
  for (int t = 0; t < kThreads; ++t) pm.push_back(physical(k64K));
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      char* mine = va + t * k64K;
      for (int i = 0; i < kRounds; ++i) {
        if (zeVirtualMemMap(context, mine, k64K, pm[t], 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE) != ZE_RESULT_SUCCESS ||
            (mine[0] = static_cast<char>(t), mine[0] != t) || zeVirtualMemUnmap(context, mine, k64K) != ZE_RESULT_SUCCESS)
          ++failures[t];
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST_F(VirtualMemory, AdjacentMappingsUnmapTogetherWhateverTheirTotal) {
  char* va = static_cast<char*>(reserve(2 * k2M));
  ze_physical_mem_handle_t small = physical(k64K), big = physical(k2M);
  ASSERT_TRUE(va && small && big);
  ZE_OK(zeVirtualMemMap(context, va + k2M - k64K, k64K, small, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));
  ZE_OK(zeVirtualMemMap(context, va + k2M, k2M, big, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));
  // 2 MiB + 64 KiB at a 64 KiB boundary: each mapping met its page rule; the run is two whole mappings.
  ZE_OK(zeVirtualMemSetAccessAttribute(context, va + k2M - k64K, k2M + k64K, ZE_MEMORY_ACCESS_ATTRIBUTE_READONLY));
  ZE_OK(zeVirtualMemUnmap(context, va + k2M - k64K, k2M + k64K));
  EXPECT_ZE_OK(zePhysicalMemDestroy(context, small)) << "unmapped, so it may go";
}

TEST_F(VirtualMemory, AContextsDestroyReleasesItsReservationsAndPhysicalMemory) {
  ze_context_handle_t other = nullptr;
  ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ZE_OK(zeContextCreate(driver, &cd, &other));
  void* va = nullptr;
  const void* at = free_hint(k2M);
  ZE_OK(zeVirtualMemReserve(other, at, k2M, &va));
  ASSERT_EQ(va, at);
  ze_physical_mem_desc_t d = {ZE_STRUCTURE_TYPE_PHYSICAL_MEM_DESC, nullptr, 0, k2M};
  ze_physical_mem_handle_t pm = nullptr;
  ZE_OK(zePhysicalMemCreate(other, device, &d, &pm));
  ZE_OK(zeVirtualMemMap(other, va, k2M, pm, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));
  ze_memory_allocation_properties_t props = {ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, nullptr, ZE_MEMORY_TYPE_UNKNOWN, 0, 0};
  ZE_OK(zeMemGetAllocProperties(context, va, &props, nullptr));
  EXPECT_EQ(props.type, ZE_MEMORY_TYPE_UNKNOWN) << "another context's mapping";
  ZE_OK(zeContextDestroy(other));  // with a reservation, a mapping and a physical object still live
  void* again = reserve(k2M, at);
  EXPECT_EQ(again, at) << "the destroyed context's reservation was released";
}

TEST_F(VirtualMemory, StaleAndImpossibleObjectsAreRefused) {
  ze_physical_mem_desc_t d = {ZE_STRUCTURE_TYPE_PHYSICAL_MEM_DESC, nullptr, 0, k64K};
  ze_physical_mem_handle_t pm = nullptr;
  ZE_OK(zePhysicalMemCreate(context, device, &d, &pm));
  ZE_OK(zePhysicalMemDestroy(context, pm));
  if (!zt::under_validation()) {  // the validation layer's handle tracking may answer first
    EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zePhysicalMemDestroy(context, pm)) << "destroyed already";
    void* va = reserve(k64K);
    EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT,
              zeVirtualMemMap(context, va, k64K, pm, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));
  }
  d.size = size_t{1} << 50;  // 1 PiB: a memfd would take it and fault later
  EXPECT_ZE(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, zePhysicalMemCreate(context, device, &d, &pm));
}
