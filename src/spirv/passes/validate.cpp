// strip_debug_info: what zex sets aside before asking SPIRV-Tools' validator (docs/spirv-passes.md).
//
// llvm-spirv-15 -g writes OpenCL.DebugInfo.100 with forward references (DebugTypeMember naming a
// type defined later) that SPIRV-Tools 2023.1 rejects, while the SPIR-V consumers zex hands modules
// to (Intel's driver, llvm-spirv in zex-cpu) read them. Debug information does not change what a
// kernel computes, so the validator checks the module without it: every OpExtInst of a debug set
// (including those attached to instructions) and the set's OpExtInstImport. OpLine, OpString,
// OpSource and OpName stay and are checked.
//
// unique_names: the names the validator is shown first. SPIRV-Tools 2023.1 builds a "friendly name"
// for every id before it validates (FriendlyNameMapper), and gives the k-th id of an already used
// name the first free one of name_0, name_1, ... by trying them in turn: quadratic in the number of
// ids that share a name, and llvm-spirv names every kernel's parameters and blocks as the source does
// (4,000 one-line kernels: 80-100 s of 1.1 s). With a name unique to each id the validator checks the
// same (an OpName's target must still be defined) in linear time; zex validates again with the
// module's own names only to word the message of a module it refuses.
#include "spirv/passes/passes.hpp"

#include <algorithm>
#include <string>

namespace zex {
namespace passes {

size_t strip_debug_info(Module& m) {
  size_t removed = 0;
  auto drop = [&](std::vector<Instruction>& v) {
    const size_t before = v.size();
    v.erase(std::remove_if(v.begin(), v.end(), [](const Instruction& i) { return i.debug; }), v.end());
    removed += before - v.size();
  };
  drop(m.insts);
  drop(m.trailing);
  for (Instruction& i : m.insts) drop(i.annotations);
  return removed;
}

namespace {
// The name the validator is shown for `target`: unique to it.
Instruction unique_name(uint32_t target) { return make_name(target, "n" + std::to_string(target)); }
}  // namespace

size_t unique_names(Module& m) {
  size_t renamed = 0;
  for (Instruction& i : m.insts)
    if (i.opcode == spv::OpName && i.size() >= 2) {
      i = unique_name(i.words[1]);
      ++renamed;
    }
  return renamed;
}

std::vector<uint32_t> validator_words(const Module& m, bool own_names) {
  std::vector<uint32_t> out(m.header, m.header + 5);
  out.reserve(m.insts.size() * 5);
  auto append = [&](const Instruction& i) {
    if (i.debug) return;
    if (!own_names && i.opcode == spv::OpName && i.size() >= 2) {
      const Instruction n = unique_name(i.words[1]);
      out.insert(out.end(), n.words.begin(), n.words.end());
      return;
    }
    out.insert(out.end(), i.words.begin(), i.words.end());
  };
  for (const Instruction& i : m.insts) {
    if (i.debug) continue;  // its annotations describe it: they go with it
    for (const Instruction& a : i.annotations) append(a);
    append(i);
  }
  for (const Instruction& a : m.trailing) append(a);
  return out;
}

}  // namespace passes
}  // namespace zex
