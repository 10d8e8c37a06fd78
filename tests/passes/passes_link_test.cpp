// zex's own linker (src/spirv/passes/link.cpp) on every test module of tests/passes, and the shapes it must
// decline (SPIRV-Tools' linker then links or refuses the module). No driver: the validator is the judge.
#include "passes_util.hpp"

#include <zex/error.hpp>

#include <spirv-tools/libspirv.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

using namespace passes_test;

namespace {

constexpr uint32_t kLinkage = 41;

// The user module as link_module links it: blocks ordered, interfaces completed.
Module prepared(const std::vector<uint32_t>& w) {
  Module m = zex::passes::parse(w);
  zex::passes::order_blocks(m);
  zex::passes::complete_entry_point_interfaces(m);
  return m;
}

// The library link_module picks for `m`, declared at the higher of the two versions.
Module library_for(const Module& m) {
  const bool old = m.header[1] <= 0x00010300u;
  const auto& words = old && !zex::detail::device_library_1_3().empty() ? zex::detail::device_library_1_3()
                                                                        : zex::detail::device_library();
  Module lib = zex::passes::parse(words);
  lib.header[1] = std::max(lib.header[1], m.header[1]);
  return lib;
}

bool valid(const Module& m, std::string* diagnostic) {
  spvtools::SpirvTools tools(zex::passes::target_env(zex::passes::to_words(m)));
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&, const char* msg) {
    *diagnostic += msg;
    *diagnostic += "\n";
  });
  return tools.Validate(zex::passes::validator_words(m, false));
}

std::map<std::string, uint32_t> linkage_count(const Module& m, uint32_t type) {
  std::map<std::string, uint32_t> out;
  for (const Instruction& i : m.insts)
    if (i.opcode == spv::OpDecorate && i.size() >= 5 && i.words[2] == kLinkage && i.words.back() == type) ++out[i.string_at(3)];
  return out;
}

std::vector<std::string> test_modules() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(ZEX_PASSES_KERNELS))
    // asserts_*: they import __assert_fail, which the assert rewrite (link_module's, before this link)
    // defines: passes_memory_test.cpp links them.
    if (e.path().extension() == ".spv" && e.path().stem().string().rfind("asserts_", 0) != 0)
      names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

// Every test module: zex's linker takes it, the result is valid after the same repairs link_module
// makes, the user's ids keep their instructions, every zex import is resolved, and the library's
// exports are there once each.
TEST(PassLink, EveryTestModuleLinksValid) {
  const auto names = test_modules();
  ASSERT_GE(names.size(), 20u) << "the test modules were not built";
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const Module user = prepared(kernel(name));
    const Module lib = library_for(user);
    Module m = user;
    m.header[1] = lib.header[1];
    ASSERT_NO_THROW(EXPECT_TRUE(zex::passes::link_device_library(m, lib)));
    EXPECT_EQ(m.header[3], user.header[3] + lib.header[3] - 1);
    zex::passes::merge_duplicate_builtins(m);
    zex::passes::order_blocks(m);
    zex::passes::complete_entry_point_interfaces(m);
    std::string diag;
    EXPECT_TRUE(valid(m, &diag)) << diag;
    EXPECT_TRUE(linkage_count(m, 1).empty()) << "an import is left: " << linkage_count(m, 1).begin()->first;
    for (const auto& [export_name, n] : linkage_count(lib, 0)) EXPECT_EQ(linkage_count(m, 0)[export_name], 1u) << export_name;
    // The user's ids: every instruction of the user module with a result keeps it (but the imports'
    // declarations and the built-ins merge_duplicate_builtins folds into the first).
    std::map<uint32_t, uint16_t> after;
    for (const Instruction& i : m.insts)
      if (i.result_id) after[i.result_id] = i.opcode;
    const auto imports = zex::passes::imported_functions(user);
    size_t kept = 0, with_result = 0;
    for (const Instruction& i : user.insts) {
      if (!i.result_id || i.opcode == spv::OpFunctionParameter || imports.count(i.result_id)) continue;
      ++with_result;
      auto a = after.find(i.result_id);
      kept += a != after.end() && a->second == i.opcode;
    }
    EXPECT_GE(kept + 8, with_result) << "user ids were renumbered";
    // The entry points, in order.
    std::vector<std::string> before_names = zex::passes::kernel_names(user), after_names = zex::passes::kernel_names(m);
    EXPECT_EQ(before_names, after_names);
  }
}

// llvm-spirv writes the user's struct of zex_state_t's layout first and zex_state_t second: the
// library's signatures take the second, the one the user's imports take.
TEST(PassLink, UserStructOfTheStatesLayoutIsNotTakenForTheState) {
  for (const char* name : {"link_shapes", "link_shapes_g"}) {
    SCOPED_TRACE(name);
    const Module user = prepared(kernel(name));
    std::map<uint32_t, const Instruction*> def;
    for (const Instruction& i : user.insts)
      if (i.result_id) def[i.result_id] = &i;
    size_t triples = 0;
    for (const Instruction& i : user.insts)
      if (i.opcode == 30 /* OpTypeStruct */ && i.size() == 5 && i.words[2] == i.words[3] && i.words[3] == i.words[4])
        ++triples;
    ASSERT_GE(triples, 2u) << "the module no longer has two structs of three equal members: the test shows nothing";
    const Module lib = library_for(user);
    Module m = user;
    m.header[1] = lib.header[1];
    ASSERT_TRUE(zex::passes::link_device_library(m, lib));
    zex::passes::merge_duplicate_builtins(m);
    zex::passes::complete_entry_point_interfaces(m);
    std::string diag;
    EXPECT_TRUE(valid(m, &diag)) << diag;
    // And through link_module, which would fall back to SPIRV-Tools' linker: the result is the same
    // size as zex's own (no fallback taken).
    const auto linked = zex::detail::link_with_device_library(kernel(name));
    EXPECT_EQ(zex::passes::parse(linked).header[2], user.header[2]) << "linked by SPIRV-Tools (generator word)";
  }
}

namespace {
// `w` with the LinkageAttributes name `from` replaced by `to` (same length in words).
std::vector<uint32_t> renamed_linkage(const std::vector<uint32_t>& w, const std::string& from, const std::string& to) {
  Module m = zex::passes::parse(w);
  bool done = false;
  for (Instruction& i : m.insts)
    if (i.opcode == spv::OpDecorate && i.size() >= 5 && i.words[2] == kLinkage && i.string_at(3) == from) {
      const uint32_t type = i.words.back();
      Instruction d = zex::passes::make_instruction(spv::OpDecorate, 0, 0, {i.words[1]});
      zex::passes::add_operand(d, kLinkage, SPV_OPERAND_TYPE_DECORATION);
      zex::passes::add_string_operand(d, to);
      zex::passes::add_operand(d, type, SPV_OPERAND_TYPE_LINKAGE_TYPE);
      i = d;
      done = true;
    }
  EXPECT_TRUE(done) << from;
  return zex::passes::to_words(m);
}
}  // namespace

// An import nobody exports: zex's linker declines and leaves the module as it was; link_module then
// refuses it with SPIRV-Tools' linker's message, which names the import.
TEST(PassLink, DeclinesAnImportTheLibraryDoesNotExport) {
  const auto w = renamed_linkage(kernel("vadd"), "zex_throw", "zex_thrown_elsewhere");
  const Module user = prepared(w);
  Module m = user;
  EXPECT_THROW(zex::passes::link_device_library(m, library_for(user)), std::invalid_argument);
  EXPECT_EQ(zex::passes::to_words(m), zex::passes::to_words(user));
  try {
    (void)zex::detail::link_with_device_library(w);
    ADD_FAILURE() << "linked a module with an unresolved import";
  } catch (const zex::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("zex_thrown_elsewhere"), std::string::npos) << e.what();
  }
}

// A user export of a name the library exports: declined, module as it was.
TEST(PassLink, DeclinesAUserExportOfALibraryName) {
  const Module plain = zex::passes::parse(kernel("vadd"));
  const auto exports = linkage_count(plain, 0);
  ASSERT_FALSE(exports.empty());
  const auto w = renamed_linkage(kernel("vadd"), exports.begin()->first, "zex_abi_version");
  const Module user = prepared(w);
  Module m = user;
  EXPECT_THROW(zex::passes::link_device_library(m, library_for(user)), std::invalid_argument);
  EXPECT_EQ(zex::passes::to_words(m), zex::passes::to_words(user));
}

// validator_words is strip_debug_info + unique_names without changing the module.
TEST(PassLink, ValidatorWordsAreTheStrippedRenamedModule) {
  for (const char* name : {"gather17_g", "throw_ret_O2g", "vadd"}) {
    SCOPED_TRACE(name);
    const Module m = zex::passes::parse(kernel(name));
    Module copy = m;
    zex::passes::strip_debug_info(copy);
    zex::passes::unique_names(copy);
    EXPECT_EQ(zex::passes::validator_words(m, false), zex::passes::to_words(copy));
    Module own = m;
    zex::passes::strip_debug_info(own);
    EXPECT_EQ(zex::passes::validator_words(m, true), zex::passes::to_words(own));
  }
}
