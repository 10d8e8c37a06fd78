// zex's own kernels for zex::Graph (src/runtime/graph.cpp; docs/design.md, "Graphs"), a module of their
// own, embedded in libzex like the device library (device/prebuilt/zex_graph.spv for builds without a
// SPIR-V toolchain). Not part of the device ABI: only zex launches them.
#include <zex/abi.h>

// The epilogue of one graph execution, one work-item, after the graph's closing barrier: if a
// work-item threw into the graph's slot (`report`, host USM; `claim`, device USM), copy the report and
// the claim area into the execution's ring entry (`entry`: the report, then ZEX_CLAIM_BYTES) and reset
// the slot for the next execution; if nothing was thrown, two loads and nothing else (the host clears an
// entry's status when it reads it).
__kernel void zex_graph_epilogue(ulong report, ulong claim, ulong entry) {
  __global uint* c = (__global uint*)claim;
  __global uint* r = (__global uint*)report;
  if (c[0] == 0u && r[0] == ZEX_STATUS_NONE) return;
  __global uint* e = (__global uint*)entry;
  const uint report_words = (uint)(sizeof(zex_report_t) / 4), claim_words = ZEX_CLAIM_BYTES / 4;
  for (uint i = 0; i < report_words; ++i) e[i] = r[i];
  for (uint i = 0; i < claim_words; ++i) e[report_words + i] = c[i];
  for (uint i = 0; i < claim_words; ++i) c[i] = 0u;
  r[0] = ZEX_STATUS_NONE;
}
