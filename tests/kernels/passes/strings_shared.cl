// Strings zex calls share with other users, for the string-wrapping pass (src/spirv/passes/strings.cpp):
// the same literal in printf and ZEX_THROW (clang emits one .str for both), a named __constant
// string that user code also reads, and a string only zex takes.
#include <zex/device.h>

__constant char kind[] = "DomainError";

__kernel void shared_strings(__global const float* in, __global char* out, uint n, zex_state_t zex) {
  size_t i = get_global_id(0);
  if (in[i] < 0.0f) {
    printf("BoundsError\n");  // the same bytes as the literal below, but with "\n": a different .str
    printf("%s", "BoundsError");
    ZEX_THROW(zex, "BoundsError", "negative input");
  }
  out[i] = kind[i % 11];  // user code reads the named string
  if (i >= n) ZEX_THROW(zex, kind, "index past the end");
}
