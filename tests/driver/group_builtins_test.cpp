// The sub-group and work-group builtins zex-cpu supplies (driver/compiler/group_builtins.cl), through
// the loader: every reduction and scan, inclusive and exclusive, for each type, on known inputs
// (kernels/group_ops.cl). Sub-groups have one work-item, so an exclusive scan must give the operation's
// identity: 1 for mul, all ones for and, the type's maximum for min. Work-group results are checked
// against the same fold done here.
#include "l0_fixture.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace {

enum class Op { Add, Mul, Min, Max, And, Or, Xor, LogicalAnd, LogicalOr, LogicalXor };
enum class Kind { Reduce, Inclusive, Exclusive };

const char* op_name(Op op) {
  static const char* const names[] = {"add", "mul", "min", "max", "and", "or", "xor",
                                      "logical_and", "logical_or", "logical_xor"};
  return names[static_cast<int>(op)];
}
const char* kind_name(Kind k) {
  static const char* const names[] = {"reduce", "scan_inclusive", "scan_exclusive"};
  return names[static_cast<int>(k)];
}

template <typename T>
T identity(Op op) {
  switch (op) {
    case Op::Mul: return T(1);
    case Op::Min: return std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    case Op::Max:
      return std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
    case Op::LogicalAnd: return T(1);
    case Op::And:
      if constexpr (std::is_integral_v<T>) return static_cast<T>(~T(0));
      return T(0);
    default: return T(0);  // add, or, xor, logical or/xor
  }
}

template <typename T>
T apply(Op op, T a, T b) {
  switch (op) {
    case Op::Add: return T(a + b);
    case Op::Mul: return T(a * b);
    case Op::Min: return b < a ? b : a;
    case Op::Max: return a < b ? b : a;
    case Op::LogicalAnd: return T((a != 0) && (b != 0));
    case Op::LogicalOr: return T((a != 0) || (b != 0));
    case Op::LogicalXor: return T((a != 0) != (b != 0));
    default: break;
  }
  if constexpr (std::is_integral_v<T>) {
    if (op == Op::And) return T(a & b);
    if (op == Op::Or) return T(a | b);
    if (op == Op::Xor) return T(a ^ b);
  }
  return a;
}

constexpr uint32_t kStride = 32;  // STRIDE in group_ops.cl
constexpr uint32_t kGroups = 4, kGroupSize = 16, kItems = kGroups * kGroupSize;

// Inputs with negative, zero and repeated values (positive ones for unsigned types).
template <typename T>
std::vector<T> inputs() {
  std::vector<T> v(kItems);
  for (uint32_t i = 0; i < kItems; ++i) {
    int x = int((i * 37) % 19) - 9;
    v[i] = std::is_signed_v<T> ? T(x) : T(x + 10);
  }
  return v;
}

class GroupBuiltins : public L0Test {
 protected:
  // Runs `kernel` of group_ops.cl on inputs<T>() and returns its kStride outputs per work-item.
  template <typename T>
  std::vector<T> run_ops(const char* name, const std::vector<T>& in) {
    ze_kernel_handle_t k = kernel(module("group_ops"), name);
    if (!k) return {};
    auto* a = static_cast<T*>(alloc_shared(kItems * sizeof(T)));
    auto* out = static_cast<T*>(alloc_shared(kItems * kStride * sizeof(T)));
    for (uint32_t i = 0; i < kItems; ++i) a[i] = in[i];
    EXPECT_ZE(ZE_RESULT_SUCCESS, set_ptr(k, 0, a));
    EXPECT_ZE(ZE_RESULT_SUCCESS, set_ptr(k, 1, out));
    run(k, kGroups, kGroupSize);
    return std::vector<T>(out, out + kItems * kStride);
  }

  // Sub-groups of one work-item: reduce and inclusive scan give the value (logical ops: whether it is
  // non-zero), exclusive scan the identity.
  template <typename T>
  void check_sub_group(const char* name, const std::vector<Op>& ops) {
    std::vector<T> in = inputs<T>();
    std::vector<T> out = run_ops<T>(name, in);
    ASSERT_EQ(out.size(), size_t(kItems) * kStride);
    for (uint32_t i = 0; i < kItems; ++i) {
      uint32_t slot = 0;
      for (Op op : ops)
        for (Kind kind : {Kind::Reduce, Kind::Inclusive, Kind::Exclusive}) {
          const bool logical = op >= Op::LogicalAnd;
          T one = logical ? T(in[i] != 0) : in[i];
          T want = kind == Kind::Exclusive ? identity<T>(op) : one;
          ASSERT_EQ(out[i * kStride + slot], want)
              << name << ": sub_group_..." << kind_name(kind) << "_" << op_name(op) << "(" << +in[i] << ")";
          ++slot;
        }
    }
  }

  // Work-groups: the fold over the group, over the work-items before (exclusive) or up to (inclusive).
  template <typename T>
  void check_work_group(const char* name) {
    std::vector<T> in = inputs<T>();
    std::vector<T> out = run_ops<T>(name, in);
    ASSERT_EQ(out.size(), size_t(kItems) * kStride);
    for (uint32_t i = 0; i < kItems; ++i) {
      const uint32_t first = i - i % kGroupSize, last = first + kGroupSize;
      uint32_t slot = 0;
      for (Op op : {Op::Add, Op::Min, Op::Max})
        for (Kind kind : {Kind::Reduce, Kind::Inclusive, Kind::Exclusive}) {
          const uint32_t end = kind == Kind::Reduce ? last : kind == Kind::Inclusive ? i + 1 : i;
          T want = identity<T>(op);
          for (uint32_t j = first; j < end; ++j) want = apply(op, want, in[j]);
          ASSERT_EQ(out[i * kStride + slot], want)
              << name << ": work_group_" << kind_name(kind) << "_" << op_name(op) << ", work-item " << i;
          ++slot;
        }
    }
  }
};

const std::vector<Op> kIntOps = {Op::Add, Op::Min, Op::Max, Op::Add, Op::Mul, Op::Min, Op::Max,
                                 Op::And, Op::Or,  Op::Xor};
const std::vector<Op> kFloatOps = {Op::Add, Op::Min, Op::Max, Op::Add, Op::Mul, Op::Min, Op::Max};

}  // namespace

TEST_F(GroupBuiltins, SubGroupInt) { check_sub_group<int32_t>("sg_int", kIntOps); }
TEST_F(GroupBuiltins, SubGroupUint) { check_sub_group<uint32_t>("sg_uint", kIntOps); }
TEST_F(GroupBuiltins, SubGroupLong) { check_sub_group<int64_t>("sg_long", kIntOps); }
TEST_F(GroupBuiltins, SubGroupUlong) { check_sub_group<uint64_t>("sg_ulong", kIntOps); }
TEST_F(GroupBuiltins, SubGroupFloat) { check_sub_group<float>("sg_float", kFloatOps); }
TEST_F(GroupBuiltins, SubGroupDouble) { check_sub_group<double>("sg_double", kFloatOps); }
TEST_F(GroupBuiltins, SubGroupLogical) {
  check_sub_group<int32_t>("sg_logical", {Op::LogicalAnd, Op::LogicalOr, Op::LogicalXor});
}

// The two values the issue named: exclusive mul of 3 is 1, exclusive and of 6 is all ones.
TEST_F(GroupBuiltins, SubGroupExclusiveIdentitiesNamedInTheIssue) {
  std::vector<int32_t> in(kItems, 3);
  std::vector<int32_t> out = run_ops<int32_t>("sg_int", in);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out[3 * 4 + 2], 1) << "sub_group_non_uniform_scan_exclusive_mul(3)";
  in.assign(kItems, 6);
  out = run_ops<int32_t>("sg_int", in);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out[3 * 7 + 2], -1) << "sub_group_non_uniform_scan_exclusive_and(6)";
}

TEST_F(GroupBuiltins, WorkGroupInt) { check_work_group<int32_t>("wg_int"); }
TEST_F(GroupBuiltins, WorkGroupUint) { check_work_group<uint32_t>("wg_uint"); }
TEST_F(GroupBuiltins, WorkGroupLong) { check_work_group<int64_t>("wg_long"); }
TEST_F(GroupBuiltins, WorkGroupUlong) { check_work_group<uint64_t>("wg_ulong"); }
TEST_F(GroupBuiltins, WorkGroupFloat) { check_work_group<float>("wg_float"); }
TEST_F(GroupBuiltins, WorkGroupDouble) { check_work_group<double>("wg_double"); }
