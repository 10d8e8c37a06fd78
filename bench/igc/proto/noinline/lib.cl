/* bench/igc prototype: see ../common/lib_proto.cl for the knobs. */
#define ZEXP_NOINLINE 1
#include "../common/lib_proto.cl"
