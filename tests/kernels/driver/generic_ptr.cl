// Generic address space (SPIR-V GenericPointer, required by the Level Zero SPIR-V environment): one
// non-inlined function called with a global and a local pointer.
__attribute__((noinline)) int twice_at(int* p, size_t i) { return 2 * p[i]; }

kernel void generic_calls(global int* in, global int* out) {
  local int tile[64];
  size_t l = get_local_id(0), g = get_global_id(0);
  tile[l] = in[g] + 1;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[g] = twice_at(in, g) + twice_at(tile, l);
}
