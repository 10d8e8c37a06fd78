// zex's own kernels for zex::Graph (src/runtime/graph.cpp; docs/design.md, "Graphs"), a module of their
// own, embedded in libzex like the device library (device/prebuilt/zex_graph.spv for builds without a
// SPIR-V toolchain). Not part of the device ABI: only zex launches them.
#include <zex/abi.h>

// Ring entries: the report, then the claim area (src/runtime/graph.cpp's Copy, static_asserted there).
#define ZEX_GRAPH_ENTRY_WORDS ((uint)(sizeof(zex_report_t) / 4) + ZEX_CLAIM_BYTES / 4)
#define ZEX_GRAPH_RING_ENTRIES 64u /* zex::Graph::kMaxInFlight */

// The epilogue of one graph execution: the last command of the graph's list, one work-item, after a
// barrier. Counts the execution (`control`, host USM: executions run one after another on their queue,
// so a plain increment), and if a work-item threw into the graph's slot (`report`, host USM; `claim`,
// device USM) copies the report and the claim area into the execution's entry of `ring` and resets the
// slot. If nothing was thrown: three loads and one store.
__kernel void zex_graph_epilogue(ulong report, ulong claim, ulong ring, ulong control) {
  __global ulong* n = (__global ulong*)control;
  const ulong e = n[0];
  n[0] = e + 1ul;
  __global uint* c = (__global uint*)claim;
  __global uint* r = (__global uint*)report;
  if (c[0] == 0u && r[0] == ZEX_STATUS_NONE) return;
  __global uint* entry = (__global uint*)ring + (uint)(e % ZEX_GRAPH_RING_ENTRIES) * ZEX_GRAPH_ENTRY_WORDS;
  const uint report_words = (uint)(sizeof(zex_report_t) / 4), claim_words = ZEX_CLAIM_BYTES / 4;
  for (uint i = 0; i < report_words; ++i) entry[i] = r[i];
  for (uint i = 0; i < claim_words; ++i) entry[report_words + i] = c[i];
  for (uint i = 0; i < claim_words; ++i) c[i] = 0u;
  r[0] = ZEX_STATUS_NONE;
}
