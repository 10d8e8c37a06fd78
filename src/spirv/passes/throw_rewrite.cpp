// number_throw_paths, the rewrite of one function (throw_paths.hpp): which blocks throw, their exits
// to the "thrown" return, flagged returns, zex_throw -> zex_throw_site with the path's id, and the
// flag check after every call to a function that may throw.
#include "spirv/passes/throw_paths.hpp"

#include <spirv/unified1/OpenCLDebugInfo100.h>

#include <zex/abi.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

namespace zex {
namespace passes {
namespace throw_paths {

// The flag check and the zex_throw_site calls, in one function.
void Rewriter::rewrite_function(Function& f, const std::map<uint32_t, uint32_t>& ret_of) {
  const bool helper = f.may_throw;
  const uint32_t ret = m_.insts[f.first].type_id;
  const Flagged* fl = helper ? &flagged(ret) : nullptr;

  // Which blocks throw: they call a throw entry point, or every path into them comes from one that
  // does (the three-call protocol's blocks after the claim).
  std::map<uint32_t, size_t> at;
  for (size_t b = 0; b < f.blocks.size(); ++b) at[f.blocks[b].id()] = b;
  std::map<uint32_t, std::vector<uint32_t>> preds = predecessors(f.blocks);
  std::set<uint32_t> throwing;
  for (const Call& c : f.calls)
    if (g_.throw_entry.count(c.callee)) throwing.insert(f.blocks[c.block].id());
  close_throwing(f.blocks, preds, throwing);
  uint32_t thrown_block = 0;
  auto thrown_exit = [&]() {
    if (!thrown_block) thrown_block = fresh();
    return thrown_block;
  };
  auto pure_return = [&](uint32_t label) {
    auto k = at.find(label);
    if (k == at.end()) return false;
    for (const Instruction& i : f.blocks[k->second].insts)
      if (i.opcode != spv::OpPhi && i.opcode != spv::OpReturn) return false;
    return true;
  };
  auto drop_phi_edge = [&](uint32_t block, uint32_t pred) {
    auto k = at.find(block);
    if (k == at.end()) return;
    for (Instruction& i : f.blocks[k->second].insts) {
      if (i.opcode != spv::OpPhi) break;
      std::vector<uint32_t> keep;
      for (size_t w = 3; w + 1 < i.size(); w += 2)
        if (i.words[w + 1] != pred) keep.insert(keep.end(), {i.words[w], i.words[w + 1]});
      Instruction n = make_instruction(spv::OpPhi, i.type_id, i.result_id, keep);
      n.annotations = std::move(i.annotations);
      i = std::move(n);
    }
  };
  for (Block& b : f.blocks) {
    Instruction& t = b.insts.back();
    if (throwing.count(b.id())) {
      if (helper && (t.opcode == spv::OpReturn || t.opcode == spv::OpReturnValue)) {
        Instruction r = make_instruction(spv::OpReturnValue, 0, 0, {thrown_value(*fl, b.insts)});
        r.annotations = b.insts.back().annotations;
        b.insts.back() = std::move(r);
        continue;
      }
      for (uint32_t s : branch_targets(t)) {
        if (throwing.count(s)) continue;
        if (!helper && pure_return(s)) continue;
        retarget(t, s, thrown_exit());
        drop_phi_edge(s, b.id());
      }
    } else if (helper && t.opcode == spv::OpReturn) {
      Instruction r = make_instruction(spv::OpReturnValue, 0, 0, {fl->not_thrown});
      r.annotations = t.annotations;
      t = std::move(r);
    } else if (helper && t.opcode == spv::OpReturnValue) {
      const uint32_t s = fresh();
      Instruction c = make_instruction(spv::OpCompositeInsert, fl->type, s, {t.word(1), fl->null_value});
      add_operand(c, 0, SPV_OPERAND_TYPE_LITERAL_INTEGER);
      b.insts.insert(b.insts.end() - 1, std::move(c));
      Instruction r = make_instruction(spv::OpReturnValue, 0, 0, {s});
      r.annotations = b.insts.back().annotations;
      b.insts.back() = std::move(r);
    }
  }

  // zex_throw -> zex_throw_site with the path's id; calls to functions that may throw get their
  // base and the flag check. Calls are visited last to first, so that positions stay valid.
  std::map<size_t, uint64_t> offset_of;  // call index -> offset
  auto items = n_.items.find(f.id);
  if (items != n_.items.end())
    for (const Item& it : items->second) offset_of[it.call] = it.offset;
  auto base_plus = [&](uint64_t offset, Insts& before) -> uint32_t {
    if (!f.hidden) return site_id(static_cast<uint32_t>(f.base + offset), before);
    if (offset == 0) return f.base_param;
    const uint32_t s = fresh();
    before.push_back(make_instruction(spv::OpIAdd, uint_type(), s, {uint_constant(static_cast<uint32_t>(offset)), f.base_param}));
    return s;
  };
  // `rest` (the instructions that followed a call in `block`) becomes a block of its own, right
  // after it (blocks keep dominance order); its successors' OpPhis now name it.
  auto place_rest = [&](size_t block, Block&& rest) {
    const uint32_t from = f.blocks[block].id();
    for (uint32_t s : branch_targets(rest.insts.back())) {
      auto k = std::find_if(f.blocks.begin(), f.blocks.end(), [&](const Block& x) { return x.id() == s; });
      if (k == f.blocks.end()) continue;
      for (Instruction& p : k->insts) {
        if (p.opcode != spv::OpPhi) break;
        for (size_t w = 4; w < p.size(); w += 2)
          if (p.words[w] == from) p.words[w] = rest.id();
      }
    }
    f.blocks.insert(f.blocks.begin() + static_cast<std::ptrdiff_t>(block) + 1, std::move(rest));
  };
  std::map<uint32_t, Insts> new_phis;  // block -> OpPhis to add at its top
  for (size_t c = f.calls.size(); c-- > 0;) {
    const Call& call = f.calls[c];
    // The call that completes a throw ends the work-item, also where its block goes on: clang -O2
    // threads a second check of the same condition into the first's cold block (zex_throw, the code
    // between the checks, zex_throw again). What follows moves to a block nothing reaches.
    if (g_.completes_throw(call.callee) && call.index + 2 < f.blocks[call.block].insts.size()) {
      Block& b = f.blocks[call.block];
      Block rest{make_instruction(spv::OpLabel, 0, fresh(), {}), {}};
      rest.insts.assign(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index) + 1, b.insts.end());
      b.insts.erase(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index) + 1, b.insts.end());
      b.insts.push_back(make_instruction(spv::OpBranch, 0, 0, {thrown_exit()}));
      place_rest(call.block, std::move(rest));
    }
    Block& b = f.blocks[call.block];
    Instruction& i = b.insts[call.index];
    auto sites = n_.site_info.find({f.id, c});
    if (sites != n_.site_info.end() && throw_site_fn_ && (f.reach == 1 || f.hidden)) {
      Insts before;
      const Sites& si = sites->second;
      uint32_t id;
      if (si.site_of.size() < 2) {
        id = base_plus(offset_of.at(c), before);
      } else {
        // The id of each choice's site (the constant the varying operand of the add takes), chosen
        // as the call's strings and line were: an OpPhi at the top of the block, or an OpSelect.
        auto offset = [&](size_t k) {
          const uint64_t o = offset_of.at(c) + si.site_of[k];
          return uint_constant(static_cast<uint32_t>(f.hidden ? o : f.base + o));
        };
        const uint32_t chosen = fresh();
        if (si.cond) {
          before.push_back(make_instruction(spv::OpSelect, uint_type(), chosen, {si.cond, offset(0), offset(1)}));
        } else {
          std::vector<uint32_t> ops;
          for (size_t k = 0; k < si.preds.size(); ++k) ops.insert(ops.end(), {offset(k), si.preds[k]});
          new_phis[b.id()].push_back(make_instruction(spv::OpPhi, uint_type(), chosen, ops));
        }
        id = fresh();
        before.push_back(make_instruction(spv::OpIAdd, uint_type(), id, {chosen, f.hidden ? f.base_param : site_base()}));
      }
      Instruction n = make_instruction(spv::OpFunctionCall, i.type_id, i.result_id,
                                       {throw_site_fn_, i.word(4), id, i.word(9), i.word(10)});
      n.annotations = std::move(i.annotations);
      i = std::move(n);
      b.insts.insert(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index), before.begin(), before.end());
      continue;
    }
    auto g = g_.fn_index.find(call.callee);
    if (g == g_.fn_index.end()) continue;
    Function& callee = g_.fns[g->second];
    if (!callee.may_throw) continue;
    if (i.type_id != ret_of.at(callee.id))
      throw std::invalid_argument("number_throw_paths: call %" + std::to_string(i.result_id) + " has the wrong type");
    const Flagged& cf = flagged(ret_of.at(callee.id));
    Insts before, after;
    if (callee.hidden) {
      auto o = offset_of.find(c);
      const uint32_t base = o != offset_of.end() && (f.hidden || f.reach == 1) ? base_plus(o->second, before) : uint_constant(0);
      add_operand(i, base, SPV_OPERAND_TYPE_ID);
    }
    uint32_t flag;
    if (cf.wrapped) {
      const uint32_t value = i.result_id, whole = fresh();
      i.words[2] = i.result_id = whole;
      i.words[1] = i.type_id = cf.type;
      after.push_back(make_instruction(spv::OpCompositeExtract, ret_of.at(callee.id), value, {whole}));
      add_operand(after.back(), 0, SPV_OPERAND_TYPE_LITERAL_INTEGER);
      flag = fresh();
      after.push_back(make_instruction(spv::OpCompositeExtract, bool_type(), flag, {whole}));
      add_operand(after.back(), 1, SPV_OPERAND_TYPE_LITERAL_INTEGER);
    } else {
      i.words[1] = i.type_id = cf.type;
      flag = i.result_id;
    }
    if (throwing.count(b.id())) {
      // A call made on the way out of a throw: the work-item leaves anyway.
      b.insts.insert(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index) + 1, after.begin(), after.end());
      b.insts.insert(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index), before.begin(), before.end());
      continue;
    }
    // Split after the call: [.. call, extracts, branch flag ? thrown : rest], [rest].
    Block rest{make_instruction(spv::OpLabel, 0, fresh(), {}), {}};
    rest.insts.assign(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index) + 1, b.insts.end());
    b.insts.erase(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index) + 1, b.insts.end());
    b.insts.insert(b.insts.end(), after.begin(), after.end());
    Instruction br = make_instruction(spv::OpBranchConditional, 0, 0, {flag, thrown_exit(), rest.id()});
    add_operand(br, 1, SPV_OPERAND_TYPE_LITERAL_INTEGER);     // branch weights: the throw is cold
    add_operand(br, 1000, SPV_OPERAND_TYPE_LITERAL_INTEGER);
    b.insts.push_back(br);
    b.insts.insert(b.insts.begin() + static_cast<std::ptrdiff_t>(call.index), before.begin(), before.end());
    // The rest keeps the call's scope and line (they end with the block).
    if (!rest.insts.empty() && call.loc.scope && g_.debug_set) {
      bool own = false;
      for (const Instruction& a : rest.insts[0].annotations) own = own || a.opcode == spv::OpExtInst;
      if (!own) {
        Instruction s = make_instruction(spv::OpExtInst, 0, fresh(), {});
        s.words = {0, void_type(), s.result_id, g_.debug_set, OpenCLDebugInfo100DebugScope, call.loc.scope};
        if (call.loc.inlined) s.words.push_back(call.loc.inlined);
        s.type_id = void_type();
        s.operands = {{SPV_OPERAND_TYPE_TYPE_ID, 1, 1}, {SPV_OPERAND_TYPE_RESULT_ID, 2, 1}, {SPV_OPERAND_TYPE_ID, 3, 1},
                      {SPV_OPERAND_TYPE_EXTENSION_INSTRUCTION_NUMBER, 4, 1}, {SPV_OPERAND_TYPE_ID, 5, 1}};
        if (call.loc.inlined) s.operands.push_back({SPV_OPERAND_TYPE_ID, 6, 1});
        s.fix_word_count();
        s.debug = true;
        rest.insts[0].annotations.insert(rest.insts[0].annotations.begin(), s);
      }
    }
    place_rest(call.block, std::move(rest));
    // Later calls in the same block are visited before this one (reverse order) and earlier ones
    // keep their positions; the blocks after call.block moved by one, so the indices of calls in
    // them are stale, but those calls were visited already.
  }
  // The OpPhis that choose a merged call's site open its block (inserted last: positions stay valid).
  for (auto& [label, phis] : new_phis)
    for (Block& b : f.blocks)
      if (b.id() == label) b.insts.insert(b.insts.begin(), phis.begin(), phis.end());
  if (thrown_block) {
    Block t{make_instruction(spv::OpLabel, 0, thrown_block, {}), {}};
    if (helper) {
      Insts body;
      const uint32_t v = thrown_value(*fl, body);
      t.insts = std::move(body);
      t.insts.push_back(make_instruction(spv::OpReturnValue, 0, 0, {v}));
    } else {
      t.insts.push_back(make_instruction(spv::OpReturn, 0, 0, {}));
    }
    f.blocks.push_back(std::move(t));
  }
}


// The process-unique form of path id k: `OpIAdd %uint %k %site_base` before the call, %site_base the
// spec constant ZEX_SPEC_ID_SITE_BASE (default 0), which zex::Module sets so that ids are unique in
// the process (detail::register_site_table); specialized, the add folds to a constant. Not an
// OpSpecConstantOp: Intel's compiler (IGC 1.0.12504) aborts on one. The varying operand first, so
// that the merge pass passes it through an OpPhi.
uint32_t Rewriter::site_id(uint32_t k, Insts& before) {
  const uint32_t id = fresh();
  before.push_back(make_instruction(spv::OpIAdd, uint_type(), id, {uint_constant(k), site_base()}));
  return id;
}
uint32_t Rewriter::site_base() {
  if (!site_base_) {
    site_base_ = fresh();
    Instruction b = make_instruction(spv::OpSpecConstant, uint_type(), site_base_, {});
    add_operand(b, 0, SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER);
    globals_.push_back(b);
    Instruction d = make_instruction(spv::OpDecorate, 0, 0, {site_base_});
    add_operand(d, spv::DecorationSpecId, SPV_OPERAND_TYPE_DECORATION);
    add_operand(d, ZEX_SPEC_ID_SITE_BASE, SPV_OPERAND_TYPE_LITERAL_INTEGER);
    decorations_.push_back(d);
  }
  return site_base_;
}
// The value a throw exit returns, built before the last instruction of `insts` (its terminator) if
// there is one, else appended.
uint32_t Rewriter::thrown_value(const Flagged& fl, Insts& insts) {
  if (!fl.wrapped) return fl.thrown;
  const uint32_t v = fresh();
  Instruction c = make_instruction(spv::OpCompositeInsert, fl.type, v, {bool_constant(true), fl.null_value});
  add_operand(c, 1, SPV_OPERAND_TYPE_LITERAL_INTEGER);
  insts.insert(insts.empty() ? insts.end() : insts.end() - 1, std::move(c));
  return v;
}

}  // namespace throw_paths
}  // namespace passes
}  // namespace zex
