// ZEX_CPU_GUARD_PAGES=1 (issue 27 item 4): every allocation of zex-cpu ends flush against an
// inaccessible page, so an access one byte past its end faults at once, on the host and in a kernel,
// instead of reading or writing the host memory beside it. That is what lets zex's memory-check tests
// prove a check fired before the access: without the check the process would die. Run by CTest
// driver_guard_pages (with the Memory, Execution and CommandList suites, which must pass unchanged);
// without the variable these tests skip.
#include "l0_fixture.hpp"

#include <csignal>
#include <cstdlib>
#include <string>

namespace {

bool guarded() {
  const char* v = std::getenv("ZEX_CPU_GUARD_PAGES");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

class GuardPages : public L0Test {
 protected:
  void SetUp() override {
    if (!guarded()) GTEST_SKIP() << "runs in CTest driver_guard_pages (ZEX_CPU_GUARD_PAGES=1)";
    // The child of a death test runs the test again from the start (the driver's threads are not forked).
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    L0Test::SetUp();
  }
};

}  // namespace

TEST_F(GuardPages, AllocationsEndAtAnInaccessiblePage) {
  for (size_t size : {size_t(1), size_t(100), size_t(4096), size_t(5000)}) {
    auto* p = static_cast<unsigned char*>(alloc_shared(size, 1));
    ASSERT_NE(p, nullptr);
    for (size_t i = 0; i < size; ++i) p[i] = static_cast<unsigned char>(i);  // every byte is usable
    void* base = nullptr;
    size_t got = 0;
    ZE_OK(zeMemGetAddressRange(context, p + size / 2, &base, &got));
    EXPECT_EQ(base, p);
    EXPECT_EQ(got, size) << "the range is the size asked for, not the mapping's";
    // The byte after the last is in the guard page: the host's write faults.
    EXPECT_DEATH(p[size] = 1, "") << size << " bytes";
  }
  // Host and device allocations too; 64-byte alignment kept, the end still flush for a multiple of 64.
  auto* h = static_cast<char*>(alloc_host(256, 64));
  auto* d = static_cast<char*>(alloc_device(1 << 20, 64));
  ASSERT_TRUE(h && d);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(h) % 64, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(d) % 64, 0u);
  EXPECT_DEATH(h[256] = 1, "");
  EXPECT_DEATH(d[1 << 20] = 1, "");
}

TEST_F(GuardPages, AKernelWritingPastTheEndFaults) {
  // store_value writes p[get_global_id(0)]: 64 work-items into 63 ints write one int past the end.
  const uint32_t n = 64;
  int* p = static_cast<int*>(alloc_shared((n - 1) * sizeof(int), 4));
  ze_kernel_handle_t k = kernel(module("basic"), "store_value");
  ASSERT_TRUE(p && k);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 7));
  EXPECT_EXIT(
      {
        run(k, 1, n);
        std::exit(0);  // not reached when the guard works
      },
      testing::KilledBySignal(SIGSEGV), "");
  // In bounds, the same kernel runs: 63 items.
  ze_kernel_handle_t k63 = kernel(module("basic"), "store_value");
  ASSERT_NE(k63, nullptr);
  ZE_OK(set_ptr(k63, 0, p));
  ZE_OK(set_val(k63, 1, 7));
  run(k63, 1, n - 1);
  EXPECT_EQ(p[n - 2], 7);
}

TEST_F(GuardPages, AlignmentsAboveAPageKeepTheGuardBesideTheEnd) {
  // An alignment above a page places the start further down than the last page allows; the guard must
  // follow the end down, not stay at the mapping's last page (which left the pages between open).
  for (size_t align : {size_t(8192), size_t(65536), size_t(2) << 20}) {
    for (size_t size : {size_t(100), size_t(4096), size_t(5000), size_t(3 * 4096)}) {
      auto* p = static_cast<unsigned char*>(alloc_device(size, align));
      ASSERT_NE(p, nullptr) << align << " " << size;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % align, 0u) << align;
      p[0] = 1;
      p[size - 1] = 1;
      // The first byte that faults is at the next page boundary: the end itself for whole pages.
      const size_t gap = (4096 - size % 4096) % 4096;
      if (gap != 0) p[size + gap - 1] = 1;  // inside the last page, still mapped
      EXPECT_DEATH(p[size + gap] = 1, "") << align << " " << size;
    }
  }
}

TEST_F(GuardPages, AlignmentZeroIsTheSvmPathsAlignment) {
  // Alignment 0 gives 128-byte alignment, as zex-cpu's SVM allocations do: a kernel's long16 loads may be
  // aligned instructions. Sizes that are a multiple of 128 end flush against the guard.
  for (size_t size : {size_t(128), size_t(640), size_t(4096)}) {
    auto* p = static_cast<unsigned char*>(alloc_shared(size, 0));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 128, 0u);
    EXPECT_DEATH(p[size] = 1, "") << size;
  }
}
