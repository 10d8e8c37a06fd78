// The release fence zex's device library issues before its status store (OpMemoryBarrier in SPIR-V).
kernel void publish(global int* data, global volatile int* flag) {
  data[get_global_id(0)] = (int)get_global_id(0) + 1;
  atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_device);
  if (get_global_id(0) == 0) *flag = 1;
}

// The OpenCL 1.x spellings of the same fences.
kernel void old_fences(global int* data) {
  data[get_global_id(0)] = 1;
  mem_fence(CLK_GLOBAL_MEM_FENCE);
  write_mem_fence(CLK_GLOBAL_MEM_FENCE);
  read_mem_fence(CLK_GLOBAL_MEM_FENCE);
  data[get_global_id(0)] += 1;
}
