// group_decorations / expand_decoration_groups: the user module's decorations through the link in
// groups, and back (docs/spirv-passes.md, "Decorations through the link").
//
// Why: SPIRV-Tools 2023.1's linker removes duplicate decorations by comparing each one with every one
// before it (RemoveDuplicatesPass::RemoveDuplicateDecorations): quadratic in the number of decorations.
// llvm-spirv writes several per kernel (FuncParamAttr and Alignment on parameters, Constant and
// Alignment on each string), so linking 4,000 one-line kernels (44,000 decorations) took most of a
// module's creation time. The same decoration with the same literals applied to many ids is one
// OpDecorationGroup with one OpGroupDecorate listing them: the linker then compares a few dozen
// decorations, maps the listed ids like any other, and zex writes the decorations out per id again
// after the link, so the driver never sees a group (they are deprecated since SPIR-V 1.5).
//
// What is grouped: OpDecorate of the same decoration and literals on at least two ids that the link
// does not look at: parameters, variables and values of defined functions, module-scope variables,
// defined functions; never a type (the linker compares types with their decorations), an import or
// export (the linker matches their decorations), a declaration's parameters, or BuiltIn and
// LinkageAttributes themselves. The expansion writes each group's decorations for each listed id where
// the OpGroupDecorate stood, and leaves alone a group that an OpGroupMemberDecorate uses. The linked
// module has the same decorations as when the linker saw them one by one.
#include "spirv/passes/passes.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_set>
#include <utility>

namespace zex {
namespace passes {

namespace {

constexpr size_t kMaxTargets = 65000;  // an instruction has at most 65535 words

Instruction group_decorate(uint32_t group, std::vector<uint32_t>::const_iterator begin,
                           std::vector<uint32_t>::const_iterator end) {
  Instruction g;
  g.opcode = spv::OpGroupDecorate;
  g.words.push_back(0);
  add_operand(g, group, SPV_OPERAND_TYPE_ID);
  for (auto it = begin; it != end; ++it) add_operand(g, *it, SPV_OPERAND_TYPE_ID);
  return g;
}

}  // namespace

Status group_decorations(IRContext& ctx) {
  Module& m = ctx.module();
  // The ids the link does not look at.
  std::unordered_set<uint32_t> groupable, linked;
  for (const Instruction& i : m.insts)
    if (i.opcode == spv::OpDecorate && i.size() >= 3 && i.words[2] == spv::DecorationLinkageAttributes) linked.insert(i.words[1]);
  for (size_t k = 0; k < m.insts.size(); ++k) {
    const Instruction& i = m.insts[k];
    if (i.opcode == spv::OpVariable && i.result_id) groupable.insert(i.result_id);
    if (i.opcode != spv::OpFunction) continue;
    size_t end = k + 1;
    bool defined = false;
    for (; end < m.insts.size() && m.insts[end].opcode != spv::OpFunctionEnd; ++end) defined = defined || m.insts[end].opcode == spv::OpLabel;
    if (defined)
      for (size_t j = k; j < end; ++j)
        if (m.insts[j].result_id) groupable.insert(m.insts[j].result_id);
    k = end;
  }
  // Decorations by (decoration, literals), in order of first appearance.
  std::map<std::vector<uint32_t>, std::vector<size_t>> by_key;
  std::vector<std::vector<uint32_t>> keys;
  for (size_t k = 0; k < m.insts.size(); ++k) {
    const Instruction& i = m.insts[k];
    if (i.opcode != spv::OpDecorate || i.size() < 3 || !i.annotations.empty()) continue;
    if (i.words[2] == spv::DecorationBuiltIn || i.words[2] == spv::DecorationLinkageAttributes || !groupable.count(i.words[1]) ||
        linked.count(i.words[1]))
      continue;
    std::vector<uint32_t> key(i.words.begin() + 2, i.words.end());
    auto& at = by_key[key];
    if (at.empty()) keys.push_back(key);
    at.push_back(k);
  }
  std::vector<char> grouped(m.insts.size(), 0);
  size_t first = m.insts.size();
  std::vector<Instruction> groups;
  for (const auto& key : keys) {
    const std::vector<size_t>& at = by_key[key];
    if (at.size() < 2) continue;
    const uint32_t g = m.header[3]++;
    Instruction d = m.insts[at[0]];  // its operand types, on the group
    d.words[1] = g;
    groups.push_back(std::move(d));
    groups.push_back(make_instruction(spv::OpDecorationGroup, 0, g, {}));
    // An id decorated twice the same way (llvm-spirv writes some NoSignedWrap twice) is listed once,
    // as the linker would have removed the duplicate.
    std::vector<uint32_t> targets;
    std::unordered_set<uint32_t> listed;
    for (size_t k : at) {
      grouped[k] = 1;
      first = std::min(first, k);
      if (listed.insert(m.insts[k].words[1]).second) targets.push_back(m.insts[k].words[1]);
    }
    for (size_t b = 0; b < targets.size(); b += kMaxTargets)
      groups.push_back(group_decorate(g, targets.begin() + static_cast<std::ptrdiff_t>(b),
                                      targets.begin() + static_cast<std::ptrdiff_t>(std::min(targets.size(), b + kMaxTargets))));
  }
  if (groups.empty()) return Status::Unchanged;
  std::vector<Instruction> out;
  out.reserve(m.insts.size() + groups.size());
  for (size_t k = 0; k < m.insts.size(); ++k) {
    if (k == first)
      for (Instruction& g : groups) out.push_back(std::move(g));
    if (!grouped[k]) out.push_back(std::move(m.insts[k]));
  }
  m.insts = std::move(out);
  return Status::Changed;
}

Status expand_decoration_groups(IRContext& ctx) {
  Module& m = ctx.module();
  std::set<uint32_t> groups;
  for (const Instruction& i : m.insts)
    if (i.opcode == spv::OpDecorationGroup) groups.insert(i.result_id);
  for (const Instruction& i : m.insts)
    if (i.opcode == spv::OpGroupMemberDecorate) groups.erase(i.word(1));
  if (groups.empty()) return Status::Unchanged;
  auto decorates_group = [&](const Instruction& i) {
    return (i.opcode == spv::OpDecorate || i.opcode == spv::OpDecorateId || i.opcode == spv::OpDecorateString) &&
           i.size() >= 3 && groups.count(i.words[1]);
  };
  std::map<uint32_t, std::vector<const Instruction*>> decorations;  // group -> its decorations
  for (const Instruction& i : m.insts)
    if (decorates_group(i)) decorations[i.words[1]].push_back(&i);
  std::vector<Instruction> out;
  out.reserve(m.insts.size());
  for (const Instruction& i : m.insts) {
    if ((i.opcode == spv::OpDecorationGroup && groups.count(i.result_id)) || decorates_group(i)) continue;
    if (i.opcode == spv::OpGroupDecorate && groups.count(i.word(1))) {
      for (size_t t = 2; t < i.size(); ++t)
        for (const Instruction* d : decorations[i.words[1]]) {
          Instruction c = *d;
          c.words[1] = i.words[t];
          out.push_back(std::move(c));
        }
      continue;
    }
    out.push_back(i);
  }
  m.insts = std::move(out);
  return Status::Changed;
}

}  // namespace passes
}  // namespace zex
