// Every non-kernel function inlined into its kernels (docs/cpu-driver-compiler.md, step 7).
//
// Why: PoCL 3.1 turns each kernel into a work-group function and rewrites the work-item builtins
// (get_global_id & co) only inside the kernel; a non-inlined helper that calls one keeps a reference to
// PoCL's internal globals (_group_id_x ...) and the kernel object fails to load. So every non-kernel
// function with a body is made internal + alwaysinline, inlined, and dropped. LLVM's own passes do the
// work (AlwaysInliner, GlobalDCE and a light cleanup); this file only decides what to inline.
#include "compiler/parts.hpp"

#include <llvm/IR/Function.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/IPO/GlobalDCE.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>

#include <algorithm>

namespace zexcpu {
namespace {

// Makes every non-kernel function with a body internal + alwaysinline, inlines, and drops what is
// left unused. Fails (with a message) if a call to a defined function survives: recursion.
// `keep` names functions left as calls in this round (the zex device library's entry points, so that
// version_bounds_checks can still see the throw sites); only the final round checks that no call survives.
bool inline_round(llvm::Module& m, const std::vector<std::string>& keep, std::string* err) {
  using namespace llvm;
  for (Function& f : m) {
    if (f.isDeclaration()) continue;
    // Modules compiled at -O0 mark every function optnone; PoCL would then leave the kernels
    // unoptimized (it optimizes the work-group functions it makes of them).
    f.removeFnAttr(Attribute::OptimizeNone);
    if (f.getCallingConv() == CallingConv::SPIR_KERNEL) continue;
    if (std::find(keep.begin(), keep.end(), f.getName().str()) != keep.end()) continue;
    f.removeFnAttr(Attribute::NoInline);
    f.addFnAttr(Attribute::AlwaysInline);
    f.setLinkage(GlobalValue::InternalLinkage);
  }
  // The translator repeats the callee's noinline on each call instruction, which would veto inlining;
  // a kernel called by another kernel is inlined too (its own body stays, as a kernel).
  for (Function& f : m) {
    if (f.isDeclaration()) continue;
    for (BasicBlock& bb : f)
      for (Instruction& i : bb)
        if (auto* cb = dyn_cast<CallBase>(&i)) {
          Function* callee = cb->getCalledFunction();
          if (!callee || callee->isDeclaration()) continue;
          if (std::find(keep.begin(), keep.end(), callee->getName().str()) != keep.end()) continue;
          cb->removeFnAttr(Attribute::NoInline);
          if (callee->getCallingConv() == CallingConv::SPIR_KERNEL) cb->addFnAttr(Attribute::AlwaysInline);
        }
  }

  LoopAnalysisManager lam;
  FunctionAnalysisManager fam;
  CGSCCAnalysisManager cgam;
  ModuleAnalysisManager mam;
  PassBuilder pb;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  ModulePassManager mpm;
  mpm.addPass(AlwaysInlinerPass(/*InsertLifetimeIntrinsics=*/false));
  mpm.addPass(GlobalDCEPass());
  // A light cleanup: PoCL gives every private variable (alloca) left in a kernel one slot per
  // work-item of the group, so values that can live in registers should (modules compiled at -O0,
  // and arguments passed to inlined helpers, are full of allocas).
  FunctionPassManager fpm;
  fpm.addPass(SROAPass());
  fpm.addPass(EarlyCSEPass());
  fpm.addPass(InstCombinePass());
  fpm.addPass(SimplifyCFGPass());
  mpm.addPass(createModuleToFunctionPassAdaptor(std::move(fpm)));
  mpm.run(m, mam);
  if (!keep.empty()) return true;

  for (Function& f : m) {
    if (f.isDeclaration()) continue;
    for (BasicBlock& bb : f)
      for (Instruction& i : bb)
        if (auto* cb = dyn_cast<CallBase>(&i)) {
          Function* callee = cb->getCalledFunction();
          if (!callee && !isa<InlineAsm>(cb->getCalledOperand())) {
            *err = "function '" + f.getName().str() +
                   "' makes an indirect call; zex-cpu (PoCL 3.1) needs every call inlined";
            return false;
          }
          if (callee && !callee->isDeclaration() && callee->getCallingConv() != CallingConv::SPIR_KERNEL) {
            *err = "function '" + callee->getName().str() + "' (called from '" + f.getName().str() +
                   "') could not be inlined, probably because it is recursive; zex-cpu (PoCL 3.1) "
                   "needs every non-kernel function inlined into its kernel";
            return false;
          }
        }
  }
  return true;
}

}  // namespace

bool inline_everything(llvm::Module& m, std::string* err) {
  // Round one keeps the throw entry points as calls so the checks that guard them can be found.
  if (!inline_round(m, {"zex_report_exception", "zex_report_exception_values", "zex_report_frame", "zex_signal_exception",
                      "zex_throw", "zex_throw_site"}, err)) return false;
  version_bounds_checks(m);
  return inline_round(m, {}, err);
}

}  // namespace zexcpu
