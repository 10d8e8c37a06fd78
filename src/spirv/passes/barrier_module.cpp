// converge_throws_at_barriers, the module level (barrier_throws.hpp): new types and constants (each
// found in the module first), the scratch variables, and the module written back with the rewritten
// kernels.
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

uint32_t Converger::find_global(uint16_t opcode, uint32_t type, const std::vector<uint32_t>& rest) {
  for (const Instruction& i : m_.insts) {
    if (i.opcode == spv::OpFunction) break;
    if (i.opcode == opcode && i.type_id == type && std::vector<uint32_t>(i.words.begin() + (type ? 3 : 2), i.words.end()) == rest)
      return i.result_id;
  }
  for (const Instruction& i : globals_)
    if (i.opcode == opcode && i.type_id == type && std::vector<uint32_t>(i.words.begin() + (type ? 3 : 2), i.words.end()) == rest)
      return i.result_id;
  return 0;
}

uint32_t Converger::add_global(Instruction i) {
  const uint32_t id = i.result_id;
  globals_.push_back(std::move(i));
  return id;
}

uint32_t Converger::bool_type() {
  if (uint32_t t = find_global(spv::OpTypeBool, 0, {})) return t;
  return add_global(make_instruction(spv::OpTypeBool, 0, fresh(), {}));
}

uint32_t Converger::int_type(uint32_t width) {
  if (uint32_t t = find_global(spv::OpTypeInt, 0, {width, 0})) return t;
  Instruction i = make_instruction(spv::OpTypeInt, 0, fresh(), {});
  add_operand(i, width, SPV_OPERAND_TYPE_LITERAL_INTEGER);
  add_operand(i, 0, SPV_OPERAND_TYPE_LITERAL_INTEGER);
  return add_global(std::move(i));
}

uint32_t Converger::pointer_type(uint32_t sc, uint32_t pointee) {
  if (uint32_t t = find_global(spv::OpTypePointer, 0, {sc, pointee})) return t;
  Instruction i = make_instruction(spv::OpTypePointer, 0, fresh(), {});
  add_operand(i, sc, SPV_OPERAND_TYPE_STORAGE_CLASS);
  add_operand(i, pointee, SPV_OPERAND_TYPE_ID);
  return add_global(std::move(i));
}

uint32_t Converger::bool_constant(bool v) {
  const uint32_t t = bool_type();
  const uint16_t o = v ? spv::OpConstantTrue : spv::OpConstantFalse;
  if (uint32_t c = find_global(o, t, {})) return c;
  return add_global(make_instruction(o, t, fresh(), {}));
}

uint32_t Converger::uint_constant(uint32_t v) {
  const uint32_t u32 = int_type(32);
  if (uint32_t c = find_global(spv::OpConstant, u32, {v})) return c;
  Instruction c = make_instruction(spv::OpConstant, u32, fresh(), {});
  add_operand(c, v, SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER);
  return add_global(std::move(c));
}

uint32_t Converger::null_constant(uint32_t type) {
  if (uint32_t c = find_global(spv::OpConstantNull, type, {})) return c;
  return add_global(make_instruction(spv::OpConstantNull, type, fresh(), {}));
}

// The value of a skipped call: zero. llvm-spirv-15 takes OpConstantNull only of composites and
// pointers, so scalars get OpConstant 0 / false, and what is neither an OpUndef.
uint32_t Converger::zero_value(uint32_t type) {
  const Instruction* t = def(type);
  if (!t) return null_constant(type);
  if (t->opcode == spv::OpTypeBool) return bool_constant(false);
  if (t->opcode == spv::OpTypeInt || t->opcode == spv::OpTypeFloat) {
    const uint32_t width = t->word(2);
    std::vector<uint32_t> lits(width > 32 ? 2 : 1, 0);
    if (uint32_t c = find_global(spv::OpConstant, type, lits)) return c;
    Instruction c = make_instruction(spv::OpConstant, type, fresh(), {});
    c.words.insert(c.words.end(), lits.begin(), lits.end());
    c.operands.push_back({SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER, 3, static_cast<uint16_t>(lits.size())});
    c.fix_word_count();
    return add_global(std::move(c));
  }
  if (t->opcode == spv::OpTypeStruct || t->opcode == spv::OpTypeArray || t->opcode == spv::OpTypePointer)
    return null_constant(type);
  if (uint32_t u = find_global(spv::OpUndef, type, {})) return u;
  return add_global(make_instruction(spv::OpUndef, type, fresh(), {}));
}

uint32_t Converger::scratch_array() {
  if (scratch_array_) return scratch_array_;
  const uint32_t n = uint_constant(kScratchWords);
  return scratch_array_ = add_global(make_instruction(spv::OpTypeArray, 0, fresh(), {int_type(64), n}));
}

Instruction Converger::make_variable(uint32_t ptype, uint32_t id, uint32_t sc, uint32_t init) {
  Instruction v = make_instruction(spv::OpVariable, ptype, id, {});
  add_operand(v, sc, SPV_OPERAND_TYPE_STORAGE_CLASS);
  if (init) add_operand(v, init, SPV_OPERAND_TYPE_ID);
  return v;
}

// The scratch variable of a storage class: reads (zeros, never written) or writes (never read).
uint32_t Converger::scratch(uint32_t sc, bool write) {
  uint32_t& v = scratch_[{sc, write}];
  if (v) return v;
  const uint32_t arr = scratch_array();
  const uint32_t pt = pointer_type(sc, arr);
  v = fresh();
  // __local memory has no initializer; the others start as zeros.
  add_global(make_variable(pt, v, sc, sc == spv::StorageClassWorkgroup ? 0 : null_constant(arr)));
  scratch_vars_.push_back(v);
  return v;
}

void Converger::set_result(Instruction& i, uint32_t id) {
  if (!i.result_id) return;
  for (const Operand& o : i.operands)
    if (o.type == SPV_OPERAND_TYPE_RESULT_ID) i.words[o.offset] = id;
  i.result_id = id;
}

void Converger::write_back() {
  Insts out;
  size_t fi = 0;
  bool placed = false;
  for (size_t k = 0; k < m_.insts.size(); ++k) {
    Instruction i = m_.insts[k];
    if (i.opcode == spv::OpFunction && !placed) {
      out.insert(out.end(), globals_.begin(), globals_.end());
      placed = true;
    }
    if (i.opcode == spv::OpEntryPoint && m_.header[1] >= 0x00010400u) {
      // SPIR-V 1.4+: every module-scope variable a kernel uses is in its interface.
      for (uint32_t v : scratch_vars_) add_operand(i, v, SPV_OPERAND_TYPE_ID);
    }
    if (fi < fns_.size() && k == fns_[fi].first) {
      Function& f = fns_[fi++];
      out.push_back(i);
      out.insert(out.end(), f.head.begin(), f.head.end());
      for (Block& b : f.blocks) {
        out.push_back(b.label);
        out.insert(out.end(), b.insts.begin(), b.insts.end());
      }
      out.push_back(m_.insts[f.last]);
      k = f.last;
      continue;
    }
    out.push_back(std::move(i));
  }
  m_.insts = std::move(out);
  m_.header[3] = next_;
}
}  // namespace barrier_throws
}  // namespace passes
}  // namespace zex
