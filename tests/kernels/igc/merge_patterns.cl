/* Throw sites the merge_throw_sites pass must handle or leave alone correctly: checks inside a loop,
 * two exception kinds (different name and reason strings: the pass phis the strings too), a throw in
 * a helper that clang inlines, and a check whose failure path is shared by two conditions. */
#include <zex/device.h>

static inline float checked_load(__global const float* p, uint i, uint n, zex_state_t zex, __global int* bail) {
  if (i >= n) {
    *bail = 1;
    return 0.0f;
  }
  return p[i];
}

__kernel void merge_patterns(__global float* out, __global const float* in, __global const uint* idx, uint n,
                             uint m, __global int* bail, zex_state_t zex) {
  size_t i = get_global_id(0);
  float s = 0.0f;
  for (uint k = 0; k < m; ++k) {
    uint j = idx[k * 64u + i];
    ZEX_CHECK_BOUNDS(zex, j, n);
    s += in[j];
  }
  if (s < 0.0f)
    ZEX_THROW(zex, "DomainError", "negative sum");
  if (isnan(s))
    ZEX_THROW(zex, "DomainError", "NaN sum");
  uint j2 = idx[i];
  ZEX_CHECK_BOUNDS(zex, j2, n);
  s += checked_load(in, j2 + 1u, n, zex, bail);
  ZEX_CHECK_BOUNDS(zex, i, (size_t)n);
  out[i] = s;
}
