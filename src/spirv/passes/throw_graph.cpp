// number_throw_paths, the call graph (throw_paths.hpp): the module's defined functions copied into
// blocks, their calls to each other and to zex's throw entry points with the debug location of each,
// the entry-point wrappers llvm-spirv-15 writes, and which functions may throw.
#include "spirv/passes/throw_paths.hpp"

#include <spirv/unified1/OpenCLDebugInfo100.h>

#include <functional>
#include <set>
#include <string>

namespace zex {
namespace passes {
namespace throw_paths {

bool CallGraph::build(IRContext& ctx) {
  for (auto& [id, name] : ctx.imports()) {
    static const std::set<std::string> entries{"zex_throw", "zex_throw_site", "zex_report_exception",
                                               "zex_report_exception_values", "zex_report_frame",
                                               "zex_signal_exception"};
    if (entries.count(name)) throw_entry[id] = name;
  }
  if (throw_entry.empty()) return false;
  for (const Instruction& i : ctx.module().insts)
    if (i.opcode == spv::OpExtInstImport && i.string_at(2) == "OpenCL.DebugInfo.100") debug_set = i.result_id;
  return collect_functions(ctx) && mark_may_throw();
}

bool CallGraph::collect_functions(IRContext& ctx) {
  const Module& m_ = ctx.module();
  for (size_t k = 0; k < m_.insts.size(); ++k) {
    if (m_.insts[k].opcode != spv::OpFunction) continue;
    Function f;
    f.id = m_.insts[k].result_id;
    f.first = k;
    size_t j = k + 1;
    while (j < m_.insts.size() && m_.insts[j].opcode != spv::OpFunctionEnd) ++j;
    if (j == m_.insts.size()) return false;
    f.blocks = split_blocks(m_.insts.data() + k + 1, m_.insts.data() + j, &f.head);
    f.last = j;
    k = j;
    if (f.blocks.empty()) continue;  // a declaration (the zex imports)
    if (!blocks_terminated(f.blocks)) return false;
    f.entry = ctx.is_entry_point(f.id);
    fn_index[f.id] = fns.size();
    fns.push_back(std::move(f));
  }
  for (Function& f : fns) {
    for (size_t b = 0; b < f.blocks.size(); ++b) {
      Loc loc;
      for (size_t k = 0; k < f.blocks[b].insts.size(); ++k) {
        const Instruction& i = f.blocks[b].insts[k];
        for (const Instruction& a : i.annotations) {
          if (a.opcode == spv::OpLine) {
            loc.file = a.word(1);
            loc.line = a.word(2);
          } else if (a.opcode == spv::OpNoLine) {
            loc.file = loc.line = 0;
          } else if (is_debug(a, OpenCLDebugInfo100DebugScope)) {
            loc.scope = a.word(5);
            loc.inlined = a.size() > 6 ? a.word(6) : 0;
          } else if (is_debug(a, OpenCLDebugInfo100DebugNoScope)) {
            loc.scope = loc.inlined = 0;
          }
        }
        if (i.opcode != spv::OpFunctionCall) continue;
        const uint32_t callee = i.word(3);
        if (ctx.is_entry_point(callee)) return false;  // a kernel called as a function
        if (fn_index.count(callee) || throw_entry.count(callee)) f.calls.push_back({b, k, callee, loc});
      }
    }
    // llvm-spirv-15 writes each kernel as a function and an entry point that only calls it.
    if (f.entry && f.blocks.size() == 1 && f.calls.size() == 1 && fn_index.count(f.calls[0].callee)) {
      size_t real = 0;
      for (const Instruction& i : f.blocks[0].insts) real += i.opcode != spv::OpLine && i.opcode != spv::OpNoLine;
      f.wrapper = real == 2;
    }
  }
  // The function a wrapper calls is the kernel for every reader of the module: llvm-spirv's reverse
  // translation (and so zex-cpu's and Intel's front ends) gives it the kernel's calling convention,
  // which requires a void return. It keeps its type and ends the work-item by returning, as a kernel
  // does; a module that calls it from anywhere else is left alone.
  std::map<uint32_t, size_t> calls_to;
  for (const Function& f : fns)
    for (const Call& c : f.calls) ++calls_to[c.callee];
  for (Function& f : fns)
    if (f.wrapper) {
      Function& body = fns[fn_index.at(f.calls[0].callee)];
      if (calls_to[body.id] != 1 || body.entry) return false;
      body.kernel_body = true;
    }
  return true;
}

// zex_throw, zex_throw_site, and the three-call protocol's last call: the throw is complete.
bool CallGraph::completes_throw(uint32_t callee) const {
  auto e = throw_entry.find(callee);
  return e != throw_entry.end() &&
         (e->second == "zex_throw" || e->second == "zex_throw_site" || e->second == "zex_signal_exception");
}
bool CallGraph::has_throw_call(const Function& f) const {
  for (const Call& c : f.calls)
    if (throw_entry.count(c.callee)) return true;
  return false;
}

// may_throw over the call graph; false on recursion.
bool CallGraph::mark_may_throw() {
  std::vector<int> state(fns.size(), 0);  // 0 new, 1 on the stack, 2 done
  std::function<bool(size_t)> visit = [&](size_t k) {
    if (state[k] == 1) return false;
    if (state[k] == 2) return true;
    state[k] = 1;
    Function& f = fns[k];
    bool t = has_throw_call(f);
    for (const Call& c : f.calls) {
      auto g = fn_index.find(c.callee);
      if (g == fn_index.end()) continue;
      if (!visit(g->second)) return false;
      t = t || fns[g->second].may_throw;
    }
    f.may_throw = t && !f.entry && !f.kernel_body;
    f.throws = t;
    state[k] = 2;
    return true;
  };
  for (size_t k = 0; k < fns.size(); ++k)
    if (!visit(k)) return false;
  return true;
}

}  // namespace throw_paths
}  // namespace passes
}  // namespace zex
