// strip_debug_info: what zex sets aside before asking SPIRV-Tools' validator (docs/spirv-passes.md).
//
// llvm-spirv-15 -g writes OpenCL.DebugInfo.100 with forward references (DebugTypeMember naming a
// type defined later) that SPIRV-Tools 2023.1 rejects, while the SPIR-V consumers zex hands modules
// to (Intel's driver, llvm-spirv in zex-cpu) read them. Debug information does not change what a
// kernel computes, so the validator checks the module without it: every OpExtInst of a debug set
// (including those attached to instructions) and the set's OpExtInstImport. OpLine, OpString,
// OpSource and OpName stay and are checked.
#include "passes.hpp"

#include <algorithm>

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

}  // namespace passes
}  // namespace zex
