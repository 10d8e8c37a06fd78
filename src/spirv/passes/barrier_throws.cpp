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
#include "spirv/passes/passes.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

namespace zex {
namespace passes {

namespace {

using Insts = std::vector<Instruction>;

// The scratch words: 64 ulongs, as large as the largest OpenCL C vector (long16, double16) and more.
constexpr uint32_t kScratchWords = 64;

struct Block {
  Instruction label;
  Insts insts;
  uint32_t id() const { return label.result_id; }
};

struct Function {
  size_t first = 0, last = 0;  // OpFunction, OpFunctionEnd in m.insts
  uint32_t id = 0;
  Insts head;  // OpFunctionParameters
  std::vector<Block> blocks;
};

bool is_atomic_on_pointer(uint16_t o) {
  return o == spv::OpAtomicLoad || o == spv::OpAtomicStore || (o >= spv::OpAtomicExchange && o <= spv::OpAtomicXor) ||
         o == spv::OpAtomicFlagTestAndSet || o == spv::OpAtomicFlagClear || o == spv::OpAtomicFMinEXT ||
         o == spv::OpAtomicFMaxEXT || o == spv::OpAtomicFAddEXT;
}

bool is_barrier_like(uint16_t o) {
  return o == spv::OpControlBarrier || o == spv::OpGroupAsyncCopy || o == spv::OpGroupWaitEvents ||
         (o >= spv::OpGroupAll && o <= spv::OpGroupUMax);
}

class Pass {
 public:
  explicit Pass(IRContext& ctx) : ctx_(ctx), m_(ctx.module()), next_(m_.header[3]) {}

  bool run() {
    for (size_t k = 0; k < m_.insts.size(); ++k)
      if (m_.insts[k].result_id) def_[m_.insts[k].result_id] = k;
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

 private:
  // ---- module facts ----
  void collect_functions() {
    for (size_t k = 0; k < m_.insts.size(); ++k) {
      if (m_.insts[k].opcode != spv::OpFunction) continue;
      Function f;
      f.first = k;
      f.id = m_.insts[k].result_id;
      size_t j = k + 1;
      for (; j < m_.insts.size() && m_.insts[j].opcode == spv::OpFunctionParameter; ++j) f.head.push_back(m_.insts[j]);
      for (; j < m_.insts.size() && m_.insts[j].opcode != spv::OpFunctionEnd; ++j) {
        if (m_.insts[j].opcode == spv::OpLabel)
          f.blocks.push_back({m_.insts[j], {}});
        else if (!f.blocks.empty())
          f.blocks.back().insts.push_back(m_.insts[j]);
        else
          throw std::invalid_argument("converge_throws_at_barriers: an instruction before the first block");
      }
      if (j == m_.insts.size()) throw std::invalid_argument("converge_throws_at_barriers: OpFunction without OpFunctionEnd");
      for (const Block& b : f.blocks)
        if (b.insts.empty() || !is_terminator(b.insts.back().opcode))
          throw std::invalid_argument("converge_throws_at_barriers: a block without a terminator");
      f.last = j;
      fn_index_[f.id] = fns_.size();
      fns_.push_back(std::move(f));
      k = j;
    }
  }

  // Functions that run a barrier or a group collective, themselves or through a call.
  void mark_barriers() {
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

  const Instruction* def(uint32_t id) const {
    auto k = def_.find(id);
    return k == def_.end() ? nullptr : &m_.insts[k->second];
  }
  uint32_t type_of(uint32_t id) const {
    auto k = local_types_.find(id);
    if (k != local_types_.end()) return k->second;
    const Instruction* d = def(id);
    return d ? d->type_id : 0;
  }
  // The storage class of pointer type `t`, or UINT32_MAX if `t` is not a pointer type.
  uint32_t storage_of(uint32_t t) const {
    const Instruction* d = def(t);
    return d && d->opcode == spv::OpTypePointer ? d->word(2) : UINT32_MAX;
  }

  bool barrier_at(const Instruction& i) const {
    return is_barrier_like(i.opcode) || (i.opcode == spv::OpFunctionCall && barrier_fns_.count(i.word(3)));
  }

  // ---- the kernel ----
  bool converge(Function& f) {
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
    auto preds_of = [&] {
      std::map<uint32_t, std::vector<uint32_t>> preds;
      for (const Block& b : f.blocks)
        for (uint32_t t : branch_targets(b.insts.back())) preds[t].push_back(b.id());
      return preds;
    };
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
    for (bool more = true; more;) {
      more = false;
      for (const Block& b : f.blocks) {
        if (throwing.count(b.id()) || b.id() == f.blocks[0].id()) continue;
        const auto& p = preds[b.id()];
        if (p.empty()) continue;
        if (std::all_of(p.begin(), p.end(), [&](uint32_t x) { return throwing.count(x) > 0; })) {
          throwing.insert(b.id());
          more = true;
        }
      }
    }
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
  static bool defines_live_out(const Function& f, const std::map<uint32_t, size_t>& at, uint32_t b,
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

  // Redirects the accesses of `b` for a thrower and branches around the calls it skips; `b` may become
  // several blocks (appended to `out`).
  void guard_block(Block b, std::vector<Block>& out) {
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

  bool is_void(uint32_t type) const {
    const Instruction* d = def(type);
    return d && d->opcode == spv::OpTypeVoid;
  }

  // What a thrower does not run at all.
  bool needs_skip(const Instruction& i) const {
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
  void redirect(Instruction& i, Insts& before, const std::function<uint32_t()>& load_flag) {
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

  // ---- new module-level ids ----
  uint32_t fresh() { return next_++; }
  Insts globals_;

  uint32_t find_global(uint16_t opcode, uint32_t type, const std::vector<uint32_t>& rest) {
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
  uint32_t add_global(Instruction i) {
    const uint32_t id = i.result_id;
    globals_.push_back(std::move(i));
    return id;
  }
  uint32_t bool_type() {
    if (uint32_t t = find_global(spv::OpTypeBool, 0, {})) return t;
    return add_global(make_instruction(spv::OpTypeBool, 0, fresh(), {}));
  }
  uint32_t int_type(uint32_t width) {
    if (uint32_t t = find_global(spv::OpTypeInt, 0, {width, 0})) return t;
    Instruction i = make_instruction(spv::OpTypeInt, 0, fresh(), {});
    add_operand(i, width, SPV_OPERAND_TYPE_LITERAL_INTEGER);
    add_operand(i, 0, SPV_OPERAND_TYPE_LITERAL_INTEGER);
    return add_global(std::move(i));
  }
  uint32_t pointer_type(uint32_t sc, uint32_t pointee) {
    if (uint32_t t = find_global(spv::OpTypePointer, 0, {sc, pointee})) return t;
    Instruction i = make_instruction(spv::OpTypePointer, 0, fresh(), {});
    add_operand(i, sc, SPV_OPERAND_TYPE_STORAGE_CLASS);
    add_operand(i, pointee, SPV_OPERAND_TYPE_ID);
    return add_global(std::move(i));
  }
  uint32_t bool_constant(bool v) {
    const uint32_t t = bool_type();
    const uint16_t o = v ? spv::OpConstantTrue : spv::OpConstantFalse;
    if (uint32_t c = find_global(o, t, {})) return c;
    return add_global(make_instruction(o, t, fresh(), {}));
  }
  uint32_t uint_constant(uint32_t v) {
    const uint32_t u32 = int_type(32);
    if (uint32_t c = find_global(spv::OpConstant, u32, {v})) return c;
    Instruction c = make_instruction(spv::OpConstant, u32, fresh(), {});
    add_operand(c, v, SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER);
    return add_global(std::move(c));
  }
  uint32_t null_constant(uint32_t type) {
    if (uint32_t c = find_global(spv::OpConstantNull, type, {})) return c;
    return add_global(make_instruction(spv::OpConstantNull, type, fresh(), {}));
  }
  // The value of a skipped call: zero. llvm-spirv-15 takes OpConstantNull only of composites and
  // pointers, so scalars get OpConstant 0 / false, and what is neither an OpUndef.
  uint32_t zero_value(uint32_t type) {
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
  uint32_t scratch_array() {
    if (scratch_array_) return scratch_array_;
    const uint32_t n = uint_constant(kScratchWords);
    return scratch_array_ = add_global(make_instruction(spv::OpTypeArray, 0, fresh(), {int_type(64), n}));
  }
  Instruction make_variable(uint32_t ptype, uint32_t id, uint32_t sc, uint32_t init = 0) {
    Instruction v = make_instruction(spv::OpVariable, ptype, id, {});
    add_operand(v, sc, SPV_OPERAND_TYPE_STORAGE_CLASS);
    if (init) add_operand(v, init, SPV_OPERAND_TYPE_ID);
    return v;
  }
  // The scratch variable of a storage class: reads (zeros, never written) or writes (never read).
  uint32_t scratch(uint32_t sc, bool write) {
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
  void set_result(Instruction& i, uint32_t id) {
    if (!i.result_id) return;
    for (const Operand& o : i.operands)
      if (o.type == SPV_OPERAND_TYPE_RESULT_ID) i.words[o.offset] = id;
    i.result_id = id;
  }

  void write_back() {
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

  IRContext& ctx_;
  Module& m_;
  uint32_t next_;
  std::map<uint32_t, size_t> def_;
  std::map<uint32_t, uint32_t> local_types_;
  std::map<uint32_t, std::string> zex_;
  std::vector<Function> fns_;
  std::map<uint32_t, size_t> fn_index_;
  std::set<uint32_t> barrier_fns_;
  std::map<std::pair<uint32_t, bool>, uint32_t> scratch_;
  std::vector<uint32_t> scratch_vars_;
  std::map<uint32_t, uint32_t> split_to_;
  uint32_t scratch_array_ = 0;
  uint32_t thrown_ = 0;
};

}  // namespace

Status converge_throws_at_barriers(IRContext& ctx) { return changed_if(Pass(ctx).run()); }

}  // namespace passes
}  // namespace zex
