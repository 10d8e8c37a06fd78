// Kernels of the zex library's end-to-end tests (tests/*_test.cpp). The tests find the line numbers
// of the throws through the LINE: markers, so keep one marker per line.
#include <zex/device.h>

__kernel void vadd(__global float* c, __global const float* a, __global const float* b, uint n,
                   zex_state_t zex) {
  size_t i = get_global_id(0);
  ZEX_CHECK_BOUNDS(zex, i, n);  // LINE:vadd
  c[i] = a[i] + b[i];
}

// Exactly one work-item throws: the one at (x, y), in a 2-D launch.
__kernel void throw_at(__global int* out, uint x, uint y, zex_state_t zex) {
  size_t gx = get_global_id(0), gy = get_global_id(1);
  if (gx == x && gy == y) ZEX_THROW(zex, "DomainError", "sqrt of a negative number");  // LINE:throw_at
  out[gy * get_global_size(0) + gx] = 1;
}

// Throws (from work-item 0) only when asked: streams and threads decide per launch.
__kernel void maybe_throw(__global uint* count, uint do_throw, zex_state_t zex) {
  if (do_throw != 0u && get_global_id(0) == 0) ZEX_THROW(zex, "StreamError", "asked to throw");
  atomic_inc(count);
}

__kernel void noop(zex_state_t zex) {}

// A __local argument (zex::local): sums each work-group's inputs into out[group].
__kernel void group_sum(__global const float* in, __global float* out, __local float* scratch,
                        zex_state_t zex) {
  size_t l = get_local_id(0), n = get_local_size(0);
  scratch[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0) {
    float s = 0.0f;
    for (size_t k = 0; k < n; ++k) s += scratch[k];
    out[get_group_id(0)] = s;
  }
}

// A kernel that throws a name with non-printable bytes: the host must escape them.
__kernel void throw_odd_name(zex_state_t zex) {
  if (get_global_id(0) == 0) ZEX_THROW(zex, "Bad\tName\x01", "reason with a newline\n");
}

// Two throw sites in one kernel, with different reasons: zex::Module merges their cold paths into one
// block (src/spirv/passes/merge_throw_sites.cpp); the report must still be the failing site's.
__kernel void two_sites(__global int* out, uint n, uint m, zex_state_t zex) {
  size_t i = get_global_id(0);
  if (i >= n) ZEX_THROW(zex, "BoundsError", "first check");  // LINE:two_sites_a
  if (i >= m) ZEX_THROW(zex, "DomainError", "second check");  // LINE:two_sites_b
  out[i] = 1;
}

// The fused entry point zex_throw, called as a compiler would (one call per site, claim once): the
// same report as the three calls of ZEX_THROW_VALUES_KIND.
__kernel void fused_throw(__global int* out, uint n, zex_state_t zex) {
  size_t i = get_global_id(0);
  if (i >= n) {
    zex_throw(zex, "BoundsError", "fused entry point", 2u, ZEX_VALUES_BOUNDS, (ulong)i, (ulong)n,
              (__constant char*)__func__, __FILE__, (uint)__LINE__);  // LINE:fused_throw
    return;
  }
  out[i] = 1;
}

// A name zex's string pass cannot trace (loaded from a table at run time), so it stays a plain i8
// array: on a driver as strict as Intel's its address is in no allocation the host can validate, and
// the report must say <invalid address ...>, never show other bytes. The reason is a literal at the
// throw, so it is placed and shown.
__constant char* const computed_names[2] = {"FirstName", "SecondName"};
__kernel void throw_computed_name(uint which, zex_state_t zex) {
  if (get_global_id(0) == 0) ZEX_THROW(zex, computed_names[which & 1u], "a computed name");
}

// Kernels zex::Stream cannot launch: the zex_state_t is missing, or not the last parameter.
__kernel void no_state(__global int* out) { out[0] = 1; }
__kernel void state_not_last(zex_state_t zex, uint n) {}

// Runs until the host sets *flag (shared USM), so that a test can hold a launch in flight; gives up
// after about 2^32 polls so that a failing test cannot hang the suite.
__kernel void wait_for_flag(__global volatile uint* flag, zex_state_t zex) {
  for (ulong i = 0; i < (1ul << 32) && *flag == 0u; ++i) {
  }
}

// Writes back its scalars, so that a test sees what a launch converted them to.
__kernel void scalars(__global float* f_out, __global ulong* u_out, float f, uint u, ulong l, uchar c,
                      zex_state_t zex) {
  f_out[0] = f;
  u_out[0] = u;
  u_out[1] = l;
  u_out[2] = c;
}

// Work-items below `limit` throw with two values (ZEX_THROW_VALUES): exactly `limit` of them throw.
__kernel void throw_below(__global int* out, uint limit, zex_state_t zex) {
  size_t i = get_global_id(0);
  if (i < limit) ZEX_THROW_VALUES(zex, "LimitError", "below the limit", i, limit);  // LINE:throw_below
  out[i] = 1;
}

// Work-item `at` throws one value (ZEX_THROW_VALUE), the largest a value can be.
__kernel void throw_value(uint at, zex_state_t zex) {
  if (get_global_id(0) == at) ZEX_THROW_VALUE(zex, "ValueError", "one value", ~0ul);
}

// dst[0] = src[0]: reads what earlier launches (of any stream) wrote, for ordering tests.
__kernel void copy_word(__global uint* dst, __global const uint* src, zex_state_t zex) {
  (void)zex;
  dst[0] = src[0];
}

// Graphs (tests/runtime/graph_test.cpp): count_execution adds 1 to counter[0] once per execution;
// plan_throw, recorded after it, throws from work-item 3 in execution e = counter[0] - 1 when
// plan[e % len] is not 0, so the host decides which executions throw by writing plan.
__kernel void count_execution(__global uint* counter, zex_state_t zex) {
  (void)zex;
  if (get_global_id(0) == 0) counter[0] += 1u;
}
__kernel void plan_throw(__global const uint* plan, __global const uint* counter, uint len, zex_state_t zex) {
  const uint e = counter[0] - 1u;
  if (get_global_id(0) == 3 && plan[e % len] != 0u) ZEX_THROW_VALUES(zex, "PlanError", "planned throw", e, plan[e % len]);  // LINE:plan_throw
}

// Early stop (tests/runtime/stop_test.cpp). stop_mark: work-item 0 of group `thrower` throws (none if
// thrower == UINT_MAX), every other work-item counts itself in done[0] and marks done[1 + gid].
__kernel void stop_mark(__global uint* done, uint thrower, zex_state_t zex) {
  if (get_group_id(0) == thrower && get_local_id(0) == 0) ZEX_THROW_VALUES(zex, "StopError", "stop here", thrower, 0);  // LINE:stop_mark
  atomic_inc(done);
  done[1 + get_global_id(0)] = 1u;
}
// The same with a work-group barrier and __local memory: each group sums its local ids in local
// memory and work-item 0 adds the sum to done[0]; work-item 0 of group `thrower` throws first.
__kernel void stop_barrier(__global uint* done, uint thrower, __local uint* scratch, zex_state_t zex) {
  const uint l = (uint)get_local_id(0);
  if (get_group_id(0) == thrower && l == 0u) ZEX_THROW_VALUES(zex, "StopError", "stop at a barrier", thrower, 1);  // LINE:stop_barrier
  scratch[l] = l;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (l == 0u) {
    uint s = 0;
    for (uint i = 0; i < (uint)get_local_size(0); ++i) s += scratch[i];
    atomic_add(done, s);
  }
}

// Graph::update of __local sizes (tests/runtime/graph_update_test.cpp): every work-item fills its share
// of all a_words words of `a` with 7, and b[l] = l + 1; after a barrier, out[gid] = a[a_words - 1] * 1000
// + b[l]. Were `b` placed inside `a` (its offset not re-laid when a's size grew), the fill would
// overwrite it: the work-item throws with the word it found.
__kernel void two_locals(__global uint* out, __local uint* a, __local uint* b, uint a_words, zex_state_t zex) {
  const uint l = (uint)get_local_id(0), n = (uint)get_local_size(0);
  b[l] = l + 1u;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint i = l; i < a_words; i += n) a[i] = 7u;
  barrier(CLK_LOCAL_MEM_FENCE);
  if (b[l] != l + 1u) ZEX_THROW_VALUES(zex, "LocalOverlap", "b was overwritten", l, b[l]);  // LINE:two_locals
  out[get_global_id(0)] = a[a_words - 1u] * 1000u + b[l];
}

// The report a memory check makes (ZEX_VALUES_MEMORY, issue 27), thrown by hand as zex's memory-check
// pass will emit it: reading a[i] of an allocation of `bytes` bytes, out of bounds for i*4+4 > bytes.
__kernel void memory_report(__global const uint* a, __global uint* out, ulong bytes, zex_state_t zex) {
  const size_t i = get_global_id(0);
  if (i * 4u + 4u > bytes)
    ZEX_THROW_VALUES_KIND(zex, "OutOfBoundsAccess", "read of argument 'a'", 2u, ZEX_VALUES_MEMORY, i * 4u, bytes);  // LINE:memory_report
  out[i] = a[i];
}
