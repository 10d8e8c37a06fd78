/* Throw sites clang has merged (issue 24, item 9), built -O2 and -O2 -g by tests/passes/CMakeLists.txt:
 * the two checks in the loop of a value-returning helper are sunk into one zex_throw whose line is an
 * OpPhi of the two lines; in `pick` the reason is an OpSelect of two strings. zex numbers each
 * site and chooses the id the same way, so every level reports the check that failed.
 * passes_e2e_throws_test.cpp (ThrowInHelper.MergedSites...) and passes_throw_paths_test.cpp use them. */
#include <zex/device.h>

static inline float dot_checked(__global const float* a, __global const uint* idx, uint m, uint n, zex_state_t zex) {
  float s = 0;
  for (uint k = 0; k < m; ++k) {
    uint i = idx[k];
    ZEX_CHECK_BOUNDS_RET(zex, i, n, 0.0f); /* ZEXT_LINE_FIRST */
    uint j = idx[k + m];
    ZEX_CHECK_BOUNDS_RET(zex, j, n, 0.0f); /* ZEXT_LINE_SECOND */
    s += a[i] * a[j];
  }
  return s;
}
/* Work-item w reads idx[2m w .. 2m w + 2m): m first indices, then m second ones. */
__kernel void merged(__global float* c, __global const float* a, __global const uint* idx, uint m, uint n,
                     zex_state_t zex) {
  uint w = (uint)get_global_id(0);
  c[w] = dot_checked(a, idx + 2 * m * w, m, n, zex);
}

/* A reason chosen at run time from two constants: an OpSelect, one site each. */
static inline int pick(__global const int* a, uint i, uint n, uint which, zex_state_t zex) {
  if (i >= n) ZEX_THROW_VALUE_RET(zex, "ArgumentError", which ? "which is set" : "which is clear", i, 0); /* ZEXT_LINE_PICK */
  return a[i];
}
__kernel void selected(__global int* c, __global const int* a, uint bad, uint n, uint which, zex_state_t zex) {
  uint w = (uint)get_global_id(0);
  c[w] = pick(a, w == bad ? n + w : w, n, which, zex);
}
