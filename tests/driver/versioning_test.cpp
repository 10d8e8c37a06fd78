// zex-cpu's work-group range versioning of bounds checks (driver/compiler/bounds_versioning.cpp):
// in every group, fully in bounds or not, each work-item must run or throw exactly as the source says.
// The shapes include a check whose value wraps inside a group (first and last work-items pass, middle
// ones fail), which endpoint tests alone would get wrong.
#include "l0_fixture.hpp"

#include <functional>

using Versioning = L0Test;

namespace {
constexpr uint32_t kGroups = 8, kSize = 256, kItems = kGroups * kSize;

// 1 = body ran, 2 = threw, per work-item.
std::vector<uint32_t> expect(const std::function<bool(uint32_t)>& pass) {
  std::vector<uint32_t> e(kItems);
  for (uint32_t i = 0; i < kItems; ++i) e[i] = pass(i) ? 1u : 2u;
  return e;
}
}  // namespace

class VersioningRun : public Versioning {
 protected:
  // The memory-check kernels' arguments after the mark buffer: the address, its allocation's base, the
  // offsets an access may start at, and the kernel's last argument (a shift or a pitch).
  template <typename T>
  static void set_memory_check(ze_kernel_handle_t k, const void* data, uint64_t base, uint64_t starts, T last) {
    ZE_OK(set_ptr(k, 1, data));
    ZE_OK(set_val(k, 2, base));
    ZE_OK(set_val(k, 3, starts));
    ZE_OK(set_val(k, 4, last));
  }

  // Runs `name` with the mark buffer as argument 0 and `set_rest` setting the others; compares each item.
  void check(const char* name, const std::function<void(ze_kernel_handle_t)>& set_rest,
             const std::vector<uint32_t>& want) {
    ze_module_handle_t m = module("versioning");
    ASSERT_NE(m, nullptr);
    ze_kernel_handle_t k = kernel(m, name);
    ASSERT_NE(k, nullptr);
    auto* mark = static_cast<uint32_t*>(alloc_shared(kItems * sizeof(uint32_t)));
    std::fill(mark, mark + kItems, 0u);
    ZE_OK(set_ptr(k, 0, mark));
    set_rest(k);
    run(k, kGroups, kSize);
    size_t wrong = 0;
    for (uint32_t i = 0; i < kItems; ++i)
      if (mark[i] != want[i] && wrong++ < 5)
        ADD_FAILURE() << name << ": work-item " << i << " marked " << mark[i] << ", expected " << want[i];
    EXPECT_EQ(wrong, 0u) << name;
  }
};

TEST_F(VersioningRun, PlusOneThrowsFromTheLastItemsOnly) {
  for (uint32_t n : {0u, 1u, 700u, 768u, 769u, kItems, kItems + 1}) {
    SCOPED_TRACE(n);
    check("plus_one", [&](ze_kernel_handle_t k) { ZE_OK(set_val(k, 1, n)); },
          expect([&](uint32_t i) { return uint64_t(i) + 1 < n; }));
  }
}

TEST_F(VersioningRun, SignedCompareAfterTruncation) {
  for (int32_t n : {-5, 0, 300, int32_t(kItems)}) {
    SCOPED_TRACE(n);
    check("signed_int", [&](ze_kernel_handle_t k) { ZE_OK(set_val(k, 1, n)); },
          expect([&](uint32_t i) { return int32_t(i) < n; }));
  }
}

TEST_F(VersioningRun, WrapInsideAGroupStillThrows) {
  const uint32_t n = 0xFFFFFFF0u;  // fails for j in [n, 2^32): work-items 112..127 of group 0
  check("wraps", [&](ze_kernel_handle_t k) { ZE_OK(set_val(k, 1, n)); },
        expect([&](uint32_t i) { return uint32_t(i + 0xFFFFFF80u) < n; }));
}

TEST_F(VersioningRun, TwoChecksBothHonoured) {
  check("two_checks",
        [&](ze_kernel_handle_t k) {
          ZE_OK(set_val(k, 1, 300u));
          ZE_OK(set_val(k, 2, 1500u));
        },
        expect([&](uint32_t i) { return i >= 300 && i < 1500; }));
}

TEST_F(VersioningRun, DataDependentCheckUnchanged) {
  auto* idx = static_cast<uint32_t*>(alloc_shared(kItems * sizeof(uint32_t)));
  for (uint32_t i = 0; i < kItems; ++i) idx[i] = (i * 7919u) % 1000u;
  check("loaded",
        [&](ze_kernel_handle_t k) {
          ZE_OK(set_ptr(k, 1, idx));
          ZE_OK(set_val(k, 2, 900u));
        },
        expect([&](uint32_t i) { return (i * 7919u) % 1000u < 900u; }));
}

// The memory checks' shape: offset of &data[(int)(i + shift)] from data, against `starts` (how many
// offsets a 4-byte access may start at in an allocation of n elements: 4n - 3). Shifts that throw at
// the start, at the end, nowhere, and one whose 32-bit index wraps to negative inside group 1.
TEST_F(VersioningRun, MemoryCheckOffsetsFollowTheSource) {
  const uint32_t n = 1500;
  auto* data = static_cast<uint32_t*>(alloc_shared(4));
  const uint64_t base = reinterpret_cast<uint64_t>(data);
  // starts 2^40: the wrapped (negative) offsets are far out, the unwrapped ones at the group's corners
  // would pass; a versioning that did not check the sign extension's operand lets them through.
  for (uint64_t starts : {4ull * n - 3, 1ull << 40})
  for (int32_t shift : {-3, 0, 100, -int32_t(kItems), 0x7FFFFFFF - 300}) {
    SCOPED_TRACE(testing::Message() << "shift " << shift << " starts " << starts);
    check("offsets",
          [&](ze_kernel_handle_t k) {
            set_memory_check(k, data, base, starts, shift);
          },
          expect([&](uint32_t i) {
            const int32_t idx = static_cast<int32_t>(i + static_cast<uint32_t>(shift));
            return static_cast<uint64_t>(static_cast<int64_t>(idx) * 4) < starts;
          }));
  }
}

TEST_F(VersioningRun, MemoryCheckWithAPitchFollowsTheSource) {
  auto* data = static_cast<uint32_t*>(alloc_shared(4));
  const uint64_t base = reinterpret_cast<uint64_t>(data);
  // pitch 0: every item reads element 1; a huge pitch wraps the product (only item 0 stays in).
  for (uint64_t pitch : {uint64_t(0), uint64_t(1), uint64_t(3), uint64_t(1) << 62}) {
    for (uint64_t starts : {uint64_t(0), uint64_t(4) * 700 - 3, uint64_t(4) * 5000}) {
      SCOPED_TRACE(testing::Message() << "pitch " << pitch << " starts " << starts);
      check("pitched",
            [&](ze_kernel_handle_t k) {
              set_memory_check(k, data, base, starts, pitch);
            },
            expect([&](uint32_t i) { return (uint64_t(i) * pitch + 1) * 4 < starts; }));
    }
  }
}

// Checks inside two loops on their counters (versioning.cl's `looped`): each work-item's fate over loop
// counts and bounds that make no group, some groups, or every group throw, at the first, the last or a
// middle iteration; a versioning that bounded the counters wrongly lets some of them through.
TEST_F(VersioningRun, ChecksInLoopsFollowTheSource) {
  auto* data = static_cast<uint32_t*>(alloc_shared(4));
  const uint64_t base = reinterpret_cast<uint64_t>(data);
  auto off = [](int64_t idx) { return static_cast<uint64_t>(idx) * 4; };
  for (int32_t n : {0, 1, 37, 600, 2047}) {
    // 4 * 4500: group 7 passes at the loop's first half and fails in its second (2 * 2047 + 599 >= 4500).
    for (uint64_t starts : {uint64_t(0), uint64_t(4) * 700 - 3, uint64_t(4) * 4500, uint64_t(4) * 5000}) {
      SCOPED_TRACE(testing::Message() << "n " << n << " starts " << starts);
      check("looped", [&](ze_kernel_handle_t k) { set_memory_check(k, data, base, starts, n); },
            expect([&](uint32_t i) {
              for (int32_t k = 0; k < n; ++k)
                if (off(int32_t(i) * 2 + k) >= starts) return false;
              for (int32_t k = n - 1; k >= 0; k -= 3)
                if (off(int32_t(i) - k) >= starts) return false;
              return true;
            }));
    }
  }
}
