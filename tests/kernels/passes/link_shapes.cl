// Shapes for zex's own linker (src/spirv/passes/link.cpp), written for this test. A user struct with exactly
// zex_state_t's layout (three 64-bit integers), declared and used before any zex call, so that
// llvm-spirv writes two identical struct types, the user's first: the library's signatures must be
// matched to the type the user's imports actually take, not to the first struct of that layout. A
// __local array and a barrier (the library's types meet the user's Workgroup pointers), a vector type
// the library also declares (ulong3 for the built-ins), and a helper that throws.
#include <zex/device.h>

typedef struct {
  ulong x, y, z;
} triple_t;

__attribute__((noinline)) ulong mix(triple_t t) { return t.x * 3 + t.y * 5 + t.z; }

__attribute__((noinline)) uint checked(__global const uint* a, uint i, uint n, zex_state_t zex) {
  ZEX_CHECK_BOUNDS_RET(zex, i, n, 0u);
  return a[i];
}

__kernel void link_shapes(__global const uint* a, __global ulong* out, uint n, zex_state_t zex) {
  __local ulong tile[64];
  const size_t g = get_global_id(0), l = get_local_id(0);
  triple_t t = {g, l, (ulong)n};
  tile[l % 64] = mix(t);
  barrier(CLK_LOCAL_MEM_FENCE);
  const ulong3 v = (ulong3)(tile[(l + 1) % 64], g, 1);
  out[g] = v.x + v.y + checked(a, (uint)g, n, zex);
}
