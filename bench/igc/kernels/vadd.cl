/* Shape 1: one checked access site. The kernel the CPU benchmark also runs. */
#include "check.h"

__kernel void vadd(__global float* c, __global const float* a, __global const float* b,
                   uint n ZEXB_STATE_PARAM) {
  ZEXB_PROLOGUE
  size_t i = get_global_id(0);
  ZEXB_CHECK(i, n);
  c[i] = a[i] + b[i];
  ZEXB_EPILOGUE
}
