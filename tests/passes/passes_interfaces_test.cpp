// The entry-point interface pass (src/spirv/passes/interfaces.cpp) on a table of strings compiled by the
// project's toolchain (clang-15 + llvm-spirv-15, SPIR-V 1.4), whose strings llvm-spirv leaves out of
// the kernel's interface, and on hand-written modules for the call tree and several entry points.
#include "passes_util.hpp"

#include <spirv-tools/libspirv.hpp>

#include <gtest/gtest.h>

#include <set>

using namespace passes_test;

namespace {

// SPIRV-Tools' own verdict on `w` (no debug information set aside, no interface completed).
bool spirv_tools_valid(const std::vector<uint32_t>& w, std::string* diagnostic = nullptr) {
  spvtools::SpirvTools tools(zex::passes::target_env(w));
  std::string text;
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&, const char* m) { text += m; });
  const bool ok = tools.Validate(w);
  if (diagnostic) *diagnostic = text;
  return ok;
}

// The interface <id>s of each OpEntryPoint, by entry-point name.
std::map<std::string, std::vector<uint32_t>> interfaces(const std::vector<uint32_t>& w) {
  std::map<std::string, std::vector<uint32_t>> out;
  for (const Instruction& i : zex::passes::parse(w).insts)
    if (i.opcode == spv::OpEntryPoint) {
      auto& ids = out[i.string_at(3)];
      for (size_t k = 3; k < i.operands.size(); ++k) ids.push_back(i.words[i.operands[k].offset]);
    }
  return out;
}

TEST(PassInterfaces, TableOfStringsIsRefusedAsItComesAndValidAfterThePass) {
  const auto w = kernel("strings_table");
  ASSERT_GE(w[1], 0x00010400u) << "the toolchain is expected to write SPIR-V 1.4";
  std::string diag;
  EXPECT_FALSE(spirv_tools_valid(w, &diag)) << "llvm-spirv now lists the strings: the pass may no longer be needed";
  EXPECT_NE(diag.find("not listed as an interface"), std::string::npos) << diag;

  const auto done = zex::passes::complete_entry_point_interfaces(w);
  EXPECT_TRUE(spirv_tools_valid(done, &diag)) << diag;
  // Existing interface ids first, in their order, then the added ones, each once.
  const auto before = interfaces(w).at("k"), after = interfaces(done).at("k");
  ASSERT_GT(after.size(), before.size());
  EXPECT_TRUE(std::equal(before.begin(), before.end(), after.begin()));
  EXPECT_EQ(std::set<uint32_t>(after.begin(), after.end()).size(), after.size());
  // Idempotent.
  EXPECT_EQ(zex::passes::complete_entry_point_interfaces(done), done);
  // zex's validation and the link accept it, and what the driver gets is valid as it is.
  EXPECT_NO_THROW(zex::detail::validate_spirv(w, "strings_table"));
  const auto linked = zex::detail::link_with_device_library(w);
  EXPECT_TRUE(spirv_tools_valid(linked, &diag)) << diag;
  EXPECT_EQ(zex::passes::complete_entry_point_interfaces(linked), linked);
}

TEST(PassInterfaces, NothingToDoOnModulesThatListTheirVariables) {
  for (const char* name : {"gather17", "vadd", "merge_patterns", "abi_sequence", "abi_calls", "compiler_style",
                           "compiler_style_sites", "strings_shared"}) {
    SCOPED_TRACE(name);
    const auto w = kernel(name);
    EXPECT_EQ(zex::passes::complete_entry_point_interfaces(w), w);
  }
}

TEST(PassInterfaces, BeforeSpirv14NothingChanges) {
  const auto w13 = kernel("strings_compiler");  // SPIR-V 1.3, a string reached through OpSpecConstantOp
  ASSERT_LT(w13[1], 0x00010400u);
  EXPECT_EQ(zex::passes::complete_entry_point_interfaces(w13), w13);
  auto table = kernel("strings_table");
  table[1] = 0x00010300u;  // the same module declared 1.3: only Input/Output belong to interfaces
  EXPECT_EQ(zex::passes::complete_entry_point_interfaces(table), table);
}

// Two entry points: `a` calls a helper that reads %g, whose initializer holds the address of %s;
// `b` uses nothing. Only `a` gets %g and %s, after what it lists (%i); `b` stays as it is.
TEST(PassInterfaces, FollowsCallsAndInitializersPerEntryPoint) {
  const char* text = R"(
               OpCapability Addresses
               OpCapability Linkage
               OpCapability Kernel
               OpCapability Int8
               OpCapability Int64
               OpMemoryModel Physical64 OpenCL
               OpEntryPoint Kernel %a "a" %i
               OpEntryPoint Kernel %b "b"
       %void = OpTypeVoid
      %uchar = OpTypeInt 8 0
      %ulong = OpTypeInt 64 0
     %ulong2 = OpConstant %ulong 2
        %arr = OpTypeArray %uchar %ulong2
      %p_arr = OpTypePointer UniformConstant %arr
        %p_c = OpTypePointer UniformConstant %uchar
      %pp_c = OpTypePointer UniformConstant %p_c
         %c0 = OpConstant %uchar 0
        %ini = OpConstantComposite %arr %c0 %c0
          %s = OpVariable %p_arr UniformConstant %ini
      %zero = OpConstant %ulong 0
       %addr = OpSpecConstantOp %p_c InBoundsPtrAccessChain %s %zero %zero
          %g = OpVariable %pp_c UniformConstant %addr
          %i = OpVariable %pp_c UniformConstant %addr
         %fn = OpTypeFunction %void
     %helper = OpFunction %void None %fn
         %l0 = OpLabel
         %v0 = OpLoad %p_c %g
               OpReturn
               OpFunctionEnd
          %a = OpFunction %void None %fn
         %l1 = OpLabel
         %v1 = OpLoad %p_c %i
         %r1 = OpFunctionCall %void %helper
               OpReturn
               OpFunctionEnd
          %b = OpFunction %void None %fn
         %l2 = OpLabel
               OpReturn
               OpFunctionEnd
)";
  spvtools::SpirvTools tools(SPV_ENV_UNIVERSAL_1_4);
  std::vector<uint32_t> w;
  ASSERT_TRUE(tools.Assemble(text, &w, SPV_TEXT_TO_BINARY_OPTION_PRESERVE_NUMERIC_IDS));
  std::string diag;
  EXPECT_FALSE(spirv_tools_valid(w, &diag));
  const auto done = zex::passes::complete_entry_point_interfaces(w);
  EXPECT_TRUE(spirv_tools_valid(done, &diag)) << diag;
  const Module m = zex::passes::parse(done);
  std::map<std::string, uint32_t> ids;  // no OpName: the variables by definition order
  std::vector<uint32_t> vars;
  for (const Instruction& i : m.insts)
    if (i.opcode == spv::OpVariable) vars.push_back(i.result_id);
  ASSERT_EQ(vars.size(), 3u);  // %s, %g, %i
  EXPECT_EQ(interfaces(done).at("a"), (std::vector<uint32_t>{vars[2], vars[0], vars[1]}));
  EXPECT_TRUE(interfaces(done).at("b").empty());
  EXPECT_EQ(zex::passes::complete_entry_point_interfaces(done), done);
}

}  // namespace
