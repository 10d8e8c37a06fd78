/* Checks in helpers that return a value (issue 24, item 8): ZEX_CHECK_BOUNDS_RET and ZEX_THROW_*_RET
 * in helpers returning a scalar (double, as Rodinia's d_randu), a vector and a struct (which clang
 * returns through an `sret` pointer: a void function to the SPIR-V). Built -O2, -O2 -g, -O0 -g, -O0
 * and -O2 -g with ZEXT_NOINLINE (the helpers stay calls, the struct one `void make(triple_t* sret, ...)`:
 * issue 24, item 10) by tests/passes/CMakeLists.txt; passes_e2e_test.cpp (ThrowInValueHelper.*) runs
 * them.
 *
 * Each kernel's work-item i writes out[i] from the helper's result and out[64 + i] = 1 after the call;
 * each helper writes out[128 + i] = 1 after its check. A work-item that throws writes none of them.
 * The ZEXT_LINE_<name> markers give the lines the tests expect. */
#include <zex/device.h>

#ifdef ZEXT_NOINLINE
#define HELPER __attribute__((noinline))
#else
#define HELPER static inline
#endif

typedef struct {
  int a, b, c;
} triple_t;

HELPER double d_checked(__global const double* a, uint i, uint n, __global double* out, zex_state_t zex) {
  ZEX_CHECK_BOUNDS_RET(zex, i, n, 0.0); /* ZEXT_LINE_SCALAR */
  out[128 + i] = 1.0;
  return a[i] * 0.5;
}
__kernel void ret_scalar(__global double* out, __global const double* a, uint bad, uint n, zex_state_t zex) {
  uint i = (uint)get_global_id(0);
  out[i] = d_checked(a, i == bad ? n + 7 : i, n, out, zex);
  out[64 + i] = 1.0;
}

HELPER float4 v_checked(__global const float4* a, uint i, uint n, __global float4* out, zex_state_t zex) {
  if (i >= n) ZEX_THROW_VALUES_RET(zex, "DomainError", "v_checked", i, n, (float4)(0.0f, 1.0f, 2.0f, 3.0f)); /* ZEXT_LINE_VECTOR */
  out[128 + i] = (float4)(1.0f);
  return a[i] + (float4)(1.0f);
}
__kernel void ret_vector(__global float4* out, __global const float4* a, uint bad, uint n, zex_state_t zex) {
  uint i = (uint)get_global_id(0);
  out[i] = v_checked(a, i == bad ? n + 7 : i, n, out, zex);
  out[64 + i] = (float4)(1.0f);
}

HELPER triple_t make(__global const int* a, uint i, uint n, __global int* out, zex_state_t zex) {
  ZEX_CHECK_BOUNDS_RET(zex, i, n, (triple_t){0, 0, 0}); /* ZEXT_LINE_STRUCT */
  out[128 + i] = 1;
  triple_t t = {a[i], a[i] + 1, a[i] + 2};
  return t;
}
__kernel void ret_struct(__global int* out, __global const int* a, uint bad, uint n, zex_state_t zex) {
  uint i = (uint)get_global_id(0);
  triple_t t = make(a, i == bad ? n + 7 : i, n, out, zex);
  out[i] = t.a + t.b + t.c;
  out[64 + i] = 1;
}

/* ZEX_THROW_RET and ZEX_THROW_VALUE_RET: a throw with no values and one with one value. */
HELPER ulong u_checked(ulong x, uint i, __global ulong* out, zex_state_t zex) {
  if (x == 1) ZEX_THROW_RET(zex, "ArgumentError", "x is 1", 0ul); /* ZEXT_LINE_PLAIN */
  if (x == 2) ZEX_THROW_VALUE_RET(zex, "ArgumentError", "x is 2", x, 0ul); /* ZEXT_LINE_ONE */
  out[128 + i] = 1;
  return x + 1;
}
__kernel void ret_plain(__global ulong* out, ulong x, uint who, zex_state_t zex) {
  uint i = (uint)get_global_id(0);
  out[i] = u_checked(i == who ? x : 10, i, out, zex);
  out[64 + i] = 1;
}
