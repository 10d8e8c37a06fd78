/* Throws in helpers (issue 15): every shape the throw-path pass must number and end the work-item
 * for. Built four ways by tests/passes/CMakeLists.txt: -O2 with -g (the front end inlines the helpers;
 * the debug information keeps their frames), -O0 with and without -g (every helper a call), and -O2
 * with ZEXT_NOINLINE (helpers stay calls in an optimized module).
 *
 * The line numbers matter: tests/passes/passes_throw_paths_test.cpp and passes_e2e_test.cpp expect
 * them (the tests read the line of each marker from this file). */
#include <zex/device.h>

#ifdef ZEXT_NOINLINE
#define HELPER __attribute__((noinline))
#else
#define HELPER static inline
#endif

/* --- chain3: kernel -> h1 -> h2 -> h3, the check in h3; then the kernel writes c[77]. --- */
HELPER void h3(__global int* c, uint i, uint n, zex_state_t zex) {
  ZEX_CHECK_BOUNDS(zex, i, n); /* ZEXT_LINE_H3 */
  c[i] = 1;
}
HELPER void h2(__global int* c, uint i, uint n, zex_state_t zex) {
  h3(c, i, n, zex); /* ZEXT_LINE_H2 */
  c[i] += 2;
}
HELPER void h1(__global int* c, uint i, uint n, zex_state_t zex) {
  h2(c, i, n, zex); /* ZEXT_LINE_H1 */
  c[i] += 4;
}
__kernel void chain3(__global int* c, uint bad, uint n, zex_state_t zex) {
  uint i = (uint)get_global_id(0);
  h1(c, i == bad ? n + i : i, n, zex); /* ZEXT_LINE_CHAIN3 */
  c[77] = 42;
}

/* --- shared: one helper, two call sites in the kernel; `which` picks the one that throws. --- */
HELPER void check_at(__global int* c, uint i, uint n, zex_state_t zex) {
  ZEX_CHECK_BOUNDS(zex, i, n); /* ZEXT_LINE_CHECK_AT */
  c[i] += 1;
}
HELPER void via_a(__global int* c, uint i, uint n, zex_state_t zex) {
  check_at(c, i, n, zex); /* ZEXT_LINE_VIA_A */
}
HELPER void via_b(__global int* c, uint i, uint n, zex_state_t zex) {
  check_at(c, i, n, zex); /* ZEXT_LINE_VIA_B */
}
__kernel void shared(__global int* c, uint which, uint n, zex_state_t zex) {
  uint i = (uint)get_global_id(0);
  via_a(c, which == 1 && i == 3 ? n : i, n, zex); /* ZEXT_LINE_SHARED_A */
  via_b(c, which == 2 && i == 3 ? n : i, n, zex); /* ZEXT_LINE_SHARED_B */
  c[77] = 42;
}

/* --- value: a helper that returns a value throws (the flag travels next to it). --- */
HELPER int load_checked(__global const int* a, uint i, uint n, zex_state_t zex) {
  if (i >= n) {
    zex_throw(zex, "BoundsError", "load_checked", 2u, ZEX_VALUES_BOUNDS, i, n, (__constant char*)__func__, __FILE__,
              (uint)__LINE__); /* ZEXT_LINE_LOAD */
    return -1;
  }
  return a[i];
}
__kernel void value(__global int* c, __global const int* a, uint bad, uint n, zex_state_t zex) {
  uint i = (uint)get_global_id(0);
  int v = load_checked(a, i == bad ? n : i, n, zex); /* ZEXT_LINE_VALUE */
  c[i] = v + 1;
  c[77] = 42;
}

/* --- deep: 18 calls deep, more frames than a report keeps. --- */
#define DEEP(k, next)                                                   \
  HELPER void deep##k(__global int* c, uint i, uint n, zex_state_t zex) { \
    next(c, i, n, zex);                                                 \
  }
DEEP(0, h3)
DEEP(1, deep0) DEEP(2, deep1) DEEP(3, deep2) DEEP(4, deep3) DEEP(5, deep4) DEEP(6, deep5) DEEP(7, deep6)
DEEP(8, deep7) DEEP(9, deep8) DEEP(10, deep9) DEEP(11, deep10) DEEP(12, deep11) DEEP(13, deep12)
DEEP(14, deep13) DEEP(15, deep14) DEEP(16, deep15)
__kernel void deep(__global int* c, uint bad, uint n, zex_state_t zex) {
  uint i = (uint)get_global_id(0);
  deep16(c, i == bad ? n : i, n, zex);
  c[77] = 42;
}
