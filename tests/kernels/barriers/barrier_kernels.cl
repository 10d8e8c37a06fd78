// Throws before work-group barriers (issue 24, item 5): the shapes of Rodinia's bpnn_layerforward,
// hotspot, nw and lavaMD, written fresh for zex (not their code), plus a throw in a helper called
// before a barrier and a throw inside a loop that contains a barrier. Every kernel runs in groups of
// 16 work-items; `n` is the length the host says `in` has, so a launch with n < the global size makes
// the work-items past n throw. The expected outputs are computed on the host (barrier_test.cpp).
#include <zex/device.h>

#define G 16

// bpnn_layerforward: one work-item loads the group's input into local memory, a barrier, every
// work-item multiplies, then a tree reduction with a barrier per step.
__kernel void layer(__global float* out, __global const float* in, __global const float* w, uint n,
                    zex_state_t zex) {
  __local float node[G];
  __local float prod[G];
  uint t = get_local_id(0);
  size_t g = get_global_id(0);
  if (t == 0) {
    size_t base = get_group_id(0) * G;
    for (uint k = 0; k < G; ++k) {
      ZEX_CHECK_BOUNDS(zex, base + k, n);  // LINE:layer
      node[k] = in[base + k];
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  prod[t] = node[t] * w[g];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = G / 2; s > 0; s >>= 1) {
    if (t < s) prod[t] += prod[t + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0) out[get_group_id(0)] = prod[0];
}

// hotspot: every work-item loads its cell (checked), a barrier, a stencil over the neighbours in local
// memory, a barrier, the store.
__kernel void stencil(__global float* out, __global const float* in, uint n, zex_state_t zex) {
  __local float tile[G];
  uint t = get_local_id(0);
  size_t g = get_global_id(0);
  ZEX_CHECK_BOUNDS(zex, g, n);  // LINE:stencil
  tile[t] = in[g];
  barrier(CLK_LOCAL_MEM_FENCE);
  float left = tile[t == 0 ? 0 : t - 1], right = tile[t == G - 1 ? G - 1 : t + 1];
  float v = 0.25f * left + 0.5f * tile[t] + 0.25f * right;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[g] = v;
}

// nw: a wavefront over a local tile, one barrier per diagonal, the check inside the loop.
__kernel void wavefront(__global int* out, __global const int* in, uint n, zex_state_t zex) {
  __local int score[G + 1];
  uint t = get_local_id(0);
  size_t base = get_group_id(0) * G;
  if (t == 0) score[0] = 0;
  score[t + 1] = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint d = 0; d < G; ++d) {
    if (t == d) {
      ZEX_CHECK_BOUNDS(zex, base + t, n);  // LINE:wavefront
      score[t + 1] = max(score[t], 0) + in[base + t];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  out[base + t] = score[t + 1];
}

// lavaMD: each work-item accumulates over a neighbour box read through local memory, the check on a
// neighbour index computed from the input.
__kernel void boxes(__global float* out, __global const float* in, __global const int* nb, uint n,
                    zex_state_t zex) {
  __local float shared[G];
  uint t = get_local_id(0);
  size_t g = get_global_id(0);
  float acc = 0.0f;
  for (uint k = 0; k < 2; ++k) {
    int j = nb[g] + (int)k;
    ZEX_CHECK_BOUNDS(zex, (uint)j, n);  // LINE:boxes
    shared[t] = in[j];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint m = 0; m < G; ++m) acc += shared[m] * 0.5f;
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  out[g] = acc;
}

// A throw in a helper called before a barrier (void helpers with an out-parameter: a check in a
// value-returning helper is item 8's form).
static void fetch(__global const float* in, size_t i, uint n, float* v, zex_state_t zex) {
  ZEX_CHECK_BOUNDS(zex, i, n);  // LINE:fetch
  *v = in[i] * 2.0f;
}
__attribute__((noinline)) static void fetch_noinline(__global const float* in, size_t i, uint n, __local float* v,
                                                     zex_state_t zex) {
  ZEX_CHECK_BOUNDS(zex, i, n);  // LINE:fetch_noinline
  *v = in[i];
}
__kernel void helper_then_barrier(__global float* out, __global const float* in, uint n, zex_state_t zex) {
  __local float tile[G];
  __local float second[G];
  uint t = get_local_id(0);
  size_t g = get_global_id(0);
  float a = 0.0f;
  fetch(in, g, n, &a, zex);
  fetch_noinline(in, g, n, &second[t], zex);
  tile[t] = a + second[t];
  barrier(CLK_LOCAL_MEM_FENCE);
  out[g] = tile[(t + 1) % G];
}

// A throw inside a loop that contains a barrier: the thrower keeps arriving at every barrier.
__kernel void loop_barrier(__global float* out, __global const float* in, uint n, uint iters, zex_state_t zex) {
  __local float tile[G];
  uint t = get_local_id(0);
  size_t g = get_global_id(0);
  float acc = 0.0f;
  for (uint k = 0; k < iters; ++k) {
    size_t i = g + k * get_global_size(0);
    ZEX_CHECK_BOUNDS(zex, i, n);  // LINE:loop
    tile[t] = in[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    acc += tile[(t + k) % G];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  out[g] = acc;
}

// Rodinia particlefilter's likelihood kernel (issue 24, item 6: the merge once gave PoCL's work-group
// former a shape it aborted on): a guarded particle update through a value-returning helper with a
// check, a loop over the particle's neighbourhood whose computed index is checked, a barrier, then a
// tree reduction of the group's weights with a barrier per step. Integer arithmetic, so that the host
// computes the same values exactly.
uint pf_step(__global const uint* seed, size_t i, uint n, zex_state_t zex) {
  ZEX_CHECK_BOUNDS_RET(zex, i, n, 0u);  // LINE:pf_step
  return seed[i] * 1103515245u + 12345u;
}
__kernel void likelihood(__global uint* partial, __global uint* weights, __global const uint* seed,
                         __global const uint* img, __global const uint* offs, uint particles, uint n, uint img_n,
                         uint ones, zex_state_t zex) {
  __local uint buffer[G];
  uint t = get_local_id(0);
  size_t i = get_global_id(0);
  uint w = 0;
  if (i < particles) {
    uint x = pf_step(seed, i, n, zex) % 7u;
    uint sum = 0;
    for (uint j = 0; j < ones; ++j) {
      size_t ind = i + x + offs[j];
      ZEX_CHECK_BOUNDS(zex, ind, img_n);  // LINE:pf_ind
      sum += img[ind];
    }
    w = sum / ones;
    weights[i] = w;
  }
  buffer[t] = 0;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  buffer[t] = w;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (t < s) buffer[t] += buffer[t + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (t == 0) partial[get_group_id(0)] = buffer[0];
}
