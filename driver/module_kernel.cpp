// placeholder until the module/kernel side lands
#include "kernel.hpp"
namespace zexcpu {
ze_result_t capture_launch(ze_kernel_handle_t, const ze_group_count_t&, std::unique_ptr<LaunchCommand>*) {
  return ZE_RESULT_ERROR_UNSUPPORTED_FEATURE;
}
bool module_constant_range(const void*, void**, size_t*) { return false; }
void fill_module_ddi(ze_module_dditable_t*) {}
void fill_module_build_log_ddi(ze_module_build_log_dditable_t*) {}
void fill_kernel_ddi(ze_kernel_dditable_t*) {}
}  // namespace zexcpu
