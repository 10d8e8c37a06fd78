/* The three ABI entry points called the way a language compiler emitting SPIR-V calls them: with a
 * runtime frame index, a runtime line and a name chosen at run time, then return. The shape test
 * compiles this, linked with the device library, at every debug level. */
#include <zex/device.h>

__kernel void abi_calls(__global const uint* in, uint n, zex_state_t zex) {
  size_t i = get_global_id(0);
  uint v = in[i];
  if (__builtin_expect(v >= n, 0)) {
    __constant char* name = (v & 1u) ? "BoundsError" : "DomainError";
    if (zex_report_exception(zex, name, "checked by abi_calls")) {
      for (uint f = 0; f < (v & 3u); ++f)
        zex_report_frame(zex, f, "abi_calls", "tests/kernels/igc/abi_calls.cl", 10u + v + f);
    }
    zex_signal_exception(zex);
    return;
  }
}
