// converge_throws_at_barriers: a throw in a kernel with work-group barriers does not leave the kernel.
//
// "A throw ends the work-item" (throw_paths.cpp) meets kernels with __local memory and barriers: a
// work-item that returns before a barrier its work-group still reaches is undefined behaviour in
// OpenCL, a hang on Intel's GPUs, and wrong results or a crash on PoCL (issue 24, item 5). So, in a
// kernel where a barrier can follow a throw, the throwing work-item records its throw, sets a private
// flag and runs on along the path it would have taken had the check passed, *skipping its own work*:
//
// - its loads and stores of __global, __constant and generic memory, and its stores and atomics on
//   __local memory, go to scratch words (module-scope variables: reads see zeros, writes are
//   discarded), by an OpSelect of the pointer on the flag;
// - its calls to zex's entry points (a second throw is not counted again) and to functions without
//   barriers, its memcpy-style copies and its OpenCL.std calls that take pointers, are branched around
//   (a value they return is zero);
// - barriers, group collectives, and calls of functions that contain barriers run as before, so the
//   work-group reaches every barrier with all its work-items, on every driver, by construction.
//
// Reads of __local memory stay real: a work-group decides together from what it keeps in local memory
// (a shared flag, a loop bound), and a thrower must take the same branches to reach the same barriers.
// Kernels without a barrier after a throw are left alone: there a throw returns, as before.
// docs/spirv-passes.md ("Throws before barriers") and docs/abi.md say what this means for a kernel.
//
// The parts, one concern each, are listed in barrier_throws.hpp.
#include "spirv/passes/passes.hpp"
#include "spirv/passes/barrier_throws.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace zex {
namespace passes {
namespace barrier_throws {

bool Converger::run() {
  for (auto& [id, name] : ctx_.imports())
    if (name.rfind("zex_", 0) == 0) zex_[id] = name;
  if (zex_.empty()) return false;
  // Most modules have no barrier at all: nothing to do, and no copy of every function made.
  if (std::none_of(m_.insts.begin(), m_.insts.end(), [](const Instruction& i) { return is_barrier_like(i.opcode); }))
    return false;
  collect_functions();
  mark_barriers();
  std::set<uint32_t> entries, wrappers;
  for (const Instruction& i : m_.insts)
    if (i.opcode == spv::OpEntryPoint && i.size() > 2) entries.insert(i.words[2]);
  // The llvm-spirv wrapper of a kernel only calls the kernel's body: the body is the kernel.
  std::map<uint32_t, uint32_t> callers;  // defined function -> number of call sites
  for (const Function& f : fns_)
    for (const Block& b : f.blocks)
      for (const Instruction& i : b.insts)
        if (i.opcode == spv::OpFunctionCall && fn_index_.count(i.word(3))) ++callers[i.word(3)];
  std::set<uint32_t> kernels;
  for (const Function& f : fns_) {
    if (!entries.count(f.id)) continue;
    uint32_t body = 0;
    if (f.blocks.size() == 1)
      for (const Instruction& i : f.blocks[0].insts)
        if (i.opcode == spv::OpFunctionCall && fn_index_.count(i.word(3))) body = body ? UINT32_MAX : i.word(3);
    if (body && body != UINT32_MAX && !entries.count(body)) {
      if (callers[body] == 1) kernels.insert(body);  // a body called from elsewhere too is left alone
    } else {
      kernels.insert(f.id);
    }
  }
  bool changed = false;
  for (Function& f : fns_)
    if (kernels.count(f.id)) changed = converge(f) || changed;
  if (!changed) return false;
  write_back();
  return true;
}

// ---- module facts ----
void Converger::collect_functions() {
  for (size_t k = 0; k < m_.insts.size(); ++k) {
    if (m_.insts[k].opcode != spv::OpFunction) continue;
    Function f;
    f.first = k;
    f.id = m_.insts[k].result_id;
    size_t j = k + 1;
    while (j < m_.insts.size() && m_.insts[j].opcode != spv::OpFunctionEnd) ++j;
    if (j == m_.insts.size()) throw std::invalid_argument("converge_throws_at_barriers: OpFunction without OpFunctionEnd");
    f.blocks = split_blocks(m_.insts.data() + k + 1, m_.insts.data() + j, &f.head);
    for (const Instruction& i : f.head)
      if (i.opcode != spv::OpFunctionParameter)
        throw std::invalid_argument("converge_throws_at_barriers: an instruction before the first block");
    if (!blocks_terminated(f.blocks))
      throw std::invalid_argument("converge_throws_at_barriers: a block without a terminator");
    f.last = j;
    fn_index_[f.id] = fns_.size();
    fns_.push_back(std::move(f));
    k = j;
  }
}

// Functions that run a barrier or a group collective, themselves or through a call.
void Converger::mark_barriers() {
  std::map<uint32_t, std::set<uint32_t>> calls;
  for (const Function& f : fns_)
    for (const Block& b : f.blocks)
      for (const Instruction& i : b.insts) {
        if (is_barrier_like(i.opcode)) barrier_fns_.insert(f.id);
        if (i.opcode == spv::OpFunctionCall) calls[f.id].insert(i.word(3));
      }
  for (bool more = true; more;) {
    more = false;
    for (auto& [f, callees] : calls)
      if (!barrier_fns_.count(f))
        for (uint32_t c : callees)
          if (barrier_fns_.count(c)) {
            barrier_fns_.insert(f);
            more = true;
            break;
          }
  }
}

const Instruction* Converger::def(uint32_t id) const { return ctx_.def(id); }

uint32_t Converger::type_of(uint32_t id) const {
  auto k = local_types_.find(id);
  if (k != local_types_.end()) return k->second;
  const Instruction* d = def(id);
  return d ? d->type_id : 0;
}

// The storage class of pointer type `t`, or UINT32_MAX if `t` is not a pointer type.
uint32_t Converger::storage_of(uint32_t t) const {
  const Instruction* d = def(t);
  return d && d->opcode == spv::OpTypePointer ? d->word(2) : UINT32_MAX;
}

bool Converger::barrier_at(const Instruction& i) const {
  return is_barrier_like(i.opcode) || (i.opcode == spv::OpFunctionCall && barrier_fns_.count(i.word(3)));
}
}  // namespace barrier_throws
}  // namespace passes
}  // namespace zex

namespace zex {
namespace passes {

Status converge_throws_at_barriers(IRContext& ctx) { return changed_if(barrier_throws::Converger(ctx).run()); }

}  // namespace passes
}  // namespace zex
