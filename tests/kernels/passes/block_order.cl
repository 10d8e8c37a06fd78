/* Kernels whose -O2 SPIR-V (clang-15 + llvm-spirv-15, as zex_add_spirv builds them) has a block before
 * its dominator: the loop's exit block is written before the loop body when the exit is reached only
 * from the body. SPIRV-Tools 2023.1 refuses such a module; Intel's driver and zex-cpu build it, and so
 * must zex::Module (docs/spirv-passes.md, "Block order"). Built -O2 and -O2 -g by
 * tests/passes/CMakeLists.txt; tests/passes/passes_block_order_test.cpp and passes_e2e_test.cpp check
 * that each module really has that order, is accepted, computes the right values and reports a throw
 * with its line (the tests read the line of each ZEXT_LINE_ marker from this file). */
#include <zex/device.h>

/* The simplest shape: a loop with a constant trip count whose value is used after it. */
__kernel void lcg(__global uint* dst, __global const uint* src) {
  uint acc = 1;
  for (uint k = 0; k < 64; ++k) acc = acc * 1664525u + src[k];
  dst[0] = acc;
}

/* The same loop, then a check of the value it computed: the throw comes after the loop's exit. */
__kernel void lcg_checked(__global uint* dst, __global const uint* src, uint n, zex_state_t zex) {
  uint acc = 1;
  for (uint k = 0; k < 64; ++k) acc = acc * 1664525u + src[k];
  ZEX_CHECK_BOUNDS(zex, acc % 1024u, n); /* ZEXT_LINE_LCG */
  dst[acc % 1024u] = acc;
}

/* Two loops over a row of __local memory with a barrier between them, the second's exit block
 * written before its body (the shape Rodinia's nw has): each work-item sums its row of src and then
 * the sums of the rows before it; a check inside the second loop. */
__kernel void rows(__global uint* dst, __global const uint* src, __local uint* sums, uint n, zex_state_t zex) {
  const uint t = (uint)get_local_id(0);
  uint s = 0;
  for (uint k = 0; k < 64; ++k) s += src[t * 64 + k];
  sums[t] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  uint prefix = 0;
  for (uint k = 0; k < 64; ++k) {
    const uint i = k <= t ? k : t;
    ZEX_CHECK_BOUNDS(zex, i + src[4096 + t], n); /* ZEXT_LINE_ROWS */
    prefix += sums[i];
  }
  dst[t] = prefix;
}
