// The shapes zex's memory checks must see through (tests/passes/passes_memory_test.cpp, built -O0 and
// -O2): no zex code, as a compiler that emits no checks writes it. Each kernel's comment says what the
// analysis must count.

// 3 loads and a store, all through parameters: 4 checked, parameters 0 and 1.
kernel void stencil(global float* out, global const float* in, uint n) {
  size_t i = get_global_id(0);
  if (i == 0 || i + 1 >= n) return;
  out[i] = in[i - 1] + in[i] + in[i + 1];
}

// A pointer read from a table: the table's load and x's are checked, the store through p is not.
kernel void loaded(global float* global* table, global const float* x) {
  global float* p = table[0];
  p[get_global_id(0)] = x[0];
}

// A pointer made from an integer: unchecked.
kernel void from_integer(ulong address) { *(global int*)address = 1; }

// An atomic through a parameter: checked.
kernel void atomics(global int* c) { atomic_add(&c[get_global_id(0) % 4], 1); }

// A choice between two offsets of one parameter: checked; between two parameters: not (yet).
kernel void select_same(global float* a, uint flag) {
  global float* p = flag ? a + 1 : a;
  p[get_global_id(0)] = 2.0f;
}
kernel void select_two(global float* a, global float* b, uint flag) {
  global float* p = flag ? a : b;
  p[get_global_id(0)] = 3.0f;
}

// A loop walking a pointer (a phi of the parameter and its increments): checked.
kernel void walk(global int* p, uint n) {
  for (uint k = 0; k < n; ++k) *p++ = (int)k;
}

// Local memory: counted apart, its global store checked.
kernel void local_copy(global int* out, local int* tmp) {
  size_t l = get_local_id(0);
  tmp[l] = (int)l;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = tmp[(l + 1) % get_local_size(0)];
}

// A static __local array: its store and load are checked against its 64 bytes (add_memory_checks),
// counted as __local by the analysis; the global store checked as usual.
kernel void local_tile(global int* out) {
  local int tile[16];
  size_t l = get_local_id(0);
  tile[l] = (int)l;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = tile[15 - l % 16] + tile[l];  // tile[l] again: covered, yet through the select
}

// A helper that keeps its own function: its access is checked through the call (parameter 0).
__attribute__((noinline)) void put(global float* p, size_t i, float v) { p[i] = v; }
kernel void calls_helper(global float* out) { put(out, get_global_id(0), 4.0f); }

// Read, then written, through the same pointer in one block: one check covers both (the write's would
// never fail where the read's passed).
kernel void bump(global int* a) { a[get_global_id(0)] += 1; }
