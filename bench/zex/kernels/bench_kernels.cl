// Kernels of the zex library benchmarks (bench/zex/zex_bench.cpp).
#include <zex/device.h>

// A launch that does almost nothing, so that the benchmark measures the launch path; work-item 0
// writes `token` so that the host can see the kernel has run without synchronizing.
__kernel void touch(__global volatile uint* flag, uint token, zex_state_t zex) {
  if (get_global_id(0) == 0) *flag = token;
}

// Work-item 0 throws: the cost of getting the exception to the host.
__kernel void throw_now(uint token, zex_state_t zex) {
  if (get_global_id(0) == 0) ZEX_THROW(zex, "BenchError", "thrown by the benchmark");
}

// An empty kernel: the queued-launch benchmark measures the launch pipeline alone.
__kernel void empty(zex_state_t zex) {}

// A kernel as a user writes it, not tuned for zex: y = a*x + y over n elements with one bounds check,
// launched on whole work-groups that may overshoot n.
__kernel void saxpy(__global float* y, __global const float* x, float a, uint n, zex_state_t zex) {
  size_t i = get_global_id(0);
  if (i >= n) return;
  ZEX_CHECK_BOUNDS(zex, i, n);
  y[i] = a * x[i] + y[i];
}

// Early stop's saving (bench/zex/queued_bench.cpp, BM_Stop_*): a large launch whose work-items each do
// `iters` multiply-adds and store the result; work-item 0 of group `thrower` throws first (none if
// thrower == UINT_MAX).
__kernel void busy_throw(__global float* out, uint iters, uint thrower, zex_state_t zex) {
  if (get_group_id(0) == thrower && get_local_id(0) == 0) ZEX_THROW_VALUES(zex, "StopBench", "thrown early", thrower, 0);
  float v = (float)get_global_id(0);
  for (uint k = 0; k < iters; ++k) v = v * 0.999f + 1.0f;
  out[get_global_id(0)] = v;
}
