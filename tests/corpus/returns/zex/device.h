/* A stand-in for <zex/device.h> that the corpus's "returns" build of checked/ uses instead of zex's:
 * the same zex_state_t parameter, and ZEX_CHECK_BOUNDS as a plain early return (no zex call, no
 * link with the device library). Run raw on zex-cpu, it tells a kernel that zex-cpu runs wrongly
 * with an early return before a barrier (issue 24 item 4) from one that zex's passes change. */
#ifndef ZEX_DEVICE_H
#define ZEX_DEVICE_H
typedef struct { ulong a, b, c; } zex_state_t;
#define ZEX_CHECK_BOUNDS(zex, i, n)                   \
  do {                                                \
    if (__builtin_expect(!((i) < (n)), 0)) return;    \
  } while (0)
#endif
