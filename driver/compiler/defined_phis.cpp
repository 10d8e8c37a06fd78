// Undefined phi inputs made zero in kernels with barriers (docs/cpu-driver-compiler.md, step 9), for
// PoCL 3.1. A variable that is read before every path has written it (Rodinia's hotspot: `bool
// computed;` when the loop runs zero times) reaches the IR as a phi with an `undef` (or `poison`)
// input at a loop header. PoCL's work-group former then runs such a kernel wrongly when the phi's value
// lives across a barrier: hotspot's InstCombine'd IR wrote 0 of 576 cells, and the same IR with that
// one input made `false` wrote all 576 (bisected with opt -O2 -opt-bisect-limit; docs/cpu-driver.md,
// "PoCL 3.1's limits"). Any value is a valid choice for an undefined one, so zero is as right as
// anything, and what PoCL runs right.
#include "compiler/parts.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>

namespace zexcpu {

namespace {

bool calls_barrier(const llvm::Function& f) {
  for (const llvm::BasicBlock& bb : f)
    for (const llvm::Instruction& i : bb)
      if (is_work_group_barrier(i)) return true;
  return false;
}

}  // namespace

unsigned define_undefined_phi_inputs(llvm::Module& m) {
  unsigned changed = 0;
  for (llvm::Function& f : m) {
    if (f.isDeclaration() || f.getCallingConv() != llvm::CallingConv::SPIR_KERNEL || !calls_barrier(f)) continue;
    for (llvm::BasicBlock& bb : f)
      for (llvm::PHINode& phi : bb.phis())
        for (unsigned k = 0; k < phi.getNumIncomingValues(); ++k)
          if (llvm::isa<llvm::UndefValue>(phi.getIncomingValue(k))) {  // poison is an UndefValue too
            phi.setIncomingValue(k, llvm::Constant::getNullValue(phi.getType()));
            ++changed;
          }
  }
  return changed;
}

}  // namespace zexcpu
