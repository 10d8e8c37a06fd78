// The throw-site merge on real modules: clang-15 with and without -g, compiler-style SPIR-V. It keeps
// modules valid (alone and linked), keeps every site's arguments, is idempotent, and leaves one cold
// region per kernel; zex-spirv gives the same bytes as the library.
#include "gather17_lines.hpp"
#include "passes_util.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

using namespace passes_test;

namespace {

// The lines the one zex_report_frame (or zex_throw: the line is the last argument of both) call of a
// merged module receives through its OpPhi, sorted.
std::vector<uint32_t> merged_frame_lines(const Module& m) {
  const auto defs = definitions(m);
  auto frames = calls_to(m, "zex_report_frame");
  if (frames.empty()) frames = calls_to(m, "zex_throw");
  if (frames.size() != 1) return {};
  const Instruction& phi = defs.at(frames[0].words.back());
  if (phi.opcode != spv::OpPhi) return {};
  std::vector<uint32_t> lines;
  for (size_t k = 3; k < phi.size(); k += 2) lines.push_back(constant_value(defs, phi.words[k]));
  std::sort(lines.begin(), lines.end());
  return lines;
}

std::vector<std::vector<uint32_t>> all_site_arguments(const std::vector<uint32_t>& words, const std::string& fn) {
  const Module m = zex::passes::parse(words);
  const auto defs = definitions(m);
  std::vector<std::vector<uint32_t>> out;
  for (const Instruction& c : calls_to(m, fn))
    for (auto& args : site_arguments(defs, c)) out.push_back(args);
  std::sort(out.begin(), out.end());  // as a set: sites with equal arguments need no OpPhi
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct Expect {
  const char* name;
  size_t sites_before, sites_after;
};

// Per module: how many zex_report_exception calls before and after; the module stays valid, alone and
// linked with the device library; every site's arguments survive; a second run changes nothing.
TEST(MergeThrowSites, KeepsModulesValidAndEverySitesArguments) {
  for (const Expect& e : {Expect{"gather17", 17, 1}, Expect{"gather17_g", 17, 1}, Expect{"stencil2d_g", 6, 1},
                          Expect{"abi_sequence", 4, 1}, Expect{"vadd", 1, 1}, Expect{"compiler_style", 1, 1},
                          Expect{"compiler_style_sites", 2, 1}}) {
    SCOPED_TRACE(e.name);
    const auto w = kernel(e.name);
    const auto merged = zex::passes::merge_throw_sites(w);
    EXPECT_EQ(count_throws(w), e.sites_before);
    EXPECT_EQ(count_throws(merged), e.sites_after);
    if (e.sites_before == 1) {
      EXPECT_EQ(merged, w) << "one site, yet the module changed";
    }
    EXPECT_NO_THROW(zex::detail::validate_spirv(merged, "merged"));
    EXPECT_NO_THROW(zex::detail::link_with_device_library(merged));
    EXPECT_EQ(zex::passes::merge_throw_sites(merged), merged) << "a second run changed the module";
    if (std::string(e.name) == "compiler_style_sites") continue;  // its string addresses are computed in the region
    // zex_report_exception_values is left out: its values are computed in the region (conversions of
    // the operands), so a site's arguments are not visible at the merged call (as compiler_style_sites'
    // strings); the frame lines and strings still are.
    for (const char* fn : {"zex_report_exception", "zex_report_frame", "zex_signal_exception"}) {
      EXPECT_EQ(all_site_arguments(merged, fn), all_site_arguments(w, fn)) << fn;
    }
  }
}

TEST(MergeThrowSites, MergesLoopsKindsAndHelpersWithAndWithoutDebugInfo) {
  for (const char* name : {"merge_patterns", "merge_patterns_g"}) {
    SCOPED_TRACE(name);
    const auto w = kernel(name);
    const auto merged = zex::passes::merge_throw_sites(w);
    const size_t before = count_throws(w), after = count_throws(merged);
    EXPECT_GE(before, 4u);
    EXPECT_LT(after, before);
    EXPECT_NO_THROW(zex::detail::link_with_device_library(merged));
    EXPECT_EQ(zex::passes::merge_throw_sites(merged), merged);
  }
  // -g must not change what is merged.
  EXPECT_EQ(count_throws(zex::passes::merge_throw_sites(kernel("merge_patterns_g"))),
            count_throws(zex::passes::merge_throw_sites(kernel("merge_patterns"))));
}

// The 17 sites' lines reach zex_report_frame through one OpPhi; the merged region's own OpLine is the
// first site's, and it carries no DebugValue of the sites it replaced.
TEST(MergeThrowSites, DebugBuildKeepsEachSitesLineThroughThePhi) {
  const Module m = zex::passes::parse(zex::passes::merge_throw_sites(kernel("gather17_g")));
  const auto expected = gather17_lines(ZEX_PASSES_GATHER17_SOURCE);
  ASSERT_EQ(expected.size(), 17u);
  EXPECT_EQ(merged_frame_lines(m), expected);

  const auto reports = calls_to(m, "zex_throw");
  ASSERT_EQ(reports.size(), 1u);
  // The region's own lines ride on its instructions from its label to the report call (with values,
  // the call is preceded by the conversions of its operands, which carry the first line).
  std::vector<uint32_t> own_lines;
  size_t call = 0;
  while (call < m.insts.size() && m.insts[call].result_id != reports[0].result_id) ++call;
  ASSERT_LT(call, m.insts.size());
  size_t start = call;
  while (start > 0 && m.insts[start].opcode != spv::OpLabel) --start;
  for (size_t k = start; k <= call; ++k)
    for (const Instruction& a : m.insts[k].annotations) {
      EXPECT_TRUE(zex::passes::is_line_or_scope(a)) << "a DebugValue/DebugDeclare moved into the merged region";
      if (a.opcode == spv::OpLine && (own_lines.empty() || own_lines.back() != a.words[2])) own_lines.push_back(a.words[2]);
    }
  EXPECT_EQ(own_lines, std::vector<uint32_t>{expected.front()});
}

TEST(MergeThrowSites, CompilerStyleRegionsShareTheirStringAddresses) {
  const Module m = zex::passes::parse(zex::passes::merge_throw_sites(kernel("compiler_style_sites")));
  const auto defs = definitions(m);
  EXPECT_EQ(merged_frame_lines(m), (std::vector<uint32_t>{42, 43}));
  // The reason's address is computed in the region from a per-site variable: an OpPhi of the two.
  const auto reports = calls_to(m, "zex_report_exception");
  ASSERT_EQ(reports.size(), 1u);
  const Instruction& reason = defs.at(reports[0].words[6]);
  EXPECT_EQ(reason.opcode, 70u);  // OpInBoundsPtrAccessChain
  const Instruction& base = defs.at(reason.words[3]);
  ASSERT_EQ(base.opcode, spv::OpPhi);
  EXPECT_EQ(base.size(), 7u);
  EXPECT_NE(base.words[3], base.words[5]);
}

// Sites that must stay apart: the merge leaves them alone.
TEST(MergeThrowSites, DeclinesWhatItDoesNotKnow) {
  Module m = zex::passes::parse(kernel("compiler_style_sites"));
  // A value of the cold region used after it: the second site's report_exception result stored.
  const auto reports = calls_to(m, "zex_report_exception");
  ASSERT_EQ(reports.size(), 2u);
  Module used = m;
  for (Instruction& i : used.insts)
    if (i.opcode == 62 /* OpStore */) i.words[2] = reports[1].result_id;  // stores the claim result
  EXPECT_FALSE(zex::passes::merge_throw_sites(used));
  // No import of a zex function: nothing to merge.
  Module plain = m;
  for (Instruction& i : plain.insts)
    if (i.opcode == spv::OpDecorate && i.size() >= 5 && i.words[2] == 41) i.words.back() = 0;  // Export
  EXPECT_FALSE(zex::passes::merge_throw_sites(plain));
}

// zex-spirv runs the same code as zex::Module.
std::vector<uint32_t> run_cli(const std::string& args, const std::string& out, int* rc) {
  *rc = std::system((std::string(ZEX_SPIRV_CLI) + " " + args + " > /dev/null 2>&1").c_str());
  if (out.empty() || *rc != 0) return {};
  const auto b = read_bytes(out);
  return zex::detail::spirv_words(b.data(), b.size());
}

TEST(ZexSpirvCli, MergeAndLinkGiveWhatTheLibraryGives) {
  const std::string in = std::string(ZEX_PASSES_KERNELS) + "/gather17_g.spv";
  const std::string lib = ZEX_PASSES_DEVICE_SPV;
  const std::string out = ::testing::TempDir() + "zex_spirv_cli_out.spv";
  const auto w = kernel("gather17_g");
  const auto lb = read_bytes(lib);
  const auto library = zex::detail::spirv_words(lb.data(), lb.size());
  int rc = -1;
  EXPECT_EQ(run_cli("merge " + in + " -o " + out, out, &rc), zex::passes::merge_throw_sites(w));
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(run_cli("link " + in + " --library " + lib + " -o " + out, out, &rc),
            zex::detail::link_with_device_library(w, &library));
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(run_cli("link " + in + " -o " + out, out, &rc), zex::detail::link_with_device_library(w));
  const auto unmerged = run_cli("link " + in + " --no-merge --library " + lib + " -o " + out, out, &rc);
  EXPECT_EQ(unmerged, zex::detail::link_with_device_library(w, &library, false));
  EXPECT_GT(count_throws(unmerged), 1u);
  run_cli("validate " + in, "", &rc);
  EXPECT_EQ(rc, 0);
  run_cli("validate " + lib + ".valid", "", &rc);  // not SPIR-V
  EXPECT_NE(rc, 0);
  run_cli("merge " + in, "", &rc);  // no -o
  EXPECT_NE(rc, 0);
}

}  // namespace
