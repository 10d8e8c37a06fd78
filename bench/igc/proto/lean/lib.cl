/* bench/igc prototype: see ../common/lib_proto.cl for the knobs. */
#define ZEXP_CLAIM32 1
#define ZEXP_CHEAP_OWNER 1
#include "../common/lib_proto.cl"
