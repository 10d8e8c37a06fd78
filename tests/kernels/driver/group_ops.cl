// Every sub-group and work-group reduction and scan (driver/compiler/group_builtins.cl), inclusive and
// exclusive, for each type, on the inputs the test gives. group_builtins_test.cpp knows the order.
#pragma OPENCL EXTENSION cl_khr_fp64 : enable

#define STRIDE 32  // output slots per work-item

// reduce, scan_inclusive, scan_exclusive of one operation.
#define THREE(PREFIX, OP)                           \
  o[k++] = sub_group_##PREFIX##reduce_##OP(x);         \
  o[k++] = sub_group_##PREFIX##scan_inclusive_##OP(x); \
  o[k++] = sub_group_##PREFIX##scan_exclusive_##OP(x);

// Order: add min max (cl_khr_subgroups), then non-uniform add mul min max [and or xor].
#define SG_KERNEL(T, BITS)                                                   \
  kernel void sg_##T(global const T* in, global T* out) {                    \
    size_t g = get_global_id(0);                                             \
    T x = in[g];                                                             \
    global T* o = out + g * STRIDE;                                          \
    int k = 0;                                                               \
    THREE(, add) THREE(, min) THREE(, max)                                   \
    THREE(non_uniform_, add) THREE(non_uniform_, mul)                        \
    THREE(non_uniform_, min) THREE(non_uniform_, max)                        \
    BITS                                                                     \
  }
#define SG_BITS THREE(non_uniform_, and) THREE(non_uniform_, or) THREE(non_uniform_, xor)

SG_KERNEL(int, SG_BITS)
SG_KERNEL(uint, SG_BITS)
SG_KERNEL(long, SG_BITS)
SG_KERNEL(ulong, SG_BITS)
SG_KERNEL(float, )
SG_KERNEL(double, )

// Logical operations: logical_and, logical_or, logical_xor.
kernel void sg_logical(global const int* in, global int* out) {
  size_t g = get_global_id(0);
  int x = in[g];
  global int* o = out + g * STRIDE;
  int k = 0;
  THREE(non_uniform_, logical_and) THREE(non_uniform_, logical_or) THREE(non_uniform_, logical_xor)
}

// Work-groups: add min max, each reduce, scan_inclusive, scan_exclusive.
#define WG_THREE(OP)                                \
  o[k++] = work_group_reduce_##OP(x);               \
  o[k++] = work_group_scan_inclusive_##OP(x);       \
  o[k++] = work_group_scan_exclusive_##OP(x);
#define WG_KERNEL(T)                                          \
  kernel void wg_##T(global const T* in, global T* out) {     \
    size_t g = get_global_id(0);                              \
    T x = in[g];                                              \
    global T* o = out + g * STRIDE;                           \
    int k = 0;                                                \
    WG_THREE(add) WG_THREE(min) WG_THREE(max)                 \
  }
WG_KERNEL(int)
WG_KERNEL(uint)
WG_KERNEL(long)
WG_KERNEL(ulong)
WG_KERNEL(float)
WG_KERNEL(double)
