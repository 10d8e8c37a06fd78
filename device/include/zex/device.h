/* zex/device.h: throw exceptions from OpenCL C kernels (docs/abi.md).
 *
 *   #include <zex/device.h>
 *   __kernel void vadd(__global float* c, __global const float* a, __global const float* b, uint n,
 *                      zex_state_t zex) {          // the state is always the LAST argument
 *     size_t i = get_global_id(0);
 *     ZEX_CHECK_BOUNDS(zex, i, n);               // BoundsError, then returns
 *     c[i] = a[i] + b[i];
 *   }
 *
 * The kernel's module is linked with the zex device library (zex_device.spv), which defines the
 * entry points declared here; zex::Module does that link. */
#ifndef ZEX_DEVICE_H
#define ZEX_DEVICE_H

#ifndef __OPENCL_C_VERSION__
#error "zex/device.h is for OpenCL C kernels; host code includes <zex/zex.hpp> (or <zex/abi.h>)"
#endif

#include <zex/abi.h>

/* Claims the launch's report (one device-scope CAS on the claim word). Returns 1 if this work-item
   now owns the report, 0 if another one does (then it wrote nothing). name and reason are recorded by
   address at debug level >= 1, ids at level 2. */
int zex_report_exception(zex_state_t zex, __constant char* name, __constant char* reason);

/* zex_report_exception plus up to ZEX_MAX_VALUES operand values (ABI version 2), recorded from level 1
   up; `kind` (ZEX_VALUES_*) tells the host how to label them. */
int zex_report_exception_values(zex_state_t zex, __constant char* name, __constant char* reason, uint count,
                                uint kind, ulong a, ulong b);

/* Level 2, claimant only: records frame [index + 1] (function, file, line). index >= 16 is ignored. */
void zex_report_frame(zex_state_t zex, uint index, __constant char* function, __constant char* file,
                      uint line);

/* Claimant only: publishes the report (status = ZEX_STATUS_THROWN), at every level. */
void zex_signal_exception(zex_state_t zex);

/* The fused cold path: the three calls above in one (report with values, frame [1] = function, file,
   line at level 2, publish), claiming once. For throws whose report is complete at the site. */
void zex_throw(zex_state_t zex, __constant char* name, __constant char* reason, uint count, uint kind, ulong a,
               ulong b, __constant char* function, __constant char* file, uint line);

/* The cold path of a numbered throw site (ABI version 3; docs/abi.md): zex's link step replaces each
   zex_throw it can identify with this call and keeps the site's name, reason, value count and kind,
   and frames in a host-side table. The device records `site` with the debug level at every level,
   the two values from level 1 (the thrower count too), the global id at level 2. The macros below do
   not call it. */
void zex_throw_site(zex_state_t zex, uint site, ulong a, ulong b);

/* In OpenCL C (clang-15), string literals and __func__ are emitted in the __constant address space,
   so they are passed by address, never copied. __func__ is typed `const __constant char[]`; the cast
   only drops the const, which __constant implies anyway.
   The macro passes plain literals although Intel's compiler (IGC 1.0.12504) puts plain char arrays
   where the host cannot read them: zex's string pass wraps every string that reaches a zex_* call
   (docs/abi.md, "Where strings live"), and OpenCL C could not do it here, as a macro used inside a
   helper function cannot declare the __constant (program-scope) struct it would need. */
/* ZEX_THROW that also records operand values (level >= 1), printed by the host as "values a, b";
   ZEX_THROW_VALUE records one. Values are converted to 64 bits (ulong) and printed unsigned. */
#define ZEX_THROW_VALUES_KIND(zex, name, reason, count, kind, a, b)                                \
  do {                                                                                             \
    ZEX_DETAIL_THROW((zex), (name), (reason), (count), (kind), (a), (b));                          \
    return;                                                                                        \
  } while (0)
/* Every macro makes the one call zex_throw (a throw without values passes a count of 0): it claims
   once (the three separate entry points re-check the claim in zex_report_frame and
   zex_signal_exception), and all throw sites of a function have the same shape, so zex's merge pass
   shares one cold region between them (docs/spirv-passes.md). The three entry points stay for
   compilers that record more than one frame. */
#define ZEX_DETAIL_THROW(zex, name, reason, count, kind, a, b)                                     \
  zex_throw((zex), (name), (reason), (count), (kind), (ulong)(a), (ulong)(b),                      \
            (__constant char*)__func__, __FILE__, (uint)__LINE__)
#define ZEX_THROW(zex, name, reason)                                           \
  ZEX_THROW_VALUES_KIND((zex), (name), (reason), 0u, ZEX_VALUES_PLAIN, 0, 0)
#define ZEX_THROW_VALUES(zex, name, reason, a, b)                              \
  ZEX_THROW_VALUES_KIND((zex), (name), (reason), 2u, ZEX_VALUES_PLAIN, (a), (b))
#define ZEX_THROW_VALUE(zex, name, reason, a)                                  \
  ZEX_THROW_VALUES_KIND((zex), (name), (reason), 1u, ZEX_VALUES_PLAIN, (a), 0)

/* The condition is expected to hold: the throw is the cold path. Records i and n, printed as
   "index i, length n". */
#define ZEX_CHECK_BOUNDS(zex, i, n)                                            \
  do {                                                                         \
    if (__builtin_expect(!((i) < (n)), 0))                                     \
      ZEX_THROW_VALUES_KIND((zex), "BoundsError", "Out-of-bounds array access", \
                            2u, ZEX_VALUES_BOUNDS, (i), (n));                  \
  } while (0)

/* The same in a function that returns a value: `return (value);` instead of `return;` (a value-
   returning function may not `return;`). The value is what the function returns on the throw; no
   caller sees it, as the throw ends the work-item (zex::Module makes every caller return too,
   docs/spirv-passes.md), but C requires one. It is the macro's last argument and may contain commas,
   e.g. a struct literal: ZEX_CHECK_BOUNDS_RET(zex, i, n, (triple_t){0, 0, 0}). */
#define ZEX_THROW_VALUES_KIND_RET(zex, name, reason, count, kind, a, b, ...)                       \
  do {                                                                                             \
    ZEX_DETAIL_THROW((zex), (name), (reason), (count), (kind), (a), (b));                          \
    return (__VA_ARGS__);                                                                          \
  } while (0)
#define ZEX_THROW_RET(zex, name, reason, ...)                                  \
  ZEX_THROW_VALUES_KIND_RET((zex), (name), (reason), 0u, ZEX_VALUES_PLAIN, 0, 0, __VA_ARGS__)
#define ZEX_THROW_VALUES_RET(zex, name, reason, a, b, ...)                     \
  ZEX_THROW_VALUES_KIND_RET((zex), (name), (reason), 2u, ZEX_VALUES_PLAIN, (a), (b), __VA_ARGS__)
#define ZEX_THROW_VALUE_RET(zex, name, reason, a, ...)                         \
  ZEX_THROW_VALUES_KIND_RET((zex), (name), (reason), 1u, ZEX_VALUES_PLAIN, (a), 0, __VA_ARGS__)
#define ZEX_CHECK_BOUNDS_RET(zex, i, n, ...)                                   \
  do {                                                                         \
    if (__builtin_expect(!((i) < (n)), 0))                                     \
      ZEX_THROW_VALUES_KIND_RET((zex), "BoundsError", "Out-of-bounds array access", \
                                2u, ZEX_VALUES_BOUNDS, (i), (n), __VA_ARGS__); \
  } while (0)

#endif /* ZEX_DEVICE_H */
