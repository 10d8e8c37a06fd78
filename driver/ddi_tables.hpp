// zex-cpu's DDI tables: the generated getters (ddi_stubs.inc, from gen_ddi_stubs.py) first point every
// entry at an UNSUPPORTED_FEATURE stub, then call fill_table(), whose overloads below install what
// zex-cpu implements. Tables without an overload keep only the stubs (the template catches them).
#pragma once

#include "common.hpp"

#include <level_zero/zes_ddi.h>
#include <level_zero/zet_ddi.h>

namespace zexcpu {

template <typename T> inline void fill_table(T*) {}

void fill_table(ze_global_dditable_t* t);
void fill_table(ze_driver_dditable_t* t);
void fill_table(ze_device_dditable_t* t);
void fill_table(ze_context_dditable_t* t);
void fill_table(ze_command_queue_dditable_t* t);
void fill_table(ze_command_list_dditable_t* t);
void fill_table(ze_fence_dditable_t* t);
void fill_table(ze_event_pool_dditable_t* t);
void fill_table(ze_event_dditable_t* t);
void fill_table(ze_module_dditable_t* t);
void fill_table(ze_module_build_log_dditable_t* t);
void fill_table(ze_kernel_dditable_t* t);
void fill_table(ze_mem_dditable_t* t);

// Each file of zex-cpu fills the entries of the objects it implements.
void fill_driver_ddi(ze_global_dditable_t* t);
void fill_driver_ddi(ze_driver_dditable_t* t);
void fill_device_ddi(ze_device_dditable_t* t);
void fill_context_ddi(ze_context_dditable_t* t);
void fill_mem_ddi(ze_mem_dditable_t* t);
void fill_command_queue_ddi(ze_command_queue_dditable_t* t);
void fill_command_list_ddi(ze_command_list_dditable_t* t);
void fill_fence_ddi(ze_fence_dditable_t* t);
void fill_event_pool_ddi(ze_event_pool_dditable_t* t);
void fill_event_ddi(ze_event_dditable_t* t);

}  // namespace zexcpu
