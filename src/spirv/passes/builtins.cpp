// merge_duplicate_builtins: one variable per (built-in, type) in a linked module.
//
// Both the user module and the device library declare the work-item built-ins they use (e.g.
// __spirv_BuiltInGlobalInvocationId) as imported variables; nobody exports them, so the linker keeps
// one variable per module. The result is valid SPIR-V, but the LLVM SPIR-V translator recognizes a
// built-in variable by its name and turns the second one (renamed "....2" in LLVM) into an invalid
// internal declaration. So: the first variable of each (built-in, type) stays, every <id> operand
// naming a duplicate (entry-point interfaces, loads, debug information) is redirected to it, and the
// duplicates' names and decorations go.
#include "spirv/passes/passes.hpp"

#include <algorithm>
#include <map>

namespace zex {
namespace passes {

namespace {
}  // namespace

Status merge_duplicate_builtins(IRContext& ctx) {
  Module& m = ctx.module();
  std::map<uint32_t, uint32_t> builtin_of;  // variable id -> BuiltIn
  for (const Instruction& i : m.insts)
    if (i.opcode == spv::OpDecorate && i.size() == 4 && i.words[2] == spv::DecorationBuiltIn) builtin_of[i.words[1]] = i.words[3];
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> canonical;  // (built-in, type) -> first variable
  std::map<uint32_t, uint32_t> replace;                          // duplicate -> canonical
  for (const Instruction& i : m.insts) {
    if (i.opcode != spv::OpVariable) continue;
    auto b = builtin_of.find(i.result_id);
    if (b == builtin_of.end()) continue;
    auto [it, fresh] = canonical.emplace(std::make_pair(b->second, i.type_id), i.result_id);
    if (!fresh) replace[i.result_id] = it->second;
  }
  if (replace.empty()) return Status::Unchanged;

  auto names_duplicate = [&](const Instruction& i) {
    switch (i.opcode) {
      case spv::OpVariable: return replace.count(i.result_id) != 0;
      case spv::OpName:
      case spv::OpDecorate:
      case spv::OpMemberDecorate:
      case spv::OpDecorateId:
      case spv::OpDecorateString: return replace.count(i.word(1)) != 0;
      default: return false;
    }
  };
  m.insts.erase(std::remove_if(m.insts.begin(), m.insts.end(), names_duplicate), m.insts.end());
  for (Instruction& i : m.insts) {
    i.replace_ids(replace);
    if (i.opcode != spv::OpEntryPoint) continue;
    // Execution model, function, name, then the interface <id>s: each one once.
    size_t first = i.size();
    for (const Operand& o : i.operands)
      if (o.type == SPV_OPERAND_TYPE_ID && o.offset > 2) {
        first = o.offset;
        break;
      }
    std::vector<uint32_t> words(i.words.begin(), i.words.begin() + static_cast<std::ptrdiff_t>(first));
    std::vector<Operand> operands;
    for (const Operand& o : i.operands)
      if (o.offset < first) operands.push_back(o);
    for (size_t k = first; k < i.size(); ++k)
      if (std::find(words.begin() + static_cast<std::ptrdiff_t>(first), words.end(), i.words[k]) == words.end()) {
        operands.push_back({SPV_OPERAND_TYPE_ID, static_cast<uint16_t>(words.size()), 1});
        words.push_back(i.words[k]);
      }
    i.words = std::move(words);
    i.operands = std::move(operands);
    i.fix_word_count();
  }
  return Status::Changed;
}

}  // namespace passes
}  // namespace zex
