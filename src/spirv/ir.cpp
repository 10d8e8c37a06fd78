// parse() and to_words(): SPIR-V words <-> zex::passes::Module (ir.hpp).
#include "spirv/ir.hpp"

// The debug instructions numbered alike in OpenCL.DebugInfo.100 and NonSemantic.Shader.DebugInfo.100.
#include <spirv/unified1/NonSemanticShaderDebugInfo100.h>

#include <zex/error.hpp>

#include <map>
#include <stdexcept>
#include <string>

namespace zex {
namespace passes {

namespace {

bool is_debug_set(const std::string& name) {
  return name == "OpenCL.DebugInfo.100" || name == "DebugInfo" || name.rfind("NonSemantic.", 0) == 0;
}

struct ParseState {
  Module m;
  std::map<uint32_t, bool> debug_sets;  // OpExtInstImport id -> a debug-information set
  std::vector<Instruction> pending;     // annotations waiting for their instruction
};

spv_result_t on_header(void* user, spv_endianness_t, uint32_t magic, uint32_t version, uint32_t generator,
                       uint32_t bound, uint32_t schema) {
  auto* st = static_cast<ParseState*>(user);
  st->m.header[0] = magic;
  st->m.header[1] = version;
  st->m.header[2] = generator;
  st->m.header[3] = bound;
  st->m.header[4] = schema;
  return SPV_SUCCESS;
}

spv_result_t on_instruction(void* user, const spv_parsed_instruction_t* in) {
  auto* st = static_cast<ParseState*>(user);
  Instruction i;
  i.opcode = in->opcode;
  i.type_id = in->type_id;
  i.result_id = in->result_id;
  i.words.assign(in->words, in->words + in->num_words);
  i.operands.reserve(in->num_operands);
  for (uint16_t k = 0; k < in->num_operands; ++k)
    i.operands.push_back({static_cast<uint32_t>(in->operands[k].type), in->operands[k].offset,
                          in->operands[k].num_words});
  if (i.opcode == spv::OpExtInstImport && i.words.size() >= 3) i.debug = st->debug_sets[i.result_id] = is_debug_set(i.string_at(2));
  if (i.opcode == spv::OpExtInst && i.words.size() >= 5) {
    auto s = st->debug_sets.find(i.words[3]);
    i.debug = s != st->debug_sets.end() && s->second;
  }
  if (is_annotation(i)) {
    st->pending.push_back(std::move(i));
    return SPV_SUCCESS;
  }
  i.annotations = std::move(st->pending);
  st->pending.clear();
  st->m.insts.push_back(std::move(i));
  return SPV_SUCCESS;
}

void append(std::vector<uint32_t>& out, const Instruction& i) {
  for (const Instruction& a : i.annotations) append(out, a);
  out.insert(out.end(), i.words.begin(), i.words.end());
}

}  // namespace

std::vector<uint32_t> Instruction::used_ids() const {
  std::vector<uint32_t> ids;
  for (const Operand& o : operands)
    if (is_id_use(o.type) && o.offset < words.size()) ids.push_back(words[o.offset]);
  return ids;
}

std::string Instruction::string_at(size_t offset) const {
  std::string s;
  for (size_t k = offset; k < words.size(); ++k)
    for (int b = 0; b < 4; ++b) {
      const char c = static_cast<char>((words[k] >> (8 * b)) & 0xFFu);
      if (c == '\0') return s;
      s.push_back(c);
    }
  return s;
}

void add_operand(Instruction& i, uint32_t word, spv_operand_type_t type) {
  i.operands.push_back({static_cast<uint32_t>(type), static_cast<uint16_t>(i.words.size()), 1});
  i.words.push_back(word);
  i.fix_word_count();
}

void add_string_operand(Instruction& i, const std::string& s) {
  const size_t at = i.words.size();
  for (size_t k = 0; k <= s.size(); k += 4) {
    uint32_t w = 0;
    for (size_t b = 0; b < 4 && k + b < s.size(); ++b) w |= static_cast<uint32_t>(static_cast<unsigned char>(s[k + b])) << (8 * b);
    i.words.push_back(w);
  }
  i.operands.push_back({SPV_OPERAND_TYPE_LITERAL_STRING, static_cast<uint16_t>(at), static_cast<uint16_t>(i.words.size() - at)});
  i.fix_word_count();
}

Instruction make_instruction(uint16_t opcode, uint32_t type, uint32_t result, const std::vector<uint32_t>& ids) {
  Instruction i;
  i.opcode = opcode;
  i.type_id = type;
  i.result_id = result;
  i.words.push_back(0);
  auto add = [&](uint32_t w, spv_operand_type_t t) { add_operand(i, w, t); };
  if (type) add(type, SPV_OPERAND_TYPE_TYPE_ID);
  if (result) add(result, SPV_OPERAND_TYPE_RESULT_ID);
  for (uint32_t id : ids) add(id, SPV_OPERAND_TYPE_ID);
  i.fix_word_count();
  return i;
}

Instruction make_name(uint32_t target, const std::string& name) {
  Instruction i;
  i.opcode = spv::OpName;
  i.words = {0, target};
  i.operands = {{SPV_OPERAND_TYPE_ID, 1, 1}};
  // A literal string: its bytes, little-endian in each word, then at least one NUL.
  for (size_t w = 0; w <= name.size() / 4; ++w) {
    uint32_t word = 0;
    for (size_t b = 0; b < 4 && 4 * w + b < name.size(); ++b) word |= uint32_t(uint8_t(name[4 * w + b])) << (8 * b);
    i.words.push_back(word);
  }
  i.operands.push_back({SPV_OPERAND_TYPE_LITERAL_STRING, 2, static_cast<uint16_t>(i.words.size() - 2)});
  i.fix_word_count();
  return i;
}

bool is_annotation(const Instruction& i) {
  if (i.opcode == spv::OpLine || i.opcode == spv::OpNoLine) return true;
  if (i.opcode != spv::OpExtInst || !i.debug) return false;
  const uint32_t n = i.word(4);
  return n == NonSemanticShaderDebugInfo100DebugScope || n == NonSemanticShaderDebugInfo100DebugNoScope || n == NonSemanticShaderDebugInfo100DebugDeclare || n == NonSemanticShaderDebugInfo100DebugValue || n == NonSemanticShaderDebugInfo100DebugLine ||
         n == NonSemanticShaderDebugInfo100DebugNoLine;
}

bool is_line_or_scope(const Instruction& i) {
  if (i.opcode == spv::OpLine || i.opcode == spv::OpNoLine) return true;
  if (i.opcode != spv::OpExtInst || !i.debug) return false;
  const uint32_t n = i.word(4);
  return n == NonSemanticShaderDebugInfo100DebugScope || n == NonSemanticShaderDebugInfo100DebugNoScope || n == NonSemanticShaderDebugInfo100DebugLine || n == NonSemanticShaderDebugInfo100DebugNoLine;
}

bool is_terminator(uint16_t o) {
  return o == spv::OpBranch || o == spv::OpBranchConditional || o == spv::OpSwitch || o == spv::OpReturn ||
         o == spv::OpReturnValue || o == spv::OpUnreachable || o == spv::OpKill;
}

std::vector<uint32_t> branch_targets(const Instruction& t) {
  switch (t.opcode) {
    case spv::OpBranch: return {t.word(1)};
    case spv::OpBranchConditional: return {t.word(2), t.word(3)};
    case spv::OpSwitch: {
      std::vector<uint32_t> r{t.word(2)};
      for (size_t k = 4; k < t.size(); k += 2) r.push_back(t.word(k));
      return r;
    }
    default: return {};
  }
}

void retarget(Instruction& t, uint32_t from, uint32_t to) {
  std::vector<size_t> at;
  if (t.opcode == spv::OpBranch) at = {1};
  if (t.opcode == spv::OpBranchConditional) at = {2, 3};
  if (t.opcode == spv::OpSwitch) {
    at = {2};
    for (size_t k = 4; k < t.size(); k += 2) at.push_back(k);
  }
  for (size_t k : at)
    if (k < t.size() && t.words[k] == from) t.words[k] = to;
}

std::vector<Block> split_blocks(const Instruction* begin, const Instruction* end, std::vector<Instruction>* head) {
  std::vector<Block> blocks;
  for (const Instruction* i = begin; i != end; ++i) {
    if (i->opcode == spv::OpLabel)
      blocks.push_back({*i, {}});
    else if (blocks.empty())
      head->push_back(*i);
    else
      blocks.back().insts.push_back(*i);
  }
  return blocks;
}

bool blocks_terminated(const std::vector<Block>& blocks) {
  for (const Block& b : blocks)
    if (b.insts.empty() || !is_terminator(b.insts.back().opcode)) return false;
  return true;
}

std::map<uint32_t, std::vector<uint32_t>> predecessors(const std::vector<Block>& blocks) {
  std::map<uint32_t, std::vector<uint32_t>> preds;
  for (const Block& b : blocks)
    if (!b.insts.empty() && is_terminator(b.insts.back().opcode))
      for (uint32_t t : branch_targets(b.insts.back())) preds[t].push_back(b.id());
  return preds;
}

void close_throwing(const std::vector<Block>& blocks, const std::map<uint32_t, std::vector<uint32_t>>& preds,
                    std::set<uint32_t>& throwing) {
  if (blocks.empty()) return;
  for (bool changed = true; changed;) {
    changed = false;
    for (const Block& b : blocks) {
      if (throwing.count(b.id()) || b.id() == blocks[0].id()) continue;
      auto p = preds.find(b.id());
      if (p == preds.end() || p->second.empty()) continue;
      bool all = true;
      for (uint32_t x : p->second) all = all && throwing.count(x) > 0;
      if (all) {
        throwing.insert(b.id());
        changed = true;
      }
    }
  }
}

spv_target_env target_env(const std::vector<uint32_t>& words) {
  const uint32_t minor = words.size() > 1 ? (words[1] >> 8) & 0xffu : 0;
  switch (minor) {
    case 0: return SPV_ENV_UNIVERSAL_1_0;
    case 1: return SPV_ENV_UNIVERSAL_1_1;
    case 2: return SPV_ENV_UNIVERSAL_1_2;
    case 3: return SPV_ENV_UNIVERSAL_1_3;
    case 4: return SPV_ENV_UNIVERSAL_1_4;
    case 5: return SPV_ENV_UNIVERSAL_1_5;
    default: return SPV_ENV_UNIVERSAL_1_6;
  }
}

Module parse(const std::vector<uint32_t>& words) {
  if (words.size() < 5) throw zex::InvalidArgument("not a SPIR-V module: shorter than its 5-word header");
  ParseState st;
  st.m.insts.reserve(words.size() / 5);  // llvm-spirv averages 4-6 words an instruction
  spv_context ctx = spvContextCreate(target_env(words));
  spv_diagnostic diag = nullptr;
  const spv_result_t r = spvBinaryParse(ctx, &st, words.data(), words.size(), on_header, on_instruction, &diag);
  std::string msg = diag && diag->error ? diag->error : "";
  spvDiagnosticDestroy(diag);
  spvContextDestroy(ctx);
  if (r != SPV_SUCCESS)
    throw zex::InvalidArgument("malformed SPIR-V module" + (msg.empty() ? std::string() : ": " + msg));
  st.m.trailing = std::move(st.pending);
  return std::move(st.m);
}

std::vector<uint32_t> to_words(const Module& m) {
  std::vector<uint32_t> out(m.header, m.header + 5);
  for (const Instruction& i : m.insts) append(out, i);
  for (const Instruction& a : m.trailing) append(out, a);
  return out;
}

}  // namespace passes
}  // namespace zex
