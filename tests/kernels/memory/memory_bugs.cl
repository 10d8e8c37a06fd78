// Kernels with no zex code, as a compiler that emits no checks writes them (tests/memory/: zex's
// memory checks, issue 27). Each has the bug its name says when launched past its data, and stays in
// bounds otherwise; "LINE:<marker>" marks the access a report must name (found by the test).
// Written for zex; no third-party code.

// Reads in[i - 1], in[i], in[i + 1] for every i < n: i = n - 1 reads one past the end.
kernel void stencil(global float* out, global const float* in, uint n) {
  size_t i = get_global_id(0);
  if (i == 0 || i >= n) return;
  out[i] = in[i - 1] + in[i] + in[i + 1];  // LINE:stencil
}

// out[x * rows + y] with the extents swapped: past the end unless rows == cols.
kernel void transpose(global float* out, global const float* in, uint rows, uint cols) {
  size_t x = get_global_id(0), y = get_global_id(1);
  if (x >= cols || y >= rows) return;
  out[x * cols + y] = in[y * cols + x];  // LINE:transpose
}

// k <= n: one element too many.
kernel void prefix(global int* out, uint n) {
  if (get_global_id(0) != 0) return;
  int s = 0;
  for (uint k = 0; k <= n; ++k) {
    s += (int)k;
    out[k] = s;  // LINE:prefix
  }
}

// The second pointer argument is the short one.
kernel void copy2(global const int* src, global int* dst, uint n) {
  size_t i = get_global_id(0);
  if (i < n) dst[i] = src[i];  // LINE:copy2
}

// A histogram whose bin index is not clamped.
kernel void histogram(global const uint* values, global int* bins, uint n) {
  size_t i = get_global_id(0);
  if (i < n) atomic_add(&bins[values[i]], 1);  // LINE:histogram
}

// The store happens in a helper that keeps its own function.
__attribute__((noinline)) void store_at(global float* p, size_t i, float v) {
  p[i] = v;  // LINE:helper
}
kernel void through_helper(global float* out, uint n) {
  size_t i = get_global_id(0);
  if (i <= n) store_at(out, i, (float)i);
}

// A pointer read from memory: not checked, counted; never reported falsely.
kernel void loaded(global float* global* table, uint i) { table[0][i] = 5.0f; }

// A work-group tile sized for 16 work-items: a group of 32 writes past it (tile[16] and on), before the
// barrier; a group of 16 stays in bounds. Each reads its neighbour's element (within the first 16).
kernel void tiled(global float* out, global const float* in) {
  local float tile[16];
  size_t l = get_local_id(0), i = get_global_id(0);
  tile[l] = in[i];  // LINE:tiled
  barrier(CLK_LOCAL_MEM_FENCE);
  out[i] = tile[(l + 1) % 16];
}

// tiled's tile as a __local parameter: its size is what the launch gives it (zex::local), the bound
// of its checks.
kernel void tiled_param(global float* out, global const float* in, local float* tile) {
  size_t l = get_local_id(0), i = get_global_id(0);
  tile[l] = in[i];  // LINE:tiled_param
  barrier(CLK_LOCAL_MEM_FENCE);
  out[i] = tile[(l + 1) % get_local_size(0)];
}

// A helper given a pointer one element into a __local parameter (at -O0 it stays a function: the
// bounds reach it relative to the pointer it is given) writes element l of it: tile[l + 1].
void put_at(local float* t, size_t l, float v) {
  t[l] = v;  // LINE:put_at
}
kernel void shifted_param(global float* out, local float* tile) {
  size_t l = get_local_id(0);
  put_at(tile + 1, l, (float)l + 0.5f);
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = tile[l + 1];
}

// Three reads off one base and one index, moved by constants (a stencil's window): on -O2 one check
// covers in[i - 2] .. in[i + 2], and a failure is told apart in program order. i = 0 and 1 read before
// the start (in[i - 2]); i >= n - 2 past the end (in[i + 2]), for an `in` of n elements.
kernel void window(global float* out, global const float* in, uint lo, uint n) {
  size_t i = get_global_id(0);
  if (i < lo || i >= n) return;
  out[i] = in[i + 2] * 4.0f - in[i - 2] + in[i];  // LINE:window
}

// Two reads off one index with a write through another argument between them: the write's check comes
// first and must be the one reported when both fail, so the reads share no check across it.
kernel void interleaved(global float* out, global const float* in) {
  size_t c = get_global_id(0);
  float a = in[c];
  out[c] = a;  // LINE:interleaved
  out[c] += in[c + 1];
}
