/* Throw sites as a compiler may emit them from the ABI text: the three entry points called in order,
 * unconditionally (frame and signal check the claim themselves), then return; four sites. The merge
 * pass must turn them into one block (its first pattern). */
#include <zex/abi.h>

int zex_report_exception(zex_state_t zex, __constant char* name, __constant char* reason);
void zex_report_frame(zex_state_t zex, uint index, __constant char* function, __constant char* file, uint line);
void zex_signal_exception(zex_state_t zex);

#define SITE(cond, line)                                                        \
  if (cond) {                                                                   \
    zex_report_exception(zex, "BoundsError", "Out-of-bounds array access");     \
    zex_report_frame(zex, 0u, "abi_sequence", "abi_sequence.cl", line);         \
    zex_signal_exception(zex);                                                  \
    return;                                                                     \
  }

__kernel void abi_sequence(__global float* out, __global const float* in, __global const uint* idx, uint n,
                           zex_state_t zex) {
  size_t i = get_global_id(0);
  uint a = idx[4 * i], b = idx[4 * i + 1], c = idx[4 * i + 2], d = idx[4 * i + 3];
  SITE(a >= n, 101u)
  SITE(b >= n, 102u)
  SITE(c >= n, 103u)
  SITE(d >= n, 104u)
  out[i] = in[a] + in[b] + in[c] + in[d];
}
