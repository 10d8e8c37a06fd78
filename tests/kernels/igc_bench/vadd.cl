/* Shape 1: one checked access site. The kernel the CPU benchmark also runs. */
#include "check.h"

__kernel void vadd(__global float* c, __global const float* a, __global const float* b,
                   uint n ZEXB_STATE_PARAM) {
  ZEXB_PROLOGUE
  size_t i = get_global_id(0);
#ifdef ZEXB_VERSIONED
  /* Work-group range versioning (the CPU benchmark's zexNv variants): when the whole group is in
     bounds no check can fail, and the branch is uniform, so PoCL's work-item loop gets a check-free,
     vectorizable version. What a compiler (or zex-cpu's code generation) can do for affine checks. */
  if ((get_group_id(0) + 1) * get_local_size(0) + get_global_offset(0) <= n) {
    c[i] = a[i] + b[i];
    return;
  }
#endif
  ZEXB_CHECK(i, n);
  c[i] = a[i] + b[i];
  ZEXB_EPILOGUE
}
