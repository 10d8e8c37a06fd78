// Fix-ups of the translator's IR for PoCL 3.1 (docs/cpu-driver-compiler.md, steps 4 and 8): builtin
// variables the translator left as variables, and builtins that PoCL's kernel library has only under
// another name or another address-space overload.
#include "compiler/parts.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

#include <cctype>
#include <cstring>

namespace zexcpu {

// spirv-link keeps one builtin variable per input module (two "__spirv_BuiltInGlobalInvocationId"s); the
// translator names both after the builtin, LLVM renames the second "...GlobalInvocationId.2", and the
// translator's lowering to OpenCL calls, which matches names exactly, leaves that one as an undefined
// variable. Lower those the same way here: a load of the variable becomes get_global_id(0..2) & co.
bool lower_leftover_builtins(llvm::Module& m, std::string* err) {
  using namespace llvm;
  struct Builtin {
    const char* spirv;
    const char* ocl;  // mangled OpenCL function
    bool vector;      // takes the dimension (uint)
    bool uint_result; // returns uint rather than size_t
  };
  static const Builtin kBuiltins[] = {
      {"GlobalInvocationId", "_Z13get_global_idj", true, false},
      {"LocalInvocationId", "_Z12get_local_idj", true, false},
      {"WorkgroupId", "_Z12get_group_idj", true, false},
      {"NumWorkgroups", "_Z14get_num_groupsj", true, false},
      {"WorkgroupSize", "_Z14get_local_sizej", true, false},
      {"EnqueuedWorkgroupSize", "_Z23get_enqueued_local_sizej", true, false},
      {"GlobalSize", "_Z15get_global_sizej", true, false},
      {"GlobalOffset", "_Z17get_global_offsetj", true, false},
      {"GlobalLinearId", "_Z20get_global_linear_idv", false, false},
      {"LocalInvocationIndex", "_Z19get_local_linear_idv", false, false},
      {"WorkDim", "_Z12get_work_dimv", false, true},
      {"SubgroupSize", "_Z18get_sub_group_sizev", false, true},
      {"SubgroupMaxSize", "_Z22get_max_sub_group_sizev", false, true},
      {"NumSubgroups", "_Z18get_num_sub_groupsv", false, true},
      {"NumEnqueuedSubgroups", "_Z27get_enqueued_num_sub_groupsv", false, true},
      {"SubgroupId", "_Z16get_sub_group_idv", false, true},
      {"SubgroupLocalInvocationId", "_Z22get_sub_group_local_idv", false, true},
  };
  std::vector<GlobalVariable*> vars;
  for (GlobalVariable& g : m.globals())
    if (g.getName().startswith("__spirv_BuiltIn") && !g.hasInitializer()) vars.push_back(&g);
  Type* i32 = Type::getInt32Ty(m.getContext());
  Type* size_t_ty = Type::getInt64Ty(m.getContext());
  for (GlobalVariable* g : vars) {
    StringRef name = g->getName().drop_front(strlen("__spirv_BuiltIn"));
    name = name.take_until([](char c) { return c == '.'; });
    const Builtin* b = nullptr;
    for (const Builtin& x : kBuiltins)
      if (name == x.spirv) b = &x;
    if (!b) {
      *err = "unsupported SPIR-V builtin variable " + g->getName().str();
      return false;
    }
    Type* ret = b->uint_result ? i32 : size_t_ty;
    FunctionType* fty = b->vector ? FunctionType::get(ret, {i32}, false) : FunctionType::get(ret, {}, false);
    FunctionCallee callee = m.getOrInsertFunction(b->ocl, fty);
    if (auto* f = dyn_cast<Function>(callee.getCallee())) {
      f->setCallingConv(CallingConv::SPIR_FUNC);
      f->setDoesNotThrow();
    }
    auto call = [&](IRBuilder<>& ir, unsigned dim) {
      CallInst* c = b->vector ? ir.CreateCall(callee, {ConstantInt::get(i32, dim)}) : ir.CreateCall(callee, {});
      c->setCallingConv(CallingConv::SPIR_FUNC);
      return c;
    };
    auto fit = [&](IRBuilder<>& ir, Value* v, Type* to) -> Value* {
      return v->getType() == to ? v : ir.CreateZExtOrTrunc(v, to);
    };
    // Loads of the whole variable, or of one element through a constant GEP; anything else is refused.
    std::vector<User*> users(g->user_begin(), g->user_end());
    for (User* u : users) {
      std::vector<std::pair<LoadInst*, int>> loads;  // (load, element or -1 for the whole value)
      // Taken now: when `u` is itself a load, erasing it below deletes it, and it must not be looked at
      // again (reading it after eraseFromParent() was a use-after-free).
      auto* ce_user = dyn_cast<ConstantExpr>(u);
      if (auto* li = dyn_cast<LoadInst>(u)) {
        loads.push_back({li, -1});
      } else if (auto* ce = dyn_cast<ConstantExpr>(u)) {
        int elem = -1;
        if (ce->getOpcode() == Instruction::GetElementPtr && ce->getNumOperands() == 3) {
          if (auto* idx = dyn_cast<ConstantInt>(ce->getOperand(2))) elem = static_cast<int>(idx->getZExtValue());
        } else if (ce->isCast()) {
          elem = -1;
        } else {
          *err = "unsupported use of SPIR-V builtin variable " + g->getName().str();
          return false;
        }
        for (User* cu : ce->users()) {
          auto* load = dyn_cast<LoadInst>(cu);
          if (!load) {
            *err = "unsupported use of SPIR-V builtin variable " + g->getName().str();
            return false;
          }
          loads.push_back({load, elem});
        }
      } else {
        *err = "unsupported use of SPIR-V builtin variable " + g->getName().str();
        return false;
      }
      for (auto& [li, elem] : loads) {
        IRBuilder<> ir(li);
        Value* v;
        if (auto* vt = dyn_cast<FixedVectorType>(li->getType())) {
          v = UndefValue::get(vt);
          for (unsigned d = 0; d < vt->getNumElements(); ++d)
            v = ir.CreateInsertElement(v, fit(ir, call(ir, d), vt->getElementType()), d);
        } else {
          v = fit(ir, call(ir, elem < 0 ? 0 : static_cast<unsigned>(elem)), li->getType());
        }
        li->replaceAllUsesWith(v);
        li->eraseFromParent();
      }
      if (ce_user && ce_user->use_empty()) ce_user->destroyConstant();
    }
    if (g->use_empty()) g->eraseFromParent();
  }
  return true;
}

// Calls of a builtin's generic-pointer overload (mangled PU3AS4) become calls of its __global overload
// (PU3AS1), the pointers cast. Returns false if nothing could be changed.
bool use_global_overload(llvm::Module& m, llvm::Function* f) {
  using namespace llvm;
  std::string name = f->getName().str();
  for (size_t at = name.find("PU3AS4"); at != std::string::npos; at = name.find("PU3AS4", at + 1)) name[at + 5] = '1';
  if (name == f->getName()) return false;
  std::vector<Type*> params;
  bool changed = false;
  for (Type* t : f->getFunctionType()->params()) {
    auto* pt = dyn_cast<PointerType>(t);
    if (pt && pt->getAddressSpace() == 4 && !pt->isOpaque()) {
      params.push_back(PointerType::get(pt->getNonOpaquePointerElementType(), kGlobalAS));
      changed = true;
    } else {
      params.push_back(t);
    }
  }
  if (!changed) return false;
  FunctionType* fty = FunctionType::get(f->getReturnType(), params, false);
  FunctionCallee target = m.getOrInsertFunction(name, fty, f->getAttributes());
  if (auto* nf = dyn_cast<Function>(target.getCallee())) nf->setCallingConv(f->getCallingConv());
  std::vector<CallInst*> calls;
  for (User* u : f->users())
    if (auto* ci = dyn_cast<CallInst>(u))
      if (ci->getCalledFunction() == f) calls.push_back(ci);
  for (CallInst* ci : calls) {
    IRBuilder<> ir(ci);
    std::vector<Value*> args;
    for (unsigned i = 0; i < ci->arg_size(); ++i) {
      Value* a = ci->getArgOperand(i);
      args.push_back(a->getType() == params[i] ? a : ir.CreateAddrSpaceCast(a, params[i]));
    }
    CallInst* nc = ir.CreateCall(target, args);
    nc->setCallingConv(ci->getCallingConv());
    nc->setAttributes(ci->getAttributes());
    ci->replaceAllUsesWith(nc);
    ci->eraseFromParent();
  }
  if (f->use_empty()) f->eraseFromParent();
  return true;
}

// PoCL 3.1's kernel library has some builtins only under its internal "_cl_" names (mem_fence & co);
// clang's OpenCL headers rename them when PoCL compiles source, nothing does for SPIR input.
bool use_pocl_name(llvm::Module& m, llvm::Function* f) {
  llvm::StringRef n = f->getName();
  size_t digits = 2;
  while (digits < n.size() && isdigit(static_cast<unsigned char>(n[digits]))) ++digits;
  if (!n.startswith("_Z") || digits == 2) return false;
  unsigned len = 0;
  if (n.substr(2, digits - 2).getAsInteger(10, len)) return false;
  std::string renamed = "_Z" + std::to_string(len + 4) + "_cl_" + n.substr(digits).str();
  if (m.getFunction(renamed)) return false;
  f->setName(renamed);
  return true;
}

}  // namespace zexcpu
