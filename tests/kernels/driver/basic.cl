// Kernels for the basic execution, argument and command-list tests.

kernel void empty(void) {}

kernel void vadd(global const float* a, global const float* b, global float* c) {
  size_t i = get_global_id(0);
  c[i] = a[i] + b[i];
}

// Every work-item adds `v` to its own element: exact results reveal lost, repeated or reordered launches.
kernel void add_value(global int* p, int v) { p[get_global_id(0)] += v; }

// Writes the first `n` elements once; the marker `v` says which launch ran.
kernel void store_value(global int* p, int v) { p[get_global_id(0)] = v; }

// Slow enough (tens of ms) that a synchronous launch is visibly waited for; the last store is `v`.
kernel void spin_then_store(global volatile int* p, int iters, int v) {
  size_t g = get_global_id(0);
  for (int k = 0; k < iters; ++k) p[g] = -k - 1;
  p[g] = v;
}

typedef struct {
  int a;
  float b;
  long c;
  char d;
} pod_t;

// Scalars of several widths passed by value.
kernel void scalars(global long* out, char c, short s, int i, long l, float f) {
  out[0] = c;
  out[1] = s;
  out[2] = i;
  out[3] = l;
  out[4] = (long)(f * 4.0f);
}

// A struct passed by value.
kernel void by_struct(global long* out, pod_t s) {
  out[0] = s.a;
  out[1] = (long)(s.b * 4.0f);
  out[2] = s.c;
  out[3] = s.d;
}

// Records the full NDRange geometry of each work-item (3D), to check group size and group count.
kernel void geometry(global uint* out) {
  size_t gx = get_global_id(0), gy = get_global_id(1), gz = get_global_id(2);
  size_t idx = (gz * get_global_size(1) + gy) * get_global_size(0) + gx;
  out[idx * 4 + 0] = (uint)get_local_size(0) | ((uint)get_local_size(1) << 10) | ((uint)get_local_size(2) << 20);
  out[idx * 4 + 1] = (uint)get_num_groups(0) | ((uint)get_num_groups(1) << 10) | ((uint)get_num_groups(2) << 20);
  out[idx * 4 + 2] = (uint)gx | ((uint)gy << 10) | ((uint)gz << 20);
  out[idx * 4 + 3] = 0xC0FFEEu;
}

// Follows a pointer stored in memory (indirect access): table[0] points at an int array.
kernel void indirect_store(global ulong* table, int v) {
  global int* target = (global int*)table[0];
  target[get_global_id(0)] = v + (int)get_global_id(0);
}

// Two local buffers with a length between them (mutable_list_test.cpp): every work-item writes its slot
// of `b`, then (after a barrier) fills its share of all of `a` (`a_len` ints) with -a_len. Were `b` placed
// inside `a` (its offset not laid out again after a's size grew), the fill would overwrite it:
// out[i] = a[l] + b[(l+1) % n] is -a_len + 1000 + (l+1)%n only when they do not overlap.
kernel void two_locals(global int* out, local int* a, uint a_len, local int* b) {
  size_t l = get_local_id(0), n = get_local_size(0);
  b[l] = (int)(1000 + l);
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i = (uint)l; i < a_len; i += (uint)n) a[i] = -(int)a_len;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = a[l] + b[(l + 1) % n];
}
