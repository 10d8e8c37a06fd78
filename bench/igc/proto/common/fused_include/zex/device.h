/* Prototype call site for bench/igc: ZEX_THROW makes ONE call, zex_throw_at(), with the state
 * unpacked into scalars; otherwise the same API as device/include/zex/device.h. */
#ifndef ZEX_DEVICE_H
#define ZEX_DEVICE_H
#include <zex/abi.h>

int zex_report_exception(zex_state_t zex, __constant char* name, __constant char* reason);
void zex_report_frame(zex_state_t zex, uint index, __constant char* function, __constant char* file,
                      uint line);
void zex_signal_exception(zex_state_t zex);
void zex_throw_at(ulong report, ulong claim, ulong launch_id, __constant char* name, __constant char* reason,
                  __constant char* function, __constant char* file, uint line);

#define ZEX_THROW(zex, name, reason)                                                         \
  do {                                                                                       \
    zex_throw_at((zex).report, (zex).claim, (zex).launch_id, (name), (reason),               \
                 (__constant char*)__func__, __FILE__, (uint)__LINE__);                      \
    return;                                                                                  \
  } while (0)

#define ZEX_CHECK_BOUNDS(zex, i, n)                                    \
  do {                                                                 \
    if (__builtin_expect(!((i) < (n)), 0))                             \
      ZEX_THROW((zex), "BoundsError", "Out-of-bounds array access");   \
  } while (0)

#endif
