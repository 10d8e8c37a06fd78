// Kernels that return early around work-group barriers (kernels/early_return.cl, issue 24 item 4):
// PoCL 3.1 crashed on a return inside `if (t == 0)` before a barrier, so zex-cpu's compiler gives PoCL
// one exit per kernel and makes such a return arrive at the barrier (driver/compiler/single_exit.cpp);
// the other shapes guard that rewrite. Each test compares every work-item's stores with the source's
// meaning, for the kernels built at -O2 and at -O0 and for group sizes 64 and 256.
#include "l0_fixture.hpp"

#include <functional>

namespace {
constexpr uint32_t kGroups = 4;
constexpr int kUntouched = -1234567;

// The data: distinct values per element.
std::vector<int> data(uint32_t n, int salt) {
  std::vector<int> v(n);
  for (uint32_t i = 0; i < n; ++i) v[i] = int((i * 2654435761u + uint32_t(salt)) % 1000u);
  return v;
}
}  // namespace

class EarlyReturnRuns : public L0Test {
 protected:
  // Runs kernel `name` of the parameter's module for each group size: `setup` binds the arguments and
  // returns the buffers to compare, `expect` fills what they must hold.
  struct Buf {
    int* dev;
    std::vector<int> want;
    const char* what;
  };
  using Setup = std::function<std::vector<Buf>(ze_kernel_handle_t, uint32_t)>;
  void check(const char* module_name, const char* name, const Setup& setup) {
    ze_module_handle_t m = module(module_name);
    ASSERT_NE(m, nullptr);
    ze_kernel_handle_t k = kernel(m, name);
    ASSERT_NE(k, nullptr);
    for (uint32_t size : {64u, 256u}) {
      SCOPED_TRACE("group size " + std::to_string(size));
      std::vector<Buf> bufs = setup(k, size);
      run(k, kGroups, size);
      for (const Buf& b : bufs) {
        size_t wrong = 0;
        for (size_t i = 0; i < b.want.size(); ++i)
          if (b.dev[i] != b.want[i] && wrong++ < 5)
            ADD_FAILURE() << name << ": " << b.what << "[" << i << "] is " << b.dev[i] << ", expected "
                          << b.want[i];
        EXPECT_EQ(wrong, 0u) << name << ": wrong elements of " << b.what;
      }
    }
  }
  int* buffer(const std::vector<int>& init) {
    auto* p = static_cast<int*>(alloc_shared(init.size() * sizeof(int)));
    if (p) std::copy(init.begin(), init.end(), p);
    return p;
  }
  // mixed_after_last's arguments and results.
  std::vector<Buf> mixed(ze_kernel_handle_t k, uint32_t size) {
    const uint32_t n = kGroups * size;
    std::vector<int> in = data(n, 5), want(n, kUntouched), want2(n, kUntouched);
    for (uint32_t g = 0; g < n; ++g) {
      const uint32_t t = g % size;
      const int v = in[g - t + size - 1 - t];
      if (t & 1) continue;
      want[g] = v * 3;
      if (t & 2) continue;
      want2[g] = v - 5;
    }
    int* out = buffer(std::vector<int>(n, kUntouched));
    int* out2 = buffer(std::vector<int>(n, kUntouched));
    EXPECT_ZE_OK(set_ptr(k, 0, out));
    EXPECT_ZE_OK(set_ptr(k, 1, out2));
    EXPECT_ZE_OK(set_ptr(k, 2, buffer(in)));
    return std::vector<Buf>{{out, want, "out"}, {out2, want2, "out2"}};
  }
};

// early_return.cl built at -O2 and at -O0.
class EarlyReturn : public EarlyReturnRuns, public ::testing::WithParamInterface<const char*> {
 protected:
  void check(const char* name, const Setup& setup) { EarlyReturnRuns::check(GetParam(), name, setup); }
};

TEST_P(EarlyReturn, NeverTakenReturnBeforeABarrier) {
  check("never_taken", [&](ze_kernel_handle_t k, uint32_t size) {
    const uint32_t n = kGroups * size;
    std::vector<int> in = data(n, 1), want(n);
    for (uint32_t g = 0; g < n; ++g) want[g] = in[g - g % size + (g % size + 1) % size] * 2 + 1;
    int* out = buffer(std::vector<int>(n, kUntouched));
    EXPECT_ZE_OK(set_ptr(k, 0, out));
    EXPECT_ZE_OK(set_ptr(k, 1, buffer(in)));
    EXPECT_ZE_OK(set_val(k, 2, n));
    return std::vector<Buf>{{out, want, "out"}};
  });
}

TEST_P(EarlyReturn, ReturnInsideTheFirstWorkItemsBranch) {
  check("first_item", [&](ze_kernel_handle_t k, uint32_t size) {
    const uint32_t n = kGroups * size;
    std::vector<int> in = data(n, 2), base = data(kGroups, 3), want(n);
    for (uint32_t g = 0; g < n; ++g) want[g] = in[g] + base[g / size];
    int* out = buffer(std::vector<int>(n, kUntouched));
    EXPECT_ZE_OK(set_ptr(k, 0, out));
    EXPECT_ZE_OK(set_ptr(k, 1, buffer(in)));
    EXPECT_ZE_OK(set_ptr(k, 2, buffer(base)));
    return std::vector<Buf>{{out, want, "out"}};
  });
}

TEST_P(EarlyReturn, ReturnInsideTheFirstWorkItemsBranchBeforeTwoBarriers) {
  check("first_item_two_barriers", [&](ze_kernel_handle_t k, uint32_t size) {
    const uint32_t n = kGroups * size;
    std::vector<int> in = data(n, 7), base = data(kGroups, 8), want(n);
    for (uint32_t g = 0; g < n; ++g) {
      const uint32_t mirror = g - g % size + size - 1 - g % size;
      want[g] = in[mirror] + base[g / size];
    }
    int* out = buffer(std::vector<int>(n, kUntouched));
    EXPECT_ZE_OK(set_ptr(k, 0, out));
    EXPECT_ZE_OK(set_ptr(k, 1, buffer(in)));
    EXPECT_ZE_OK(set_ptr(k, 2, buffer(base)));
    return std::vector<Buf>{{out, want, "out"}};
  });
}

TEST_P(EarlyReturn, TakenReturnAfterTheLastBarrier) {
  check("after_last", [&](ze_kernel_handle_t k, uint32_t size) {
    const uint32_t items = kGroups * size, n = items - size / 2 - 3;  // the last group is partly past n
    std::vector<int> in = data(items, 4), want(items, kUntouched);
    for (uint32_t g = 0; g < n; ++g) want[g] = in[g - g % size + size - 1 - g % size] + 7;
    int* out = buffer(std::vector<int>(items, kUntouched));
    EXPECT_ZE_OK(set_ptr(k, 0, out));
    EXPECT_ZE_OK(set_ptr(k, 1, buffer(in)));
    EXPECT_ZE_OK(set_val(k, 2, n));
    return std::vector<Buf>{{out, want, "out"}};
  });
}

TEST_P(EarlyReturn, SomeItemsOfEachGroupReturnAfterTheLastBarrierWhileOthersStore) {
  check("mixed_after_last", [&](ze_kernel_handle_t k, uint32_t size) { return mixed(k, size); });
}

// The same kernel with a `ret` at each exit, as SPIR-V producers other than clang (and zex's throw paths)
// write it: kernels/multi_ret.ll, assembled as it is.
TEST_F(EarlyReturnRuns, SeveralReturnsAfterTheLastBarrier) {
  check("multi_ret", "mixed_rets", [&](ze_kernel_handle_t k, uint32_t size) { return mixed(k, size); });
}

TEST_P(EarlyReturn, NeverTakenReturnThenALoopOfBarriersThenATakenReturn) {
  check("loop_barriers", [&](ze_kernel_handle_t k, uint32_t size) {
    const uint32_t n = kGroups * size, iters = 3;
    std::vector<int> in = data(n, 6), tile = in, want(n, kUntouched);
    for (uint32_t i = 0; i < iters; ++i) {
      std::vector<int> next(n);
      for (uint32_t g = 0; g < n; ++g) next[g] = tile[g] + tile[g - g % size + (g % size + 1) % size];
      tile = next;
    }
    for (uint32_t g = 0; g < n; ++g)
      if (g % size < size / 2) want[g] = tile[g];
    int* out = buffer(std::vector<int>(n, kUntouched));
    EXPECT_ZE_OK(set_ptr(k, 0, out));
    EXPECT_ZE_OK(set_ptr(k, 1, buffer(in)));
    EXPECT_ZE_OK(set_val(k, 2, n));
    EXPECT_ZE_OK(set_val(k, 3, iters));
    return std::vector<Buf>{{out, want, "out"}};
  });
}

INSTANTIATE_TEST_SUITE_P(Builds, EarlyReturn, ::testing::Values("early_return", "early_return_o0"),
                         [](const ::testing::TestParamInfo<const char*>& i) {
                           return std::string(i.param) == "early_return" ? std::string("O2") : std::string("O0");
                         });
