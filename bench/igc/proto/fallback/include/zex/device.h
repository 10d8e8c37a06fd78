/* Stand-in for device/include/zex/device.h, used by bench/igc only while that header does not exist
 * yet; it follows coord ABI.md word for word so the measurements carry over. */
#ifndef ZEX_DEVICE_H
#define ZEX_DEVICE_H
#include <zex/abi.h>

int zex_report_exception(zex_state_t zex, __constant char* name, __constant char* reason);
void zex_report_frame(zex_state_t zex, uint index, __constant char* function, __constant char* file,
                      uint line);
void zex_signal_exception(zex_state_t zex);

#define ZEX_THROW(zex, name, reason)                                  \
  do {                                                                \
    zex_report_exception((zex), (name), (reason));                    \
    zex_report_frame((zex), 0u, (__constant char*)__func__, __FILE__, (uint)__LINE__);  \
    zex_signal_exception(zex);                                        \
    return;                                                           \
  } while (0)

#define ZEX_CHECK_BOUNDS(zex, i, n)                      \
  do {                                                   \
    if (__builtin_expect(!((i) < (n)), 0))               \
      ZEX_THROW(zex, "BoundsError", "Out-of-bounds array access"); \
  } while (0)

#endif
