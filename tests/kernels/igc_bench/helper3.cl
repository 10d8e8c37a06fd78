/* Shape 4: checks in helpers (issue 15). kernel -> h1 -> h2 -> h3, one check in h3 and one in the
 * kernel, as a language runtime's library of checked accessors gives. Built twice: helpers inline
 * (static inline, the front end inlines them) and, with ZEXB_NOINLINE, as calls that stay calls in
 * the SPIR-V (Intel's compiler decides whether to inline them). zex's pass gives every helper that may
 * throw a flag its caller checks: this shape measures what that costs on the path that does not throw. */
#include "check.h"

#ifdef ZEXB_NOINLINE
#define ZEXB_HELPER __attribute__((noinline))
#else
#define ZEXB_HELPER static inline
#endif

ZEXB_HELPER void h3(__global float* c, __global const float* a, uint i, uint n ZEXB_STATE_PARAM) {
  ZEXB_PROLOGUE
  ZEXB_CHECK(i, n);
  c[i] = a[i] * 2.0f;
  ZEXB_EPILOGUE
}
ZEXB_HELPER void h2(__global float* c, __global const float* a, uint i, uint n ZEXB_STATE_PARAM) {
  h3(c, a, i, n ZEXB_STATE_ARG);
  c[i] += 1.0f;
}
ZEXB_HELPER void h1(__global float* c, __global const float* a, uint i, uint n ZEXB_STATE_PARAM) {
  h2(c, a, i + 1u, n ZEXB_STATE_ARG);
  c[i] += 3.0f;
}
__kernel void helper3(__global float* c, __global const float* a, uint n ZEXB_STATE_PARAM) {
  ZEXB_PROLOGUE
  uint i = (uint)get_global_id(0);
  ZEXB_CHECK(i, n);
  h1(c, a, i, n ZEXB_STATE_ARG);
  ZEXB_EPILOGUE
}
