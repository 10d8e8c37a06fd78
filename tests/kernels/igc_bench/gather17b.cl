/* Shape 5: a second 17-check gather, written for issue 15's targets after the pass work and never
 * tuned against (the rule: hold every target on a kernel the optimizations did not see). Unlike
 * gather17: 64-bit indices computed from a row table, an integer accumulation, loads of two arrays,
 * and checks on computed positions rather than on loaded indices alone. */
#include "check.h"

__kernel void gather17b(__global int* out, __global const int* vals, __global const ulong* rows,
                        __global const int* w, ulong n, ulong nrows ZEXB_STATE_PARAM) {
  ZEXB_PROLOGUE
  size_t g = get_global_id(0);
  ulong r;
  int acc = 0;
  r = (g * 17u + 0u) % nrows;
  ZEXB_CHECK(rows[r] + 0u, n);
  acc = acc * 3 + vals[rows[r] + 0u] * w[0];
  r = (g * 17u + 1u) % nrows;
  ZEXB_CHECK(rows[r] + 1u, n);
  acc = acc * 3 + vals[rows[r] + 1u] * w[1];
  r = (g * 17u + 2u) % nrows;
  ZEXB_CHECK(rows[r] + 2u, n);
  acc = acc * 3 + vals[rows[r] + 2u] * w[2];
  r = (g * 17u + 3u) % nrows;
  ZEXB_CHECK(rows[r] + 3u, n);
  acc = acc * 3 + vals[rows[r] + 3u] * w[3];
  r = (g * 17u + 4u) % nrows;
  ZEXB_CHECK(rows[r] + 4u, n);
  acc = acc * 3 + vals[rows[r] + 4u] * w[4];
  r = (g * 17u + 5u) % nrows;
  ZEXB_CHECK(rows[r] + 5u, n);
  acc = acc * 3 + vals[rows[r] + 5u] * w[5];
  r = (g * 17u + 6u) % nrows;
  ZEXB_CHECK(rows[r] + 6u, n);
  acc = acc * 3 + vals[rows[r] + 6u] * w[6];
  r = (g * 17u + 7u) % nrows;
  ZEXB_CHECK(rows[r] + 7u, n);
  acc = acc * 3 + vals[rows[r] + 7u] * w[7];
  r = (g * 17u + 8u) % nrows;
  ZEXB_CHECK(rows[r] + 8u, n);
  acc = acc * 3 + vals[rows[r] + 8u] * w[8];
  r = (g * 17u + 9u) % nrows;
  ZEXB_CHECK(rows[r] + 9u, n);
  acc = acc * 3 + vals[rows[r] + 9u] * w[9];
  r = (g * 17u + 10u) % nrows;
  ZEXB_CHECK(rows[r] + 10u, n);
  acc = acc * 3 + vals[rows[r] + 10u] * w[10];
  r = (g * 17u + 11u) % nrows;
  ZEXB_CHECK(rows[r] + 11u, n);
  acc = acc * 3 + vals[rows[r] + 11u] * w[11];
  r = (g * 17u + 12u) % nrows;
  ZEXB_CHECK(rows[r] + 12u, n);
  acc = acc * 3 + vals[rows[r] + 12u] * w[12];
  r = (g * 17u + 13u) % nrows;
  ZEXB_CHECK(rows[r] + 13u, n);
  acc = acc * 3 + vals[rows[r] + 13u] * w[13];
  r = (g * 17u + 14u) % nrows;
  ZEXB_CHECK(rows[r] + 14u, n);
  acc = acc * 3 + vals[rows[r] + 14u] * w[14];
  r = (g * 17u + 15u) % nrows;
  ZEXB_CHECK(rows[r] + 15u, n);
  acc = acc * 3 + vals[rows[r] + 15u] * w[15];
  r = (g * 17u + 16u) % nrows;
  ZEXB_CHECK(rows[r] + 16u, n);
  acc = acc * 3 + vals[rows[r] + 16u] * w[16];
  out[g] = acc;
  ZEXB_EPILOGUE
}
