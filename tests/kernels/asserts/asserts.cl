// Kernels whose assert() is a call the module imports, as the compilers that emit it write it
// (tests/asserts/: zex's own definition, issue 27 item 5). Written for zex; no third-party code.
//
// AdaptiveCpp (and any C library's <assert.h>): __assert_fail(expr, file, line, func), noreturn.
// DPC++: __devicelib_assert_fail(expr, file, line, func, gid0, gid1, gid2, lid0, lid1, lid2), its
// strings generic pointers (here into program-scope globals, as a SYCL compiler's default address
// space makes them). "LINE:<marker>" marks the line a report must name (found by the test).

void __assert_fail(constant const char* expr, constant const char* file, unsigned int line, constant const char* func)
    __attribute__((noreturn));
void __devicelib_assert_fail(const char* expr, const char* file, int line, const char* func, ulong gid0, ulong gid1,
                             ulong gid2, ulong lid0, ulong lid1, ulong lid2);

#define ASSERT(e) ((e) ? (void)0 : __assert_fail(#e, __FILE__, __LINE__, __func__))

// Every i >= n fails; the others store.
kernel void bounded(global int* out, uint n, uint items) {
  size_t i = get_global_id(0);
  if (i >= items) return;
  ASSERT(i < n);  // LINE:bounded
  out[i] = (int)i + 1;
}

// The assert is in a helper: the helper's frame, the kernel's below it.
int checked_div(int a, int b) {
  ASSERT(b != 0);  // LINE:helper
  return a / b;
}
kernel void divide(global int* out, global const int* a, global const int* b) {
  size_t i = get_global_id(0);
  out[i] = checked_div(a[i], b[i]);
}

// DPC++'s form: the caller passes its work-item; zex records its own.
global char expr_text[] = "x >= 0";
global char file_text[] = "kernel.cpp";
global char func_text[] = "void sycl_kernel(int *)";
kernel void dpcpp(global int* out, global const int* in) {
  size_t i = get_global_id(0);
  int x = in[i];
  if (!(x >= 0))
    __devicelib_assert_fail((const char*)expr_text, (const char*)file_text, 42, (const char*)func_text,
                            get_global_id(0), get_global_id(1), get_global_id(2), get_local_id(0),
                            get_local_id(1), get_local_id(2));
  out[i] = x * 2;
}

// A failed assert before a work-group barrier: the other work-items still meet at it.
kernel void before_barrier(global int* out, global const int* in) {
  local int tile[64];
  size_t l = get_local_id(0), i = get_global_id(0);
  ASSERT(in[i] != 7);  // LINE:barrier
  tile[l] = in[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  out[i] = tile[(l + 1) % get_local_size(0)];
}

// No assert: left as written (no zex_state_t added).
kernel void plain(global int* out) { out[get_global_id(0)] = 3; }
