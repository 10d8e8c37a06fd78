// Work-group collectives (SPIR-V capability Groups, which the Level Zero SPIR-V environment requires).
kernel void wg_collectives(global int* out) {
  size_t g = get_global_id(0);
  int lid = (int)get_local_id(0);
  out[g * 4 + 0] = work_group_reduce_add(1);
  out[g * 4 + 1] = work_group_broadcast((int)g, 0);
  out[g * 4 + 2] = work_group_scan_inclusive_add(lid);
  out[g * 4 + 3] = work_group_any(lid == 5) + 2 * work_group_all(lid >= 0);
}
