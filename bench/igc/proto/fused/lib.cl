/* bench/igc prototype: see ../common/lib_proto.cl for the knobs. */
#define ZEXP_FUSED 1
#define ZEXP_CLAIM32 1
#include "../common/lib_proto.cl"
