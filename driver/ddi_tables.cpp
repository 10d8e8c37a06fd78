// The DDI tables the loader asks zex-cpu for. The exported getters themselves are generated
// (ddi_stubs.inc, included at the end); this file routes each table to the files that implement it.
#include "ddi_tables.hpp"

#include "kernel.hpp"

namespace zexcpu {

void fill_table(ze_global_dditable_t* t) { fill_driver_ddi(t); }
void fill_table(ze_driver_dditable_t* t) { fill_driver_ddi(t); }
void fill_table(ze_device_dditable_t* t) { fill_device_ddi(t); }
void fill_table(ze_context_dditable_t* t) { fill_context_ddi(t); }
void fill_table(ze_command_queue_dditable_t* t) { fill_command_queue_ddi(t); }
void fill_table(ze_command_list_dditable_t* t) { fill_command_list_ddi(t); }
void fill_table(ze_fence_dditable_t* t) { fill_fence_ddi(t); }
void fill_table(ze_event_pool_dditable_t* t) { fill_event_pool_ddi(t); }
void fill_table(ze_event_dditable_t* t) { fill_event_ddi(t); }
void fill_table(ze_module_dditable_t* t) { fill_module_ddi(t); }
void fill_table(ze_module_build_log_dditable_t* t) { fill_module_build_log_ddi(t); }
void fill_table(ze_kernel_dditable_t* t) { fill_kernel_ddi(t); }
void fill_table(ze_mem_dditable_t* t) { fill_mem_ddi(t); }

}  // namespace zexcpu

#include "ddi_stubs.inc"
