/* A check made twice on the same condition (issue 24, item 10), built -O2 (and -O2 -g) by
 * tests/passes/CMakeLists.txt. clang inlines `get` twice and jump-threads the second check into the
 * first's cold block: that block calls zex_throw, stores c[i] = 0 (the code between the two calls),
 * and calls zex_throw again. A throw ends the work-item, so the store must not happen and the
 * thrower must be counted once. passes_e2e_test.cpp (ThrowInHelper.ACheckMadeTwice...) runs it. */
#include <zex/device.h>

static inline int get(__global const int* a, uint i, uint n, zex_state_t zex) {
  ZEX_CHECK_BOUNDS_RET(zex, i, n, 0); /* ZEXT_LINE_GET */
  return a[i];
}
__kernel void twice(__global int* c, __global const int* a, uint bad, uint n, zex_state_t zex) {
  uint i = (uint)get_global_id(0);
  uint j = i == bad ? n + i : i;
  int x = get(a, j, n, zex);
  c[i] = x + 1;
  int y = get(a, j, n, zex);
  c[64 + i] = y + 1;
}

/* The same with a void helper called twice: the second call's check is threaded into the first's
 * cold block, after c[i] = 1. */
static inline void put(__global int* c, uint i, uint n, uint at, zex_state_t zex) {
  ZEX_CHECK_BOUNDS(zex, i, n); /* ZEXT_LINE_PUT */
  c[at] += 1;
}
__kernel void twice_void(__global int* c, uint bad, uint n, zex_state_t zex) {
  uint i = (uint)get_global_id(0);
  uint j = i == bad ? n + i : i;
  put(c, j, n, 128 + i, zex);
  c[i] = 1;
  put(c, j, n, 192 + i, zex);
  c[64 + i] = 1;
}
