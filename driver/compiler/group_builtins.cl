// zex-cpu's sub-group and work-group builtins, in OpenCL C (docs/cpu-driver-compiler.md, step 6).
// PoCL 3.1's kernel library has none of them, while the Level Zero SPIR-V environment requires the
// Groups capability. This file is compiled to SPIR bitcode at build time, embedded in the driver, and
// group_builtins.cpp links the functions a module calls into it before inlining.
//
//  - Sub-groups have one work-item (PoCL runs a group's work-items one after the other; the device
//    reports sub-group size 1): a reduction or inclusive scan is the value itself (logical operations:
//    whether it is non-zero), an exclusive scan the operation's identity, a broadcast or shuffle the
//    value, get_sub_group_id the local linear id.
//  - Work-group collectives go through local memory between barriers (which PoCL supports in kernels):
//    every work-item stores its value in its slot of a module-wide __local array, then the first
//    work-item reduces (or each one scans its prefix) and a result slot is shared. OpenCL C cannot
//    declare __local variables outside kernels, so the driver defines the two accessors below, sized
//    by the device's maximum group size.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

__local ulong* __zexcpu_group_scratch(void);  // max group size slots of 8 bytes
__local ulong* __zexcpu_group_result(void);   // one slot of 8 bytes

#define OVL __attribute__((overloadable))

// --- the operations and their identities ------------------------------------------------------------

#define OP_add(a, b) ((a) + (b))
#define OP_mul(a, b) ((a) * (b))
#define OP_and(a, b) ((a) & (b))
#define OP_or(a, b) ((a) | (b))
#define OP_xor(a, b) ((a) ^ (b))
#define OP_logical_and(a, b) ((int)((a) && (b)))
#define OP_logical_or(a, b) ((int)((a) || (b)))
#define OP_logical_xor(a, b) ((int)(!(a) != !(b)))
// Integers; for floating point a NaN operand yields the other one, as fmin/fmax do.
#define OP_imin(a, b) ((b) < (a) ? (b) : (a))
#define OP_imax(a, b) ((a) < (b) ? (b) : (a))
#define OP_fmin(a, b) ((a) != (a) ? (b) : (b) != (b) ? (a) : OP_imin(a, b))
#define OP_fmax(a, b) ((a) != (a) ? (b) : (b) != (b) ? (a) : OP_imax(a, b))

// The value a one-item reduction or inclusive scan gives.
#define ONE_arith(x) (x)
#define ONE_logical(x) ((int)((x) != 0))

// --- sub-groups: one work-item ------------------------------------------------------------------------

uint OVL get_sub_group_size(void) { return 1; }
uint OVL get_max_sub_group_size(void) { return 1; }
uint OVL get_num_sub_groups(void) { return (uint)(get_local_size(0) * get_local_size(1) * get_local_size(2)); }
uint OVL get_enqueued_num_sub_groups(void) {
  return (uint)(get_local_size(0) * get_local_size(1) * get_local_size(2));
}
uint OVL get_sub_group_id(void) { return (uint)get_local_linear_id(); }
uint OVL get_sub_group_local_id(void) { return 0; }

// One work-item per sub-group: only the memory ordering remains.
void OVL sub_group_barrier(cl_mem_fence_flags flags) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void OVL sub_group_barrier(cl_mem_fence_flags flags, memory_scope scope) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }

int OVL sub_group_all(int p) { return p != 0; }
int OVL sub_group_any(int p) { return p != 0; }
int OVL sub_group_non_uniform_all(int p) { return p != 0; }
int OVL sub_group_non_uniform_any(int p) { return p != 0; }
int OVL sub_group_elect(void) { return 1; }

// reduce / scan_inclusive / scan_exclusive of one operation, with the given identity.
#define SG_OP(T, PREFIX, NAME, ONE, ID)                              \
  T OVL sub_group_##PREFIX##reduce_##NAME(T x) { return ONE(x); }           \
  T OVL sub_group_##PREFIX##scan_inclusive_##NAME(T x) { return ONE(x); }   \
  T OVL sub_group_##PREFIX##scan_exclusive_##NAME(T x) { return (ID); }

#define SG_VALUE(T)                                                                 \
  T OVL sub_group_broadcast(T x, uint id) { return x; }                              \
  T OVL sub_group_non_uniform_broadcast(T x, uint id) { return x; }                  \
  T OVL sub_group_broadcast_first(T x) { return x; }                                 \
  T OVL sub_group_shuffle(T x, uint id) { return x; }                                \
  T OVL sub_group_shuffle_xor(T x, uint mask) { return x; }                          \
  T OVL sub_group_shuffle_up(T x, uint delta) { return x; }                          \
  T OVL sub_group_shuffle_down(T x, uint delta) { return x; }                        \
  int OVL sub_group_non_uniform_all_equal(T x) { return 1; }

// Standard (cl_khr_subgroups) and non-uniform (cl_khr_subgroup_non_uniform_arithmetic) arithmetic, and
// cl_khr_subgroup_clustered_reduce, for a type whose min/max are MIN_OP/MAX_OP with identities MAXV/MINV.
#define SG_ARITH(T, MIN_OP, MAX_OP, MAXV, MINV)                                        \
  SG_VALUE(T)                                                                          \
  SG_OP(T, , add, ONE_arith, (T)0)                                                     \
  SG_OP(T, , min, ONE_arith, (T)(MAXV))                                                \
  SG_OP(T, , max, ONE_arith, (T)(MINV))                                                \
  SG_OP(T, non_uniform_, add, ONE_arith, (T)0)                                         \
  SG_OP(T, non_uniform_, mul, ONE_arith, (T)1)                                         \
  SG_OP(T, non_uniform_, min, ONE_arith, (T)(MAXV))                                    \
  SG_OP(T, non_uniform_, max, ONE_arith, (T)(MINV))                                    \
  T OVL sub_group_clustered_reduce_add(T x, uint n) { return x; }                      \
  T OVL sub_group_clustered_reduce_mul(T x, uint n) { return x; }                      \
  T OVL sub_group_clustered_reduce_min(T x, uint n) { return x; }                      \
  T OVL sub_group_clustered_reduce_max(T x, uint n) { return x; }

#define SG_BITS(T)                                                 \
  SG_OP(T, non_uniform_, and, ONE_arith, (T)~(T)0)                 \
  SG_OP(T, non_uniform_, or, ONE_arith, (T)0)                      \
  SG_OP(T, non_uniform_, xor, ONE_arith, (T)0)                     \
  T OVL sub_group_clustered_reduce_and(T x, uint n) { return x; }  \
  T OVL sub_group_clustered_reduce_or(T x, uint n) { return x; }   \
  T OVL sub_group_clustered_reduce_xor(T x, uint n) { return x; }

#define SG_INT(T, MAXV, MINV) SG_ARITH(T, OP_imin, OP_imax, MAXV, MINV) SG_BITS(T)

SG_INT(char, CHAR_MAX, CHAR_MIN)
SG_INT(uchar, UCHAR_MAX, 0)
SG_INT(short, SHRT_MAX, SHRT_MIN)
SG_INT(ushort, USHRT_MAX, 0)
SG_INT(int, INT_MAX, INT_MIN)
SG_INT(uint, UINT_MAX, 0)
SG_INT(long, LONG_MAX, LONG_MIN)
SG_INT(ulong, ULONG_MAX, 0)
SG_ARITH(float, OP_fmin, OP_fmax, INFINITY, -INFINITY)
SG_ARITH(double, OP_fmin, OP_fmax, INFINITY, -INFINITY)
SG_ARITH(half, OP_fmin, OP_fmax, INFINITY, -INFINITY)

SG_OP(int, non_uniform_, logical_and, ONE_logical, 1)
SG_OP(int, non_uniform_, logical_or, ONE_logical, 0)
SG_OP(int, non_uniform_, logical_xor, ONE_logical, 0)
int OVL sub_group_clustered_reduce_logical_and(int x, uint n) { return x != 0; }
int OVL sub_group_clustered_reduce_logical_or(int x, uint n) { return x != 0; }
int OVL sub_group_clustered_reduce_logical_xor(int x, uint n) { return x != 0; }

// --- work-groups: through local memory ---------------------------------------------------------------

static size_t group_items(void) { return get_local_size(0) * get_local_size(1) * get_local_size(2); }

// Every work-item stores `x`; the first folds all the slots; every work-item reads the result.
#define WG_REDUCE(T, NAME, OP)                                        \
  T OVL work_group_reduce_##NAME(T x) {                               \
    __local T* slot = (__local T*)__zexcpu_group_scratch();           \
    __local T* result = (__local T*)__zexcpu_group_result();          \
    size_t lid = get_local_linear_id();                               \
    slot[lid] = x;                                                    \
    barrier(CLK_LOCAL_MEM_FENCE);                                     \
    if (lid == 0) {                                                   \
      T acc = slot[0];                                                \
      size_t n = group_items();                                       \
      for (size_t i = 1; i < n; ++i) acc = OP(acc, slot[i]);          \
      *result = acc;                                                  \
    }                                                                 \
    barrier(CLK_LOCAL_MEM_FENCE);                                     \
    T r = *result;                                                    \
    barrier(CLK_LOCAL_MEM_FENCE);                                     \
    return r;                                                         \
  }

// Every work-item stores `x`, then folds the slots before its own (and its own, for inclusive).
#define WG_SCAN(T, KIND, NAME, OP, ID, INCLUSIVE)                     \
  T OVL work_group_scan_##KIND##_##NAME(T x) {                        \
    __local T* slot = (__local T*)__zexcpu_group_scratch();           \
    size_t lid = get_local_linear_id();                               \
    slot[lid] = x;                                                    \
    barrier(CLK_LOCAL_MEM_FENCE);                                     \
    T acc = (ID);                                                     \
    size_t to = lid + (INCLUSIVE);                                    \
    for (size_t i = 0; i < to; ++i) acc = OP(acc, slot[i]);           \
    barrier(CLK_LOCAL_MEM_FENCE);                                     \
    return acc;                                                       \
  }

#define WG_OP(T, NAME, OP, ID)             \
  WG_REDUCE(T, NAME, OP)                   \
  WG_SCAN(T, inclusive, NAME, OP, ID, 1)   \
  WG_SCAN(T, exclusive, NAME, OP, ID, 0)

// work_group_broadcast(x, local id [x, y, z]): the named work-item stores, every work-item reads.
#define WG_BROADCAST_BODY(T, TARGET)                                  \
  __local T* result = (__local T*)__zexcpu_group_result();            \
  if (get_local_linear_id() == (TARGET)) *result = x;                 \
  barrier(CLK_LOCAL_MEM_FENCE);                                       \
  T r = *result;                                                      \
  barrier(CLK_LOCAL_MEM_FENCE);                                       \
  return r;

#define WG_TYPE(T, MIN_OP, MAX_OP, MAXV, MINV)                                                     \
  WG_OP(T, add, OP_add, (T)0)                                                                      \
  WG_OP(T, min, MIN_OP, (T)(MAXV))                                                                 \
  WG_OP(T, max, MAX_OP, (T)(MINV))                                                                 \
  T OVL work_group_broadcast(T x, size_t lx) { WG_BROADCAST_BODY(T, lx) }                           \
  T OVL work_group_broadcast(T x, size_t lx, size_t ly) {                                          \
    WG_BROADCAST_BODY(T, lx + ly * get_local_size(0))                                              \
  }                                                                                                \
  T OVL work_group_broadcast(T x, size_t lx, size_t ly, size_t lz) {                               \
    WG_BROADCAST_BODY(T, lx + (ly + lz * get_local_size(1)) * get_local_size(0))                   \
  }

WG_TYPE(char, OP_imin, OP_imax, CHAR_MAX, CHAR_MIN)
WG_TYPE(uchar, OP_imin, OP_imax, UCHAR_MAX, 0)
WG_TYPE(short, OP_imin, OP_imax, SHRT_MAX, SHRT_MIN)
WG_TYPE(ushort, OP_imin, OP_imax, USHRT_MAX, 0)
WG_TYPE(int, OP_imin, OP_imax, INT_MAX, INT_MIN)
WG_TYPE(uint, OP_imin, OP_imax, UINT_MAX, 0)
WG_TYPE(long, OP_imin, OP_imax, LONG_MAX, LONG_MIN)
WG_TYPE(ulong, OP_imin, OP_imax, ULONG_MAX, 0)
WG_TYPE(float, OP_fmin, OP_fmax, INFINITY, -INFINITY)
WG_TYPE(double, OP_fmin, OP_fmax, INFINITY, -INFINITY)
WG_TYPE(half, OP_fmin, OP_fmax, INFINITY, -INFINITY)

// work_group_all / work_group_any: a logical reduction of the predicates.
WG_REDUCE(int, logical_and_zexcpu, OP_logical_and)
WG_REDUCE(int, logical_or_zexcpu, OP_logical_or)
int OVL work_group_all(int p) { return work_group_reduce_logical_and_zexcpu(p != 0); }
int OVL work_group_any(int p) { return work_group_reduce_logical_or_zexcpu(p != 0); }
