// merge_throw_sites: C++17 port of bench/igc/merge_throw_sites.py, called by zex::Module's
// link step (src/spirv.cpp) on the user module before spvtools::Link. Header-only, no dependency: it
// works on SPIR-V words, like detail::merge_duplicate_builtins. tests/igc checks that it produces the
// same bytes as the Python prototype on every test kernel, and bench/igc measures what it buys on
// Intel's compiler (docs/benchmarks-igc.md).
//
// What it does: <zex/device.h> gives every ZEX_THROW its own cold region
//     A_k: %r = call zex_report_exception(...); %c = OpIEqual %r 0; OpBranchConditional %c %X %B_k
//     B_k: call zex_report_frame(..., line_k); call zex_signal_exception(...); OpBranch %X
// (or a single block of zex calls ending in OpBranch/OpReturn), and IGC inlines the device library into
// each one. Regions with the same calls and the same exit become one region whose differing call
// operands come from OpPhi over the sites' predecessors. Calls, order and per-site arguments are kept,
// so the report is the same; only the code is shared. Anything unrecognised is left alone.
#ifndef ZEX_SRC_MERGE_THROW_SITES_HPP
#define ZEX_SRC_MERGE_THROW_SITES_HPP

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zex_mts {

using Inst = std::vector<uint32_t>;

namespace op {
constexpr uint32_t Name = 5, Function = 54, FunctionParameter = 55, FunctionEnd = 56, FunctionCall = 57,
                   Decorate = 71, Phi = 245, LoopMerge = 246, SelectionMerge = 247, Label = 248, Branch = 249,
                   BranchConditional = 250, Switch = 251, Kill = 252, Return = 253, ReturnValue = 254,
                   Unreachable = 255, IEqual = 170, INotEqual = 171;
}  // namespace op
constexpr uint32_t kDecorationLinkage = 41;

inline uint32_t opcode(const Inst& i) { return i[0] & 0xFFFFu; }

inline bool is_terminator(uint32_t o) {
  return o == op::Branch || o == op::BranchConditional || o == op::Switch || o == op::Return ||
         o == op::ReturnValue || o == op::Unreachable || o == op::Kill;
}

inline std::string decode_string(const Inst& i, size_t from) {
  std::string s;
  for (size_t k = from; k < i.size(); ++k)
    for (int b = 0; b < 4; ++b) {
      char c = static_cast<char>((i[k] >> (8 * b)) & 0xFF);
      if (c == '\0') return s;
      s.push_back(c);
    }
  return s;
}

inline std::vector<uint32_t> branch_targets(const Inst& t) {
  switch (opcode(t)) {
    case op::Branch: return {t[1]};
    case op::BranchConditional: return {t[2], t[3]};
    case op::Switch: {
      std::vector<uint32_t> r{t[2]};
      for (size_t k = 4; k < t.size(); k += 2) r.push_back(t[k]);
      return r;
    }
    default: return {};
  }
}

inline void retarget(Inst& t, uint32_t from, uint32_t to) {
  switch (opcode(t)) {
    case op::Branch:
      if (t[1] == from) t[1] = to;
      break;
    case op::BranchConditional:
      for (size_t k : {size_t{2}, size_t{3}})
        if (t[k] == from) t[k] = to;
      break;
    case op::Switch:
      if (t[2] == from) t[2] = to;
      for (size_t k = 4; k < t.size(); k += 2)
        if (t[k] == from) t[k] = to;
      break;
    default: break;
  }
}

struct Block {
  uint32_t label;
  std::vector<Inst> insts;
};

struct Region {
  std::vector<uint32_t> key;       // what must be equal for two sites to share one region
  std::vector<Inst> a_calls, b_calls;
  uint32_t b_label = 0;            // 0: pattern 1 (no B block)
  Inst term;                       // pattern 1: the terminator (OpBranch %exit or OpReturn)
  uint32_t b_pos = 0, exit = 0;    // pattern 2: which branch operand goes to B; the exit block
};

class Merger {
 public:
  Merger(const std::map<uint32_t, std::string>& zex, const std::map<uint32_t, std::vector<uint32_t>>& types,
         uint32_t next_id, std::set<uint32_t>& dead)
      : zex_(zex), types_(types), next_id_(next_id), dead_(dead) {}

  uint32_t next_id() const { return next_id_; }

  // body: the instructions between OpFunction and OpFunctionEnd.
  std::vector<Inst> run(const std::vector<Inst>& body) {
    std::vector<Inst> head;
    blocks_.clear();
    for (const Inst& i : body) {
      if (opcode(i) == op::Label)
        blocks_.push_back({i[1], {}});
      else if (blocks_.empty())
        head.push_back(i);
      else
        blocks_.back().insts.push_back(i);
    }
    uses_.clear();
    preds_.clear();
    index_.clear();
    for (size_t b = 0; b < blocks_.size(); ++b) {
      index_[blocks_[b].label] = b;
      for (const Inst& i : blocks_[b].insts)
        for (size_t k = 1; k < i.size(); ++k) ++uses_[i[k]];
    }
    for (const Block& b : blocks_)
      if (!b.insts.empty() && is_terminator(opcode(b.insts.back())))
        for (uint32_t t : branch_targets(b.insts.back())) preds_[t].push_back(b.label);

    std::set<uint32_t> pinned;  // structured merge targets keep their identity
    for (const Block& b : blocks_)
      for (const Inst& i : b.insts)
        if (opcode(i) == op::SelectionMerge || opcode(i) == op::LoopMerge)
          for (size_t k = 1; k < 3 && k < i.size(); ++k) pinned.insert(i[k]);

    std::vector<std::pair<std::vector<uint32_t>, std::vector<uint32_t>>> groups;  // key -> labels, in order
    std::map<uint32_t, Region> info;
    for (const Block& b : blocks_) {
      if (preds_[b.label].empty() || pinned.count(b.label)) continue;
      Region r;
      if (!region(b.label, r)) continue;
      auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& e) { return e.first == r.key; });
      if (g == groups.end())
        groups.push_back({r.key, {b.label}});
      else
        g->second.push_back(b.label);
      info[b.label] = std::move(r);
    }

    std::set<uint32_t> removed;
    std::map<uint32_t, std::vector<Block>> new_blocks;
    for (auto& [key, all] : groups) {
      std::vector<uint32_t> labels;
      for (uint32_t l : all)
        if (!removed.count(l)) labels.push_back(l);
      if (labels.size() < 2) continue;
      merge_group(key, labels, info, pinned, removed, new_blocks);
    }

    std::vector<Inst> out = head;
    for (const Block& b : blocks_) {
      auto nb = new_blocks.find(b.label);
      if (nb != new_blocks.end())
        for (const Block& n : nb->second) {
          out.push_back({(2u << 16) | op::Label, n.label});
          out.insert(out.end(), n.insts.begin(), n.insts.end());
        }
      if (removed.count(b.label)) continue;
      out.push_back({(2u << 16) | op::Label, b.label});
      out.insert(out.end(), b.insts.begin(), b.insts.end());
    }
    return out;
  }

 private:
  uint32_t uses(uint32_t id) const {
    auto u = uses_.find(id);
    return u == uses_.end() ? 0 : u->second;
  }
  const std::vector<uint32_t>& preds(uint32_t l) { return preds_[l]; }
  std::vector<Inst>* block(uint32_t l) {
    auto i = index_.find(l);
    return i == index_.end() ? nullptr : &blocks_[i->second].insts;
  }

  bool zex_calls(const std::vector<Inst>& calls, bool allow_used_last) const {
    for (size_t k = 0; k < calls.size(); ++k) {
      const Inst& c = calls[k];
      if (opcode(c) != op::FunctionCall || !zex_.count(c[3])) return false;
      uint32_t limit = (allow_used_last && k + 1 == calls.size()) ? 2 : 1;  // its definition is one use
      if (uses(c[2]) > limit) return false;
    }
    return true;
  }

  static void append_shape(std::vector<uint32_t>& key, const std::vector<Inst>& calls) {
    key.push_back(static_cast<uint32_t>(calls.size()));
    for (const Inst& c : calls) key.insert(key.end(), {c[1], c[3], static_cast<uint32_t>(c.size())});
  }

  bool region(uint32_t label, Region& r) {
    std::vector<Inst>& insts = *block(label);
    const size_t n = insts.size();
    if (n >= 2 && (opcode(insts.back()) == op::Branch || opcode(insts.back()) == op::Return)) {
      std::vector<Inst> calls(insts.begin(), insts.end() - 1);
      if (zex_calls(calls, false)) {
        r.key = {1};
        append_shape(r.key, calls);
        r.key.insert(r.key.end(), insts.back().begin(), insts.back().end());
        r.a_calls = std::move(calls);
        r.term = insts.back();
        return true;
      }
    }
    if (n >= 3 && opcode(insts.back()) == op::BranchConditional &&
        (opcode(insts[n - 2]) == op::IEqual || opcode(insts[n - 2]) == op::INotEqual)) {
      std::vector<Inst> calls(insts.begin(), insts.end() - 2);
      const Inst& cmp = insts[n - 2];
      const Inst& br = insts[n - 1];
      if (calls.empty() || !zex_calls(calls, true)) return false;
      const uint32_t res = calls.back()[2];
      auto name = zex_.find(calls.back()[3]);
      if (name == zex_.end() || name->second != "zex_report_exception") return false;
      if (cmp.size() < 5 || (cmp[3] != res && cmp[4] != res) || br[1] != cmp[2]) return false;
      if (uses(cmp[2]) != 2) return false;
      for (size_t b_pos : {size_t{2}, size_t{3}}) {
        const uint32_t blab = br[b_pos], xlab = br[5 - b_pos];
        std::vector<Inst>* b = block(blab);
        if (!b || b->empty()) continue;
        const std::vector<uint32_t>& bp = preds(blab);
        if (bp.size() != 1 || bp[0] != label) continue;
        if (opcode(b->back()) != op::Branch || b->back()[1] != xlab) continue;
        std::vector<Inst> bcalls(b->begin(), b->end() - 1);
        if (!zex_calls(bcalls, false)) continue;
        r.key = {2};
        append_shape(r.key, calls);
        r.key.insert(r.key.end(), {opcode(cmp), cmp[1], cmp[3] == res ? 0xFFFFFFFFu : cmp[3],
                                   cmp[4] == res ? 0xFFFFFFFFu : cmp[4], static_cast<uint32_t>(b_pos), xlab});
        append_shape(r.key, bcalls);
        r.a_calls = std::move(calls);
        r.b_calls = std::move(bcalls);
        r.b_label = blab;
        r.b_pos = static_cast<uint32_t>(b_pos);
        r.exit = xlab;
        return true;
      }
    }
    return false;
  }

  void merge_group(const std::vector<uint32_t>& key, const std::vector<uint32_t>& labels,
                   std::map<uint32_t, Region>& info, const std::set<uint32_t>& pinned, std::set<uint32_t>& removed,
                   std::map<uint32_t, std::vector<Block>>& new_blocks) {
    const uint32_t kind = key[0];
    const std::vector<Inst> a_insts = *block(labels[0]);
    const Region& first = info[labels[0]];
    const Inst exit_term = first.term;
    uint32_t exit_label = 0;
    bool has_exit = false;
    if (kind == 1) {
      if (opcode(exit_term) == op::Branch) {
        exit_label = exit_term[1];
        has_exit = true;
      }
    } else {
      exit_label = first.exit;
      has_exit = true;
    }
    std::set<uint32_t> members(labels.begin(), labels.end());
    for (uint32_t l : labels)
      if (info[l].b_label) members.insert(info[l].b_label);
    for (uint32_t m : members)
      if (pinned.count(m)) return;
    std::vector<std::pair<uint32_t, uint32_t>> edges;  // (predecessor, site)
    for (uint32_t l : labels)
      for (uint32_t p : preds(l)) edges.push_back({p, l});
    std::set<uint32_t> pred_set;
    for (auto& e : edges) pred_set.insert(e.first);
    if (pred_set.size() != edges.size()) return;
    for (uint32_t p : pred_set)
      if (members.count(p)) return;
    const std::set<uint32_t> a_side(labels.begin(), labels.end());
    std::set<uint32_t> b_side_build;
    for (uint32_t l : labels)
      if (info[l].b_label) b_side_build.insert(info[l].b_label);
    const std::set<uint32_t> b_side = b_side_build;
    if (has_exit) {
      for (const Inst& i : *block(exit_label)) {
        if (opcode(i) != op::Phi) break;
        for (const std::set<uint32_t>* side : {&a_side, &b_side}) {
          std::set<uint32_t> vals;
          for (size_t k = 3; k + 1 < i.size(); k += 2)
            if (side->count(i[k + 1])) vals.insert(i[k]);
          if (vals.size() > 1) return;
        }
      }
      bool all_members = true;
      for (uint32_t p : preds(exit_label))
        if (!members.count(p)) all_members = false;
      if (all_members) return;  // the exit would be dominated by the new region
    }

    const uint32_t a_label = next_id_, b_label = kind == 2 ? next_id_ + 1 : 0;
    next_id_ += 2;
    std::vector<std::vector<Inst>> seqs;
    for (uint32_t l : labels) {
      std::vector<Inst> s = info[l].a_calls;
      s.insert(s.end(), info[l].b_calls.begin(), info[l].b_calls.end());
      seqs.push_back(std::move(s));
    }
    const size_t n_a = info[labels[0]].a_calls.size();
    std::vector<Inst> phis, new_calls;
    std::map<uint32_t, uint32_t> remap;
    for (size_t ci = 0; ci < seqs[0].size(); ++ci) {
      const Inst& call = seqs[0][ci];
      Inst nc = call;
      nc[2] = next_id_;
      remap[call[2]] = next_id_;
      ++next_id_;
      for (size_t w = 4; w < call.size(); ++w) {
        bool same = true;
        for (const auto& s : seqs) same = same && s[ci][w] == call[w];
        if (same) continue;
        Inst phi{0, types_.at(call[3]).at(w - 4), next_id_++};  // a call operand has its parameter's type
        for (auto& [p, l] : edges) {
          size_t li = static_cast<size_t>(std::find(labels.begin(), labels.end(), l) - labels.begin());
          phi.push_back(seqs[li][ci][w]);
          phi.push_back(p);
        }
        phi[0] = (static_cast<uint32_t>(phi.size()) << 16) | op::Phi;
        nc[w] = phi[2];
        phis.push_back(std::move(phi));
      }
      new_calls.push_back(std::move(nc));
    }
    std::vector<Block> made;
    if (kind == 1) {
      Block a{a_label, phis};
      a.insts.insert(a.insts.end(), new_calls.begin(), new_calls.end());
      a.insts.push_back(exit_term);
      made.push_back(std::move(a));
    } else {
      Inst cmp = a_insts[a_insts.size() - 2];
      for (size_t k = 3; k < 5; ++k)
        if (remap.count(cmp[k])) cmp[k] = remap[cmp[k]];
      cmp[2] = next_id_++;
      Inst br = a_insts.back();
      br[1] = cmp[2];
      br[first.b_pos] = b_label;
      Block a{a_label, phis};
      a.insts.insert(a.insts.end(), new_calls.begin(), new_calls.begin() + static_cast<std::ptrdiff_t>(n_a));
      a.insts.push_back(cmp);
      a.insts.push_back(br);
      Block b{b_label, {}};
      b.insts.insert(b.insts.end(), new_calls.begin() + static_cast<std::ptrdiff_t>(n_a), new_calls.end());
      b.insts.push_back({(2u << 16) | op::Branch, exit_label});
      made.push_back(std::move(a));
      made.push_back(std::move(b));
    }
    for (auto& [p, l] : edges) retarget(block(p)->back(), l, a_label);
    if (has_exit)
      for (Inst& i : *block(exit_label)) {
        if (opcode(i) != op::Phi) break;
        Inst keep(i.begin(), i.begin() + 3);
        bool has_a = false, has_b = false;
        uint32_t va = 0, vb = 0;
        for (size_t k = 3; k + 1 < i.size(); k += 2) {
          if (a_side.count(i[k + 1])) {
            va = i[k];
            has_a = true;
          } else if (members.count(i[k + 1])) {
            vb = i[k];
            has_b = true;
          } else {
            keep.push_back(i[k]);
            keep.push_back(i[k + 1]);
          }
        }
        if (has_a) keep.insert(keep.end(), {va, a_label});
        if (has_b) keep.insert(keep.end(), {vb, b_label});
        keep[0] = (static_cast<uint32_t>(keep.size()) << 16) | op::Phi;
        i = std::move(keep);
      }
    for (uint32_t m : members) {
      removed.insert(m);
      dead_.insert(m);
    }
    for (uint32_t l : labels) {
      for (const Inst& c : info[l].a_calls) dead_.insert(c[2]);
      for (const Inst& c : info[l].b_calls) dead_.insert(c[2]);
      if (kind == 2) {
        const std::vector<Inst>& ai = *block(l);
        dead_.insert(ai[ai.size() - 2][2]);
      }
    }
    new_blocks[labels[0]] = std::move(made);
  }

  const std::map<uint32_t, std::string>& zex_;
  const std::map<uint32_t, std::vector<uint32_t>>& types_;
  uint32_t next_id_;
  std::set<uint32_t>& dead_;
  std::vector<Block> blocks_;
  std::map<uint32_t, uint32_t> uses_;
  std::map<uint32_t, std::vector<uint32_t>> preds_;
  std::map<uint32_t, size_t> index_;
};

/// Merges the zex throw sites of every function of a SPIR-V module (words, header included). Returns
/// the input unchanged when there is nothing to merge.
/// Errors: std::invalid_argument for a module that is not SPIR-V or has a malformed instruction.
inline std::vector<uint32_t> merge_throw_sites(const std::vector<uint32_t>& words) {
  if (words.size() < 5 || words[0] != 0x07230203u) throw std::invalid_argument("not a SPIR-V module (bad magic)");
  std::vector<Inst> insts;
  for (size_t i = 5; i < words.size();) {
    const uint32_t n = words[i] >> 16;
    if (n == 0 || i + n > words.size()) throw std::invalid_argument("malformed SPIR-V instruction");
    insts.emplace_back(words.begin() + static_cast<std::ptrdiff_t>(i),
                       words.begin() + static_cast<std::ptrdiff_t>(i + n));
    i += n;
  }
  std::map<uint32_t, std::string> zex;
  for (const Inst& i : insts) {
    if (opcode(i) == op::Decorate && i.size() >= 4 && i[2] == kDecorationLinkage) {
      std::string name = decode_string(i, 3);
      if (name.rfind("zex_", 0) == 0) zex[i[1]] = name;
    } else if (opcode(i) == op::Name && i.size() >= 3) {
      std::string name = decode_string(i, 2);
      if (name.rfind("zex_", 0) == 0) zex.emplace(i[1], name);
    }
  }
  if (zex.empty()) return words;
  std::map<uint32_t, std::vector<uint32_t>> types;
  {
    std::vector<uint32_t>* cur = nullptr;
    for (const Inst& i : insts) {
      if (opcode(i) == op::Function) cur = &types[i[2]];
      else if (opcode(i) == op::FunctionParameter && cur) cur->push_back(i[1]);
      else if (opcode(i) == op::Label) cur = nullptr;
    }
  }
  std::set<uint32_t> dead;
  uint32_t next_id = words[3];
  std::vector<Inst> out;
  for (size_t i = 0; i < insts.size();) {
    out.push_back(insts[i]);
    if (opcode(insts[i++]) != op::Function) continue;
    size_t j = i;
    while (j < insts.size() && opcode(insts[j]) != op::FunctionEnd) ++j;
    std::vector<Inst> body(insts.begin() + static_cast<std::ptrdiff_t>(i), insts.begin() + static_cast<std::ptrdiff_t>(j));
    if (std::any_of(body.begin(), body.end(), [](const Inst& x) { return opcode(x) == op::Label; })) {
      Merger m(zex, types, next_id, dead);
      body = m.run(body);
      next_id = m.next_id();
    }
    out.insert(out.end(), body.begin(), body.end());
    i = j;
  }
  std::vector<uint32_t> result(words.begin(), words.begin() + 5);
  result[3] = next_id;
  for (const Inst& i : out) {
    if ((opcode(i) == op::Name || opcode(i) == op::Decorate) && i.size() > 1 && dead.count(i[1])) continue;
    result.insert(result.end(), i.begin(), i.end());
  }
  return result;
}

}  // namespace zex_mts

#endif  // ZEX_SRC_MERGE_THROW_SITES_HPP
