// The IR context (src/spirv/context.hpp): its analyses agree with the module, are rebuilt after a pass
// reports a change, and a pass's Status says whether the words changed.
#include "passes_util.hpp"

#include "spirv/context.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

using namespace passes_test;
using zex::passes::IRContext;
using zex::passes::Status;

namespace {

TEST(PassContext, AnalysesAgreeWithTheModule) {
  IRContext ctx = IRContext::from_words(kernel("gather17_g"));
  const Module& m = ctx.module();
  size_t defs = 0, names = 0, decorations = 0;
  for (size_t k = 0; k < m.insts.size(); ++k) {
    const Instruction& i = m.insts[k];
    if (i.result_id) {
      ++defs;
      EXPECT_EQ(ctx.def_index(i.result_id), k);
      EXPECT_EQ(ctx.def(i.result_id), &i);
    }
    if (i.opcode == spv::OpName) {
      ++names;
      const auto& n = ctx.names(i.word(1));
      EXPECT_NE(std::find(n.begin(), n.end(), i.string_at(2)), n.end());
    }
    if (i.opcode == spv::OpDecorate) {
      ++decorations;
      const auto& d = ctx.decorations(i.word(1));
      EXPECT_NE(std::find(d.begin(), d.end(), k), d.end());
    }
  }
  EXPECT_GT(defs, 0u);
  EXPECT_GT(names, 0u);
  EXPECT_GT(decorations, 0u);
  EXPECT_EQ(ctx.def(0), nullptr);
  EXPECT_EQ(ctx.def_index(ctx.bound()), IRContext::npos);
  EXPECT_TRUE(ctx.names(ctx.bound()).empty());
  EXPECT_EQ(ctx.imports(), zex::passes::imported_functions(m));
  EXPECT_FALSE(ctx.imports().empty());  // the zex entry points the kernel calls

  size_t kernels = 0;
  for (const auto& f : ctx.functions()) {
    EXPECT_EQ(m.insts[f.first].opcode, spv::OpFunction);
    EXPECT_EQ(m.insts[f.last].opcode, spv::OpFunctionEnd);
    EXPECT_EQ(m.insts[f.first].result_id, f.id);
    EXPECT_EQ(f.defined, !ctx.imports().count(f.id));
    kernels += ctx.is_entry_point(f.id);
  }
  EXPECT_EQ(kernels, zex::passes::kernel_names(m).size());
}

TEST(PassContext, NewIdsComeFromTheBound) {
  IRContext ctx = IRContext::from_words(kernel("gather17"));
  const uint32_t bound = ctx.bound();
  EXPECT_EQ(ctx.take_id(), bound);
  EXPECT_EQ(ctx.take_id(), bound + 1);
  EXPECT_EQ(ctx.module().header[3], bound + 2);
}

TEST(PassContext, AChangeDropsTheAnalyses) {
  IRContext ctx = IRContext::from_words(kernel("gather17"));
  // A pass that moves instructions: the first instruction with a result goes to the end.
  size_t k = 0;
  while (!ctx.module().insts[k].result_id) ++k;
  const uint32_t id = ctx.module().insts[k].result_id;
  EXPECT_EQ(ctx.def_index(id), k);
  auto moved = [&](IRContext& c) {
    auto& insts = c.module().insts;
    Instruction i = insts[k];
    insts.erase(insts.begin() + static_cast<std::ptrdiff_t>(k));
    insts.push_back(i);
    return Status::Changed;
  };
  EXPECT_EQ(ctx.record(moved(ctx)), Status::Changed);
  EXPECT_EQ(ctx.def_index(id), ctx.module().insts.size() - 1);
  // Unchanged keeps them (and they are still right).
  EXPECT_EQ(ctx.record(Status::Unchanged), Status::Unchanged);
  EXPECT_EQ(ctx.def_index(id), ctx.module().insts.size() - 1);
}

TEST(PassContext, StatusSaysWhetherTheWordsChanged) {
  // The throw-path pass changes gather17 (its throw sites get ids).
  IRContext ctx = IRContext::from_words(kernel("gather17"));
  const std::vector<uint32_t> before = ctx.words();
  zex::detail::SiteTable sites;
  EXPECT_EQ(ctx.record(zex::passes::number_throw_paths(ctx, &sites)), Status::Changed);
  EXPECT_NE(ctx.words(), before);
  EXPECT_FALSE(sites.empty());
  // Block order on an ordered module: unchanged, and the words are the same.
  const std::vector<uint32_t> numbered = ctx.words();
  EXPECT_EQ(ctx.record(zex::passes::order_blocks(ctx)), Status::Unchanged);
  EXPECT_EQ(ctx.words(), numbered);
}

TEST(PassContext, RunOnModuleGivesTheModuleBackAlsoOnAThrow) {
  Module m = zex::passes::parse(kernel("gather17"));
  const size_t n = m.insts.size();
  EXPECT_THROW(zex::passes::run_on_module(m, [](IRContext&) -> Status { throw std::invalid_argument("declined"); }),
               std::invalid_argument);
  EXPECT_EQ(m.insts.size(), n);
  EXPECT_FALSE(zex::passes::run_on_module(m, [](IRContext&) { return Status::Unchanged; }));
  EXPECT_EQ(m.insts.size(), n);
}

}  // namespace
