/* Shape 3: a 5-point 2-D stencil over a row-major h x w grid with a row and a column check on every
 * access (12 sites in the source). Indices are unsigned, so x - 1 at the left edge wraps and fails
 * its check, as an out-of-bounds access should. */
#include "check.h"

__kernel void stencil2d(__global float* out, __global const float* in, uint w, uint h ZEXB_STATE_PARAM) {
  ZEXB_PROLOGUE
  size_t x = get_global_id(0);
  size_t y = get_global_id(1);
  size_t xl = x - 1, xr = x + 1, yu = y - 1, yd = y + 1;
  ZEXB_CHECK(y, h);
  ZEXB_CHECK(x, w);
  float c = in[y * w + x];
  ZEXB_CHECK(y, h);
  ZEXB_CHECK(xl, w);
  float l = in[y * w + xl];
  ZEXB_CHECK(y, h);
  ZEXB_CHECK(xr, w);
  float r = in[y * w + xr];
  ZEXB_CHECK(yu, h);
  ZEXB_CHECK(x, w);
  float u = in[yu * w + x];
  ZEXB_CHECK(yd, h);
  ZEXB_CHECK(x, w);
  float d = in[yd * w + x];
  ZEXB_CHECK(y, h);
  ZEXB_CHECK(x, w);
  out[y * w + x] = 0.5f * c + 0.125f * (l + r + u + d);
  ZEXB_EPILOGUE
}
