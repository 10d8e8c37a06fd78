// clone_called_kernels: every call of a kernel from another function goes to a copy of the kernel that
// is an ordinary function.
//
// OpenCL C lets a kernel call another kernel, and the throw-path pass (throw_paths.cpp) must end the
// work-item through such a call too. It does so by making every function that may throw return a flag,
// but a kernel must return void: so must the function an llvm-spirv-15 entry-point wrapper calls, which
// every reader of the module (llvm-spirv's reverse translation: zex-cpu, Intel's front end) gives the
// kernel's calling convention. The pass used to leave such a module alone, so that in all of its
// kernels a throw in a helper no longer ended the work-item (issue 24, item 10). A copy is what a
// compiler does when it inlines the called kernel: the kernel stays a kernel for its launches, and its
// callers call the copy, which the pass treats as any helper. The copy has fresh ids, the kernel's
// decorations but no linkage (the kernel keeps its export), the kernel's debug scopes, and the OpName
// `__zex_call_<kernel>`: llvm-spirv-15's reverse translation finds an LLVM function by its name, and
// two functions of one name become one (a broken module). Frames name it as the kernel (`names`).
// Copies of kernels that call kernels call copies in turn.
#include "spirv/passes/passes.hpp"

#include <deque>
#include <functional>
#include <map>
#include <set>
#include <string>

namespace zex {
namespace passes {

namespace {


struct Range {
  size_t first, last;  // OpFunction, OpFunctionEnd in m.insts
};

// A copy of `body` (OpFunction .. OpFunctionEnd) with every id it defines renumbered from `next`.
std::vector<Instruction> renumbered(const std::vector<Instruction>& body, uint32_t& next,
                                    std::map<uint32_t, uint32_t>& ids) {
  std::vector<Instruction> out = body;
  std::function<void(Instruction&)> collect = [&](Instruction& i) {
    if (i.result_id) ids[i.result_id] = next++;
    for (Instruction& a : i.annotations) collect(a);
  };
  std::function<void(Instruction&)> define = [&](Instruction& i) {
    for (const Operand& o : i.operands)
      if (o.type == SPV_OPERAND_TYPE_RESULT_ID) i.words[o.offset] = ids.at(i.result_id);
    if (i.result_id) i.result_id = ids.at(i.result_id);
    for (Instruction& a : i.annotations) define(a);
  };
  for (Instruction& i : out) collect(i);
  for (Instruction& i : out) {
    define(i);
    i.replace_ids(ids);
  }
  return out;
}

}  // namespace

bool clone_called_kernels(const Module& in, Module* out, std::map<uint32_t, std::string>* names) {
  std::map<uint32_t, Range> fns;  // defined functions
  std::set<uint32_t> entries;
  for (size_t k = 0; k < in.insts.size(); ++k) {
    const Instruction& i = in.insts[k];
    if (i.opcode == spv::OpEntryPoint) entries.insert(i.word(2));
    if (i.opcode != spv::OpFunction) continue;
    size_t j = k + 1;
    bool defined = false;
    for (; j < in.insts.size() && in.insts[j].opcode != spv::OpFunctionEnd; ++j) defined = defined || in.insts[j].opcode == spv::OpLabel;
    if (j == in.insts.size()) return false;  // malformed: the pass declines it
    if (defined) fns[i.result_id] = {k, j};
    k = j;
  }
  // llvm-spirv-15's entry-point wrappers: one block, the call of the kernel's body, the return.
  std::set<uint32_t> wrappers, kernels = entries;
  for (uint32_t e : entries) {
    auto f = fns.find(e);
    if (f == fns.end()) continue;
    const auto& is = in.insts;
    const size_t a = f->second.first, b = f->second.last;
    size_t labels = 0, p = a + 1;
    while (p < b && is[p].opcode == spv::OpFunctionParameter) ++p;
    for (size_t q = p; q < b; ++q) labels += is[q].opcode == spv::OpLabel;
    if (labels == 1 && b - p == 3 && is[p + 1].opcode == spv::OpFunctionCall && fns.count(is[p + 1].word(3)) &&
        is[p + 2].opcode == spv::OpReturn) {
      wrappers.insert(e);
      kernels.insert(is[p + 1].word(3));
    }
  }
  auto kernel_call = [&](const Instruction& i) { return i.opcode == spv::OpFunctionCall && kernels.count(i.word(3)); };
  bool any = false;
  for (auto& [id, r] : fns)
    if (!wrappers.count(id))
      for (size_t k = r.first; k <= r.last && !any; ++k) any = kernel_call(in.insts[k]);
  if (!any) return false;

  *out = in;
  Module& m = *out;
  uint32_t next = m.header[3];
  std::map<uint32_t, uint32_t> clone_of;         // kernel -> its copy
  std::map<uint32_t, uint32_t> clone_ids;        // every id a copy defines: original -> copy
  std::deque<std::vector<Instruction>> clones;   // their bodies (a deque: references stay valid)
  auto redirect = [&](Instruction& i) {
    if (!kernel_call(i)) return;
    const uint32_t k = i.word(3);
    if (!clone_of.count(k)) {
      const Range& r = fns.at(k);
      std::map<uint32_t, uint32_t> ids;
      clones.push_back(renumbered({m.insts.begin() + static_cast<std::ptrdiff_t>(r.first),
                                   m.insts.begin() + static_cast<std::ptrdiff_t>(r.last) + 1},
                                  next, ids));
      clone_of[k] = ids.at(k);
      clone_ids.insert(ids.begin(), ids.end());
    }
    i.words[3] = clone_of.at(k);
  };
  for (auto& [id, r] : fns)
    if (!wrappers.count(id))
      for (size_t k = r.first; k <= r.last; ++k) redirect(m.insts[k]);
  for (size_t c = 0; c < clones.size(); ++c)
    for (Instruction& i : clones[c]) redirect(i);

  // Names and decorations of the copies' ids, next to the originals'; the copies after the last function.
  std::vector<Instruction> insts;
  insts.reserve(m.insts.size());
  for (Instruction& i : m.insts) {
    insts.push_back(i);
    const uint16_t o = i.opcode;
    if (o == spv::OpName && clone_of.count(i.word(1))) {
      const uint32_t copy = clone_of.at(i.word(1));
      (*names)[copy] = i.string_at(2);
      Instruction n = make_instruction(spv::OpName, 0, 0, {copy});
      n.operands[0].type = SPV_OPERAND_TYPE_ID;
      add_string_operand(n, "__zex_call_" + i.string_at(2));
      insts.push_back(std::move(n));
    } else if ((o == spv::OpDecorate || o == spv::OpDecorateId || o == spv::OpDecorateString) && clone_ids.count(i.word(1)) &&
               i.word(2) != spv::DecorationLinkageAttributes) {
      insts.push_back(i);
      insts.back().words[1] = clone_ids.at(i.word(1));
      insts.back().annotations.clear();
    } else if (o == spv::OpGroupDecorate) {
      for (size_t w = 2; w < i.size(); ++w)
        if (clone_ids.count(i.words[w])) add_operand(insts.back(), clone_ids.at(i.words[w]), SPV_OPERAND_TYPE_ID);
    }
  }
  for (auto& c : clones) insts.insert(insts.end(), c.begin(), c.end());
  m.insts = std::move(insts);
  m.header[3] = next;
  return true;
}

}  // namespace passes
}  // namespace zex
