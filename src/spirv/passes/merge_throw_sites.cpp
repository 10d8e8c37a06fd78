// merge_throw_sites: one cold region per function for its zex throw sites.
//
// <zex/device.h> gives every ZEX_THROW its own cold region
//     A_k: %r = call zex_report_exception(...); %c = OpIEqual %r 0; OpBranchConditional %c %X %B_k
//     B_k: call zex_report_frame(..., line_k); call zex_signal_exception(...); OpBranch %X
// (or a single block of zex calls ending in OpBranch/OpReturn), and Intel's compiler inlines the
// device library into each one and never merges them again. Regions with the same calls and the same
// exit become one region whose differing call operands come from OpPhi over the sites' predecessors.
// Calls, order and per-site arguments are kept, so the report is the same; only the code is shared.
//
// zex functions are the module's imports (LinkageAttributes ... Import) named zex_*; debug names are
// not trusted. Lines and debug instructions ride on their instructions (ir.hpp) and are not part of
// a site's shape; the merged region keeps the first site's lines and scopes (each site's own line
// still reaches the report as zex_report_frame's argument, now an OpPhi) and drops the sites'
// DebugValue/DebugDeclare. Anything unrecognised or malformed is left alone.
#include "spirv/passes/passes.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <utility>

namespace zex {
namespace passes {

namespace {

using Insts = std::vector<Instruction>;

// The copy of a site's instruction that goes into the merged region: lines and scopes only.
Instruction moved(const Instruction& i) {
  Instruction c = i;
  c.annotations.erase(std::remove_if(c.annotations.begin(), c.annotations.end(),
                                     [](const Instruction& a) { return !is_line_or_scope(a); }),
                      c.annotations.end());
  return c;
}

struct Region {
  std::vector<uint32_t> key;  // what must be equal for two sites to share one region
  Insts seq;                  // the region's instructions but terminators: A's, then B's
  size_t n_a = 0;             // how many of seq are in A
  uint32_t b_label = 0;       // 0: pattern 1 (no B block)
  Instruction term, b_term;   // A's terminator; pattern 2: B's OpBranch %exit
  uint32_t b_pos = 0, exit = 0;  // pattern 2: which branch operand goes to B; the exit block
};

// Instructions a cold region may compute besides the zex calls: addresses of its strings and casts, as
// compilers emit them (tests/kernels/device/compiler_style.spvasm). Their first operand may differ per site.
bool is_pure(uint16_t o) {
    switch (o) {
    case spv::OpCopyObject: case spv::OpCompositeExtract: case spv::OpAccessChain: case spv::OpInBoundsAccessChain: case spv::OpPtrAccessChain:
    case spv::OpInBoundsPtrAccessChain: case spv::OpConvertPtrToU: case spv::OpUConvert: case spv::OpSConvert: case spv::OpConvertUToPtr:
    case spv::OpPtrCastToGeneric: case spv::OpGenericCastToPtr: case spv::OpBitcast:
    case spv::OpIAdd:  // a throw path's id in a function with a hidden base: offset (varies) + base
      return true;
    default: return false;
  }
}

// Key tags: how an <id> operand of a region instruction is compared across sites.
constexpr uint32_t kLocal = 0xFFFFFFF0u, kVaries = 0xFFFFFFF1u, kSame = 0xFFFFFFF2u, kLiteral = 0xFFFFFFF3u;

using Params = std::map<uint32_t, std::vector<uint32_t>>;  // function -> parameter types

class Merger {
 public:
  // `ctx`'s module is read only (the pass writes it at its end), so its analyses stay valid throughout.
  Merger(const std::map<uint32_t, std::string>& zex, const Params& params, IRContext& ctx, uint32_t next_id,
         std::set<uint32_t>& dead)
      : zex_(zex), params_(params), ctx_(ctx), next_id_(next_id), dead_(dead) {}

  uint32_t next_id() const { return next_id_; }

  // body: the instructions between OpFunction and OpFunctionEnd.
  Insts run(const Insts& body) {
    Insts head;
    blocks_ = split_blocks(body.data(), body.data() + body.size(), &head);
    for (size_t b = 0; b < blocks_.size(); ++b) {
      if (!index_.emplace(blocks_[b].label.result_id, b).second) return body;  // a label defined twice
      for (const Instruction& i : blocks_[b].insts) count_uses(i);
    }
    preds_ = predecessors(blocks_);

    std::set<uint32_t> pinned;  // structured merge targets keep their identity
    for (const Block& b : blocks_)
      for (const Instruction& i : b.insts)
        if (i.opcode == spv::OpSelectionMerge || i.opcode == spv::OpLoopMerge)
          for (size_t k = 1; k < 3 && k < i.size(); ++k) pinned.insert(i.words[k]);

    std::vector<std::pair<std::vector<uint32_t>, std::vector<uint32_t>>> groups;  // key -> labels, in order
    std::map<uint32_t, Region> info;
    for (const Block& b : blocks_) {
      const uint32_t l = b.label.result_id;
      if (preds_[l].empty() || pinned.count(l)) continue;
      Region r;
      if (!region(l, r)) continue;
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& e) { return e.first == r.key; });
      if (g == groups.end())
        groups.push_back({r.key, {l}});
      else
        g->second.push_back(l);
      info[l] = std::move(r);
    }

    std::set<uint32_t> removed;
    std::map<uint32_t, std::vector<Block>> made;
    // Two-block regions (a report call and its frame/signal block) first: they take the report calls
    // with them, and a single-block group of their B blocks must not take those first.
    std::stable_sort(groups.begin(), groups.end(),
                     [](const auto& a, const auto& b) { return (a.first[0] == 2) > (b.first[0] == 2); });
    for (auto& group : groups) {
      std::vector<uint32_t> labels;
      for (uint32_t l : group.second)
        if (!removed.count(l)) labels.push_back(l);
      if (labels.size() >= 2) merge_group(group.first[0], labels, info, pinned, removed, made);
    }

    Insts out = head;
    for (const Block& b : blocks_) {
      auto nb = made.find(b.label.result_id);
      if (nb != made.end())
        for (const Block& n : nb->second) {
          out.push_back(n.label);
          out.insert(out.end(), n.insts.begin(), n.insts.end());
        }
      if (removed.count(b.label.result_id)) continue;
      out.push_back(b.label);
      out.insert(out.end(), b.insts.begin(), b.insts.end());
    }
    return out;
  }

 private:
  void count_uses(const Instruction& i) {
    for (uint32_t id : i.used_ids()) ++uses_[id];
    for (const Instruction& a : i.annotations) count_uses(a);
  }
  uint32_t uses(uint32_t id) const {
    auto u = uses_.find(id);
    return u == uses_.end() ? 0 : u->second;
  }
  Insts* block(uint32_t l) {
    auto i = index_.find(l);
    return i == index_.end() ? nullptr : &blocks_[i->second].insts;
  }
  const char* zex_name(uint32_t fn) const {
    auto n = zex_.find(fn);
    return n == zex_.end() ? nullptr : n->second.c_str();
  }

  const uint32_t* type_of(uint32_t id) const {
    const Instruction* d = ctx_.def(id);
    return d && d->type_id ? &d->type_id : nullptr;
  }

  // The operand words of `i` at which sites may pass different values (through an OpPhi).
  bool may_vary(const Instruction& i, size_t offset) const {
    return i.opcode == spv::OpFunctionCall ? offset >= 4 : is_pure(i.opcode) && offset == 3;
  }

  // Appends r.seq's shape to r.key; false if r is not a zex throw region: every instruction a zex call
  // (as many arguments as parameters), a pure instruction, or pattern 2's comparison; at least one zex
  // call; and no value computed in the region used outside it (its DebugValues included).
  bool shape(Region& r) const {
    std::map<uint32_t, uint32_t> local;  // result -> position in seq
    bool any_zex = false;
    for (size_t k = 0; k < r.seq.size(); ++k) {
      const Instruction& i = r.seq[k];
      if (i.opcode == spv::OpFunctionCall) {
        if (i.size() < 4 || !zex_name(i.words[3])) return false;
        auto p = params_.find(i.words[3]);
        if (p == params_.end() || p->second.size() != i.size() - 4) return false;
        any_zex = true;
      } else if (!is_pure(i.opcode) &&
                 !(r.b_label && k + 1 == r.n_a && (i.opcode == spv::OpIEqual || i.opcode == spv::OpINotEqual))) {
        return false;
      }
      r.key.insert(r.key.end(), {i.opcode, i.type_id, static_cast<uint32_t>(i.size())});
      for (const Operand& o : i.operands) {
        if (o.type == SPV_OPERAND_TYPE_RESULT_ID || o.type == SPV_OPERAND_TYPE_TYPE_ID) continue;
        if (!is_id_use(o.type)) {
          for (size_t w = o.offset; w < o.offset + o.count && w < i.size(); ++w) r.key.insert(r.key.end(), {kLiteral, i.words[w]});
          continue;
        }
        const uint32_t id = i.word(o.offset);
        auto l = local.find(id);
        if (l != local.end())
          r.key.insert(r.key.end(), {kLocal, l->second});
        else if (may_vary(i, o.offset) && type_of(id))
          r.key.insert(r.key.end(), {kVaries, *type_of(id)});
        else
          r.key.insert(r.key.end(), {kSame, id});
      }
      if (i.result_id) local[i.result_id] = static_cast<uint32_t>(k);
    }
    if (!any_zex) return false;
    std::map<uint32_t, uint32_t> inside;
    auto count = [&](const Instruction& i, auto& self) -> void {
      for (uint32_t id : i.used_ids()) ++inside[id];
      for (const Instruction& a : i.annotations) self(a, self);
    };
    for (const Instruction& i : r.seq) count(i, count);
    count(r.term, count);
    if (r.b_label) count(r.b_term, count);
    for (auto& [id, k] : local)
      if (uses(id) != inside[id]) return false;
    return true;
  }

  bool region(uint32_t label, Region& r) {
    const Insts& insts = *block(label);
    if (insts.size() < 2) return false;
    const Instruction& t = insts.back();
    if (t.opcode == spv::OpBranch || t.opcode == spv::OpReturn || t.opcode == spv::OpReturnValue) {
      r.key = {1};
      r.key.insert(r.key.end(), t.words.begin(), t.words.end());
      r.seq.assign(insts.begin(), insts.end() - 1);
      r.n_a = r.seq.size();
      r.term = t;
      return shape(r);
    }
    if (t.opcode != spv::OpBranchConditional || t.size() < 4 || insts.size() < 3) return false;
    const Instruction& cmp = insts[insts.size() - 2];
    if ((cmp.opcode != spv::OpIEqual && cmp.opcode != spv::OpINotEqual) || cmp.result_id != t.words[1]) return false;
    for (size_t b_pos : {size_t{2}, size_t{3}}) {
      const uint32_t blab = t.words[b_pos], xlab = t.words[5 - b_pos];
      const Insts* b = block(blab);
      if (!b || b->empty() || blab == label || blab == xlab) continue;
      const std::vector<uint32_t>& bp = preds_[blab];
      if (bp.size() != 1 || bp[0] != label) continue;
      if (b->back().opcode != spv::OpBranch || b->back().word(1) != xlab) continue;
      Region c;
      c.key = {2, static_cast<uint32_t>(b_pos), xlab};
      c.seq.assign(insts.begin(), insts.end() - 1);
      c.n_a = c.seq.size();
      c.key.push_back(static_cast<uint32_t>(c.n_a));
      c.seq.insert(c.seq.end(), b->begin(), b->end() - 1);
      c.term = t;
      c.b_term = b->back();
      c.b_label = blab;
      c.b_pos = static_cast<uint32_t>(b_pos);
      c.exit = xlab;
      if (!shape(c)) continue;
      r = std::move(c);
      return true;
    }
    return false;
  }

  // Whether the exit's OpPhis can take one value per side from the merged region.
  bool exit_phis_agree(uint32_t exit_label, const std::set<uint32_t>& a_side, const std::set<uint32_t>& b_side) {
    for (const Instruction& i : *block(exit_label)) {
      if (i.opcode != spv::OpPhi) break;
      for (const std::set<uint32_t>* side : {&a_side, &b_side}) {
        std::set<uint32_t> vals;
        for (size_t k = 3; k + 1 < i.size(); k += 2)
          if (side->count(i.words[k + 1])) vals.insert(i.words[k]);
        if (vals.size() > 1) return false;
      }
    }
    return true;
  }

  void merge_group(uint32_t kind, const std::vector<uint32_t>& labels, std::map<uint32_t, Region>& info,
                   const std::set<uint32_t>& pinned, std::set<uint32_t>& removed,
                   std::map<uint32_t, std::vector<Block>>& made) {
    const Region& first = info[labels[0]];
    const bool has_exit = kind == 2 || first.term.opcode == spv::OpBranch;
    const uint32_t exit_label = kind == 2 ? first.exit : first.term.word(1);
    if (has_exit && !block(exit_label)) return;  // branches out of the function: malformed
    std::set<uint32_t> members(labels.begin(), labels.end());
    std::set<uint32_t> b_side;
    for (uint32_t l : labels)
      if (info[l].b_label) {
        members.insert(info[l].b_label);
        b_side.insert(info[l].b_label);
      }
    for (uint32_t m : members)
      if (pinned.count(m) || (has_exit && m == exit_label)) return;
    std::vector<std::pair<uint32_t, uint32_t>> edges;  // (predecessor, site)
    for (uint32_t l : labels)
      for (uint32_t p : preds_[l]) edges.push_back({p, l});
    std::set<uint32_t> pred_set;
    for (auto& e : edges) pred_set.insert(e.first);
    if (pred_set.size() != edges.size()) return;
    for (uint32_t p : pred_set)
      if (members.count(p)) return;
    // One merge per block: a group whose blocks or predecessors another merge already took is left
    // alone. Otherwise a group of single-block regions (the B blocks, all alike) merged first would
    // keep OpPhi edges from A blocks that a later group (A+B regions of another shape, e.g. throws
    // with and without values) removes.
    for (uint32_t m : members)
      if (touched_.count(m)) return;
    for (uint32_t p : pred_set)
      if (touched_.count(p)) return;
    const std::set<uint32_t> a_side(labels.begin(), labels.end());
    if (has_exit) {
      if (!exit_phis_agree(exit_label, a_side, b_side)) return;
      bool all_members = true;
      for (uint32_t p : preds_[exit_label])
        if (!members.count(p)) all_members = false;
      if (all_members) return;  // the exit would be dominated by the new region
    }

    const uint32_t a_label = next_id_++, b_label = kind == 2 ? next_id_++ : 0;
    Insts phis, seq;
    std::map<uint32_t, uint32_t> remap;  // the first site's results -> the merged region's
    for (size_t ci = 0; ci < first.seq.size(); ++ci) {
      const Instruction& in = first.seq[ci];
      Instruction nc = moved(in);
      for (const Operand& o : in.operands) {
        const size_t w = o.offset;
        if (o.type == SPV_OPERAND_TYPE_RESULT_ID) {
          nc.result_id = nc.words[w] = next_id_++;
          remap[in.result_id] = nc.result_id;
        } else if (o.type != SPV_OPERAND_TYPE_TYPE_ID && is_id_use(o.type)) {
          auto r = remap.find(in.words[w]);
          if (r != remap.end()) {
            nc.words[w] = r->second;
            continue;
          }
          bool same = true;
          for (uint32_t l : labels) same = same && info[l].seq[ci].words[w] == in.words[w];
          if (same) continue;
          std::vector<uint32_t> pairs;
          for (auto& [p, l] : edges) pairs.insert(pairs.end(), {info[l].seq[ci].words[w], p});
          phis.push_back(make_instruction(spv::OpPhi, *type_of(in.words[w]), next_id_++, pairs));  // shape() checked the type
          nc.words[w] = phis.back().result_id;
        }
      }
      seq.push_back(std::move(nc));
    }
    std::vector<Block> blocks;
    Block a{make_instruction(spv::OpLabel, 0, a_label, {}), phis};
    a.insts.insert(a.insts.end(), seq.begin(), seq.begin() + static_cast<std::ptrdiff_t>(first.n_a));
    a.insts.push_back(moved(first.term));
    if (kind == 2) {
      Instruction& br = a.insts.back();
      br.words[1] = remap.at(first.term.words[1]);  // the comparison: the last instruction of A
      br.words[first.b_pos] = b_label;
    }
    blocks.push_back(std::move(a));
    if (kind == 2) {
      Block b{make_instruction(spv::OpLabel, 0, b_label, {}), {}};
      b.insts.insert(b.insts.end(), seq.begin() + static_cast<std::ptrdiff_t>(first.n_a), seq.end());
      b.insts.push_back(moved(first.b_term));
      blocks.push_back(std::move(b));
    }
    for (auto& [p, l] : edges) retarget(block(p)->back(), l, a_label);
    if (has_exit)
      for (Instruction& i : *block(exit_label)) {
        if (i.opcode != spv::OpPhi) break;
        std::vector<uint32_t> keep;
        bool has_a = false, has_b = false;
        uint32_t va = 0, vb = 0;
        for (size_t k = 3; k + 1 < i.size(); k += 2) {
          if (a_side.count(i.words[k + 1])) {
            va = i.words[k];
            has_a = true;
          } else if (members.count(i.words[k + 1])) {
            vb = i.words[k];
            has_b = true;
          } else {
            keep.push_back(i.words[k]);
            keep.push_back(i.words[k + 1]);
          }
        }
        if (has_a) keep.insert(keep.end(), {va, a_label});
        if (has_b) keep.insert(keep.end(), {vb, b_label});
        Instruction phi = make_instruction(spv::OpPhi, i.type_id, i.result_id, keep);
        phi.annotations = std::move(i.annotations);
        i = std::move(phi);
      }
    for (uint32_t m : members) {
      removed.insert(m);
      dead_.insert(m);
      touched_.insert(m);
    }
    touched_.insert(pred_set.begin(), pred_set.end());
    for (uint32_t l : labels)
      for (const Instruction& i : info[l].seq)
        if (i.result_id) dead_.insert(i.result_id);
    made[labels[0]] = std::move(blocks);
  }

  const std::map<uint32_t, std::string>& zex_;
  const Params& params_;
  IRContext& ctx_;  // def(): a value's type
  uint32_t next_id_;
  std::set<uint32_t>& dead_;
  std::vector<Block> blocks_;
  std::map<uint32_t, uint32_t> uses_;
  std::set<uint32_t> touched_;  // members and predecessors of the groups merged so far
  std::map<uint32_t, std::vector<uint32_t>> preds_;
  std::map<uint32_t, size_t> index_;
};

}  // namespace

Status merge_throw_sites(IRContext& ctx) {
  Module& m = ctx.module();
  std::map<uint32_t, std::string> zex;
  for (auto& [id, name] : ctx.imports())
    if (name.rfind("zex_", 0) == 0) zex[id] = name;
  if (zex.empty()) return Status::Unchanged;
  const std::vector<IRContext::FunctionRange>& functions = ctx.functions();
  Params params;
  for (const IRContext::FunctionRange& f : functions) {
    std::vector<uint32_t>& p = params[f.id];
    for (size_t k = f.first + 1; k < f.last && m.insts[k].opcode == spv::OpFunctionParameter; ++k)
      p.push_back(m.insts[k].type_id);
  }
  std::set<uint32_t> dead;
  uint32_t next_id = m.header[3];
  Insts out;
  out.reserve(m.insts.size());
  auto copy = [&](size_t from, size_t to) {  // m.insts[from, to) unchanged
    out.insert(out.end(), m.insts.begin() + static_cast<std::ptrdiff_t>(from),
               m.insts.begin() + static_cast<std::ptrdiff_t>(to));
  };
  size_t done = 0;  // m.insts[0, done) are in `out`
  for (const IRContext::FunctionRange& f : functions) {
    if (!f.defined) continue;
    copy(done, f.first + 1);  // up to and including the OpFunction
    Insts body(m.insts.begin() + static_cast<std::ptrdiff_t>(f.first + 1),
               m.insts.begin() + static_cast<std::ptrdiff_t>(f.last));
    Merger mg(zex, params, ctx, next_id, dead);
    body = mg.run(body);
    next_id = mg.next_id();
    out.insert(out.end(), body.begin(), body.end());
    done = f.last;
  }
  copy(done, m.insts.size());
  if (next_id == m.header[3]) return Status::Unchanged;  // nothing merged: every new region takes new ids
  out.erase(std::remove_if(out.begin(), out.end(),
                           [&](const Instruction& i) {
                             return (i.opcode == spv::OpName || i.opcode == spv::OpDecorate) && dead.count(i.word(1));
                           }),
            out.end());
  m.insts = std::move(out);
  m.header[3] = next_id;
  return Status::Changed;
}

}  // namespace passes
}  // namespace zex
