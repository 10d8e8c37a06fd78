// add_stop_checks: early stop (cfg.stop_on_throw, issue 26 item 3) on a linked module.
//
// A launch with stop_on_throw runs the module zex built for early stop: this pass applied to the
// linked module (device library included), then specialized per level as ever. Every kernel whose last
// parameter is a zex_state_t gets a new entry block that calls the device library's zex_stop_requested
// with the state's three words and returns at once if it says so; otherwise it branches to the
// kernel's old entry. So the work-groups that start after a throw skip their work, and so do the
// launches after it on the same stream (until synchronize) or in the same graph execution (until the
// execution's epilogue resets the slot); each still completes, so nothing waits forever.
//
// - A kernel whose call tree has a work-group barrier or any other group instruction asks the uniform
//   question (zex_stop_requested's `uniform` 1: did an *earlier* launch throw?): the answer is the same
//   for every work-item of a launch, so a work-group never splits at a barrier. Other kernels ask
//   whether anything claimed the slot, this launch's own work-items included.
// - The kernel's OpVariables move into the new entry block (SPIR-V wants them in the first block), and
//   the old entry keeps everything else: it was the entry, so nothing branched to it, and now only the
//   new block does (never a loop header: issue 24 found one made so).
// - Only the linked module is changed, and only for launches that ask: a module without
//   stop_on_throw launches never runs this pass and its kernels are exactly as before.
//
// docs/spirv-passes.md ("Early stop") and docs/abi.md ("Early stop").
#include "spirv/passes/passes.hpp"

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace zex {
namespace passes {

namespace {

constexpr const char* kStopFunction = "zex_stop_requested";

// Instructions a work-group or sub-group executes together: a work-item that left before them would
// leave its group waiting (barriers) or give it a wrong answer (collectives, shuffles).
bool is_group_instruction(uint16_t o) {
  return o == spv::OpControlBarrier || o == spv::OpGroupAsyncCopy || o == spv::OpGroupWaitEvents ||
         (o >= spv::OpGroupAll && o <= spv::OpGroupUMax) ||
         (o >= spv::OpGroupNonUniformElect && o <= spv::OpGroupNonUniformQuadSwap) ||
         (o >= spv::OpSubgroupShuffleINTEL && o <= spv::OpSubgroupImageBlockWriteINTEL) ||
         (o >= spv::OpGroupIAddNonUniformAMD && o <= spv::OpGroupSMaxNonUniformAMD);
}

// The pass on one module; the module is only read until apply().
class StopChecks {
 public:
  explicit StopChecks(IRContext& ctx) : ctx_(ctx), m_(ctx.module()) {}
  Status run();

 private:
  uint32_t find_stop_function();
  void collect_group_functions();
  bool state_param(const Instruction& param, uint32_t* struct_type) ;
  uint32_t constant_u32(uint32_t value);
  uint32_t bool_type();

  IRContext& ctx_;
  Module& m_;
  std::map<uint32_t, const Instruction*> defs_;
  uint32_t fn_ = 0, u32_ = 0, u64_ = 0, bool_ = 0;
  std::set<uint32_t> group_fns_;  // functions whose call tree executes a group instruction
  std::vector<Instruction> globals_;  // types and constants to add before the first function
  std::map<uint32_t, uint32_t> constants_;
};

uint32_t StopChecks::find_stop_function() {
  for (const auto& [id, name] : ctx_.exports())
    if (name == kStopFunction) return id;
  // A module linked by SPIRV-Tools' linker keeps the library's exports too; its names stay either way.
  for (const Instruction& i : m_.insts)
    if (i.opcode == spv::OpName && i.string_at(2) == kStopFunction) {
      const Instruction* d = ctx_.def(i.word(1));
      if (d && d->opcode == spv::OpFunction) return i.word(1);
    }
  return 0;
}

void StopChecks::collect_group_functions() {
  std::map<uint32_t, std::set<uint32_t>> callees;
  uint32_t current = 0;
  for (const Instruction& i : m_.insts) {
    if (i.opcode == spv::OpFunction) current = i.result_id;
    else if (i.opcode == spv::OpFunctionEnd) current = 0;
    else if (current && i.opcode == spv::OpFunctionCall) callees[current].insert(i.word(3));
    else if (current && is_group_instruction(i.opcode)) group_fns_.insert(current);
  }
  // Callers of group functions, to a fixed point (call graphs are small; recursion is not OpenCL C).
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [f, cs] : callees) {
      if (group_fns_.count(f)) continue;
      for (uint32_t c : cs)
        if (group_fns_.count(c)) {
          group_fns_.insert(f);
          grew = true;
          break;
        }
    }
  }
}

// A zex_state_t parameter: a struct of three 64-bit integers, by value or through a Function-storage
// pointer (llvm-spirv's ByVal form), as kernels_without_state recognizes it.
bool StopChecks::state_param(const Instruction& param, uint32_t* struct_type) {
  auto def = [&](uint32_t id) -> const Instruction* {
    auto it = defs_.find(id);
    return it == defs_.end() ? nullptr : it->second;
  };
  const Instruction* t = def(param.type_id);
  if (t && t->opcode == spv::OpTypePointer && t->word(2) == spv::StorageClassFunction) t = def(t->word(3));
  if (!t || t->opcode != spv::OpTypeStruct || t->size() != 5) return false;
  for (size_t k = 2; k < 5; ++k)
    if (t->word(k) != u64_) return false;
  *struct_type = t->result_id;
  return true;
}

uint32_t StopChecks::constant_u32(uint32_t value) {
  auto it = constants_.find(value);
  if (it != constants_.end()) return it->second;
  for (const Instruction& i : m_.insts)
    if (i.opcode == spv::OpConstant && i.type_id == u32_ && i.size() == 4 && i.words[3] == value) {
      constants_[value] = i.result_id;
      return i.result_id;
    }
  Instruction c = make_instruction(spv::OpConstant, u32_, ctx_.take_id(), {});
  add_operand(c, value, SPV_OPERAND_TYPE_TYPED_LITERAL_NUMBER);
  globals_.push_back(c);
  constants_[value] = c.result_id;
  return c.result_id;
}

uint32_t StopChecks::bool_type() {
  if (bool_) return bool_;
  for (const Instruction& i : m_.insts)
    if (i.opcode == spv::OpTypeBool) return bool_ = i.result_id;
  Instruction b = make_instruction(spv::OpTypeBool, 0, ctx_.take_id(), {});
  globals_.push_back(b);
  return bool_ = b.result_id;
}

Status StopChecks::run() {
  fn_ = find_stop_function();
  if (!fn_)
    throw std::invalid_argument(std::string("add_stop_checks: the module has no ") + kStopFunction +
                                " (the device library linked into it predates early stop)");
  // zex_stop_requested(ulong report, ulong claim, ulong launch_id, uint uniform) -> uint
  const size_t at = ctx_.def_index(fn_);
  const Instruction& f = m_.insts[at];
  std::vector<uint32_t> ptypes;
  for (size_t k = at + 1; k < m_.insts.size() && m_.insts[k].opcode == spv::OpFunctionParameter; ++k)
    ptypes.push_back(m_.insts[k].type_id);
  for (const Instruction& i : m_.insts)
    if (i.result_id) defs_[i.result_id] = &i;
  auto is_int = [&](uint32_t id, uint32_t bits) {
    const Instruction* t = defs_.count(id) ? defs_[id] : nullptr;
    return t && t->opcode == spv::OpTypeInt && t->word(2) == bits;
  };
  if (ptypes.size() != 4 || !is_int(f.type_id, 32) || !is_int(ptypes[0], 64) || ptypes[1] != ptypes[0] ||
      ptypes[2] != ptypes[0] || ptypes[3] != f.type_id)
    throw std::invalid_argument(std::string("add_stop_checks: ") + kStopFunction + " has not the signature uint(ulong, ulong, ulong, uint)");
  u32_ = f.type_id;
  u64_ = ptypes[0];
  collect_group_functions();

  std::set<uint32_t> entries;
  for (const Instruction& i : m_.insts)
    if (i.opcode == spv::OpEntryPoint && i.size() > 2 && i.words[1] == spv::ExecutionModelKernel) entries.insert(i.words[2]);

  // The new entry blocks, by the index of the old entry's OpLabel; the OpVariables they take.
  struct Edit {
    std::vector<Instruction> head;  // new entry block and return block, inserted before the old label
    std::set<size_t> moved;         // indexes of the OpVariables moved into `head`
  };
  // llvm-spirv-15 makes each kernel an entry-point wrapper that only calls the kernel's body (a
  // function of the kernel's name), and its reverse translation (zex-cpu's path) runs the body as the
  // kernel: so the check goes into the body, when only the wrapper calls it (as converge_throws_at_
  // barriers decides), else into the entry point itself.
  std::map<uint32_t, uint32_t> calls;  // defined function -> call sites
  std::map<uint32_t, uint32_t> only_call;  // entry point -> the one defined function its one block calls
  {
    std::set<uint32_t> defined;
    for (const IRContext::FunctionRange& r : ctx_.functions())
      if (r.defined) defined.insert(r.id);
    uint32_t current = 0, labels = 0, callee = 0, others = 0;
    for (const Instruction& i : m_.insts) {
      if (i.opcode == spv::OpFunction) current = i.result_id, labels = callee = others = 0;
      else if (!current) continue;
      else if (i.opcode == spv::OpLabel) ++labels;
      else if (i.opcode == spv::OpFunctionCall && defined.count(i.word(3))) {
        ++calls[i.word(3)];
        callee ? ++others : callee = i.word(3);
      } else if (i.opcode == spv::OpFunctionEnd) {
        if (entries.count(current) && labels == 1 && callee && !others) only_call[current] = callee;
        current = 0;
      }
    }
  }
  std::set<uint32_t> targets;
  for (uint32_t e : entries) {
    auto b = only_call.find(e);
    targets.insert(b != only_call.end() && calls[b->second] == 1 && !entries.count(b->second) ? b->second : e);
  }

  std::map<size_t, Edit> edits;
  for (size_t k = 0; k < m_.insts.size(); ++k) {
    const Instruction& fi = m_.insts[k];
    if (fi.opcode != spv::OpFunction || !targets.count(fi.result_id)) continue;
    size_t p = k + 1;
    const Instruction* last = nullptr;
    for (; p < m_.insts.size() && m_.insts[p].opcode == spv::OpFunctionParameter; ++p) last = &m_.insts[p];
    if (p >= m_.insts.size() || m_.insts[p].opcode != spv::OpLabel) continue;  // a declaration
    uint32_t st = 0;
    if (!last || !state_param(*last, &st)) continue;  // a kernel zex does not launch with a state
    const Instruction* rt = defs_.count(fi.type_id) ? defs_[fi.type_id] : nullptr;
    if (!rt || rt->opcode != spv::OpTypeVoid) continue;  // kernels return void; anything else is left alone

    Edit e;
    const uint32_t entry = ctx_.take_id(), stop = ctx_.take_id(), old = m_.insts[p].result_id;
    e.head.push_back(make_instruction(spv::OpLabel, 0, entry, {}));
    for (size_t q = p + 1; q < m_.insts.size() && m_.insts[q].opcode != spv::OpFunctionEnd && m_.insts[q].opcode != spv::OpLabel; ++q)
      if (m_.insts[q].opcode == spv::OpVariable) {
        e.head.push_back(m_.insts[q]);
        e.moved.insert(q);
      }
    uint32_t value = last->result_id;
    if (st != last->type_id) {  // by pointer: load the struct
      value = ctx_.take_id();
      e.head.push_back(make_instruction(spv::OpLoad, st, value, {last->result_id}));
    }
    uint32_t words[3];
    for (uint32_t w = 0; w < 3; ++w) {
      words[w] = ctx_.take_id();
      Instruction x = make_instruction(spv::OpCompositeExtract, u64_, words[w], {value});
      add_operand(x, w, SPV_OPERAND_TYPE_LITERAL_INTEGER);
      e.head.push_back(x);
    }
    const uint32_t uniform = constant_u32(group_fns_.count(fi.result_id) ? 1u : 0u);
    const uint32_t asked = ctx_.take_id(), yes = ctx_.take_id();
    e.head.push_back(make_instruction(spv::OpFunctionCall, u32_, asked, {fn_, words[0], words[1], words[2], uniform}));
    e.head.push_back(make_instruction(spv::OpINotEqual, bool_type(), yes, {asked, constant_u32(0)}));
    e.head.push_back(make_instruction(spv::OpBranchConditional, 0, 0, {yes, stop, old}));
    e.head.push_back(make_instruction(spv::OpLabel, 0, stop, {}));
    e.head.push_back(make_instruction(spv::OpReturn, 0, 0, {}));
    edits[p] = std::move(e);
  }
  if (edits.empty()) return Status::Unchanged;

  std::set<size_t> moved;
  for (const auto& [p, e] : edits) moved.insert(e.moved.begin(), e.moved.end());
  std::vector<Instruction> out;
  out.reserve(m_.insts.size() + globals_.size() + 16 * edits.size());
  bool globals_placed = false;
  for (size_t k = 0; k < m_.insts.size(); ++k) {
    if (!globals_placed && m_.insts[k].opcode == spv::OpFunction) {
      out.insert(out.end(), globals_.begin(), globals_.end());
      globals_placed = true;
    }
    auto e = edits.find(k);
    if (e != edits.end()) out.insert(out.end(), e->second.head.begin(), e->second.head.end());
    if (!moved.count(k)) out.push_back(std::move(m_.insts[k]));
  }
  m_.insts = std::move(out);
  return Status::Changed;
}

}  // namespace

Status add_stop_checks(IRContext& ctx) { return StopChecks(ctx).run(); }

}  // namespace passes
}  // namespace zex
