// The block-order repair (src/spirv/passes/block_order.cpp) on tests/kernels/passes/block_order.cl, built
// -O2 and -O2 -g as zex_add_spirv builds every kernel: llvm-spirv-15 writes each loop's exit block
// before its body, which SPIRV-Tools 2023.1 refuses and Intel's driver builds. zex accepts the modules,
// hands on valid ones with every block after its dominators and the throw lines intact, leaves modules
// already in order byte for byte as they are, and still refuses a module that is really invalid, with
// a message that says what to do.
#include "passes_util.hpp"

#include <spirv-tools/libspirv.hpp>

#include <gtest/gtest.h>

#include <fstream>

using namespace passes_test;

namespace {

// SPIRV-Tools' verdict on `w` with the debug information set aside (what zex's validation also sets
// aside, docs/spirv-passes.md), so that only the block order can make it refuse these modules.
bool valid_without_debug_info(const std::vector<uint32_t>& w, std::string* diagnostic = nullptr) {
  Module m = zex::passes::parse(w);
  zex::passes::strip_debug_info(m);
  spvtools::SpirvTools tools(zex::passes::target_env(w));
  std::string text;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&, const char* s) { text += s; });
  const bool ok = tools.Validate(zex::passes::to_words(m));
  if (diagnostic) *diagnostic = text;
  return ok;
}

// Each function's block labels, in binary order, by function id.
std::map<uint32_t, std::vector<uint32_t>> block_labels(const std::vector<uint32_t>& w) {
  std::map<uint32_t, std::vector<uint32_t>> out;
  uint32_t f = 0;
  for (const Instruction& i : zex::passes::parse(w).insts) {
    if (i.opcode == spv::OpFunction) f = i.result_id;
    if (i.opcode == spv::OpLabel) out[f].push_back(i.result_id);
  }
  return out;
}

// The module's instructions (annotations included, as words), in any order.
std::multiset<std::vector<uint32_t>> instruction_set(const std::vector<uint32_t>& w) {
  std::multiset<std::vector<uint32_t>> out;
  for (const Instruction& i : zex::passes::parse(w).insts) {
    std::vector<uint32_t> all;
    for (const Instruction& a : i.annotations) all.insert(all.end(), a.words.begin(), a.words.end());
    all.insert(all.end(), i.words.begin(), i.words.end());
    out.insert(all);
  }
  return out;
}

uint32_t marker_line(const std::string& name) {
  std::ifstream f(ZEX_PASSES_BLOCK_ORDER_SOURCE);
  std::string line;
  for (uint32_t n = 1; std::getline(f, line); ++n)
    if (line.find("ZEXT_LINE_" + name + " ") != std::string::npos) return n;
  throw std::runtime_error("no marker ZEXT_LINE_" + name + " in block_order.cl");
}

const char* const kModules[] = {"block_order", "block_order_g"};

TEST(BlockOrder, LlvmSpirvWritesExitsBeforeBodiesAndZexAcceptsThem) {
  for (const char* name : kModules) {
    SCOPED_TRACE(name);
    const auto w = kernel(name);
    std::string diag;
    ASSERT_FALSE(valid_without_debug_info(w, &diag)) << "the toolchain no longer writes a block before its dominator";
    EXPECT_TRUE(diag.find("before its dominator") != std::string::npos || diag.find("has not been defined") != std::string::npos)
        << diag;
    EXPECT_NO_THROW(zex::detail::validate_spirv(w, "the module's SPIR-V"));
  }
}

TEST(BlockOrder, ReorderedModuleIsValidTheSameInstructionsEntryFirst) {
  for (const char* name : kModules) {
    SCOPED_TRACE(name);
    const auto w = kernel(name);
    const auto ordered = zex::passes::order_blocks(w);
    ASSERT_NE(ordered, w);
    std::string diag;
    EXPECT_TRUE(valid_without_debug_info(ordered, &diag)) << diag;
    // Only where blocks sit changed: the same instructions with the same lines and scopes, the same
    // blocks per function, the entry block still first.
    EXPECT_EQ(instruction_set(ordered), instruction_set(w));
    const auto before = block_labels(w), after = block_labels(ordered);
    ASSERT_EQ(before.size(), after.size());
    for (const auto& [f, labels] : before) {
      const auto& now = after.at(f);
      ASSERT_FALSE(now.empty());
      EXPECT_EQ(now.front(), labels.front()) << "function %" << f << " lost its entry block";
      EXPECT_EQ(std::multiset<uint32_t>(now.begin(), now.end()), std::multiset<uint32_t>(labels.begin(), labels.end()));
    }
    EXPECT_EQ(zex::passes::order_blocks(ordered), ordered) << "not idempotent";
  }
}

// Modules whose blocks are in dominance order already (every other test module) are not touched, so
// what the driver gets for them does not change.
TEST(BlockOrder, ModulesInOrderAreLeftAsTheyAre) {
  for (const char* name : {"gather17", "gather17_g", "stencil2d_g", "vadd", "merge_patterns", "merge_patterns_g",
                           "abi_sequence", "abi_calls", "strings_shared", "strings_shared_g", "strings_table",
                           "throw_paths_O2g", "throw_paths_O0g", "throw_paths_O0", "throw_paths_O2ni",
                           "compiler_style_sites", "compiler_style", "strings_compiler"}) {
    SCOPED_TRACE(name);
    const auto w = kernel(name);
    EXPECT_EQ(zex::passes::order_blocks(w), w);
  }
}

// What zex::Module hands the driver: valid as it is (debug information aside), its blocks in order,
// every throw numbered, and with -g the site table's line is the check's source line.
TEST(BlockOrder, LinkHandsOnValidBlocksAndKeepsTheLines) {
  for (const char* name : kModules) {
    SCOPED_TRACE(name);
    const zex::detail::LinkedModule linked = zex::detail::link_module(kernel(name));
    std::string diag;
    EXPECT_TRUE(valid_without_debug_info(linked.words, &diag)) << diag;
    EXPECT_EQ(zex::passes::order_blocks(linked.words), linked.words);
    EXPECT_EQ(count_calls(linked.words, "zex_throw"), 0u) << "a throw was left unnumbered";
    std::map<std::string, uint32_t> line_of;  // kernel -> line of its site's frame
    for (const auto& s : linked.sites) {
      ASSERT_FALSE(s.frames.empty());
      EXPECT_EQ(s.name, "BoundsError");
      line_of[s.frames.back().function] = s.frames[0].line;
    }
    ASSERT_EQ(line_of.count("lcg_checked"), 1u);
    ASSERT_EQ(line_of.count("rows"), 1u);
    if (std::string(name) == "block_order_g") {
      EXPECT_EQ(line_of["lcg_checked"], marker_line("LCG"));
      EXPECT_EQ(line_of["rows"], marker_line("ROWS"));
    }
  }
}

// A module the block order does not explain is still refused, with the validator's words and what to do.
TEST(BlockOrder, ReallyInvalidModuleIsStillRefused) {
  // %v is defined in one arm of a branch and used after the two arms meet: no order makes that valid.
  const char* text = R"(
               OpCapability Addresses
               OpCapability Kernel
               OpCapability Linkage
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %k "k"
               OpName %k "k"
               OpName %v "v"
       %uint = OpTypeInt 32 0
       %bool = OpTypeBool
       %void = OpTypeVoid
     %uint_1 = OpConstant %uint 1
      %p_out = OpTypePointer CrossWorkgroup %uint
         %fn = OpTypeFunction %void %p_out %uint
          %k = OpFunction %void None %fn
        %out = OpFunctionParameter %p_out
          %n = OpFunctionParameter %uint
      %entry = OpLabel
          %c = OpULessThan %bool %n %uint_1
               OpBranchConditional %c %then %join
       %then = OpLabel
          %v = OpIAdd %uint %n %uint_1
               OpBranch %join
       %join = OpLabel
               OpStore %out %v
               OpReturn
               OpFunctionEnd
)";
  spvtools::SpirvTools tools(SPV_ENV_UNIVERSAL_1_4);
  std::vector<uint32_t> w;
  ASSERT_TRUE(tools.Assemble(text, &w));
  try {
    zex::detail::validate_spirv(w, "the module's SPIR-V");
    FAIL() << "an invalid module was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("is invalid; SPIRV-Tools says"), std::string::npos) << msg;
    // The module's own names, not the ones zex validates with first.
    EXPECT_NE(msg.find("[%v]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("dominate"), std::string::npos) << msg;
    EXPECT_NE(msg.find("zex-spirv validate"), std::string::npos) << msg;
  }
}

// The names zex validates with first are unique per id, but an OpName of an id the module never
// defines is still an error.
TEST(BlockOrder, NameOfAnUndefinedIdIsStillRefused) {
  const char* text = R"(
               OpCapability Addresses
               OpCapability Kernel
               OpCapability Linkage
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %k "k"
               OpName %k "k"
               OpName %nowhere "nowhere"
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
          %k = OpFunction %void None %fn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
)";
  spvtools::SpirvTools tools(SPV_ENV_UNIVERSAL_1_4);
  std::vector<uint32_t> w;
  ASSERT_TRUE(tools.Assemble(text, &w, SPV_TEXT_TO_BINARY_OPTION_NONE));
  EXPECT_THROW(zex::detail::validate_spirv(w, "the module's SPIR-V"), std::invalid_argument);
}

}  // namespace
