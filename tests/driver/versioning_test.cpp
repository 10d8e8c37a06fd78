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
