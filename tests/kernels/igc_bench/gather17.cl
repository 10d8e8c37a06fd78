/* Shape 2: a gather with 17 bounds-checked accesses in one kernel, each on its own line, so the
 * cost of a check site multiplies by 17. Generated once by hand from a loop; kept unrolled so every
 * site is a distinct source location, as a language compiler emits them. */
#include "check.h"

__kernel void gather17(__global float* out, __global const float* src, __global const uint* idx,
                       uint n, uint m ZEXB_STATE_PARAM) {
  ZEXB_PROLOGUE
  size_t i = get_global_id(0);
  uint j;
  float s = 0.0f;
  j = idx[0u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 1.0f;
  j = idx[1u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 2.0f;
  j = idx[2u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 3.0f;
  j = idx[3u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 4.0f;
  j = idx[4u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 5.0f;
  j = idx[5u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 6.0f;
  j = idx[6u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 7.0f;
  j = idx[7u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 8.0f;
  j = idx[8u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 9.0f;
  j = idx[9u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 10.0f;
  j = idx[10u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 11.0f;
  j = idx[11u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 12.0f;
  j = idx[12u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 13.0f;
  j = idx[13u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 14.0f;
  j = idx[14u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 15.0f;
  j = idx[15u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 16.0f;
  j = idx[16u * m + i];
  ZEXB_CHECK(j, n);
  s += src[j] * 17.0f;
  out[i] = s;
  ZEXB_EPILOGUE
}
