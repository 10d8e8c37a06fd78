// The pass layer itself (src/spirv/passes/): the parsed module, validation with debug information set aside,
// and what every pass does with truncated, corrupted and garbage input (a value or
// std::invalid_argument; never another exception, never a crash).
#include "passes_util.hpp"

#include <spirv-tools/libspirv.hpp>

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <typeinfo>

using namespace passes_test;

namespace {

const char* const kModules[] = {"gather17", "gather17_g", "stencil2d_g", "vadd", "merge_patterns", "merge_patterns_g",
                                "abi_sequence", "abi_calls", "compiler_style", "compiler_style_sites"};

TEST(PassIR, ParseThenWriteGivesBackTheSameWords) {
  for (const char* name : kModules) {
    SCOPED_TRACE(name);
    const auto w = kernel(name);
    EXPECT_EQ(zex::passes::to_words(zex::passes::parse(w)), w);
  }
}

TEST(PassIR, LinesAndDebugInstructionsRideOnTheirInstruction) {
  const Module m = zex::passes::parse(kernel("gather17_g"));
  size_t annotated = 0, lines = 0, scopes = 0;
  for (const Instruction& i : m.insts) {
    EXPECT_FALSE(zex::passes::is_annotation(i)) << "opcode " << i.opcode << " left at the top level";
    annotated += !i.annotations.empty();
    for (const Instruction& a : i.annotations) {
      lines += a.opcode == spv::OpLine;
      scopes += zex::passes::is_line_or_scope(a) && a.opcode == spv::OpExtInst;
    }
  }
  EXPECT_GT(annotated, 17u);
  EXPECT_GE(lines, 17u);
  EXPECT_GE(scopes, 17u);
  // Operand types are known: the call's callee and arguments are <id>s, its type and result are not uses.
  const auto calls = calls_to(m, "zex_throw");
  ASSERT_EQ(calls.size(), 17u);
  EXPECT_EQ(calls[0].used_ids().size(), 12u);  // result type, callee, 10 arguments
  EXPECT_EQ(calls[0].used_ids()[1], calls[0].words[3]);
}

TEST(PassIR, MalformedBinariesAreInvalidArguments) {
  auto w = kernel("gather17");
  EXPECT_THROW(zex::passes::parse({}), std::invalid_argument);
  EXPECT_THROW(zex::passes::parse({0x07230203u, 0x00010400u}), std::invalid_argument);
  auto cut = w;
  cut.push_back((5u << 16) | spv::OpFunction);  // an OpFunction of 5 words, cut after its first
  EXPECT_THROW(zex::passes::parse(cut), std::invalid_argument);
  auto zero = w;
  zero[5] = 0;  // an instruction of word count 0
  EXPECT_THROW(zex::passes::parse(zero), std::invalid_argument);
}

// What the validator sees: llvm-spirv-15 -g output as it is fails SPIRV-Tools' validator (a forward
// reference in DebugTypeMember); zex checks it with the debug information set aside, and still refuses
// a real error in such a module.
TEST(PassValidation, DebugInformationIsSetAsideButTheRestIsChecked) {
  const auto g = kernel("gather17_g");
  EXPECT_NO_THROW(zex::detail::validate_spirv(g, "gather17 -g"));
  Module m = zex::passes::parse(g);
  EXPECT_GT(zex::passes::strip_debug_info(m), 100u);
  for (const Instruction& i : m.insts) {
    EXPECT_FALSE(i.debug);
    for (const Instruction& a : i.annotations) EXPECT_FALSE(a.debug);
  }
  spvtools::SpirvTools tools(SPV_ENV_UNIVERSAL_1_4);
  EXPECT_TRUE(tools.Validate(zex::passes::to_words(m)));

  // A non-debug error: the kernel's OpEntryPoint names a function that does not exist.
  Module bad = zex::passes::parse(g);
  for (Instruction& i : bad.insts)
    if (i.opcode == spv::OpEntryPoint) i.words[2] = bad.header[3] + 7;
  EXPECT_THROW(zex::detail::validate_spirv(zex::passes::to_words(bad), "broken"), std::invalid_argument);
}

TEST(PassKernelNames, ListsTheEntryPoints) {
  EXPECT_EQ(zex::detail::spirv_kernel_names(kernel("gather17_g")), std::vector<std::string>{"gather17"});
  EXPECT_EQ(zex::detail::spirv_kernel_names(kernel("compiler_style_sites")),
            std::vector<std::string>{"checked_store"});
  EXPECT_THROW(zex::detail::spirv_kernel_names({0x07230203u, 0x00010400u, 0, 9}), std::invalid_argument);
}

TEST(PassBuiltins, OneVariablePerBuiltInAfterLinking) {
  for (const char* name : {"gather17", "gather17_g"}) {
    SCOPED_TRACE(name);
    const auto linked = zex::detail::link_with_device_library(kernel(name));
    std::map<uint32_t, int> per_builtin;
    const Module m = zex::passes::parse(linked);
    for (const Instruction& i : m.insts)
      if (i.opcode == spv::OpDecorate && i.size() == 4 && i.words[2] == spv::DecorationBuiltIn) ++per_builtin[i.words[3]];
    ASSERT_FALSE(per_builtin.empty());
    for (auto& [b, n] : per_builtin) EXPECT_EQ(n, 1) << "built-in " << b;
    // And the pass has nothing left to do on its own output.
    EXPECT_EQ(zex::passes::merge_duplicate_builtins(linked), linked);
  }
}

// Every entry point of the layer on broken input: a value or std::invalid_argument.
void expect_value_or_invalid_argument(const std::vector<uint32_t>& w, const std::string& what) {
  const std::vector<std::pair<const char*, std::function<void()>>> steps = {
      {"parse", [&] { (void)zex::passes::parse(w); }},
      {"merge_throw_sites", [&] { (void)zex::passes::merge_throw_sites(w); }},
      {"merge_duplicate_builtins", [&] { (void)zex::passes::merge_duplicate_builtins(w); }},
      {"wrap_zex_strings", [&] { (void)zex::passes::wrap_zex_strings(w); }},
      {"number_throw_paths", [&] {
         Module m = zex::passes::parse(w);
         zex::detail::SiteTable sites;
         if (zex::passes::number_throw_paths(m, &sites)) (void)zex::passes::to_words(m);
       }},
      {"complete_entry_point_interfaces", [&] { (void)zex::passes::complete_entry_point_interfaces(w); }},
      {"spirv_zex_strings", [&] { (void)zex::detail::spirv_zex_strings(w); }},
      {"strip_debug_info", [&] { Module m = zex::passes::parse(w); (void)zex::passes::strip_debug_info(m); }},
      {"kernel_names", [&] { (void)zex::detail::spirv_kernel_names(w); }},
      {"validate_spirv", [&] { zex::detail::validate_spirv(w, "fuzzed"); }},
  };
  for (auto& [name, f] : steps) {
    try {
      f();
    } catch (const std::invalid_argument&) {
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << " on " << what << ": " << typeid(e).name() << ": " << e.what();
    }
  }
}

TEST(PassRobustness, TruncatedModules) {
  for (const char* name : {"gather17_g", "compiler_style_sites", "merge_patterns", "strings_compiler", "strings_table",
                           "throw_paths_O0g"}) {
    const auto w = kernel(name);
    for (size_t n = 0; n < w.size(); n += 1 + n / 8) {
      std::vector<uint32_t> cut(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(n));
      expect_value_or_invalid_argument(cut, std::string(name) + " cut at " + std::to_string(n));
    }
  }
}

TEST(PassRobustness, GarbageAndFlippedWords) {
  std::mt19937 rng(1234);
  for (int t = 0; t < 50; ++t) {
    std::vector<uint32_t> g(5 + rng() % 200);
    for (auto& x : g) x = rng();
    g[0] = 0x07230203u;
    g[1] = 0x00010400u;
    expect_value_or_invalid_argument(g, "random words");
  }
  const auto w = kernel("compiler_style_sites");
  for (int t = 0; t < 200; ++t) {
    auto f = w;
    f[5 + rng() % (f.size() - 5)] ^= 1u << (rng() % 32);
    expect_value_or_invalid_argument(f, "a flipped bit");
  }
}

// Modules that parse but are wrong: <id> operands pointed at other ids (labels that do not exist,
// results of other types, undefined ids). The merge must decline or merge; never crash.
TEST(PassRobustness, WellFormedButWrongIds) {
  std::mt19937 rng(99);
  for (const char* name : {"compiler_style_sites", "gather17", "abi_sequence", "strings_compiler", "strings_shared", "strings_table",
                           "throw_paths_O2ni"}) {
    const Module m = zex::passes::parse(kernel(name));
    for (int t = 0; t < 150; ++t) {
      Module f = m;
      for (int k = 0; k < 3; ++k) {
        Instruction& i = f.insts[rng() % f.insts.size()];
        std::vector<size_t> ids;
        for (const auto& o : i.operands)
          if (zex::passes::is_id_use(o.type)) ids.push_back(o.offset);
        if (!ids.empty()) i.words[ids[rng() % ids.size()]] = 1 + rng() % (f.header[3] + 4);
      }
      const auto words = zex::passes::to_words(f);
      expect_value_or_invalid_argument(words, std::string(name) + " with changed ids");
    }
  }
}

}  // namespace
