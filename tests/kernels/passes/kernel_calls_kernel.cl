/* One kernel calls another (valid OpenCL C; issue 24, item 10), built -O0 and -O0 -g by
 * tests/passes/CMakeLists.txt. Every kernel's throw in the helper `check` must end the work-item:
 * `inner` run as a kernel, `inner` called by `outer`, and `other`, which calls no kernel (the pass
 * used to leave the whole module alone). passes_e2e_test.cpp (ThrowInHelper.AKernelThatCalls...)
 * runs them. Work-item i writes c[i] in check, c[64 + i] in inner and other, c[128 + i] in outer. */
#include <zex/device.h>

static inline void check(__global int* c, uint i, uint n, zex_state_t zex) {
  ZEX_CHECK_BOUNDS(zex, i, n); /* ZEXT_LINE_KCHECK */
  c[i] = 1;
}
__kernel void inner(__global int* c, uint bad, uint n, zex_state_t zex) {
  uint i = (uint)get_global_id(0);
  check(c, i == bad ? n + i : i, n, zex); /* ZEXT_LINE_INNER */
  c[64 + i] = 1;
}
__kernel void outer(__global int* c, uint bad, uint n, zex_state_t zex) {
  inner(c, bad, n, zex); /* ZEXT_LINE_OUTER */
  c[128 + get_global_id(0)] = 1;
}
__kernel void other(__global int* c, uint bad, uint n, zex_state_t zex) {
  uint i = (uint)get_global_id(0);
  check(c, i == bad ? n + i : i, n, zex);
  c[64 + i] = 1;
}
