// analyze_memory_accesses: which of a module's global-memory accesses zex's memory checks can check
// (issue 27; docs/design.md, "Automatic memory checks"). The first half of the memory-check pass: it
// reads the module and changes nothing.
//
// An access (OpLoad, OpStore, an atomic) can be checked when its pointer traces back to one of its
// kernel's CrossWorkgroup pointer parameters, whose allocation's bounds the launch then passes. The
// trace follows what compilers make of `p[i]`, `&s->f`, casts and `?:` at -O0 and -O2:
// - access chains (OpPtrAccessChain, OpInBoundsPtrAccessChain, OpAccessChain, OpInBoundsAccessChain),
//   OpBitcast, OpCopyObject and the generic casts, to their base;
// - OpPhi and OpSelect, when every input traces to the same parameter;
// - a load from a Function-storage variable whose address is used only to load and store it, when
//   every store into it stores a value that traces to the same parameter: clang's -O0 keeps each
//   parameter in such a variable.
// - a parameter of a function the kernel calls (llvm-spirv 15 makes every entry point a wrapper that
//   calls the kernel's body; helpers that keep their function): through the call's argument, in the
//   caller, as far as the kernel's parameters (the pass then gives such a function the bounds as
//   hidden parameters).
// Everything else is counted as unchecked, by reason: a pointer loaded from memory (a table of
// pointers), made from an integer, or from different parameters on different paths. Accesses to
// Workgroup (__local) memory are listed apart: into a __local variable (a static array, whose size the
// module says: checked against it), or through a parameter (traced like a global pointer; a kernel's
// __local parameter is checked against the size its launch gives it). Function and Private memory is
// the work-item's own and never checked.
#include "spirv/passes/passes.hpp"
#include "spirv/passes/memory_accesses.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace zex {
namespace passes {

namespace {

using memory::Origin;
using memory::Trace;
using memory::FunctionAccesses;

class Analysis {
 public:
  Analysis(IRContext& ctx, const IRContext::FunctionRange& f) : ctx_(ctx), m_(ctx.module()), f_(f) {
    uint32_t index = 0;
    for (size_t i = f.first + 1; i < f.last && m_.insts[i].opcode == spv::OpFunctionParameter; ++i)
      params_[m_.insts[i].result_id] = index++;
    collect_variables();
  }

  FunctionAccesses run() {
    FunctionAccesses out;
    for (size_t i = f_.first; i <= f_.last; ++i) {
      const Instruction& in = m_.insts[i];
      if (in.opcode == spv::OpFunctionCall) {
        memory::Call c{i, in.word(3), {}};
        for (size_t k = 4; k < in.size(); ++k) c.args.push_back(trace(in.word(k)));
        out.calls.push_back(std::move(c));
        continue;
      }
      const size_t w = access_pointer_word(in.opcode);
      if (w == 0) continue;
      const uint32_t ptr = in.word(w);
      const uint32_t sc = storage_class(ptr);
      if (sc == spv::StorageClassWorkgroup) {
        // Into one __local variable (the variable's size is the bound), or through a parameter (a
        // kernel's __local parameter: the launch's size is the bound).
        const Trace t = trace(ptr);
        if (t.origin == Origin::Local && t.param) out.local_accesses.push_back(memory::LocalAccess{i, t.param});
        else if (t.origin == Origin::Param) out.accesses.push_back(memory::Access{i, t, true});
        else ++out.local;
        continue;
      }
      if (sc != spv::StorageClassCrossWorkgroup && sc != spv::StorageClassGeneric) continue;
      out.accesses.push_back(memory::Access{i, trace(ptr)});
    }
    return out;
  }

 private:
  uint32_t storage_class(uint32_t value) {
    const Instruction* v = ctx_.def(value);
    if (!v) return ~0u;
    const Instruction* t = ctx_.def(v->type_id);
    return t && t->opcode == spv::OpTypePointer ? t->word(2) : ~0u;
  }

  // Function-storage variables of this function: what is stored into each, and whether its address
  // is used for anything but loading and storing it (then nothing is known of what it holds).
  void collect_variables() {
    for (size_t i = f_.first; i <= f_.last; ++i) {
      const Instruction& in = m_.insts[i];
      if (in.opcode == spv::OpVariable && in.word(3) == spv::StorageClassFunction) vars_[in.result_id];
    }
    for (size_t i = f_.first; i <= f_.last; ++i) {
      const Instruction& in = m_.insts[i];
      if (in.opcode == spv::OpStore && vars_.count(in.word(1))) {
        vars_[in.word(1)].stored.push_back(in.word(2));
        if (vars_.count(in.word(2))) vars_[in.word(2)].escapes = true;  // the address itself stored
        continue;
      }
      const std::vector<uint32_t> used = in.used_ids();
      for (size_t k = 0; k < used.size(); ++k) {
        auto it = vars_.find(used[k]);
        if (it == vars_.end()) continue;
        if (in.opcode == spv::OpLoad && in.word(3) == used[k]) continue;
        if (in.opcode == spv::OpLifetimeStart || in.opcode == spv::OpLifetimeStop) continue;
        it->second.escapes = true;
      }
    }
  }

  Trace trace(uint32_t id) {
    auto memo = memo_.find(id);
    if (memo != memo_.end()) return memo->second;
    if (!in_progress_.insert(id).second) return Trace{Origin::Param, kPending};  // a cycle: optimistic
    const Trace t = trace_uncached(id);
    in_progress_.erase(id);
    memo_[id] = t;
    return t;
  }

  // The one trace all of `inputs` give (kPending inputs agree with anything), else Other.
  Trace agree(const std::vector<uint32_t>& inputs) {
    Trace result{Origin::Param, kPending};
    for (uint32_t v : inputs) {
      const Trace t = trace(v);
      if (t.origin == Origin::Param && t.param == kPending) continue;
      if (result.origin == Origin::Param && result.param == kPending) {
        result = t;
        continue;
      }
      if (!(t == result)) return Trace{};
    }
    return result.param == kPending && result.origin == Origin::Param ? Trace{} : result;
  }

  Trace trace_uncached(uint32_t id) {
    auto p = params_.find(id);
    if (p != params_.end()) return Trace{Origin::Param, p->second};  // the caller says what it is
    const Instruction* d = ctx_.def(id);
    if (!d) return Trace{};
    switch (d->opcode) {
      case spv::OpAccessChain:
      case spv::OpInBoundsAccessChain:
      case spv::OpPtrAccessChain:
      case spv::OpInBoundsPtrAccessChain:
      case spv::OpBitcast:
      case spv::OpCopyObject:
      case spv::OpPtrCastToGeneric:
      case spv::OpGenericCastToPtr:
      case spv::OpGenericCastToPtrExplicit:
        return trace(d->word(3));
      case spv::OpSelect:
        return agree({d->word(4), d->word(5)});
      case spv::OpPhi: {
        std::vector<uint32_t> inputs;
        for (size_t k = 3; k + 1 < d->size(); k += 2) inputs.push_back(d->word(k));
        return agree(inputs);
      }
      case spv::OpConvertUToPtr:
        return Trace{Origin::Integer};
      case spv::OpVariable:
        return d->word(3) == spv::StorageClassWorkgroup ? Trace{Origin::Local, d->result_id} : Trace{Origin::Own};
      case spv::OpLoad: {
        auto v = vars_.find(d->word(3));
        if (v != vars_.end()) return v->second.escapes ? Trace{} : agree(v->second.stored);
        return Trace{Origin::Loaded};  // a pointer read from memory
      }
      default:
        return Trace{};
    }
  }

  static constexpr uint32_t kPending = ~0u;

  struct Variable {
    std::vector<uint32_t> stored;
    bool escapes = false;
  };

  IRContext& ctx_;
  const Module& m_;
  const IRContext::FunctionRange& f_;
  std::map<uint32_t, uint32_t> params_;  // parameter id -> index
  std::map<uint32_t, Variable> vars_;
  std::map<uint32_t, Trace> memo_;
  std::set<uint32_t> in_progress_;
};

}  // namespace

namespace {

// Adds what `f` does, and the functions it calls, to `out`, with `params`: what each of f's parameters
// is in the kernel (a kernel parameter's index, or why not).
// Counts one access by what its pointer is in the kernel.
void count(const Trace& t, KernelMemoryAccesses* out, std::set<uint32_t>* checked) {
  switch (t.origin) {
    case Origin::Param:
      ++out->checked;
      checked->insert(t.param);
      break;
    case Origin::Local: ++out->local; break;
    case Origin::Own: break;  // a generic pointer to the work-item's own memory
    case Origin::Loaded: ++out->loaded; break;
    case Origin::Integer: ++out->from_integer; break;
    case Origin::Helper: ++out->helper; break;
    case Origin::Other: ++out->other; break;
  }
}

void add_calls(const std::map<uint32_t, FunctionAccesses>& fns, uint32_t f, const std::vector<Trace>& params,
               unsigned depth, KernelMemoryAccesses* out, std::set<uint32_t>* checked) {
  auto it = fns.find(f);
  if (it == fns.end()) return;  // an import (the device library's, a builtin): not the module's accesses
  auto resolve = [&](const Trace& t) {
    if (t.origin != Origin::Param) return t;
    return t.param < params.size() ? params[t.param] : Trace{};
  };
  out->local += it->second.local + it->second.local_accesses.size();
  for (const memory::Access& a : it->second.accesses) {
    if (a.local) ++out->local;  // Workgroup memory: not split here
    else count(resolve(a.trace), out, checked);
  }
  // OpenCL C has no recursion; a module that recurses anyway is cut off (its deeper accesses uncounted).
  if (depth >= 64) return;
  for (const memory::Call& c : it->second.calls) {
    std::vector<Trace> args;
    for (const Trace& a : c.args) args.push_back(resolve(a));
    add_calls(fns, c.callee, args, depth + 1, out, checked);
  }
}

}  // namespace

namespace memory {
std::map<uint32_t, FunctionAccesses> analyze_functions(IRContext& ctx) {
  const std::vector<IRContext::FunctionRange> functions = ctx.functions();  // a copy: analyses may rebuild
  std::map<uint32_t, FunctionAccesses> fns;
  for (const IRContext::FunctionRange& f : functions)
    if (f.defined) fns[f.id] = Analysis(ctx, f).run();
  return fns;
}
}  // namespace memory

MemoryAccessReport analyze_memory_accesses(IRContext& ctx) {
  MemoryAccessReport report;
  std::map<uint32_t, FunctionAccesses> fns = memory::analyze_functions(ctx);
  const std::vector<IRContext::FunctionRange> functions = ctx.functions();
  // Kernels: every OpEntryPoint, by its name, its parameters what the launch passes.
  std::set<uint32_t> entries;
  for (const Instruction& i : ctx.module().insts) {
    if (i.opcode == spv::OpFunction) break;
    if (i.opcode != spv::OpEntryPoint || i.size() < 4 || i.word(1) != spv::ExecutionModelKernel) continue;
    KernelMemoryAccesses k;
    k.function = i.word(2);
    k.name = i.string_at(3);
    entries.insert(k.function);
    std::vector<Trace> params;
    const size_t at = ctx.def_index(k.function);
    if (at == IRContext::npos) continue;
    const Module& m = ctx.module();
    for (size_t p = at + 1; p < m.insts.size() && m.insts[p].opcode == spv::OpFunctionParameter; ++p) {
      const Instruction* t = ctx.def(m.insts[p].type_id);
      const uint32_t sc = t && t->opcode == spv::OpTypePointer ? t->word(2) : ~0u;
      params.push_back(sc == spv::StorageClassCrossWorkgroup ? Trace{Origin::Param, static_cast<uint32_t>(params.size())}
                       : sc == spv::StorageClassWorkgroup    ? Trace{Origin::Local}
                                                             : Trace{});
    }
    std::set<uint32_t> checked;
    add_calls(fns, k.function, params, 0, &k, &checked);
    k.checked_params.assign(checked.begin(), checked.end());
    report.kernels.push_back(std::move(k));
  }
  // The other functions on their own: an access through a parameter counts as the helper's.
  for (const IRContext::FunctionRange& f : functions) {
    if (!f.defined || entries.count(f.id)) continue;
    KernelMemoryAccesses h;
    h.function = f.id;
    const std::vector<std::string>& names = ctx.names(f.id);
    h.name = names.empty() ? "" : names.front();
    const FunctionAccesses& fa = fns[f.id];
    h.local = fa.local + fa.local_accesses.size();
    std::set<uint32_t> unused;
    for (const memory::Access& a : fa.accesses) {
      if (a.local) ++h.local;
      else count(a.trace.origin == Origin::Param ? Trace{Origin::Helper} : a.trace, &h, &unused);
    }
    report.helpers.push_back(std::move(h));
  }
  return report;
}

}  // namespace passes
}  // namespace zex
