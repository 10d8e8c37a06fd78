// Kernel attributes visible through zeKernelGetProperties.
__attribute__((reqd_work_group_size(16, 1, 1))) kernel void fixed16(global int* p) {
  p[get_global_id(0)] = (int)get_local_size(0);
}
