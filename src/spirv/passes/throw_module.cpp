// number_throw_paths, the module-level rewrite (throw_paths.hpp): the new types and constants (each
// found in the module first), the flagged function types and return types, the zex_throw_site
// declaration, and the module written back with the rewritten functions (throw_rewrite.cpp).
#include "spirv/passes/throw_paths.hpp"

#include <algorithm>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>

namespace zex {
namespace passes {
namespace throw_paths {

namespace {
bool same(const Instruction& a, const Instruction& b) {
  return a.words == b.words && std::equal(a.annotations.begin(), a.annotations.end(), b.annotations.begin(),
                                          b.annotations.end(), same);
}
}  // namespace

// find_type and find_constant look up found_, an index of the types and constants before the first
// function built at the first call, to which the new ones are added: a module of thousands of kernels
// asks thousands of times (a constant per site id), and the answer is the first such instruction in
// the module, else the one made.
uint32_t Rewriter::find_type(uint16_t opcode, const std::vector<uint32_t>& operands) {
  std::vector<uint32_t> key{0, opcode};
  key.insert(key.end(), operands.begin(), operands.end());
  if (const uint32_t id = found(key)) return id;
  Instruction t;
  t.opcode = opcode;
  t.result_id = fresh();
  t.words = {0, t.result_id};
  t.words.insert(t.words.end(), operands.begin(), operands.end());
  t.operands.push_back({SPV_OPERAND_TYPE_RESULT_ID, 1, 1});
  for (size_t k = 2; k < t.words.size(); ++k)
    t.operands.push_back({opcode == spv::OpTypeInt ? static_cast<uint32_t>(SPV_OPERAND_TYPE_LITERAL_INTEGER)
                                                 : static_cast<uint32_t>(SPV_OPERAND_TYPE_ID),
                          static_cast<uint16_t>(k), 1});
  t.fix_word_count();
  globals_.push_back(t);
  return found_[key] = t.result_id;
}
uint32_t Rewriter::find_constant(uint16_t opcode, uint32_t type, const std::vector<uint32_t>& literals, bool ids) {
  std::vector<uint32_t> key{1, opcode, type};
  key.insert(key.end(), literals.begin(), literals.end());
  if (const uint32_t id = found(key)) return id;
  Instruction c = make_instruction(opcode, type, fresh(), ids ? literals : std::vector<uint32_t>{});
  if (!ids)
    for (uint32_t w : literals) add_operand(c, w, SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER);
  globals_.push_back(c);
  return found_[key] = c.result_id;
}
// The id of a type (0, opcode, operands) or constant (1, opcode, type, operands), 0 if none.
uint32_t Rewriter::found(const std::vector<uint32_t>& key) {
  if (!indexed_) {
    indexed_ = true;
    for (const Instruction& i : m_.insts) {
      if (i.opcode == spv::OpFunction) break;
      if (!i.result_id) continue;
      std::vector<uint32_t> k{i.type_id ? 1u : 0u, i.opcode};
      if (i.type_id) k.push_back(i.type_id);
      k.insert(k.end(), i.words.begin() + (i.type_id ? 3 : 2), i.words.end());
      found_.emplace(std::move(k), i.result_id);
    }
  }
  auto it = found_.find(key);
  return it == found_.end() ? 0 : it->second;
}

const Rewriter::Flagged& Rewriter::flagged(uint32_t ret) {
  auto f = flagged_.find(ret);
  if (f != flagged_.end()) return f->second;
  Flagged r;
  const Instruction* t = ctx_.def(ret);
  if (t && t->opcode == spv::OpTypeVoid) {
    r.type = bool_type();
    r.thrown = bool_constant(true);
    r.not_thrown = bool_constant(false);
  } else {
    r.wrapped = true;
    r.type = find_type(spv::OpTypeStruct, {ret, bool_type()});
    const uint32_t null = 0;
    // Built where it is returned, by OpCompositeInsert into the null {ret, false}: llvm-spirv-15's
    // reverse translation (zex-cpu's front end) takes OpCompositeConstruct of a struct and
    // OpConstantComposite with a bool member for constants and crashes on them.
    (void)null;
    r.null_value = find_constant(spv::OpConstantNull, r.type, {}, true);
    r.thrown = 0;
  }
  return flagged_[ret] = r;
}

bool Rewriter::run() {
  // New function types for the functions that may throw (and the hidden base parameter).
  std::map<uint32_t, uint32_t> ret_of;  // function -> original return type
  for (Function& f : g_.fns) ret_of[f.id] = m_.insts[f.first].type_id;
  for (Function& f : g_.fns) {
    if (!f.may_throw) continue;
    const Instruction& fi = m_.insts[f.first];
    const Instruction* ft = ctx_.def(fi.word(4));
    size_t params = 0;
    for (const Instruction& p : f.head) params += p.opcode == spv::OpFunctionParameter;
    if (!ft || ft->opcode != spv::OpTypeFunction || ft->size() != 3 + params || ft->word(2) != fi.type_id)
      throw std::invalid_argument("number_throw_paths: function %" + std::to_string(f.id) + " does not match its type");
    std::vector<uint32_t> ops(ft->words.begin() + 2, ft->words.end());
    ops[0] = flagged(fi.type_id).type;
    if (f.hidden) ops.push_back(uint_type());
    new_fn_type_[f.id] = find_type(spv::OpTypeFunction, ops);
    if (f.hidden) {
      f.base_param = fresh();
      Instruction p = make_instruction(spv::OpFunctionParameter, uint_type(), f.base_param, {});
      f.head.push_back(p);
    }
  }
  if (n_.numbered) declare_throw_site();
  for (Function& f : g_.fns)
    if (f.may_throw || f.throws) rewrite_function(f, ret_of);

  // A struct returned by `sret` pointer (clang's way for every struct return on SPIR) leaves a void
  // function whose pointer parameter says `FuncParamAttr Sret`; returning the flag, it no longer
  // returns void, and LLVM (llvm-spirv's reverse translation: zex-cpu's, Intel's front end) refuses
  // an sret parameter on a non-void function ("Invalid struct return type!"). The pointer stays an
  // ordinary one: nothing reads the attribute but the calling convention it no longer has.
  std::set<uint32_t> sret_params;
  for (const Function& f : g_.fns)
    if (f.may_throw)
      for (const Instruction& p : f.head)
        if (p.opcode == spv::OpFunctionParameter) sret_params.insert(p.result_id);
  auto is_sret = [&](const Instruction& d) {
    return d.opcode == spv::OpDecorate && d.size() == 4 && d.word(2) == spv::DecorationFuncParamAttr &&
           d.word(3) == spv::FunctionParameterAttributeSret && sret_params.count(d.word(1));
  };

  // Write back: function headers, bodies, new globals before the first function.
  Insts out;
  out.reserve(m_.insts.size() + globals_.size() + throw_site_decl_.size() + 64);
  size_t fi = 0;
  bool placed = false;
  for (size_t k = 0; k < m_.insts.size(); ++k) {
    Instruction i = m_.insts[k];
    if (is_sret(i)) continue;
    if (i.opcode == spv::OpFunction && !placed) {
      out.insert(out.end(), globals_.begin(), globals_.end());
      placed = true;
    }
    if (i.opcode == spv::OpFunction && throw_site_decl_.size() && i.result_id == throw_decl_after_) {
      // zex_throw_site's declaration goes right after zex_throw's (declarations precede definitions).
      out.push_back(i);
      size_t j = k + 1;
      for (; j < m_.insts.size() && m_.insts[j].opcode != spv::OpFunctionEnd; ++j) out.push_back(m_.insts[j]);
      out.push_back(m_.insts[j]);
      out.insert(out.end(), throw_site_decl_.begin(), throw_site_decl_.end());
      k = j;
      continue;
    }
    if (fi < g_.fns.size() && k == g_.fns[fi].first) {
      Function& f = g_.fns[fi++];
      auto nt = new_fn_type_.find(f.id);
      if (nt != new_fn_type_.end()) {
        i.words[1] = i.type_id = flagged(i.type_id).type;
        i.words[4] = nt->second;
      }
      out.push_back(std::move(i));
      // The functions were copied out of the module and are written once: moved, not copied.
      out.insert(out.end(), std::make_move_iterator(f.head.begin()), std::make_move_iterator(f.head.end()));
      for (Block& b : f.blocks) {
        out.push_back(std::move(b.label));
        out.insert(out.end(), std::make_move_iterator(b.insts.begin()), std::make_move_iterator(b.insts.end()));
      }
      out.push_back(m_.insts[f.last]);
      k = f.last;
      continue;
    }
    out.push_back(std::move(i));
  }
  if (!throw_site_name_.empty()) {
    // OpName and the Import linkage of zex_throw_site, next to zex_throw's.
    Insts named;
    named.reserve(out.size() + 1);
    for (Instruction& i : out) {
      const bool linkage = i.opcode == spv::OpDecorate && i.word(1) == throw_decl_after_ && i.size() >= 5 && i.words[2] == spv::DecorationLinkageAttributes;
      Instruction d = linkage ? i : Instruction{};
      named.push_back(std::move(i));
      if (linkage) {
        d.words.resize(3);
        d.operands.clear();
        d.operands.push_back({SPV_OPERAND_TYPE_ID, 1, 1});
        d.operands.push_back({SPV_OPERAND_TYPE_DECORATION, 2, 1});
        const std::string s = throw_site_name_;
        const size_t at = d.words.size();
        for (size_t k = 0; k <= s.size(); k += 4) {
          uint32_t w = 0;
          for (size_t b = 0; b < 4 && k + b < s.size(); ++b) w |= static_cast<uint32_t>(static_cast<unsigned char>(s[k + b])) << (8 * b);
          d.words.push_back(w);
        }
        d.operands.push_back({SPV_OPERAND_TYPE_LITERAL_STRING, static_cast<uint16_t>(at),
                              static_cast<uint16_t>(d.words.size() - at)});
        d.words.push_back(spv::LinkageTypeImport);
        d.operands.push_back({SPV_OPERAND_TYPE_LINKAGE_TYPE, static_cast<uint16_t>(d.words.size() - 1), 1});
        d.words[1] = throw_site_fn_;
        d.fix_word_count();
        d.annotations.clear();
        named.push_back(d);
      }
    }
    out = std::move(named);
  }
  if (!decorations_.empty()) {
    // After the last decoration (or the last debug name, or before the first type if neither).
    size_t at = 0;
    for (size_t k = 0; k < out.size(); ++k) {
      const uint16_t o = out[k].opcode;
      if (o == spv::OpDecorate || o == spv::OpMemberDecorate || o == spv::OpDecorateId || o == spv::OpDecorateString ||
          o == spv::OpName || o == spv::OpEntryPoint || o == spv::OpExecutionMode || o == spv::OpExecutionModeId ||
          o == spv::OpDecorationGroup || o == spv::OpGroupDecorate || o == spv::OpGroupMemberDecorate || o == spv::OpString || o == spv::OpSource ||
          o == spv::OpExtInstImport || o == spv::OpMemoryModel || o == spv::OpCapability || o == spv::OpExtension ||
          o == spv::OpMemberName || o == spv::OpModuleProcessed)
        at = k + 1;
      if (o == spv::OpFunction) break;
    }
    out.insert(out.begin() + static_cast<std::ptrdiff_t>(at), decorations_.begin(), decorations_.end());
  }
  // Changed if a word of the module changed (the analyses stay valid otherwise): compared instruction
  // by instruction, which is comparing the words, without writing them.
  const bool changed = next_ != m_.header[3] || !std::equal(out.begin(), out.end(), m_.insts.begin(), m_.insts.end(), same);
  m_.insts = std::move(out);
  m_.header[3] = next_;
  return changed;
}


void Rewriter::declare_throw_site() {
  uint32_t zt = 0;
  for (auto& [id, name] : g_.throw_entry)
    if (name == "zex_throw_site") throw_site_fn_ = id;
    else if (name == "zex_throw") zt = id;
  if (throw_site_fn_ || !zt) return;  // the module declares it already (a compiler calling it)
  const Instruction* zf = ctx_.def(zt);
  if (!zf) return;
  std::vector<uint32_t> ptypes;
  for (size_t k = ctx_.def_index(zt) + 1; k < m_.insts.size() && m_.insts[k].opcode == spv::OpFunctionParameter; ++k)
    ptypes.push_back(m_.insts[k].type_id);
  if (ptypes.size() != 10) return;
  // zex_throw_site(zex, site, a, b): the state as zex_throw takes it, uint, ulong, ulong.
  const uint32_t ft = find_type(spv::OpTypeFunction, {zf->type_id, ptypes[0], ptypes[3], ptypes[5], ptypes[6]});
  throw_site_fn_ = fresh();
  throw_decl_after_ = zt;
  throw_site_name_ = "zex_throw_site";
  Instruction fn = m_.insts[ctx_.def_index(zt)];
  fn.annotations.clear();
  fn.words[2] = fn.result_id = throw_site_fn_;
  fn.words[4] = ft;
  throw_site_decl_.push_back(fn);
  for (uint32_t t : {ptypes[0], ptypes[3], ptypes[5], ptypes[6]})
    throw_site_decl_.push_back(make_instruction(spv::OpFunctionParameter, t, fresh(), {}));
  throw_site_decl_.push_back(make_instruction(spv::OpFunctionEnd, 0, 0, {}));
}


}  // namespace throw_paths
}  // namespace passes
}  // namespace zex
