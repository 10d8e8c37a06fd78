// analyze_memory_accesses (src/spirv/passes/memory_accesses.cpp, issue 27): on kernels/memory_shapes.cl
// built -O2, -O0 and -O0 -g, every kernel's global accesses are counted alike — checked when the
// pointer traces to a pointer parameter (at -O0 through the variable clang keeps each parameter in),
// unchecked by reason otherwise — and the analysis changes nothing. Also on every other test module:
// it never throws and never writes.
#include "passes_util.hpp"

#include <gtest/gtest.h>

#include <zex/abi.h>

#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using passes_test::kernel;
using zex::passes::IRContext;
using zex::passes::KernelMemoryChecks;
using zex::passes::MemoryCheckCounts;
using zex::passes::KernelMemoryAccesses;
using zex::passes::MemoryAccessReport;

std::map<std::string, KernelMemoryAccesses> by_name(const std::vector<KernelMemoryAccesses>& v) {
  std::map<std::string, KernelMemoryAccesses> m;
  for (const auto& k : v) m[k.name] = k;
  return m;
}

class MemoryAccesses : public testing::TestWithParam<const char*> {};

TEST_P(MemoryAccesses, CountsEveryShapeAlikeAtEveryOptimizationLevel) {
  const std::vector<uint32_t> words = kernel(GetParam());
  IRContext ctx = IRContext::from_words(words);
  const MemoryAccessReport r = zex::passes::analyze_memory_accesses(ctx);
  EXPECT_EQ(ctx.words(), words) << "the analysis wrote the module";
  auto k = by_name(r.kernels);
  ASSERT_EQ(k.size(), 11u);
  EXPECT_EQ(k["bump"].checked, 2u) << "the read and the write";

  EXPECT_EQ(k["stencil"].checked, 4u);
  EXPECT_EQ(k["stencil"].checked_params, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(k["stencil"].loaded + k["stencil"].other + k["stencil"].helper, 0u);

  EXPECT_EQ(k["loaded"].checked, 2u) << "table[0] and x[0]";
  EXPECT_EQ(k["loaded"].loaded, 1u) << "the store through the pointer read from the table";
  EXPECT_EQ(k["loaded"].checked_params, (std::vector<uint32_t>{0, 1}));

  EXPECT_EQ(k["from_integer"].from_integer, 1u);
  EXPECT_EQ(k["from_integer"].checked, 0u);
  EXPECT_TRUE(k["from_integer"].checked_params.empty());

  EXPECT_EQ(k["atomics"].checked, 1u);

  EXPECT_EQ(k["select_same"].checked, 1u);
  EXPECT_EQ(k["select_same"].other, 0u);
  EXPECT_EQ(k["select_two"].checked, 0u);
  EXPECT_EQ(k["select_two"].other, 1u) << "a choice between two parameters";

  EXPECT_EQ(k["walk"].checked, 1u) << "a pointer walked by a loop";
  EXPECT_EQ(k["walk"].other, 0u);

  EXPECT_EQ(k["local_copy"].checked, 1u);
  EXPECT_EQ(k["local_copy"].local, 2u) << "the store and the load of tmp";
  EXPECT_EQ(k["local_copy"].checked_params, (std::vector<uint32_t>{0}));
  EXPECT_EQ(k["local_tile"].local, 3u) << "the static array's store and two loads";
  EXPECT_EQ(k["local_tile"].checked, 1u);

  // The helper keeps its function (noinline): its store is checked through the call, with the kernel's
  // parameter 0; on its own the helper's access is through its parameter.
  EXPECT_EQ(k["calls_helper"].checked, 1u);
  EXPECT_EQ(k["calls_helper"].checked_params, (std::vector<uint32_t>{0}));
  auto h = by_name(r.helpers);
  ASSERT_TRUE(h.count("put"));
  EXPECT_EQ(h["put"].helper, 1u);
}

INSTANTIATE_TEST_SUITE_P(Builds, MemoryAccesses, testing::Values("memory_shapes_O2", "memory_shapes_O0", "memory_shapes_O0g"),
                         [](const testing::TestParamInfo<const char*>& i) { return std::string(i.param).substr(14); });

TEST(MemoryAccessesEverywhere, NeverThrowsNorWrites) {
  for (const auto& e : std::filesystem::directory_iterator(ZEX_PASSES_KERNELS)) {
    if (e.path().extension() != ".spv") continue;
    const std::vector<uint32_t> words = kernel(e.path().stem().string());
    IRContext ctx = IRContext::from_words(words);
    EXPECT_NO_THROW(zex::passes::analyze_memory_accesses(ctx)) << e.path();
    EXPECT_EQ(ctx.words(), words) << e.path();
  }
}

// add_memory_checks (memory_checks.cpp): the parameters each kernel now takes, one zex_throw per checked
// access, a valid module, and, through zex's whole link (numbering, strings, merge, validation), one
// numbered OutOfBoundsAccess site per checked access naming the argument, with lines under -g.
class MemoryChecks : public testing::TestWithParam<const char*> {};
class AssertThrows : public testing::TestWithParam<const char*> {};

std::map<std::string, KernelMemoryChecks> checks_by_name(const std::vector<KernelMemoryChecks>& v) {
  std::map<std::string, KernelMemoryChecks> m;
  for (const auto& k : v) m[k.name] = k;
  return m;
}

TEST_P(MemoryChecks, EveryTracedAccessGetsACheckAndTheLinkNumbersThem) {
  const std::vector<uint32_t> words = kernel(GetParam());
  IRContext ctx = IRContext::from_words(words);
  std::vector<KernelMemoryChecks> kernels;
  MemoryCheckCounts counts;
  ASSERT_EQ(zex::passes::add_memory_checks(ctx, &kernels, &counts), zex::passes::Status::Changed);
  auto k = checks_by_name(kernels);
  ASSERT_EQ(k.size(), 11u);
  EXPECT_EQ(counts.checked, 19u) << "local_tile: its out and the three accesses of its static __local array; "
                                   "local_copy: the two through its __local parameter";
  EXPECT_EQ(counts.local, 0u) << "every __local access is checked";
  // bump's write, covered by its read's check; at -O2 also local_tile's second tile[l] (one pointer id
  // for both; -O0 computes it twice and checks it twice).
  // At -O2 stencil's in[i - 1], in[i], in[i + 1] are one group (one base, one index moved by constants):
  // the first one's check covers all three, so two need none of their own. -O0 loads `in` anew for each.
  const bool o2 = std::string(GetParam()) == "memory_shapes_O2";
  const size_t grouped = o2 ? 2 : 0;
  ASSERT_GE(counts.merged, 1u + grouped);
  const size_t tile_merged = counts.merged - 1 - grouped;
  EXPECT_LE(tile_merged, 1u);
  EXPECT_EQ(kernels.front().name, "stencil") << "module order";
  EXPECT_EQ(k["stencil"].user_params, 3u);
  EXPECT_EQ(k["stencil"].bounded, (std::vector<uint32_t>{0, 1}));
  EXPECT_TRUE(k["stencil"].state_added);
  EXPECT_EQ(k["from_integer"].bounded, std::vector<uint32_t>{}) << "nothing to bound, yet a state to launch with";
  EXPECT_TRUE(k["from_integer"].state_added);
  EXPECT_EQ(k["loaded"].bounded, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(k["select_two"].bounded, std::vector<uint32_t>{});
  EXPECT_EQ(k["local_copy"].bounded, (std::vector<uint32_t>{0, 1})) << "the __local pointer is bounded too";
  EXPECT_EQ(k["local_copy"].local, (std::vector<uint32_t>{1})) << "by the launch's size";
  EXPECT_EQ(k["stencil"].local, std::vector<uint32_t>{});
  EXPECT_EQ(k["calls_helper"].bounded, (std::vector<uint32_t>{0})) << "bounds passed on to the helper";

  // Every kernel takes its state last; stencil: out, in, n, the bounds struct (base/end of out and of
  // in), state.
  const std::vector<uint32_t> checked = ctx.words();
  const auto kinds = zex::passes::kernel_param_kinds(zex::passes::parse(checked));
  EXPECT_EQ(kinds.at("stencil").size(), 3u + 1u + 1u);
  EXPECT_TRUE(zex::passes::kernels_without_state(zex::passes::parse(checked)).empty());
  // One throw per checked access: stencil 4, loaded 2, atomics 1, select_same 1, walk 1, local_copy 3, put 1,
  // bump 1 (its read; the write is covered), local_tile 3.
  EXPECT_EQ(passes_test::count_calls(checked, "zex_throw"), 18u - tile_merged);
  // The group's check and its cold chain compute their pointers with OpPtrAccessChain off `in` (not
  // InBounds: they may point outside): the group's least index, then each of the three in program order.
  // No other function's accesses form a group.
  {
    // function name -> OpPtrAccessChains off one of its parameters
    auto chains_of = [](const std::vector<uint32_t>& module) {
      const zex::passes::Module pm = zex::passes::parse(module);
      std::map<std::string, size_t> chains;
      std::map<uint32_t, std::string> names;
      for (const auto& in : pm.insts)
        if (in.opcode == spv::OpName) names[in.word(1)] = in.string_at(2);
      std::string fn;
      std::set<uint32_t> params;
      for (const auto& in : pm.insts) {
        if (in.opcode == spv::OpFunction) fn = names[in.result_id], params.clear();
        if (in.opcode == spv::OpFunctionParameter) params.insert(in.result_id);
        if (in.opcode == spv::OpPtrAccessChain && params.count(in.word(3))) ++chains[fn];
      }
      return chains;
    };
    std::map<std::string, size_t> before = chains_of(words), after = chains_of(checked);
    EXPECT_EQ(after["stencil"] - before["stencil"], o2 ? 1u + 3u : 0u) << "stencil's group: its check and a chain of three";
    for (const auto& c : after) {
      if (c.first == "stencil" || c.first == "local_copy") continue;  // local_copy's: its __local parameter's start
      EXPECT_EQ(c.second, before[c.first]) << c.first << ": no group";
    }
  }
  // local_tile's two accesses go through select(ok, p, the tile's start): a thrower that goes on to the
  // barrier never reads or writes past the tile.
  {
    const zex::passes::Module pm = zex::passes::parse(checked);
    uint32_t tile = 0;
    for (const auto& in : pm.insts)
      if (in.opcode == spv::OpName && in.string_at(2) == "local_tile.tile") tile = in.word(1);
    ASSERT_NE(tile, 0u);
    std::set<uint32_t> starts;
    for (const auto& in : pm.insts)
      if (in.opcode == spv::OpBitcast && in.word(3) == tile) starts.insert(in.result_id);
    size_t selects = 0;
    for (const auto& in : pm.insts)
      if (in.opcode == spv::OpSelect && starts.count(in.word(5))) ++selects;
    size_t through = 0;  // accesses whose pointer is one of those selects
    std::set<uint32_t> selected;
    for (const auto& in : pm.insts)
      if (in.opcode == spv::OpSelect && starts.count(in.word(5))) selected.insert(in.result_id);
    for (const auto& in : pm.insts)
      if ((in.opcode == spv::OpLoad && selected.count(in.word(3))) || (in.opcode == spv::OpStore && selected.count(in.word(1))))
        ++through;
    EXPECT_EQ(selects, 3u - tile_merged) << "the store into the tile and the loads from it, each checked";
    EXPECT_EQ(through, 3u) << "and the second read of tile[l], covered by the store's check";
  }

  // local_copy's two accesses go through select(ok, p, the parameter moved by its relative base): a
  // thrower that goes on to the barrier stays inside what the launch gave.
  {
    const zex::passes::Module pm = zex::passes::parse(checked);
    std::set<uint32_t> tmp, raw, moved, starts;
    for (const auto& in : pm.insts)
      if (in.opcode == spv::OpName && in.string_at(2) == "tmp") tmp.insert(in.word(1));
    ASSERT_FALSE(tmp.empty());
    for (const auto& in : pm.insts) {
      if (in.opcode == spv::OpBitcast && tmp.count(in.word(3))) raw.insert(in.result_id);
      if (in.opcode == spv::OpPtrAccessChain && raw.count(in.word(3))) moved.insert(in.result_id);
      if (in.opcode == spv::OpBitcast && moved.count(in.word(3))) starts.insert(in.result_id);
    }
    size_t selects = 0;
    for (const auto& in : pm.insts)
      if (in.opcode == spv::OpSelect && starts.count(in.word(5))) ++selects;
    EXPECT_EQ(selects, 2u) << "local_copy's store and load through its __local parameter";
  }

  // Through the whole link: valid, and the sites name the argument and the access.
  zex::detail::LinkedModule linked;
  ASSERT_NO_THROW(linked = zex::detail::link_module(checked)) << "the checked module must link and validate";
  std::map<std::string, size_t> reasons;
  for (const auto& site : linked.sites) {
    if (site.name != "OutOfBoundsAccess") continue;
    ++reasons[site.reason];
    EXPECT_EQ(site.value_count, 2u);
    EXPECT_EQ(site.value_kind, ZEX_VALUES_MEMORY);
    ASSERT_FALSE(site.frames.empty());
    if (std::string(GetParam()).find('g') != std::string::npos) {
      EXPECT_GT(site.frames[0].line, 0u) << site.reason << ": -g gives the access's line";
    }
  }
  EXPECT_EQ(reasons["read of argument 'in'"], 3u);
  EXPECT_EQ(reasons["write of argument 'out'"], 1u + 1u + 1u) << "stencil's, local_copy's and local_tile's";
  EXPECT_EQ(reasons["write of __local 'tile'"], 1u) << "local_tile's store into its static array";
  EXPECT_EQ(reasons["read of __local 'tile'"], 2u - tile_merged);
  EXPECT_EQ(reasons["atomic update of argument 'c'"], 1u);
  EXPECT_EQ(reasons["write of argument 'tmp'"], 1u) << "local_copy's store into its __local parameter";
  EXPECT_EQ(reasons["read of argument 'tmp'"], 1u);
  EXPECT_EQ(reasons["read of argument 'a'"], 1u) << "bump";
  EXPECT_EQ(reasons["write of argument 'a'"], 1u) << "select_same's; bump's write needs no check of its own";
  EXPECT_EQ(reasons["write of argument 'p'"], 2u) << "walk's store and put's, through calls_helper";

  // Again: the pass is idempotent on what it adds (states are there; the bounds params are not traced twice
  // because they are integers) — it checks the same accesses once more, never fewer, and stays valid.
  IRContext again = IRContext::from_words(words);
  std::vector<KernelMemoryChecks> none;
  EXPECT_EQ(zex::passes::add_memory_checks(again, nullptr), zex::passes::Status::Changed);
  EXPECT_EQ(again.words(), checked) << "the pass is deterministic";
}

INSTANTIATE_TEST_SUITE_P(Builds, MemoryChecks, testing::Values("memory_shapes_O2", "memory_shapes_O0", "memory_shapes_O0g"),
                         [](const testing::TestParamInfo<const char*>& i) { return std::string(i.param).substr(14); });

// Asserts alone (what every link of a module importing __assert_fail runs): each call a throw, the
// imports defined, only the kernels that reach one given a state; the link numbers the sites.
TEST_P(AssertThrows, EachCallBecomesANumberedAssertionError) {
  const std::vector<uint32_t> words = kernel(GetParam());
  IRContext ctx = IRContext::from_words(words);
  EXPECT_TRUE(zex::passes::imports_assert(ctx));
  std::vector<KernelMemoryChecks> kernels;
  MemoryCheckCounts counts;
  ASSERT_EQ(zex::passes::add_memory_checks(ctx, &kernels, &counts, zex::passes::CheckOptions{false, true}),
            zex::passes::Status::Changed);
  EXPECT_EQ(counts.checked, 0u) << "no memory checks were asked for";
  auto k = checks_by_name(kernels);
  EXPECT_TRUE(k["bounded"].state_added);
  EXPECT_TRUE(k["divide"].state_added) << "its helper asserts";
  EXPECT_FALSE(k["plain"].state_added) << "reaches no assert";
  for (const auto& e : k) EXPECT_TRUE(e.second.bounded.empty()) << e.first;
  const std::vector<uint32_t> out = ctx.words();
  EXPECT_EQ(passes_test::count_calls(out, "__assert_fail"), 0u);
  EXPECT_EQ(passes_test::count_calls(out, "__devicelib_assert_fail"), 0u);
  EXPECT_TRUE(zex::passes::imported_functions(zex::passes::parse(out)).size() >= 1u) << "zex_throw";
  for (const auto& i : zex::passes::imported_functions(zex::passes::parse(out)))
    EXPECT_EQ(i.second.find("assert"), std::string::npos) << i.second << " is still imported";
  EXPECT_EQ(zex::passes::kernels_without_state(zex::passes::parse(out)), std::vector<std::string>{"plain"});

  zex::detail::LinkedModule linked;
  ASSERT_NO_THROW(linked = zex::detail::link_module(words)) << "the link runs the assert rewrite itself";
  std::map<std::string, std::string> function_of;  // reason -> frame function
  for (const auto& site : linked.sites)
    if (site.name == "AssertionError" && !site.frames.empty()) function_of[site.reason] = site.frames[0].function;
  EXPECT_EQ(function_of["i < n"], "bounded");
  EXPECT_EQ(function_of["b != 0"], "checked_div");
  EXPECT_EQ(function_of["x >= 0"], "void sycl_kernel(int *)");
  EXPECT_EQ(function_of["in[i] != 7"], "before_barrier");
}

INSTANTIATE_TEST_SUITE_P(Builds, AssertThrows, testing::Values("asserts_O2", "asserts_O0g"),
                         [](const testing::TestParamInfo<const char*>& i) { return std::string(i.param).substr(8); });

// On every other test module: it declines cleanly or makes a module that links and validates.
TEST(MemoryChecksEverywhere, DeclinesOrLinks) {
  for (const auto& e : std::filesystem::directory_iterator(ZEX_PASSES_KERNELS)) {
    if (e.path().extension() != ".spv") continue;
    SCOPED_TRACE(e.path().string());
    const std::vector<uint32_t> words = kernel(e.path().stem().string());
    IRContext ctx = IRContext::from_words(words);
    zex::passes::Status s = zex::passes::Status::Unchanged;
    try {
      s = zex::passes::add_memory_checks(ctx, nullptr);
    } catch (const std::invalid_argument&) {
      EXPECT_EQ(ctx.words(), words) << "a decline leaves the module as it was";
      continue;
    }
    if (s == zex::passes::Status::Unchanged) {
      EXPECT_EQ(ctx.words(), words);
      continue;
    }
    try {
      zex::detail::link_module(words);
    } catch (const std::exception&) {
      continue;  // a module zex does not link without the pass either (a negative test's input)
    }
    EXPECT_NO_THROW(zex::detail::link_module(ctx.words()));
  }
}

}  // namespace
