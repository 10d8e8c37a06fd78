// Build logs after a failure (docs/cpu-driver.md "Build logs"): every zeModuleCreate and
// zeModuleDynamicLink that fails writes its log out-parameter, as Intel's driver does, so that a caller
// who reads the log of a failed build (as most do) never reads an uninitialized handle. Each call here
// gets an out-parameter filled with garbage first; afterwards it must be null or a readable log.
// Injected failures and a lost device: fault_injection_test.cpp and device_loss_test.cpp.
#include "l0_fixture.hpp"

namespace {

class BuildLog : public L0Test {
 protected:
  /// zeModuleCreate with garbage in both out-parameters: checks that *phModule is null and the log
  /// readable, and returns the log's text.
  std::string create_fails(ze_result_t expected, ze_context_handle_t ctx, ze_device_handle_t dev,
                           const ze_module_desc_t* desc, bool with_module = true) {
    auto m = reinterpret_cast<ze_module_handle_t>(uintptr_t(0xdeadbeef));
    ze_module_build_log_handle_t log = garbage_log();
    EXPECT_ZE(expected, zeModuleCreate(ctx, dev, desc, with_module ? &m : nullptr, &log));
    if (with_module) {
      EXPECT_EQ(m, nullptr) << "a failed zeModuleCreate must not leave *phModule as it was";
    }
    return failed_call_log(log);
  }
  ze_module_desc_t desc_of(const std::vector<uint8_t>& bytes) {
    return {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, bytes.size(), bytes.data(), nullptr,
            nullptr};
  }
};

// The checks zex-cpu makes before building. The validation layer answers the null, enumeration and size
// cases itself, before zex-cpu sees the call (and leaves the out-parameters as they were): skipped under it.
TEST_F(BuildLog, EveryEarlyFailureOfModuleCreateWritesALog) {
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  ze_module_desc_t md = desc_of(spv);
  if (!zt::under_validation()) {
    EXPECT_NE(create_fails(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, nullptr, device, &md), "");
    EXPECT_NE(create_fails(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, context, nullptr, &md), "");
    EXPECT_NE(create_fails(ZE_RESULT_ERROR_INVALID_NULL_POINTER, context, device, nullptr), "");
    EXPECT_NE(create_fails(ZE_RESULT_ERROR_INVALID_NULL_POINTER, context, device, &md, /*with_module=*/false), "");
    ze_module_desc_t no_input = md;
    no_input.pInputModule = nullptr;
    EXPECT_NE(create_fails(ZE_RESULT_ERROR_INVALID_NULL_POINTER, context, device, &no_input), "");
    ze_module_desc_t bad_format = md;
    bad_format.format = static_cast<ze_module_format_t>(7);
    EXPECT_NE(create_fails(ZE_RESULT_ERROR_INVALID_ENUMERATION, context, device, &bad_format), "");
    ze_module_desc_t empty = md;
    empty.inputSize = 0;
    std::string text = create_fails(ZE_RESULT_ERROR_INVALID_SIZE, context, device, &empty);
    EXPECT_NE(text.find("inputSize"), std::string::npos) << "the log must say what was wrong: " << text;
  }
  // A device handle where the context belongs (and the other way round): not zex-cpu's objects of that kind.
  EXPECT_NE(create_fails(ZE_RESULT_ERROR_INVALID_ARGUMENT, reinterpret_cast<ze_context_handle_t>(device), device, &md),
            "");
  EXPECT_NE(create_fails(ZE_RESULT_ERROR_INVALID_ARGUMENT, context, reinterpret_cast<ze_device_handle_t>(context), &md),
            "");
  ze_module_program_exp_desc_t several = {ZE_STRUCTURE_TYPE_MODULE_PROGRAM_EXP_DESC, nullptr, 0, nullptr, nullptr,
                                          nullptr, nullptr};
  ze_module_desc_t with_ext = md;
  with_ext.pNext = &several;
  EXPECT_NE(create_fails(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE, context, device, &with_ext), "");
}

// A build that fails in the compiler: the log says why.
TEST_F(BuildLog, AFailedBuildWritesALog) {
  std::string junk = "not SPIR-V at all, but long enough to look at its header";
  std::vector<uint8_t> bytes(junk.begin(), junk.end());
  ze_module_desc_t md = desc_of(bytes);
  EXPECT_NE(create_fails(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, context, device, &md), "");
}

TEST_F(BuildLog, EveryFailureOfDynamicLinkWritesALog) {
  ze_module_build_log_handle_t log = garbage_log();
  if (!zt::under_validation()) {
    EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeModuleDynamicLink(1, nullptr, &log));
    EXPECT_NE(failed_call_log(log), "");
    ze_module_handle_t none = nullptr;
    log = garbage_log();
    EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeModuleDynamicLink(1, &none, &log));
    EXPECT_NE(failed_call_log(log), "");
  }
  auto not_a_module = reinterpret_cast<ze_module_handle_t>(context);
  log = garbage_log();
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeModuleDynamicLink(1, &not_a_module, &log));
  EXPECT_NE(failed_call_log(log), "");
  // dyn_main imports what only dyn_lib exports: linked alone, its imports stay unresolved.
  ze_module_handle_t main_m = module("dyn_main");
  ASSERT_NE(main_m, nullptr);
  log = garbage_log();
  EXPECT_ZE(ZE_RESULT_ERROR_MODULE_LINK_FAILURE, zeModuleDynamicLink(1, &main_m, &log));
  std::string text = failed_call_log(log);
  EXPECT_NE(text.find("dyn_"), std::string::npos) << "the link log must name what is unresolved: " << text;
}

}  // namespace
