// The demo's kernel: a vector add with a bounds check. The host launches more work-items than there
// are elements, so the last work-items throw BoundsError instead of writing past the arrays.
#include <zex/device.h>

__kernel void vadd(__global float* c, __global const float* a, __global const float* b, uint n,
                   zex_state_t zex) {
  size_t i = get_global_id(0);
  ZEX_CHECK_BOUNDS(zex, i, n);
  c[i] = a[i] + b[i];
}
