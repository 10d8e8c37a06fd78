// Kernels for tests/device_test.cpp: a user module that imports the zex entry points through
// <zex/device.h> and is linked with zex_device.spv. Line numbers matter: the test finds the lines of
// the two throws by their markers.
#include <zex/device.h>

__kernel void vadd(__global float* c, __global const float* a, __global const float* b, uint n,
                   zex_state_t zex) {
  size_t i = get_global_id(0);
  ZEX_CHECK_BOUNDS(zex, i, n);  // marker:bounds
  c[i] = a[i] + b[i];
}

__kernel void safe_sqrt(__global float* y, __global const float* x, zex_state_t zex) {
  size_t i = get_global_id(0);
  if (x[i] < 0.0f)
    ZEX_THROW(zex, "DomainError", "sqrt of a negative number");  // marker:throw
  y[i] = sqrt(x[i]);
}
