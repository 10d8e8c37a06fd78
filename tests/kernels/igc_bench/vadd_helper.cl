/* The vector add with its check in a helper (issue 15): kernel `vadd`, the same signature as vadd.cl,
 * so that the zex-cpu benchmark (bench/igc/cpu/zexcpu_levels) runs it unchanged. With zex's pass the
 * helper returns a "thrown" flag the kernel checks after the call; this measures what that costs when
 * nothing throws. ZEXB_NOINLINE keeps the helper a call in the SPIR-V. */
#include "check.h"

#ifdef ZEXB_NOINLINE
#define ZEXB_HELPER __attribute__((noinline))
#else
#define ZEXB_HELPER static inline
#endif

ZEXB_HELPER void add_at(__global float* c, __global const float* a, __global const float* b, size_t i,
                        uint n ZEXB_STATE_PARAM) {
  ZEXB_PROLOGUE
  ZEXB_CHECK(i, n);
  c[i] = a[i] + b[i];
  ZEXB_EPILOGUE
}

__kernel void vadd(__global float* c, __global const float* a, __global const float* b,
                   uint n ZEXB_STATE_PARAM) {
  add_at(c, a, b, get_global_id(0), n ZEXB_STATE_ARG);
}
