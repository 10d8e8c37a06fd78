// Work-group reductions through local memory and barriers.

// Local memory given as an argument (zeKernelSetArgumentValue(k, i, bytes, nullptr)).
kernel void reduce_arg(global const int* in, global int* out, local int* scratch) {
  size_t lid = get_local_id(0), n = get_local_size(0);
  scratch[lid] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = n / 2; s > 0; s /= 2) {
    if (lid < s) scratch[lid] += scratch[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) out[get_group_id(0)] = scratch[0];
}

// Local memory declared in the kernel; also checks that the whole group sees the reduced value.
kernel void reduce_static(global const int* in, global int* out, global int* seen) {
  local int tile[64];
  size_t lid = get_local_id(0), n = get_local_size(0);
  tile[lid] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = n / 2; s > 0; s /= 2) {
    if (lid < s) tile[lid] += tile[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  seen[get_global_id(0)] = tile[0];
  if (lid == 0) out[get_group_id(0)] = tile[0];
}
