// analyze_memory_accesses (src/spirv/passes/memory_accesses.cpp, issue 27): on kernels/memory_shapes.cl
// built -O2, -O0 and -O0 -g, every kernel's global accesses are counted alike — checked when the
// pointer traces to a pointer parameter (at -O0 through the variable clang keeps each parameter in),
// unchecked by reason otherwise — and the analysis changes nothing. Also on every other test module:
// it never throws and never writes.
#include "passes_util.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace {

using passes_test::kernel;
using zex::passes::IRContext;
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
  ASSERT_EQ(k.size(), 9u);

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

}  // namespace
