// Kernels that call zex_throw_site (ABI version 3) directly, as zex's link-time pass emits it, in a
// module of their own: the module has no zex_throw for the pass to number, so its site table stays
// empty and every site these kernels report is unknown to the host, whatever the pass does to
// zex_test_kernels.cl.
#include <zex/device.h>

// Work-items from `at` up throw site 7 with values (their global id, 0xABCD).
__kernel void throw_site_direct(uint at, zex_state_t zex) {
  size_t i = get_global_id(0);
  if (i >= at) {
    zex_throw_site(zex, 7u, (ulong)i, 0xABCDul);
    return;
  }
}
