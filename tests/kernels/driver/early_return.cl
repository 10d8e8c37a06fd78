// Kernels that return early around work-group barriers: valid OpenCL C (every work-item of a group
// reaches each barrier, or none does), written as Rodinia's hotspot and nw are. PoCL 3.1 crashed on the
// returns inside `if (t == 0)` as written (issue 24, item 4); zex-cpu gives PoCL each kernel with one
// exit, and a return before a barrier arrives at it (docs/cpu-driver-compiler.md, step 9).
// early_return_test.cpp checks every work-item's result.
// Every buffer has one element per work-item; `in[g]` is the test's data.

// A guarded return before a barrier that no work-item takes (n >= the global size).
kernel void never_taken(global int* out, global const int* in, uint n) {
  local int tile[256];
  uint g = get_global_id(0), t = get_local_id(0), size = get_local_size(0);
  if (g >= n) return;
  tile[t] = in[g];
  barrier(CLK_LOCAL_MEM_FENCE);
  out[g] = tile[(t + 1) % size] * 2 + 1;
}

// The first work-item loads a value for its group and returns if it is negative (never here: base[] >= 0);
// after the barrier every work-item uses it.
kernel void first_item(global int* out, global const int* in, global const int* base) {
  local int group_base;
  uint g = get_global_id(0), t = get_local_id(0);
  if (t == 0) {
    int b = base[get_group_id(0)];
    if (b < 0) return;
    group_base = b;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  out[g] = in[g] + group_base;
}

// The same with a second barrier after the first: a work-item that had returned would have to pass both.
kernel void first_item_two_barriers(global int* out, global const int* in, global const int* base) {
  local int group_base;
  local int tile[256];
  uint g = get_global_id(0), t = get_local_id(0), size = get_local_size(0);
  if (t == 0) {
    int b = base[get_group_id(0)];
    if (b < 0) return;
    group_base = b;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  tile[t] = in[g] + group_base;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[g] = tile[size - 1 - t];
}

// A return after the last barrier that the work-items past n take (n need not be a multiple of the group).
kernel void after_last(global int* out, global const int* in, uint n) {
  local int tile[256];
  uint g = get_global_id(0), t = get_local_id(0), size = get_local_size(0);
  tile[t] = in[g];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (g >= n) return;
  out[g] = tile[size - 1 - t] + 7;
}

// Inside every group some work-items return after the last barrier while the others go on to store:
// odd items return at once, items with bit 1 set store once and return, the rest store twice.
kernel void mixed_after_last(global int* out, global int* out2, global const int* in) {
  local int tile[256];
  uint g = get_global_id(0), t = get_local_id(0), size = get_local_size(0);
  tile[t] = in[g];
  barrier(CLK_LOCAL_MEM_FENCE);
  int v = tile[size - 1 - t];
  if (t & 1) return;
  out[g] = v * 3;
  if (t & 2) return;
  out2[g] = v - 5;
}

// A never-taken return, then a loop with two barriers per iteration (hotspot's shape), then a return
// that half of each group takes after the last barrier.
kernel void loop_barriers(global int* out, global const int* in, uint n, uint iters) {
  local int tile[256];
  uint g = get_global_id(0), t = get_local_id(0), size = get_local_size(0);
  if (g >= n) return;
  tile[t] = in[g];
  for (uint i = 0; i < iters; ++i) {
    barrier(CLK_LOCAL_MEM_FENCE);
    int next = tile[t] + tile[(t + 1) % size];
    barrier(CLK_LOCAL_MEM_FENCE);
    tile[t] = next;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (t >= size / 2) return;
  out[g] = tile[t];
}
