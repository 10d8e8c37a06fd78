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
