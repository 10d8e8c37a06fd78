// The one parsed form of a SPIR-V module that zex's passes work on (src/spirv/passes/). Built with
// SPIRV-Tools' spvBinaryParse, so every operand's type is known; written back with to_words().
//
// Line and debug information travels with the instruction it describes: OpLine/OpNoLine and the
// per-instruction debug instructions (DebugScope, DebugNoScope, DebugValue, DebugDeclare, DebugLine,
// DebugNoLine of OpenCL.DebugInfo.100 / NonSemantic.Shader.DebugInfo.100) that precede an instruction
// are kept in its `annotations`, so a pass that moves, compares or drops an instruction does the same
// to its lines without seeing them. Debug instructions at module scope (DebugTypeBasic, ...) are
// ordinary instructions with `debug` set.
#pragma once

#include <spirv-tools/libspirv.h>
// Opcodes, storage classes, decorations...: spv::Op*, spv::StorageClass* (Debian's spirv-headers).
#include <spirv/unified1/spirv.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace zex {
namespace passes {

/// An operand that refers to an <id> (not the instruction's own result).
inline bool is_id_use(uint32_t type) {
  return type == SPV_OPERAND_TYPE_ID || type == SPV_OPERAND_TYPE_TYPE_ID || type == SPV_OPERAND_TYPE_SCOPE_ID ||
         type == SPV_OPERAND_TYPE_MEMORY_SEMANTICS_ID;
}

/// An atomic instruction on a pointer operand (loads, stores, read-modify-writes, flags).
inline bool is_atomic_on_pointer(uint16_t o) {
  return o == spv::OpAtomicLoad || o == spv::OpAtomicStore || (o >= spv::OpAtomicExchange && o <= spv::OpAtomicXor) ||
         o == spv::OpAtomicFlagTestAndSet || o == spv::OpAtomicFlagClear || o == spv::OpAtomicFMinEXT ||
         o == spv::OpAtomicFMaxEXT || o == spv::OpAtomicFAddEXT;
}

/// Where a memory access (OpLoad, OpStore, an atomic on a pointer) has its pointer operand, as a word
/// index; 0: `o` is not such an access.
inline size_t access_pointer_word(uint16_t o) {
  if (o == spv::OpStore || o == spv::OpAtomicStore || o == spv::OpAtomicFlagClear) return 1;
  return o == spv::OpLoad || is_atomic_on_pointer(o) ? 3 : 0;
}

struct Operand {
  uint32_t type;  // spv_operand_type_t
  uint16_t offset;
  uint16_t count;
};

struct Instruction {
  uint16_t opcode = 0;
  uint32_t type_id = 0;    // 0: none
  uint32_t result_id = 0;  // 0: none
  std::vector<uint32_t> words;  // the whole instruction, its first word included
  std::vector<Operand> operands;
  bool debug = false;      // an OpExtInst of a debug-information set, or that set's OpExtInstImport
  std::vector<Instruction> annotations;  // the line/debug instructions that precede this one

  /// Word i of the instruction; 0 past its end (the passes check shapes before trusting values).
  uint32_t word(size_t i) const { return i < words.size() ? words[i] : 0; }
  size_t size() const { return words.size(); }
  /// The ids this instruction uses (its <id> operands other than its result), annotations excluded.
  std::vector<uint32_t> used_ids() const;
  /// Replaces every used <id> operand equal to a key of `map` (annotations included; type_id too).
  template <class Map>
  void replace_ids(const Map& map);
  /// The literal string operand starting at word `offset`.
  std::string string_at(size_t offset) const;
  /// Sets the word count in words[0] from words.size().
  void fix_word_count() { words[0] = (static_cast<uint32_t>(words.size()) << 16) | opcode; }
};

struct Module {
  uint32_t header[5] = {};
  std::vector<Instruction> insts;
  std::vector<Instruction> trailing;  // annotations after the last instruction (none in valid SPIR-V)
};

/// Parses a SPIR-V binary (words, header included, host endianness).
/// @throws std::invalid_argument with SPIRV-Tools' diagnostic if it is not a well-formed binary
Module parse(const std::vector<uint32_t>& words);
/// The module as words again. parse(w) then to_words() gives back w exactly.
std::vector<uint32_t> to_words(const Module& m);

/// A new instruction whose operands after its type and result (0: none) are all <id>s.
Instruction make_instruction(uint16_t opcode, uint32_t type, uint32_t result, const std::vector<uint32_t>& ids);

/// A new `OpName %target "name"`.
Instruction make_name(uint32_t target, const std::string& name);

/// Appends a one-word operand of type `type` to `i` (and updates its word count).
void add_operand(Instruction& i, uint32_t word, spv_operand_type_t type);

/// Appends a literal string operand (NUL-terminated, padded to whole words) to `i`.
void add_string_operand(Instruction& i, const std::string& s);

/// True for OpLine/OpNoLine and the per-instruction debug instructions that parse() attaches.
bool is_annotation(const Instruction& i);
/// True for the annotations a moved or merged instruction may keep: lines and debug scopes (they
/// refer to module-level ids only), not DebugValue/DebugDeclare (they refer to local values).
bool is_line_or_scope(const Instruction& i);

/// zex_state_t as a kernel parameter's type: a struct of three 64-bit integers, by value, or (as
/// llvm-spirv writes a by-value aggregate) a Function-storage pointer to one. `def(id)` gives the
/// instruction defining id, or null (a definition map, an IRContext).
template <class Def>
bool is_zex_state_type(const Def& def, uint32_t type) {
  const Instruction* t = def(type);
  if (t && t->opcode == spv::OpTypePointer && t->word(2) == spv::StorageClassFunction) t = def(t->word(3));
  if (!t || t->opcode != spv::OpTypeStruct || t->size() != 5) return false;
  for (size_t k = 2; k < 5; ++k) {
    const Instruction* m = def(t->word(k));
    if (!m || m->opcode != spv::OpTypeInt || m->word(2) != 64) return false;
  }
  return true;
}

/// Block terminators (OpBranch, OpBranchConditional, OpSwitch, OpReturn[Value], OpUnreachable, OpKill).
bool is_terminator(uint16_t opcode);
/// The labels a terminator branches to (none for returns).
std::vector<uint32_t> branch_targets(const Instruction& terminator);
/// Points every branch of `terminator` to label `from` at `to` instead.
void retarget(Instruction& terminator, uint32_t from, uint32_t to);

/// A basic block copied out of a function body: its OpLabel, then its instructions (terminator last).
struct Block {
  Instruction label;
  std::vector<Instruction> insts;
  uint32_t id() const { return label.result_id; }
};
/// The blocks of a function body, the instructions [begin, end) between OpFunction and OpFunctionEnd;
/// what comes before the first OpLabel (the OpFunctionParameters) goes to *head.
std::vector<Block> split_blocks(const Instruction* begin, const Instruction* end, std::vector<Instruction>* head);
/// True when every block ends in a terminator.
bool blocks_terminated(const std::vector<Block>& blocks);
/// Each block's predecessors: label -> the labels whose terminators branch to it, in block order.
std::map<uint32_t, std::vector<uint32_t>> predecessors(const std::vector<Block>& blocks);
/// Grows `throwing`, the labels of the blocks that call a zex throw entry point, to every block but
/// the entry whose predecessors all throw: the blocks after a throw's claim (the three-call protocol).
/// number_throw_paths and converge_throws_at_barriers must agree on which blocks throw, so both use it.
void close_throwing(const std::vector<Block>& blocks, const std::map<uint32_t, std::vector<uint32_t>>& preds,
                    std::set<uint32_t>& throwing);

/// The SPIR-V version's validator environment (SPV_ENV_UNIVERSAL_1_x for the header's version).
spv_target_env target_env(const std::vector<uint32_t>& words);

// ---------------------------------------------------------------------------------------------------

template <class Map>
void Instruction::replace_ids(const Map& map) {
  for (const Operand& o : operands) {
    if (!is_id_use(o.type)) continue;
    auto it = map.find(words[o.offset]);
    if (it == map.end()) continue;
    words[o.offset] = it->second;
    if (o.type == SPV_OPERAND_TYPE_TYPE_ID) type_id = it->second;  // the result type: the field follows
  }
  for (Instruction& a : annotations) a.replace_ids(map);
}

}  // namespace passes
}  // namespace zex
