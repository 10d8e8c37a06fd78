// converge_throws_at_barriers, one block for a thrower (barrier_throws.hpp): its memory accesses
// redirected to scratch variables by an OpSelect on the flag, the calls and copies it skips branched
// around (their value zero).
#include "spirv/passes/barrier_throws.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace zex {
namespace passes {
namespace barrier_throws {

// Redirects the accesses of `b` for a thrower and branches around the calls it skips; `b` may become
// several blocks (appended to `out`).
void Converger::guard_block(Block b, std::vector<Block>& out) {
  const uint32_t original = b.id();
  Block cur{b.label, {}};
  uint32_t flag = 0;  // the flag loaded in `cur` (0: not yet)
  auto load_flag = [&]() {
    if (!flag) {
      flag = fresh();
      cur.insts.push_back(make_instruction(spv::OpLoad, bool_type(), flag, {thrown_}));
    }
    return flag;
  };
  size_t k = 0;
  while (k < b.insts.size() && b.insts[k].opcode == spv::OpPhi) cur.insts.push_back(std::move(b.insts[k++]));
  while (k < b.insts.size() && b.insts[k].opcode == spv::OpVariable) cur.insts.push_back(std::move(b.insts[k++]));
  for (; k < b.insts.size(); ++k) {
    Instruction i = std::move(b.insts[k]);
    if (i.opcode == spv::OpStore && i.size() >= 3 && i.words[1] == thrown_) {
      cur.insts.push_back(std::move(i));
      flag = 0;  // the flag changed
      continue;
    }
    if (needs_skip(i)) {
      // [.. %f = load flag; br %f join do] [do: i; br join] [join: %r = phi (zero, cur) (i, do); ..]
      const uint32_t f = load_flag(), run = fresh(), join = fresh();
      Instruction br = make_instruction(spv::OpBranchConditional, 0, 0, {f, join, run});
      add_operand(br, 1, SPV_OPERAND_TYPE_LITERAL_INTEGER);
      add_operand(br, 1000, SPV_OPERAND_TYPE_LITERAL_INTEGER);
      cur.insts.push_back(std::move(br));
      const uint32_t head = cur.id();
      out.push_back(std::move(cur));
      Block d{make_instruction(spv::OpLabel, 0, run, {}), {}};
      const uint32_t result = i.result_id, type = i.type_id;
      const bool value = result && type && !is_void(type);
      if (value) set_result(i, fresh());
      const uint32_t produced = i.result_id;
      d.insts.push_back(std::move(i));
      d.insts.push_back(make_instruction(spv::OpBranch, 0, 0, {join}));
      out.push_back(std::move(d));
      cur = Block{make_instruction(spv::OpLabel, 0, join, {}), {}};
      if (value) cur.insts.push_back(make_instruction(spv::OpPhi, type, result, {zero_value(type), head, produced, run}));
      flag = 0;
      continue;
    }
    redirect(i, cur.insts, load_flag);
    cur.insts.push_back(std::move(i));
  }
  if (cur.id() != original) split_to_[original] = cur.id();
  out.push_back(std::move(cur));
}

bool Converger::is_void(uint32_t type) const {
  const Instruction* d = def(type);
  return d && d->opcode == spv::OpTypeVoid;
}

// What a thrower does not run at all.
bool Converger::needs_skip(const Instruction& i) const {
  if (i.opcode == spv::OpFunctionCall) {
    const uint32_t callee = i.word(3);
    if (zex_.count(callee)) return true;                // zex's entry points: no second count
    if (fn_index_.count(callee)) return !barrier_fns_.count(callee);  // its own work
    return false;  // an import of another library: it may hold a barrier
  }
  if (i.opcode == spv::OpCopyMemory || i.opcode == spv::OpCopyMemorySized) return true;
  if (i.opcode == spv::OpExtInst && !i.debug) {
    for (uint32_t u : i.used_ids()) {
      const uint32_t s = storage_of(type_of(u));
      if (s != UINT32_MAX && s != spv::StorageClassFunction) return true;  // vload/vstore/prefetch/printf & co.
    }
  }
  return false;
}

// A thrower's access goes to a scratch variable: `ptr` becomes `select(flag, scratch, ptr)`.
void Converger::redirect(Instruction& i, Insts& before, const std::function<uint32_t()>& load_flag) {
  size_t word = 0;
  bool write = false;
  if (i.opcode == spv::OpLoad) word = 3;
  else if (i.opcode == spv::OpStore) word = 1, write = true;
  else if (i.opcode == spv::OpAtomicStore || i.opcode == spv::OpAtomicFlagClear) word = 1, write = true;
  else if (is_atomic_on_pointer(i.opcode)) word = 3, write = true;
  else return;
  if (i.size() <= word) return;
  const uint32_t ptr = i.words[word];
  if (ptr == thrown_) return;
  const uint32_t ptype = type_of(ptr);
  const uint32_t sc = storage_of(ptype);
  uint32_t scratch_sc;
  if (sc == spv::StorageClassCrossWorkgroup || sc == spv::StorageClassGeneric) scratch_sc = spv::StorageClassCrossWorkgroup;
  else if (sc == spv::StorageClassUniformConstant && !write) scratch_sc = spv::StorageClassUniformConstant;
  else if (sc == spv::StorageClassWorkgroup && write) scratch_sc = spv::StorageClassWorkgroup;
  else return;  // private memory, and reads of __local memory, stay as they are
  const uint32_t var = scratch(scratch_sc, write);
  uint32_t p = var;
  if (sc == spv::StorageClassGeneric) {
    const uint32_t g = fresh();
    before.push_back(make_instruction(spv::OpPtrCastToGeneric, pointer_type(spv::StorageClassGeneric, scratch_array()), g, {var}));
    p = g;
  }
  const uint32_t cast = fresh();
  before.push_back(make_instruction(spv::OpBitcast, ptype, cast, {p}));
  const uint32_t sel = fresh();
  before.push_back(make_instruction(spv::OpSelect, ptype, sel, {load_flag(), cast, ptr}));
  local_types_[sel] = ptype;
  i.words[word] = sel;
}
}  // namespace barrier_throws
}  // namespace passes
}  // namespace zex
