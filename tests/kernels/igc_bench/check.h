/* The bounds-check variants the IGC benchmark compares. Every shape kernel writes its checks as
 * ZEXB_CHECK(index, length) and ends its parameter list with ZEXB_STATE_PARAM, and this header turns
 * them into one of:
 *   ZEXB_NOCHECK  no check at all (the baseline)
 *   ZEXB_SILENT   `if (!(i < n)) return;` (what a runtime without error reporting emits)
 *   ZEXB_PRINTF   device printf of the name, reason and location, then return
 *   ZEXB_COPY     the ancestor design: claim a fixed report with a CAS, then copy the name and reason
 *                 characters into it on the device
 *   ZEXB_ZEX      ZEX_CHECK_BOUNDS from <zex/device.h>, linked later with a zex device library
 *   ZEXB_CASONLY  control for the CPU benchmark: the cold path is one device-scope CAS on the claim
 *                 word and return (the least any claim-based report does), no zex library
 *   ZEXB_ZEX_SHARED  the same three zex calls, emitted ONCE per kernel: each failing site stores its
 *                 line and jumps to the kernel's single throw block (what a compiler can emit with a
 *                 phi; in OpenCL C it takes ZEXB_PROLOGUE/ZEXB_EPILOGUE around the kernel body)
 *   ZEXB_FLOOR    the floor of a reporting cold path (issue 15): one shared throw block per kernel,
 *                 site number only. Each failing site stores a constant site number (its line) and
 *                 jumps to the block, which does one device-scope CAS on the claim word and, for the
 *                 claimant, stores the site number and the launch id, fences, and stores the status.
 *                 No strings, no values, no ids, no zex library: what a throw-site-id design must
 *                 approach (the host would map the site number to everything else)
 * Each ZEXB_CHECK use must sit on its own source line so that level 2 records distinct lines, as a
 * compiler emitting one check per access would. */
#ifndef ZEXB_CHECK_H
#define ZEXB_CHECK_H

#define ZEXB_NOCHECK 0
#define ZEXB_SILENT 1
#define ZEXB_PRINTF 2
#define ZEXB_COPY 3
#define ZEXB_ZEX 4
#define ZEXB_ZEX_SHARED 5
#define ZEXB_CASONLY 6
#define ZEXB_FLOOR 7

#ifndef ZEXB_VARIANT
#error "define ZEXB_VARIANT to one of ZEXB_NOCHECK..ZEXB_FLOOR"
#endif

#if ZEXB_VARIANT != ZEXB_ZEX_SHARED && ZEXB_VARIANT != ZEXB_FLOOR
#define ZEXB_PROLOGUE
#define ZEXB_EPILOGUE
#endif
/* Helpers take the state as their last parameter too (ZEXB_STATE_PARAM) and get it passed on with
   ZEXB_STATE_ARG; both are empty for the variants without a state. */
#if ZEXB_VARIANT == ZEXB_NOCHECK || ZEXB_VARIANT == ZEXB_SILENT || ZEXB_VARIANT == ZEXB_PRINTF
#define ZEXB_STATE_ARG
#else
#define ZEXB_STATE_ARG , zex
#endif

#if ZEXB_VARIANT == ZEXB_NOCHECK
#define ZEXB_STATE_PARAM
#define ZEXB_CHECK(i, n) ((void)0)

#elif ZEXB_VARIANT == ZEXB_SILENT
#define ZEXB_STATE_PARAM
#define ZEXB_CHECK(i, n) \
  do {                   \
    if (!((i) < (n)))    \
      return;            \
  } while (0)

#elif ZEXB_VARIANT == ZEXB_PRINTF
#define ZEXB_STATE_PARAM
#define ZEXB_CHECK(i, n)                                                                           \
  do {                                                                                             \
    if (!((i) < (n))) {                                                                            \
      printf("BoundsError: Out-of-bounds array access: index %lu, length %lu at %s:%d\n",          \
             (ulong)(i), (ulong)(n), __FILE__, __LINE__);                                          \
      return;                                                                                      \
    }                                                                                              \
  } while (0)

#elif ZEXB_VARIANT == ZEXB_COPY
/* The ancestor's fixed report: strings live in the report as characters, so the device copies them. */
typedef struct zexb_copy_report {
  uint status;
  uint pad;
  char name[64];
  char reason[192];
} zexb_copy_report_t;
typedef struct zexb_copy_state {
  ulong report; /* address of a zexb_copy_report_t */
  ulong claim;  /* address of the claim word */
  ulong launch_id;
} zexb_copy_state_t;
#define ZEXB_STATE_PARAM , zexb_copy_state_t zex

static inline void zexb_copy_str(__global char* dst, __constant char* src, uint cap) {
  uint k = 0;
  for (; k + 1u < cap && src[k] != 0; ++k)
    dst[k] = src[k];
  dst[k] = 0;
}

static inline void zexb_copy_throw(zexb_copy_state_t zex, __constant char* name, __constant char* reason) {
  uint id = (uint)get_global_linear_id() + 1u;
  if (atomic_cmpxchg((volatile __global uint*)zex.claim, 0u, id ? id : 1u) != 0u)
    return;
  __global zexb_copy_report_t* r = (__global zexb_copy_report_t*)zex.report;
  zexb_copy_str(r->name, name, 64u);
  zexb_copy_str(r->reason, reason, 192u);
  atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_device);
  r->status = 1u;
}
#define ZEXB_CHECK(i, n)                                                      \
  do {                                                                        \
    if (!((i) < (n))) {                                                       \
      zexb_copy_throw(zex, "BoundsError", "Out-of-bounds array access");      \
      return;                                                                 \
    }                                                                         \
  } while (0)

#elif ZEXB_VARIANT == ZEXB_ZEX
#include <zex/device.h>
#define ZEXB_STATE_PARAM , zex_state_t zex
#define ZEXB_CHECK(i, n) ZEX_CHECK_BOUNDS(zex, i, n)

#elif ZEXB_VARIANT == ZEXB_CASONLY
typedef struct zexb_cas_state {
  ulong report, claim, launch_id;
} zexb_cas_state_t;
#define ZEXB_STATE_PARAM , zexb_cas_state_t zex
__attribute__((overloadable)) uint __spirv_AtomicCompareExchange(volatile __global uint* p, int scope, int equal,
                                                                 int unequal, uint value, uint comparator);
#define ZEXB_CHECK(i, n)                                                                              \
  do {                                                                                                \
    if (__builtin_expect(!((i) < (n)), 0)) {                                                          \
      __spirv_AtomicCompareExchange((volatile __global uint*)zex.claim, 1, 0, 0, (uint)(i) + 1u, 0u); \
      return;                                                                                         \
    }                                                                                                 \
  } while (0)

#elif ZEXB_VARIANT == ZEXB_ZEX_SHARED
#include <zex/device.h>
#define ZEXB_STATE_PARAM , zex_state_t zex
#define ZEXB_PROLOGUE uint zexb_line = 0u;
#define ZEXB_CHECK(i, n)                               \
  do {                                                 \
    if (__builtin_expect(!((i) < (n)), 0)) {           \
      zexb_line = __LINE__;                            \
      goto zexb_throw;                                 \
    }                                                  \
  } while (0)
/* The ABI's three calls, in order, once: ZEX_THROW with the line taken from the failing site. */
#define ZEXB_EPILOGUE                                                                        \
  return;                                                                                    \
  zexb_throw:                                                                                \
  zex_report_exception(zex, "BoundsError", "Out-of-bounds array access");                    \
  zex_report_frame(zex, 0u, (__constant char*)__func__, __FILE__, zexb_line);                \
  zex_signal_exception(zex);

#elif ZEXB_VARIANT == ZEXB_FLOOR
/* The same 24-byte state as zex_state_t (report, claim, launch id); the report is read as
   {uint status; uint site; ulong launch_id}. */
typedef struct zexb_floor_state {
  ulong report, claim, launch_id;
} zexb_floor_state_t;
#define ZEXB_STATE_PARAM , zexb_floor_state_t zex
__attribute__((overloadable)) uint __spirv_AtomicCompareExchange(volatile __global uint* p, int scope, int equal,
                                                                 int unequal, uint value, uint comparator);
#define ZEXB_PROLOGUE uint zexb_site = 0u;
#define ZEXB_CHECK(i, n)                               \
  do {                                                 \
    if (__builtin_expect(!((i) < (n)), 0)) {           \
      zexb_site = __LINE__;                            \
      goto zexb_throw;                                 \
    }                                                  \
  } while (0)
#define ZEXB_EPILOGUE                                                                                 \
  return;                                                                                             \
  zexb_throw:                                                                                         \
  if (__spirv_AtomicCompareExchange((volatile __global uint*)zex.claim, 1, 0, 0, 1u, 0u) == 0u) {     \
    __global uint* zexb_r = (__global uint*)zex.report;                                               \
    zexb_r[1] = zexb_site;                                                                            \
    *(__global ulong*)(zexb_r + 2) = zex.launch_id;                                                   \
    atomic_work_item_fence(CLK_GLOBAL_MEM_FENCE, memory_order_release, memory_scope_device);          \
    zexb_r[0] = 1u;                                                                                   \
  }

#else
#error "unknown ZEXB_VARIANT"
#endif

#endif /* ZEXB_CHECK_H */
