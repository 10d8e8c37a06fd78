// kernel_names: the module's kernels, from its OpEntryPoint Kernel instructions.
#include "passes.hpp"

namespace zex {
namespace passes {

std::vector<std::string> kernel_names(const Module& m) {
  constexpr uint32_t kExecutionModelKernel = 6;
  std::vector<std::string> names;
  for (const Instruction& i : m.insts) {
    if (i.opcode == op::Function) break;  // entry points precede every function
    if (i.opcode == op::EntryPoint && i.size() >= 4 && i.words[1] == kExecutionModelKernel)
      names.push_back(i.string_at(3));
  }
  return names;
}

}  // namespace passes
}  // namespace zex
