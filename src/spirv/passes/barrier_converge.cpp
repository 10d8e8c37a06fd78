// converge_throws_at_barriers, one kernel (barrier_throws.hpp): the blocks that throw and the regions
// they start, where a thrower goes on (the block the check would have taken), whether a barrier can
// follow, the private flag, the copies of the region's blocks a thrower runs, guarded.
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

// ---- the kernel ----
bool Converger::converge(Function& f) {
  // A kernel whose call tree has no barrier keeps its returns (and this pass stays linear in the
  // module: the analysis below looks at the whole function once per throw region).
  if (!barrier_fns_.count(f.id)) return false;
  local_types_.clear();
  for (const Instruction& p : f.head) local_types_[p.result_id] = p.type_id;
  // The function's own definitions (valid until the rewrite below changes its blocks).
  std::map<uint32_t, const Instruction*> local_def;
  for (const Block& b : f.blocks)
    for (const Instruction& i : b.insts) {
      if (i.result_id) local_def[i.result_id] = &i;
      if (i.result_id && i.type_id) local_types_[i.result_id] = i.type_id;
    }
  std::map<uint32_t, size_t> at;
  auto index = [&] {
    at.clear();
    for (size_t b = 0; b < f.blocks.size(); ++b) at[f.blocks[b].id()] = b;
  };
  index();
  auto preds_of = [&] { return predecessors(f.blocks); };
  std::map<uint32_t, std::vector<uint32_t>> preds = preds_of();

  // Blocks that throw: they call a zex throw entry point, or every path into them comes from one that does.
  static const std::set<std::string> kThrowEntries{"zex_throw", "zex_throw_site", "zex_report_exception",
                                                   "zex_report_exception_values", "zex_report_frame",
                                                   "zex_signal_exception"};
  std::set<uint32_t> throwing;
  for (const Block& b : f.blocks)
    for (const Instruction& i : b.insts)
      if (i.opcode == spv::OpFunctionCall && zex_.count(i.word(3)) && kThrowEntries.count(zex_.at(i.word(3))))
        throwing.insert(b.id());
  close_throwing(f.blocks, preds, throwing);
  // The flag checks number_throw_paths puts after calls of functions that may throw: `OpBranchConditional
  // %flag %thrown %rest 1 1000`, %flag the call's bool (or member 1 of its {T, bool}), %thrown a return.
  auto only_return = [&](uint32_t label) {
    auto k = at.find(label);
    return k != at.end() && f.blocks[k->second].insts.size() == 1 && f.blocks[k->second].insts[0].opcode == spv::OpReturn;
  };
  auto local = [&](uint32_t id) -> const Instruction* {
    auto k = local_def.find(id);
    return k == local_def.end() ? nullptr : k->second;
  };
  auto is_call_flag = [&](uint32_t id) {
    const Instruction* d = local(id);
    if (!d) return false;
    if (d->opcode == spv::OpCompositeExtract && d->size() == 5 && d->words[4] == 1) {
      const Instruction* whole = local(d->words[3]);
      return whole && whole->opcode == spv::OpFunctionCall && fn_index_.count(whole->word(3)) > 0;
    }
    return d->opcode == spv::OpFunctionCall && fn_index_.count(d->word(3)) > 0;
  };
  std::vector<uint32_t> checks;  // blocks ending in a flag check
  for (const Block& b : f.blocks) {
    const Instruction& t = b.insts.back();
    if (t.opcode == spv::OpBranchConditional && t.size() == 6 && t.words[4] == 1 && t.words[5] == 1000 &&
        only_return(t.words[2]) && is_call_flag(t.words[1]) && !throwing.count(b.id()))
      checks.push_back(b.id());
  }

  // Throw regions (connected throwing blocks), grown backwards through blocks that only lead into them.
  std::vector<std::set<uint32_t>> regions;
  {
    std::set<uint32_t> seen;
    for (const Block& b : f.blocks) {
      if (!throwing.count(b.id()) || seen.count(b.id())) continue;
      std::set<uint32_t> r;
      std::vector<uint32_t> work{b.id()};
      while (!work.empty()) {
        const uint32_t x = work.back();
        work.pop_back();
        if (!r.insert(x).second) continue;
        seen.insert(x);
        for (uint32_t s : branch_targets(f.blocks[at.at(x)].insts.back()))
          if (throwing.count(s)) work.push_back(s);
        for (uint32_t p : preds[x])
          if (throwing.count(p)) work.push_back(p);
      }
      regions.push_back(std::move(r));
    }
    for (auto& r : regions) {
      for (bool more = true; more;) {
        more = false;
        for (uint32_t x : std::vector<uint32_t>(r.begin(), r.end()))
          for (uint32_t p : preds[x]) {
            if (r.count(p) || p == f.blocks[0].id() || preds[p].size() != 1 || throwing.count(p)) continue;
            const Instruction& t = f.blocks[at.at(p)].insts.back();
            if (t.opcode != spv::OpBranch) continue;
            bool phis = f.blocks[at.at(p)].insts[0].opcode == spv::OpPhi;
            if (phis) continue;
            r.insert(p);
            more = true;
          }
      }
    }
  }
  if (checks.empty() && regions.empty()) return false;

  // Where a thrower goes on: the other target of the branch that entered the region (per entry edge).
  struct Entry {
    uint32_t pred, block, cont;
  };
  std::vector<std::vector<Entry>> entries(regions.size());
  std::vector<bool> usable(regions.size(), true);
  for (size_t r = 0; r < regions.size(); ++r) {
    for (uint32_t x : regions[r]) {
      if (x == f.blocks[0].id()) usable[r] = false;
      for (uint32_t p : preds[x]) {
        if (regions[r].count(p)) continue;
        const Instruction& t = f.blocks[at.at(p)].insts.back();
        const std::vector<uint32_t> ts = branch_targets(t);
        if (t.opcode != spv::OpBranchConditional || ts.size() != 2 || ts[0] == ts[1] ||
            (regions[r].count(ts[0]) > 0) == (regions[r].count(ts[1]) > 0)) {
          usable[r] = false;
          continue;
        }
        entries[r].push_back({p, x, regions[r].count(ts[0]) ? ts[1] : ts[0]});
      }
    }
    if (entries[r].empty()) usable[r] = false;
  }
  // A value of a region used outside it (other than by a return block's phi) cannot be cloned: one
  // look at every use in the function, whatever the number of regions.
  {
    std::map<uint32_t, size_t> region_of_block, region_of_value;
    for (size_t r = 0; r < regions.size(); ++r)
      for (uint32_t x : regions[r]) {
        region_of_block[x] = r;
        for (const Instruction& i : f.blocks[at.at(x)].insts)
          if (i.result_id) region_of_value[i.result_id] = r;
      }
    for (const Block& b : f.blocks) {
      auto in = region_of_block.find(b.id());
      for (const Instruction& i : b.insts) {
        if (i.opcode == spv::OpPhi) continue;
        for (uint32_t u : i.used_ids()) {
          auto d = region_of_value.find(u);
          if (d != region_of_value.end() && (in == region_of_block.end() || in->second != d->second))
            usable[d->second] = false;
        }
      }
    }
  }

  // Is a barrier reachable from where a thrower goes on? If not, a throw may return, as before.
  std::vector<uint32_t> starts;
  for (uint32_t c : checks) starts.push_back(f.blocks[at.at(c)].insts.back().words[3]);
  for (size_t r = 0; r < regions.size(); ++r)
    if (usable[r])
      for (const Entry& e : entries[r]) starts.push_back(e.cont);
  auto reachable_from = [&](const std::vector<uint32_t>& from) {
    std::set<uint32_t> seen;
    std::vector<uint32_t> work = from;
    while (!work.empty()) {
      const uint32_t x = work.back();
      work.pop_back();
      if (!at.count(x) || !seen.insert(x).second) continue;
      for (uint32_t s : branch_targets(f.blocks[at.at(x)].insts.back())) work.push_back(s);
    }
    return seen;
  };
  {
    bool barrier = false;
    for (uint32_t x : reachable_from(starts))
      for (const Instruction& i : f.blocks[at.at(x)].insts) barrier = barrier || barrier_at(i);
    if (!barrier) return false;
  }

  // ---- the rewrite ----
  thrown_ = fresh();
  {
    Insts& entry = f.blocks[0].insts;
    entry.insert(entry.begin(), make_variable(pointer_type(spv::StorageClassFunction, bool_type()), thrown_, spv::StorageClassFunction));
    size_t k = 0;
    while (k < entry.size() && entry[k].opcode == spv::OpVariable) ++k;
    entry.insert(entry.begin() + static_cast<std::ptrdiff_t>(k),
                 make_instruction(spv::OpStore, 0, 0, {thrown_, bool_constant(false)}));
  }
  // Flag checks: the thrower goes on with the flag set.
  std::vector<uint32_t> skip_starts;
  for (uint32_t c : checks) {
    Block& b = f.blocks[at.at(c)];
    const Instruction t = b.insts.back();
    const uint32_t old = fresh(), now = fresh();
    b.insts.pop_back();
    b.insts.push_back(make_instruction(spv::OpLoad, bool_type(), old, {thrown_}));
    b.insts.push_back(make_instruction(spv::OpLogicalOr, bool_type(), now, {old, t.words[1]}));
    b.insts.push_back(make_instruction(spv::OpStore, 0, 0, {thrown_, now}));
    Instruction br = make_instruction(spv::OpBranch, 0, 0, {t.words[3]});
    br.annotations = t.annotations;
    b.insts.push_back(std::move(br));
    skip_starts.push_back(t.words[3]);
  }
  // Throw regions: one copy per entry edge, each going on at its own continuation.
  std::vector<Block> added;
  for (size_t r = 0; r < regions.size(); ++r) {
    if (!usable[r]) continue;
    std::map<uint32_t, Block> originals;  // the region as it was, for every copy
    for (uint32_t x : regions[r]) originals[x] = f.blocks[at.at(x)];
    // Entries into one block whose continuations have no phis, and whose entering blocks define nothing
    // used beyond them (the shared exit does not come from there), share one copy, which goes on through
    // an OpSwitch on the entry it came from (clang -O2 sinks an unrolled loop's checks into one throw
    // block: one copy per check would repeat the whole cold path); the others get a copy each.
    std::vector<std::vector<size_t>> groups;
    {
      std::vector<size_t> shared;
      for (size_t e = 0; e < entries[r].size(); ++e) {
        const Block& c = f.blocks[at.at(entries[r][e].cont)];
        if (entries[r][e].block == entries[r][0].block && c.insts[0].opcode != spv::OpPhi &&
            !defines_live_out(f, at, entries[r][e].pred, regions[r]))
          shared.push_back(e);
      }
      if (shared.size() < 2) shared.clear();
      if (!shared.empty()) groups.push_back(shared);
      for (size_t e = 0; e < entries[r].size(); ++e)
        if (std::find(shared.begin(), shared.end(), e) == shared.end()) groups.push_back({e});
    }
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const std::vector<size_t>& grp = groups[gi];
      const bool first = gi == 0;
      const Entry& en = entries[r][grp[0]];
      auto enters = [&](uint32_t from, uint32_t block) {
        for (size_t e : grp)
          if (entries[r][e].pred == from && entries[r][e].block == block) return true;
        return false;
      };
      std::map<uint32_t, uint32_t> rename;  // this copy's ids (the first copy keeps the originals)
      if (!first) {
        for (uint32_t x : regions[r]) {
          rename[x] = fresh();
          for (const Instruction& i : originals.at(x).insts) {
            if (i.result_id) rename[i.result_id] = fresh();
            for (const Instruction& a : i.annotations)
              if (a.result_id) rename[a.result_id] = fresh();
          }
        }
      }
      auto mapped = [&](uint32_t id) { return rename.count(id) ? rename.at(id) : id; };
      const uint32_t exit = fresh();
      const uint32_t selector = grp.size() > 1 ? fresh() : 0;
      std::set<uint32_t> labels;  // this copy's blocks
      for (uint32_t x : regions[r]) labels.insert(mapped(x));
      std::vector<Block> copy;
      for (uint32_t x : regions[r]) {
        Block b = originals.at(x);
        // Phis keep the edges of this copy: from inside the region, and its own entry edge.
        for (Instruction& i : b.insts) {
          if (i.opcode != spv::OpPhi) break;
          std::vector<uint32_t> keep;
          for (size_t w = 3; w + 1 < i.size(); w += 2) {
            const uint32_t from = i.words[w + 1];
            if (regions[r].count(from) || enters(from, x)) keep.insert(keep.end(), {i.words[w], from});
          }
          Instruction n = make_instruction(spv::OpPhi, i.type_id, i.result_id, keep);
          n.annotations = std::move(i.annotations);
          i = std::move(n);
        }
        if (grp.size() > 1 && x == en.block) {
          // The selector: which entry this thrower came in by (itself along the region's own edges).
          std::vector<uint32_t> ops;
          for (size_t k = 0; k < grp.size(); ++k) ops.insert(ops.end(), {uint_constant(static_cast<uint32_t>(k)), entries[r][grp[k]].pred});
          for (uint32_t p : preds[x])
            if (regions[r].count(p)) ops.insert(ops.end(), {selector, p});
          b.insts.insert(b.insts.begin(), make_instruction(spv::OpPhi, int_type(32), selector, ops));
        }
        if (!first) {
          b.label.words[1] = b.label.result_id = mapped(b.id());
          for (Instruction& i : b.insts) {
            if (i.result_id) local_types_[mapped(i.result_id)] = i.type_id;
            set_result(i, mapped(i.result_id));
            for (Instruction& a : i.annotations) set_result(a, mapped(a.result_id));
            i.replace_ids(rename);
          }
        }
        // Exits (returns, branches out of the region) go to this copy's exit.
        Instruction& t = b.insts.back();
        if (t.opcode == spv::OpReturn || t.opcode == spv::OpReturnValue) {
          Instruction br = make_instruction(spv::OpBranch, 0, 0, {exit});
          br.annotations = t.annotations;
          t = std::move(br);
        } else {
          for (uint32_t s : branch_targets(t))
            if (!labels.count(s)) retarget(t, s, exit);
        }
        copy.push_back(std::move(b));
      }
      // The exit: the flag is set, and the thrower goes on where the check would have let it.
      Block x{make_instruction(spv::OpLabel, 0, exit, {}), {}};
      x.insts.push_back(make_instruction(spv::OpStore, 0, 0, {thrown_, bool_constant(true)}));
      if (grp.size() > 1) {
        Instruction sw = make_instruction(spv::OpSwitch, 0, 0, {selector, en.cont});
        for (size_t k = 1; k < grp.size(); ++k) {
          add_operand(sw, static_cast<uint32_t>(k), SPV_OPERAND_TYPE_LITERAL_INTEGER);
          add_operand(sw, entries[r][grp[k]].cont, SPV_OPERAND_TYPE_ID);
        }
        x.insts.push_back(std::move(sw));
      } else {
        x.insts.push_back(make_instruction(spv::OpBranch, 0, 0, {en.cont}));
      }
      copy.push_back(std::move(x));
      skip_starts.push_back(exit);
      // The continuation's phis take, from the exit, what they took from the entering branch (a
      // shared copy's continuations have none).
      Block& c = f.blocks[at.at(en.cont)];
      for (Instruction& i : c.insts) {
        if (i.opcode != spv::OpPhi) break;
        for (size_t w = 3; w + 1 < i.size(); w += 2)
          if (i.words[w + 1] == en.pred) {
            const uint32_t v = i.words[w];
            i.words.insert(i.words.end(), {v, exit});
            i.operands.push_back({SPV_OPERAND_TYPE_ID, static_cast<uint16_t>(i.words.size() - 2), 1});
            i.operands.push_back({SPV_OPERAND_TYPE_ID, static_cast<uint16_t>(i.words.size() - 1), 1});
            i.fix_word_count();
            break;
          }
      }
      // The entering branch goes to this copy.
      if (!first)
        for (size_t e : grp) retarget(f.blocks[at.at(entries[r][e].pred)].insts.back(), entries[r][e].block, mapped(entries[r][e].block));
      if (first) {
        for (Block& b : copy) {
          auto k = at.find(b.id());
          if (k != at.end()) f.blocks[k->second] = b;
          else added.push_back(b);
        }
      } else {
        added.insert(added.end(), copy.begin(), copy.end());
      }
    }
  }
  f.blocks.insert(f.blocks.end(), added.begin(), added.end());
  index();
  // Phis of the blocks a region used to exit to (returns) lose those edges.
  preds = preds_of();
  for (Block& b : f.blocks)
    for (Instruction& i : b.insts) {
      if (i.opcode != spv::OpPhi) break;
      std::vector<uint32_t> keep;
      const auto& p = preds[b.id()];
      for (size_t w = 3; w + 1 < i.size(); w += 2)
        if (std::find(p.begin(), p.end(), i.words[w + 1]) != p.end()) keep.insert(keep.end(), {i.words[w], i.words[w + 1]});
      if (keep.size() + 3 == i.size()) continue;
      Instruction n = make_instruction(spv::OpPhi, i.type_id, i.result_id, keep);
      n.annotations = std::move(i.annotations);
      i = std::move(n);
    }
  index();
  // Skip mode wherever a thrower can be: everything reachable from where it goes on.
  const std::set<uint32_t> skip = reachable_from(skip_starts);
  std::vector<Block> out;
  for (Block& b : f.blocks) {
    if (!skip.count(b.id())) {
      out.push_back(std::move(b));
      continue;
    }
    guard_block(std::move(b), out);
  }
  f.blocks = std::move(out);
  // The successors' phis name the last part of a split block.
  index();
  for (auto& [original, last] : split_to_)
    for (uint32_t s : branch_targets(f.blocks[at.at(last)].insts.back()))
      for (Instruction& i : f.blocks[at.at(s)].insts) {
        if (i.opcode != spv::OpPhi) break;
        for (size_t w = 4; w < i.size(); w += 2)
          if (i.words[w] == original) i.words[w] = last;
      }
  split_to_.clear();
  return true;
}

// True if block `b` defines a value used outside it and outside `region`.
bool Converger::defines_live_out(const Function& f, const std::map<uint32_t, size_t>& at, uint32_t b,
                             const std::set<uint32_t>& region) {
  std::set<uint32_t> defs;
  for (const Instruction& i : f.blocks[at.at(b)].insts)
    if (i.result_id) defs.insert(i.result_id);
  for (const Block& x : f.blocks) {
    if (x.id() == b || region.count(x.id())) continue;
    for (const Instruction& i : x.insts)
      for (uint32_t u : i.used_ids())
        if (defs.count(u)) return true;
  }
  return false;
}
}  // namespace barrier_throws
}  // namespace passes
}  // namespace zex
