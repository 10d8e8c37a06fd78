// complete_entry_point_interfaces: every module-scope variable an entry point statically uses is
// listed in its OpEntryPoint, as SPIR-V 1.4+ requires (docs/spirv-passes.md).
//
// Since SPIR-V 1.4 an entry point's interface must list every global OpVariable its static call tree
// references, not only Input/Output ones. llvm-spirv-15 lists the variables its functions name
// directly, but not those reached only through constants: a program-scope table of strings
// (`__constant char* const t[2] = {"a", "b"}`) is a variable whose initializer is an
// OpConstantComposite of OpSpecConstantOp addresses of the string variables, and the strings are
// missing. SPIRV-Tools 2023.1 refuses that ("... is not listed as an interface"); Intel's driver
// builds it. Listing them is what the rule asks for, and a superset of the used variables is allowed.
//
// "Used" is what SPIRV-Tools 2023.1 checks (source/val/validate_interfaces.cpp,
// check_interface_variable, and ValidationState_t::RegisterInstruction):
//  - a use is an <id> or <type id> operand naming an instruction defined *earlier* (the validator
//    records uses as it registers instructions in order, so OpEntryPoint, OpName and decorations,
//    which precede the variables, do not count);
//  - a variable is used by function F if a user is inside F, or a module-scope user (a constant, an
//    OpSpecConstantOp, another variable it initializes) is itself used by F, transitively;
//  - an entry point uses F if F is in its OpFunctionCall tree;
//  - the variables checked are every OpVariable whose storage class is not Function (SPIR-V 1.4+),
//    or the Input and Output ones (before 1.4: after the link, the device library's built-ins, which
//    its functions read and only the linked module's entry points can list, as SPIRV-Tools' linker
//    does).
// Debug instructions count as users here (the validator sees them when it is run on the whole
// module); zex's own validation sets them aside, so at worst a variable only debug information names
// is listed too, which the rule allows.
#include "spirv/passes/passes.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

namespace zex {
namespace passes {

namespace {

constexpr uint32_t kVersion14 = 0x00010400u;

// Who uses an id: the functions with a user inside them, and module-scope users (by result id).
struct Uses {
  std::set<uint32_t> functions;
  std::vector<uint32_t> globals;
};

struct Graph {
  std::unordered_map<uint32_t, Uses> uses;
  std::map<uint32_t, std::set<uint32_t>> callees;  // function -> functions it calls
  std::vector<uint32_t> variables;                   // OpVariables not of storage class Function, in order

  explicit Graph(const Module& m) {
    // The variables an interface lists: every module-scope one since SPIR-V 1.4, Input/Output before.
    const bool all = m.header[1] >= kVersion14;
    auto listed_kind = [&](const Instruction& i) {
      if (i.opcode != spv::OpVariable || i.size() < 4 || !i.result_id) return false;
      const uint32_t sc = i.words[3];
      return all ? sc != spv::StorageClassFunction : sc == spv::StorageClassInput || sc == spv::StorageClassOutput;
    };
    // Only uses of variables, and of module-scope values built from variables (a constant table of
    // pointers), are followed: the types and constants every function uses are not recorded.
    // An id is marked when it is defined, so a use of an unmarked one is also a forward reference.
    const size_t bound = m.header[3];
    std::vector<bool> followed(bound);
    uint32_t function = 0;  // the function being read, 0 at module scope
    auto visit = [&](const Instruction& i, uint32_t in) {
      bool uses_followed = false;
      for (const Operand& o : i.operands) {
        if (o.type != SPV_OPERAND_TYPE_ID && o.type != SPV_OPERAND_TYPE_TYPE_ID) continue;
        const uint32_t id = i.word(o.offset);
        // Not followed, or a forward reference (the validator records no use of those).
        if (id >= bound || !followed[id]) continue;
        uses_followed = true;
        if (in)
          uses[id].functions.insert(in);
        else if (i.result_id)
          uses[id].globals.push_back(i.result_id);
      }
      if (i.result_id && i.result_id < bound && !in && (uses_followed || listed_kind(i))) followed[i.result_id] = true;
    };
    for (const Instruction& i : m.insts) {
      if (i.opcode == spv::OpFunction) function = i.result_id;
      // Lines before OpFunction are at module scope; those inside a function belong to it.
      for (const Instruction& a : i.annotations) visit(a, i.opcode == spv::OpFunction ? 0 : function);
      visit(i, function);
      if (i.opcode == spv::OpFunctionCall && function && i.size() >= 4) callees[function].insert(i.words[3]);
      if (listed_kind(i)) variables.push_back(i.result_id);
      if (i.opcode == spv::OpFunctionEnd) function = 0;
    }
  }

  // The functions that use `var`, following module-scope users to their users.
  std::set<uint32_t> functions_using(uint32_t var) const {
    std::set<uint32_t> fns;
    reach(var, [&](uint32_t id, std::vector<uint32_t>& next) {
      auto it = uses.find(id);
      if (it == uses.end()) return;
      fns.insert(it->second.functions.begin(), it->second.functions.end());
      next.insert(next.end(), it->second.globals.begin(), it->second.globals.end());
    });
    return fns;
  }

  // The entry function and every function it calls, transitively.
  std::set<uint32_t> call_tree(uint32_t entry) const {
    return reach(entry, [&](uint32_t f, std::vector<uint32_t>& next) {
      auto it = callees.find(f);
      if (it != callees.end()) next.insert(next.end(), it->second.begin(), it->second.end());
    });
  }

  // Every id reached from `start`: `step(id, next)` appends what `id` leads to; each id is visited once.
  template <class Step>
  static std::set<uint32_t> reach(uint32_t start, Step step) {
    std::set<uint32_t> seen{start};
    std::vector<uint32_t> work{start}, next;
    while (!work.empty()) {
      const uint32_t id = work.back();
      work.pop_back();
      next.clear();
      step(id, next);
      for (uint32_t n : next)
        if (seen.insert(n).second) work.push_back(n);
    }
    return seen;
  }
};

}  // namespace

Status complete_entry_point_interfaces(IRContext& ctx) {
  Module& m = ctx.module();
  const Graph g(m);
  // function -> the variables it uses, as indices into g.variables (the order of their definitions):
  // each entry point then looks only at the variables of its own call tree, not at every variable of
  // the module (a module of thousands of kernels has thousands of each).
  std::map<uint32_t, std::vector<size_t>> used_by;
  for (size_t k = 0; k < g.variables.size(); ++k)
    for (uint32_t f : g.functions_using(g.variables[k])) used_by[f].push_back(k);
  bool changed = false;
  for (Instruction& e : m.insts) {
    if (e.opcode == spv::OpFunction) break;  // entry points precede every function
    // OpEntryPoint: execution model, entry function, name, then the interface <id>s.
    if (e.opcode != spv::OpEntryPoint || e.operands.size() < 3 || !is_id_use(e.operands[1].type)) continue;
    std::set<uint32_t> listed;
    for (size_t k = 3; k < e.operands.size(); ++k) listed.insert(e.word(e.operands[k].offset));
    std::set<size_t> used;  // ordered: the missing variables are appended in the order of their definitions
    for (uint32_t f : g.call_tree(e.word(e.operands[1].offset))) {
      auto it = used_by.find(f);
      if (it != used_by.end()) used.insert(it->second.begin(), it->second.end());
    }
    for (size_t k : used) {
      const uint32_t v = g.variables[k];
      if (listed.count(v)) continue;
      if (e.size() >= 0xffff) break;  // no room left in the instruction's word count
      add_operand(e, v, SPV_OPERAND_TYPE_ID);
      listed.insert(v);
      changed = true;
    }
  }
  return changed_if(changed);
}

}  // namespace passes
}  // namespace zex
