// Sub-groups: the sizes kernels see must be among those zeDeviceGetComputeProperties reports.
kernel void sg_info(global uint* out) {
  size_t g = get_global_id(0);
  out[g * 4 + 0] = get_sub_group_size();
  out[g * 4 + 1] = get_max_sub_group_size();
  out[g * 4 + 2] = sub_group_reduce_add(1u);
  out[g * 4 + 3] = get_num_sub_groups();
}
