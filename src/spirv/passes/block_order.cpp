// order_blocks: every function's blocks in dominance order (docs/spirv-passes.md, "Block order").
//
// Why: llvm-spirv-15 writes blocks in LLVM's layout order, and clang -O2 leaves a loop's exit block
// before the loop body whenever the exit is reached only from the body (a loop with a constant trip
// count whose value is used after it; Rodinia's nw and kmeans). SPIR-V requires every block to come
// after its dominator; SPIRV-Tools' validator refuses such a module ("Block ... appears in the binary
// before its dominator", or "ID ... has not been defined" for the body's value used in the exit),
// while Intel's driver and llvm-spirv (zex-cpu) read it, since they rebuild the CFG from the branches.
// Reordering the blocks changes no branch, value or line: only where a block sits in the binary.
//
// What: a function whose order is already valid (each reachable block after its immediate dominator)
// is left exactly as it is. Any other gets a reverse post-order of its CFG from the entry block (so
// the entry stays first and every block follows its dominators), then the unreachable blocks in a
// reverse post-order of their own. A successor that appears earlier in the binary is visited later,
// so the order stays as close to the original as the dominance order allows. Lines and debug scopes
// ride on the instructions they annotate (ir.hpp) and move with their block. A function whose shape
// the pass does not know (a block without a terminator, a branch to a label outside it) is left alone
// for the validator to report.
#include "spirv/passes/passes.hpp"

#include <algorithm>
#include <iterator>
#include <unordered_map>
#include <utility>

namespace zex {
namespace passes {

namespace {

struct BlockRange {  // a block in place: no copy of its instructions
  size_t begin, end;  // [begin, end) in Module::insts, OpLabel first, terminator last
  std::vector<size_t> succ, pred;
};

// The blocks of the function whose instructions are [first_label, function_end), or false if the
// function has a shape the pass does not know.
bool blocks_of(const Module& m, size_t first_label, size_t function_end, std::vector<BlockRange>& blocks) {
  std::unordered_map<uint32_t, size_t> index;  // label -> block
  for (size_t k = first_label; k < function_end; ++k) {
    if (m.insts[k].opcode != spv::OpLabel) continue;
    if (!blocks.empty()) blocks.back().end = k;
    index.emplace(m.insts[k].result_id, blocks.size());
    blocks.push_back({k, function_end, {}, {}});
  }
  for (size_t b = 0; b < blocks.size(); ++b) {
    const Instruction& t = m.insts[blocks[b].end - 1];
    if (!is_terminator(t.opcode)) return false;
    for (uint32_t label : branch_targets(t)) {
      auto it = index.find(label);
      if (it == index.end()) return false;
      if (std::find(blocks[b].succ.begin(), blocks[b].succ.end(), it->second) == blocks[b].succ.end()) {
        blocks[b].succ.push_back(it->second);
        blocks[it->second].pred.push_back(b);
      }
    }
  }
  return true;
}

// Appends to `rpo` the reverse post-order of the blocks reached from `root` and not yet `seen`.
// Iterative (a function may have thousands of blocks); the successors in decreasing binary position,
// so that the earliest one ends up first after its block.
void reverse_post_order(const std::vector<BlockRange>& blocks, size_t root, std::vector<char>& seen,
                        std::vector<size_t>& rpo) {
  std::vector<size_t> post;
  std::vector<std::pair<size_t, std::vector<size_t>>> stack;
  auto push = [&](size_t b) {
    seen[b] = 1;
    std::vector<size_t> next = blocks[b].succ;
    std::sort(next.begin(), next.end());  // popped from the back: the latest first
    stack.emplace_back(b, std::move(next));
  };
  push(root);
  while (!stack.empty()) {
    auto& [b, next] = stack.back();
    if (next.empty()) {
      post.push_back(b);
      stack.pop_back();
      continue;
    }
    const size_t s = next.back();
    next.pop_back();
    if (!seen[s]) push(s);
  }
  rpo.insert(rpo.end(), post.rbegin(), post.rend());
}

// True if every block reachable from the entry comes after its immediate dominator (Cooper, Harvey
// and Kennedy's iteration over the reverse post-order `rpo` of the reachable blocks).
bool dominance_ordered(const std::vector<BlockRange>& blocks, const std::vector<size_t>& rpo) {
  constexpr size_t kNone = static_cast<size_t>(-1);
  std::vector<size_t> at(blocks.size(), kNone), idom(blocks.size(), kNone);
  for (size_t k = 0; k < rpo.size(); ++k) at[rpo[k]] = k;
  idom[rpo[0]] = rpo[0];
  auto intersect = [&](size_t a, size_t b) {
    while (a != b) {
      while (at[a] > at[b]) a = idom[a];
      while (at[b] > at[a]) b = idom[b];
    }
    return a;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t k = 1; k < rpo.size(); ++k) {
      const size_t b = rpo[k];
      size_t d = kNone;
      for (size_t p : blocks[b].pred)
        if (idom[p] != kNone) d = d == kNone ? p : intersect(p, d);
      if (d != idom[b]) idom[b] = d, changed = true;
    }
  }
  // Blocks are numbered in binary order, so "after" is a larger number.
  for (size_t k = 1; k < rpo.size(); ++k)
    if (idom[rpo[k]] >= rpo[k]) return false;
  return true;
}

// The new order of the function's blocks, or empty if its order is valid already.
std::vector<size_t> new_order(const std::vector<BlockRange>& blocks) {
  std::vector<char> seen(blocks.size(), 0);
  std::vector<size_t> order;
  reverse_post_order(blocks, 0, seen, order);
  if (dominance_ordered(blocks, order)) return {};
  // Unreachable blocks: those without predecessors first, as roots, then any cycle left.
  for (int pass = 0; pass < 2; ++pass)
    for (size_t b = 0; b < blocks.size(); ++b)
      if (!seen[b] && (pass == 1 || blocks[b].pred.empty())) reverse_post_order(blocks, b, seen, order);
  return order;
}

}  // namespace

Status order_blocks(IRContext& ctx) {
  Module& m = ctx.module();
  std::vector<Instruction> out;
  size_t copied = 0;  // m.insts[0, copied) are in `out` (once a function has changed)
  bool changed = false;
  for (size_t f = 0; f < m.insts.size(); ++f) {
    if (m.insts[f].opcode != spv::OpFunction) continue;
    size_t first = f + 1, end = f + 1;
    while (first < m.insts.size() && m.insts[first].opcode == spv::OpFunctionParameter) ++first;
    end = first;
    while (end < m.insts.size() && m.insts[end].opcode != spv::OpFunctionEnd) ++end;
    std::vector<BlockRange> blocks;
    if (end == m.insts.size() || first == end || m.insts[first].opcode != spv::OpLabel ||
        !blocks_of(m, first, end, blocks)) {
      f = end;
      continue;
    }
    const std::vector<size_t> order = new_order(blocks);
    if (order.empty()) {
      f = end;
      continue;
    }
    if (!changed) out.reserve(m.insts.size());
    changed = true;
    std::move(m.insts.begin() + static_cast<std::ptrdiff_t>(copied), m.insts.begin() + static_cast<std::ptrdiff_t>(first),
              std::back_inserter(out));
    for (size_t b : order)
      std::move(m.insts.begin() + static_cast<std::ptrdiff_t>(blocks[b].begin),
                m.insts.begin() + static_cast<std::ptrdiff_t>(blocks[b].end), std::back_inserter(out));
    copied = end;
    f = end;
  }
  if (!changed) return Status::Unchanged;
  std::move(m.insts.begin() + static_cast<std::ptrdiff_t>(copied), m.insts.end(), std::back_inserter(out));
  m.insts = std::move(out);
  return Status::Changed;
}

}  // namespace passes
}  // namespace zex
