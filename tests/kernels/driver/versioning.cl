/* Bounds checks that zex-cpu versions per work-group (docs/cpu-driver-compiler.md, step 7): the driver
   recognises a throw by a call to `zex_report_exception` (the zex device library's entry point). This
   stand-in records which work-items threw; the body records which ones ran. Each work-item's fate must be
   the same as without the transform. */
__attribute__((noinline)) int zex_report_exception(__global uint* mark, uint gid) {
  mark[gid] = 2u;
  return 1;
}
#define CHECK(cond, mark, g)                     \
  if (__builtin_expect(!(cond), 0)) {            \
    zex_report_exception((mark), (uint)(g));     \
    return;                                      \
  }

__kernel void plus_one(__global uint* mark, uint n) {
  size_t i = get_global_id(0);
  CHECK(i + 1 < n, mark, i);
  mark[i] = 1u;
}

__kernel void signed_int(__global uint* mark, int n) {
  int i = (int)get_global_id(0);
  CHECK(i < n, mark, i);
  mark[i] = 1u;
}

/* j wraps inside group 0: its first and last work-items pass, the ones in the middle do not. */
__kernel void wraps(__global uint* mark, uint n) {
  size_t i = get_global_id(0);
  uint j = (uint)i + 0xFFFFFF80u;
  CHECK(j < n, mark, i);
  mark[i] = 1u;
}

__kernel void two_checks(__global uint* mark, uint lo, uint hi) {
  size_t i = get_global_id(0);
  CHECK(i >= lo, mark, i);
  CHECK(i < hi, mark, i);
  mark[i] = 1u;
}

/* Not an affine check on the global id: left alone. */
__kernel void loaded(__global uint* mark, __global const uint* idx, uint n) {
  size_t i = get_global_id(0);
  CHECK(idx[i] < n, mark, i);
  mark[i] = 1u;
}

/* The memory checks' shape (src/spirv/passes/memory_checks.cpp): a pointer's byte offset from its
   allocation's start, against how many offsets a 4-byte access may start at. The index is a 32-bit int
   sign-extended by the subscript; `(uint)i + shift` wraps to negative inside a group for a large shift,
   which the versioning must see (the sign extension's operand must be exact at every corner). `data` is
   only an address here (never dereferenced). */
__kernel void offsets(__global uint* mark, __global const uint* data, ulong base, ulong starts, int shift) {
  size_t i = get_global_id(0);
  int idx = (int)((uint)i + (uint)shift);
  ulong off = (ulong)(&data[idx]) - base;
  CHECK(off < starts, mark, i);
  mark[i] = 1u;
}

/* An index scaled by a launch argument (a row pitch), plus a column. */
__kernel void pitched(__global uint* mark, __global const uint* data, ulong base, ulong starts, ulong pitch) {
  size_t i = get_global_id(0);
  ulong off = (ulong)(&data[i * pitch + 1]) - base;
  CHECK(off < starts, mark, i);
  mark[i] = 1u;
}

/* Checks inside loops, on the loops' counters (hoisted over each counter's whole range): row 2i's
   elements 2i + k for k in [0, n), then i - k for k = n - 1, n - 4, ... down to 0 (a step of -3, whose
   count is a division). A work-item throws at the first failing offset; the versioning may only skip
   the checks of groups in which no iteration of either loop fails. */
__kernel void looped(__global uint* mark, __global const uint* data, ulong base, ulong starts, int n) {
  size_t i = get_global_id(0);
  for (int k = 0; k < n; ++k) {
    ulong off = (ulong)(&data[(int)i * 2 + k]) - base;
    CHECK(off < starts, mark, i);
  }
  for (int k = n - 1; k >= 0; k -= 3) {
    ulong off = (ulong)(&data[(int)i - k]) - base;
    CHECK(off < starts, mark, i);
  }
  mark[i] = 1u;
}
