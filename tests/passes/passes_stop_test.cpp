// add_stop_checks (src/spirv/passes/stop_on_throw.cpp) on every test module of tests/passes/, linked as
// zex::Module links it: the result is valid; every kernel that takes a zex_state_t asks
// zex_stop_requested exactly once, first thing, with the uniform question exactly when its call tree
// has a barrier or group instruction; kernels without a state and everything else are untouched; a
// module without the library's function is refused and left as it was.
#include "passes_util.hpp"

#include <spirv-tools/libspirv.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using passes_test::kernel;
using zex::passes::Instruction;
using zex::passes::Module;

std::vector<std::string> test_modules() {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(ZEX_PASSES_KERNELS))
    if (e.path().extension() == ".spv") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

bool valid(const std::vector<uint32_t>& words, std::string* diagnostic) {
  spvtools::SpirvTools tools(zex::passes::target_env(words));
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&, const char* msg) {
    *diagnostic += msg;
    *diagnostic += "\n";
  });
  return tools.Validate(zex::passes::validator_words(zex::passes::parse(words), false));
}

bool is_group(uint16_t o) {
  return o == spv::OpControlBarrier || (o >= spv::OpGroupAll && o <= spv::OpGroupUMax) ||
         (o >= spv::OpGroupNonUniformElect && o <= spv::OpGroupNonUniformQuadSwap) ||
         (o >= spv::OpSubgroupShuffleINTEL && o <= spv::OpSubgroupImageBlockWriteINTEL);
}

}  // namespace

TEST(PassStop, EveryTestModule) {
  const auto names = test_modules();
  ASSERT_GE(names.size(), 20u) << "the test modules were not built";
  size_t uniform_seen = 0, plain_seen = 0;
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const std::vector<uint32_t> linked = zex::detail::link_module(kernel(name)).words;
    std::vector<uint32_t> stopped;
    ASSERT_NO_THROW(stopped = zex::detail::spirv_with_stop_checks(linked));
    std::string diag;
    EXPECT_TRUE(valid(stopped, &diag)) << diag;
    const Module before = zex::passes::parse(linked), after = zex::passes::parse(stopped);
    const size_t with_state =
        zex::passes::kernel_names(before).size() - zex::passes::kernels_without_state(before).size();
    const auto calls = passes_test::calls_to(after, "zex_stop_requested");
    EXPECT_EQ(calls.size(), with_state);
    EXPECT_TRUE(passes_test::calls_to(before, "zex_stop_requested").empty());
    // The same facts zex::Module reads: names, parameters, strings.
    EXPECT_EQ(zex::passes::kernel_names(after), zex::passes::kernel_names(before));
    EXPECT_EQ(zex::passes::kernel_param_kinds(after), zex::passes::kernel_param_kinds(before));
    EXPECT_EQ(zex::detail::spirv_zex_strings(stopped), zex::detail::spirv_zex_strings(linked));
    // Each call is in the first block of its function, and its `uniform` constant is 1 exactly when
    // the function's call tree has a group instruction (here: the module has one at all; the test
    // modules with barriers have them in every kernel that takes a state).
    bool any_group = false;
    for (const Instruction& i : after.insts) any_group = any_group || is_group(i.opcode);
    std::map<uint32_t, uint32_t> constant;  // id -> value of the 32-bit constants
    for (const Instruction& i : after.insts)
      if (i.opcode == spv::OpConstant && i.size() == 4) constant[i.result_id] = i.words[3];
    for (const Instruction& c : calls) {
      ASSERT_EQ(c.size(), 8u);  // result type, result, function, the three state words, uniform
      const uint32_t u = constant.at(c.words[7]);
      EXPECT_LE(u, 1u);
      (u ? uniform_seen : plain_seen) += 1;
      if (!any_group) {
        EXPECT_EQ(u, 0u);
      }
    }
    size_t labels_before_call = 0;
    bool in_kernel_entry = false;
    for (const Instruction& i : after.insts) {
      if (i.opcode == spv::OpFunction) labels_before_call = 0, in_kernel_entry = true;
      if (i.opcode == spv::OpLabel) ++labels_before_call;
      if (in_kernel_entry && i.opcode == spv::OpFunctionCall &&
          std::find_if(calls.begin(), calls.end(), [&](const Instruction& c) { return c.result_id == i.result_id; }) != calls.end()) {
        EXPECT_EQ(labels_before_call, 1u) << "the stop check opens the function";
        in_kernel_entry = false;
      }
    }
  }
  EXPECT_GT(plain_seen, 0u);
  EXPECT_GT(uniform_seen, 0u) << "a test module with barriers (link_shapes, strings) asks the uniform question";
}

// An unlinked module has no zex_stop_requested: refused, and the module (through run_on_module) unchanged.
TEST(PassStop, RefusesAModuleWithoutTheLibrary) {
  Module m = zex::passes::parse(kernel("vadd"));
  const std::vector<uint32_t> before = zex::passes::to_words(m);
  EXPECT_THROW(zex::passes::add_stop_checks(m), std::invalid_argument);
  EXPECT_EQ(zex::passes::to_words(m), before);
  EXPECT_THROW(zex::detail::spirv_with_stop_checks({1, 2, 3}), std::invalid_argument);
  try {
    zex::detail::spirv_with_stop_checks(kernel("vadd"));
    ADD_FAILURE() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("zex_stop_requested"), std::string::npos) << e.what();
  }
}
