// Kernels for bench/memory (issue 27's costs): no zex calls, only a zex_state_t (unused), so that the
// same kernels launch through zex::Stream unchecked (a module built without check_memory) and checked
// (ModuleOptions{check_memory}): the ratio is the checks' cost alone. Written for zex, in the shape of
// Rodinia / PolyBench / SHOC kernels (a 5-point stencil, a naive gemm, a work-group tree reduction with
// barriers, an atomic histogram, an all-pairs n-body step); no third-party code (the third-party kernels
// are tests/corpus/, timed by bench/corpus).
#include <zex/device.h>

// The launch's bounds lookup: 1, 8 and 32 checked pointer arguments, one work-item.
kernel void ptr1(global int* a0, zex_state_t zex) {
  size_t i = get_global_id(0);
  a0[i] += 1;
}
kernel void ptr8(global int* a0, global int* a1, global int* a2, global int* a3, global int* a4, global int* a5, global int* a6, global int* a7, zex_state_t zex) {
  size_t i = get_global_id(0);
  a0[i] += 1; a1[i] += 1; a2[i] += 1; a3[i] += 1; a4[i] += 1; a5[i] += 1; a6[i] += 1; a7[i] += 1;
}
kernel void ptr32(global int* a0, global int* a1, global int* a2, global int* a3, global int* a4, global int* a5, global int* a6, global int* a7, global int* a8, global int* a9, global int* a10, global int* a11, global int* a12, global int* a13, global int* a14, global int* a15, global int* a16, global int* a17, global int* a18, global int* a19, global int* a20, global int* a21, global int* a22, global int* a23, global int* a24, global int* a25, global int* a26, global int* a27, global int* a28, global int* a29, global int* a30, global int* a31, zex_state_t zex) {
  size_t i = get_global_id(0);
  a0[i] += 1; a1[i] += 1; a2[i] += 1; a3[i] += 1; a4[i] += 1; a5[i] += 1; a6[i] += 1; a7[i] += 1;
  a8[i] += 1; a9[i] += 1; a10[i] += 1; a11[i] += 1; a12[i] += 1; a13[i] += 1; a14[i] += 1; a15[i] += 1;
  a16[i] += 1; a17[i] += 1; a18[i] += 1; a19[i] += 1; a20[i] += 1; a21[i] += 1; a22[i] += 1; a23[i] += 1;
  a24[i] += 1; a25[i] += 1; a26[i] += 1; a27[i] += 1; a28[i] += 1; a29[i] += 1; a30[i] += 1; a31[i] += 1;
}

kernel void saxpy(global float* y, global const float* x, float a, uint n, zex_state_t zex) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}

kernel void stencil2d(global float* out, global const float* in, uint w, uint h, zex_state_t zex) {
  size_t x = get_global_id(0), y = get_global_id(1);
  if (x == 0 || y == 0 || x + 1 >= w || y + 1 >= h) return;
  size_t c = y * w + x;
  out[c] = 0.5f * in[c] + 0.125f * (in[c - 1] + in[c + 1] + in[c - w] + in[c + w]);
}

kernel void gemm(global float* c, global const float* a, global const float* b, uint n, zex_state_t zex) {
  size_t j = get_global_id(0), i = get_global_id(1);
  if (i >= n || j >= n) return;
  float s = 0.0f;
  for (uint k = 0; k < n; ++k) s += a[i * n + k] * b[k * n + j];
  c[i * n + j] = s;
}

// One partial sum per work-group of 64.
kernel void reduce(global float* partial, global const float* in, uint n, zex_state_t zex) {
  local float tile[64];
  size_t l = get_local_id(0), i = get_global_id(0);
  tile[l] = i < n ? in[i] : 0.0f;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {
    if (l < s) tile[l] += tile[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) partial[get_group_id(0)] = tile[0];
}

kernel void histogram(global uint* bins, global const uint* values, uint n, uint nbins, zex_state_t zex) {
  size_t i = get_global_id(0);
  if (i < n) atomic_inc(&bins[values[i] % nbins]);
}

kernel void nbody(global float4* acc, global const float4* pos, uint n, zex_state_t zex) {
  size_t i = get_global_id(0);
  if (i >= n) return;
  float4 p = pos[i], a = (float4)(0.0f);
  for (uint j = 0; j < n; ++j) {
    float4 d = pos[j] - p;
    float r2 = d.x * d.x + d.y * d.y + d.z * d.z + 0.01f;
    a += d * (pos[j].w * rsqrt(r2 * r2 * r2));
  }
  acc[i] = a;
}
