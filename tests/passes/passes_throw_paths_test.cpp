// number_throw_paths (src/spirv/passes/throw_paths.cpp) on tests/kernels/passes/throw_paths.cl built four
// ways: the table's names, reasons and frames (function names always; lines with debug information,
// line 0 without), the ids a helper reached by several paths takes as a hidden parameter, the flag
// check after every call to a function that may throw, and what the pass leaves alone.
#include <gtest/gtest.h>

#include "passes_util.hpp"

#include <set>

namespace {

using namespace passes_test;
using zex::detail::SiteTable;

// Line numbers of the source's ZEXT_LINE_<name> markers.
std::map<std::string, uint32_t> marker_lines() { return passes_test::marker_lines(ZEX_PASSES_THROW_PATHS_SOURCE); }

SiteTable sites_of(const std::string& kernel_name) { return zex::detail::link_module(kernel(kernel_name)).sites; }

std::vector<std::string> functions(const zex::detail::ThrowSite& s) {
  std::vector<std::string> f;
  for (const auto& x : s.frames) f.push_back(x.function);
  return f;
}

const zex::detail::ThrowSite* find_site(const SiteTable& t, const std::string& innermost_caller) {
  for (const auto& s : t)
    if (s.frames.size() > 1 && s.frames[1].function == innermost_caller) return &s;
  return nullptr;
}

TEST(ThrowPaths, EveryPathIsNumberedWithItsFunctions) {
  for (const char* build : {"throw_paths_O2g", "throw_paths_O0g", "throw_paths_O0", "throw_paths_O2ni"}) {
    SCOPED_TRACE(build);
    const SiteTable t = sites_of(build);
    // chain3, shared via_a, shared via_b, value, deep: one path each.
    ASSERT_EQ(t.size(), 5u);
    const auto* chain = find_site(t, "h2");
    ASSERT_NE(chain, nullptr);
    EXPECT_EQ(chain->name, "BoundsError");
    EXPECT_EQ(chain->reason, "Out-of-bounds array access");
    EXPECT_EQ(functions(*chain), (std::vector<std::string>{"h3", "h2", "h1", "chain3"}));
    EXPECT_EQ(chain->depth, 4u);
    const auto* a = find_site(t, "via_a");
    const auto* b = find_site(t, "via_b");
    ASSERT_TRUE(a && b);
    EXPECT_EQ(functions(*a), (std::vector<std::string>{"check_at", "via_a", "shared"}));
    EXPECT_EQ(functions(*b), (std::vector<std::string>{"check_at", "via_b", "shared"}));
    const auto* value = find_site(t, "value");
    ASSERT_NE(value, nullptr);
    EXPECT_EQ(value->reason, "load_checked");
    // 16 of 19 frames: h3, deep0 .. deep15 (deep16 and the kernel cut).
    const auto* deep = find_site(t, "deep0");
    ASSERT_NE(deep, nullptr);
    EXPECT_EQ(deep->depth, 19u);
    ASSERT_EQ(deep->frames.size(), 16u);
    EXPECT_EQ(deep->frames[15].function, "deep14");
  }
}

TEST(ThrowPaths, LinesComeFromDebugInformationOrAreUnknown) {
  const auto lines = marker_lines();
  ASSERT_EQ(lines.size(), 11u);
  for (const char* build : {"throw_paths_O2g", "throw_paths_O0g"}) {
    SCOPED_TRACE(build);
    const SiteTable t = sites_of(build);
    const auto* chain = find_site(t, "h2");
    ASSERT_NE(chain, nullptr);
    ASSERT_EQ(chain->frames.size(), 4u);
    EXPECT_EQ(chain->frames[0].line, lines.at("H3"));
    EXPECT_EQ(chain->frames[1].line, lines.at("H2"));
    EXPECT_EQ(chain->frames[2].line, lines.at("H1"));
    EXPECT_EQ(chain->frames[3].line, lines.at("CHAIN3"));
    for (const auto& f : chain->frames) EXPECT_NE(f.file.find("throw_paths.cl"), std::string::npos) << f.function;
    const auto* a = find_site(t, "via_a");
    const auto* b = find_site(t, "via_b");
    ASSERT_TRUE(a && b);
    EXPECT_EQ(a->frames[0].line, lines.at("CHECK_AT"));
    EXPECT_EQ(a->frames[1].line, lines.at("VIA_A"));
    EXPECT_EQ(a->frames[2].line, lines.at("SHARED_A"));
    EXPECT_EQ(b->frames[1].line, lines.at("VIA_B"));
    EXPECT_EQ(b->frames[2].line, lines.at("SHARED_B"));
    const auto* value = find_site(t, "value");
    ASSERT_NE(value, nullptr);
    EXPECT_EQ(value->frames[0].line, lines.at("LOAD"));
    EXPECT_EQ(value->frames[1].line, lines.at("VALUE"));
  }
  for (const char* build : {"throw_paths_O0", "throw_paths_O2ni"}) {
    SCOPED_TRACE(build);
    const SiteTable t = sites_of(build);
    const auto* chain = find_site(t, "h2");
    ASSERT_NE(chain, nullptr);
    EXPECT_EQ(chain->frames[0].line, lines.at("H3"));  // the throw's own line is always known
    for (size_t k = 1; k < chain->frames.size(); ++k) {
      EXPECT_EQ(chain->frames[k].line, 0u) << chain->frames[k].function;
      EXPECT_TRUE(chain->frames[k].file.empty());
    }
  }
}

// The functions of the module by OpName, with their parameter counts and return types.
struct Fn {
  size_t params = 0;
  uint32_t ret = 0;
};
std::map<std::string, Fn> functions_of(const Module& m) {
  std::map<uint32_t, std::string> names;
  for (const Instruction& i : m.insts)
    if (i.opcode == spv::OpName) names[i.words[1]] = i.string_at(2);
  std::map<std::string, Fn> out;
  Fn* cur = nullptr;
  for (const Instruction& i : m.insts) {
    if (i.opcode == spv::OpFunction) {
      cur = names.count(i.result_id) ? &out[names[i.result_id]] : nullptr;
      if (cur) cur->ret = i.type_id;
    } else if (i.opcode == spv::OpFunctionParameter && cur) {
      ++cur->params;
    } else if (i.opcode != spv::OpFunctionParameter) {
      cur = nullptr;
    }
  }
  return out;
}

TEST(ThrowPaths, SharedHelpersTakeTheirPathAndEveryCallChecksTheFlag) {
  for (const char* build : {"throw_paths_O0", "throw_paths_O2ni"}) {
    SCOPED_TRACE(build);
    Module m = zex::passes::parse(kernel(build));
    const auto before = functions_of(m);
    SiteTable t;
    ASSERT_TRUE(zex::passes::number_throw_paths(m, &t));
    const auto after = functions_of(m);
    // check_at (via_a, via_b) and h3 (h2, deep0) are reached by two paths: one more parameter.
    EXPECT_EQ(after.at("check_at").params, before.at("check_at").params + 1);
    EXPECT_EQ(after.at("h3").params, before.at("h3").params + 1);
    // via_a, h2, h1: one path each, their ids are constants.
    for (const char* f : {"via_a", "via_b", "h2", "h1", "deep16"}) EXPECT_EQ(after.at(f).params, before.at(f).params) << f;
    // Every helper that may throw returns a flag (void -> bool, int -> {int, bool}); kernels keep void.
    for (const char* f : {"h1", "h2", "h3", "check_at", "via_a", "load_checked", "deep0"})
      EXPECT_NE(after.at(f).ret, before.at(f).ret) << f;
    // Each call of a function that returns the flag is followed by a branch on it.
    const auto defs = definitions(m);
    std::set<uint32_t> flagged;
    for (auto& [name, fn] : after)
      if (fn.ret != before.at(name).ret)
        for (const Instruction& i : m.insts)
          if (i.opcode == spv::OpName && i.string_at(2) == name) flagged.insert(i.words[1]);
    size_t calls = 0;
    for (size_t k = 0; k + 1 < m.insts.size(); ++k) {
      const Instruction& c = m.insts[k];
      if (c.opcode != spv::OpFunctionCall || !flagged.count(c.word(3))) continue;
      ++calls;
      size_t j = k + 1;
      while (j < m.insts.size() && m.insts[j].opcode == 81 /* OpCompositeExtract */) ++j;
      ASSERT_LT(j, m.insts.size());
      EXPECT_EQ(m.insts[j].opcode, spv::OpBranchConditional) << "call %" << c.result_id;
    }
    EXPECT_GE(calls, 20u);
    // The module is valid, before and after the link.
    const auto words = zex::passes::to_words(m);
    EXPECT_NO_THROW(zex::detail::validate_spirv(words, "numbered"));
    // Every zex_throw was numbered: none is left to pass strings.
    EXPECT_EQ(count_calls(words, "zex_throw"), 0u);
  }
}

TEST(ThrowPaths, LeavesModulesWithoutThrowsAndCompilerStyleSitesAlone) {
  // Kernels that call the entry points themselves and return after the throw, no helper: unchanged.
  {
    Module m = zex::passes::parse(kernel("compiler_style_sites"));
    SiteTable t;
    EXPECT_FALSE(zex::passes::number_throw_paths(m, &t));
    EXPECT_TRUE(t.empty());
  }
  // The three-call protocol (a compiler calling the entry points with its own strings): not numbered,
  // strings by address as before; the module still links and validates.
  for (const char* name : {"compiler_style_sites", "abi_sequence"}) {
    SCOPED_TRACE(name);
    const auto linked = zex::detail::link_module(kernel(name));
    EXPECT_TRUE(linked.sites.empty());
    EXPECT_GE(count_calls(linked.words, "zex_report_frame") + count_calls(linked.words, "zex_signal_exception"), 1u);
  }
}

TEST(ThrowPaths, KernelsWithThrowsAreNumberedInTheirOwnModules) {
  // Bench's vadd and gather17 (every site in the kernel): one id per site, constants, a 1-frame chain.
  const SiteTable v = sites_of("vadd");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].frames.size(), 1u);
  EXPECT_EQ(v[0].frames[0].function, "vadd");
  const SiteTable g = sites_of("gather17_g");
  EXPECT_EQ(g.size(), 17u);
  for (const auto& s : g) EXPECT_EQ(functions(s), std::vector<std::string>{"gather17"});
}

// A struct returned by `sret` (throw_ret.cl's make, kept a call by -O0 or noinline): once the helper
// returns the flag, its pointer parameter is no longer an sret one, which LLVM allows only on void
// functions (zex-cpu aborted on -g builds with "Invalid struct return type!").
TEST(ThrowPaths, AnSretHelperThatReturnsTheFlagLosesItsSretAttribute) {
  auto srets = [](const Module& m) {
    size_t n = 0;
    for (const Instruction& i : m.insts)
      n += i.opcode == spv::OpDecorate && i.size() == 4 && i.words[2] == spv::DecorationFuncParamAttr && i.words[3] == spv::FunctionParameterAttributeSret;
    return n;
  };
  for (const char* build : {"throw_ret_O0g", "throw_ret_O0", "throw_ret_O2gni"}) {
    SCOPED_TRACE(build);
    Module m = zex::passes::parse(kernel(build));
    ASSERT_EQ(srets(m), 1u);
    const auto before = functions_of(m);
    SiteTable t;
    ASSERT_TRUE(zex::passes::number_throw_paths(m, &t));
    EXPECT_NE(functions_of(m).at("make").ret, before.at("make").ret);
    EXPECT_EQ(srets(m), 0u);
    EXPECT_NO_THROW(zex::detail::validate_spirv(zex::passes::to_words(m), "numbered"));
  }
}

// A kernel that another kernel calls (kernel_calls_kernel.cl, -O0): the pass used to leave the whole
// module alone. The call goes to a copy of the kernel (`__zex_call_inner`), a helper that returns the
// flag; the kernel itself keeps its type, and every kernel's path is numbered with its frames.
TEST(ThrowPaths, AKernelCalledAsAFunctionIsCalledThroughACopy) {
  for (const char* build : {"kernel_calls_kernel_O0", "kernel_calls_kernel_O0g"}) {
    SCOPED_TRACE(build);
    Module m = zex::passes::parse(kernel(build));
    const auto before = functions_of(m);
    SiteTable t;
    ASSERT_TRUE(zex::passes::number_throw_paths(m, &t));
    const auto after = functions_of(m);
    EXPECT_EQ(after.at("inner").ret, before.at("inner").ret);
    ASSERT_EQ(after.count("__zex_call_inner"), 1u);
    EXPECT_NE(after.at("__zex_call_inner").ret, before.at("inner").ret);
    EXPECT_EQ(after.at("__zex_call_inner").params, before.at("inner").params);
    std::set<std::vector<std::string>> paths;
    for (const auto& s : t) paths.insert(functions(s));
    EXPECT_EQ(paths, (std::set<std::vector<std::string>>{
                         {"check", "inner"}, {"check", "inner", "outer"}, {"check", "other"}}));
    EXPECT_NO_THROW(zex::detail::validate_spirv(zex::passes::to_words(m), "numbered"));
  }
}

// Throw sites clang merged into one zex_throw (merged_sites.cl, -O2): a line that is an OpPhi of two
// constants is two sites, a reason that is an OpSelect of two strings two more; none is left unnumbered.
TEST(ThrowPaths, MergedSitesAreNumberedOneSiteEach) {
  const auto lines = passes_test::marker_lines(std::string(ZEX_PASSES_KERNELS_SOURCE) + "/merged_sites.cl");
  for (const char* build : {"merged_sites", "merged_sites_g"}) {
    SCOPED_TRACE(build);
    const auto linked = zex::detail::link_module(kernel(build));
    EXPECT_EQ(count_calls(linked.words, "zex_throw"), 0u);
    std::set<std::pair<std::string, uint32_t>> sites;
    for (const auto& s : linked.sites) {
      ASSERT_FALSE(s.frames.empty());
      sites.insert({s.reason, s.frames[0].line});
    }
    EXPECT_EQ(sites, (std::set<std::pair<std::string, uint32_t>>{{"Out-of-bounds array access", lines.at("FIRST")},
                                                                 {"Out-of-bounds array access", lines.at("SECOND")},
                                                                 {"which is set", lines.at("PICK")},
                                                                 {"which is clear", lines.at("PICK")}}));
    EXPECT_EQ(linked.sites.size(), 4u);
  }
}

// A check clang -O2 threaded into another's cold block (check_twice.cl): one block called zex_throw,
// stored, and called zex_throw again. Every call that completes a throw now ends its block.
TEST(ThrowPaths, TheCallThatCompletesAThrowEndsItsBlock) {
  for (const char* build : {"check_twice", "check_twice_g"}) {
    SCOPED_TRACE(build);
    Module m = zex::passes::parse(kernel(build));
    SiteTable t;
    ASSERT_TRUE(zex::passes::number_throw_paths(m, &t));
    std::set<uint32_t> throws;
    for (const char* name : {"zex_throw", "zex_throw_site"})
      for (uint32_t id : functions_named(m, name)) throws.insert(id);
    size_t calls = 0;
    for (size_t k = 0; k + 1 < m.insts.size(); ++k)
      if (m.insts[k].opcode == spv::OpFunctionCall && throws.count(m.insts[k].word(3))) {
        ++calls;
        EXPECT_TRUE(zex::passes::is_terminator(m.insts[k + 1].opcode)) << "call %" << m.insts[k].result_id;
      }
    EXPECT_GE(calls, 4u);
    EXPECT_NO_THROW(zex::detail::validate_spirv(zex::passes::to_words(m), "numbered"));
  }
}

}  // namespace
