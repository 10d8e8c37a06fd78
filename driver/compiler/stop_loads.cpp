// The early-stop check's loads as loads (docs/cpu-driver-compiler.md, step 5b).
//
// zex's stop_on_throw pass (src/spirv/passes/stop_on_throw.cpp) calls zex_stop_requested at the entry of
// every work-item. zex_stop_requested reads the launch's claim word with a volatile load (smaller on
// Intel's compiler than an atomic one: docs/decisions.md, "The stop check's claim read") and, when that
// is set, the report's status with OpAtomicLoad. A volatile load is one LLVM never moves, so every
// work-item of PoCL's loop over a group reads the word again; and llvm-spirv 15 writes OpenCL 1.2-style
// bitcode for PoCL, which has no atomic load, so it reads OpAtomicLoad as atomic_add(p, 0), a locked
// read-modify-write of one cache line (an older device library read the claim word that way too: on
// saxpy x200, 4096 work-items a launch, a launch was 4.9x as long as without the check,
// BM_QueuedSaxpy_ZexStop, docs/benchmarks.md). Inside zex_stop_requested, whose semantics zex defines
// (docs/abi.md, "Early stop": a relaxed read of the claim word, an acquire read of the status), the
// claim word's read, volatile or atomic_add(p, 0), becomes an unordered invariant load that LLVM may
// hoist out of the work-item loop, and the status's an acquire atomic load (a plain mov on x86-64).
// Only that function is touched: in user code atomic_add(p, 0) may be a deliberate read-modify-write
// (it reads the latest value in p's modification order).
#include "compiler/parts.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>

#include <vector>

namespace zexcpu {

namespace {

// `p` is the claim word: zex_stop_requested's second argument (a ulong) as a pointer.
bool reads_claim_word(llvm::Value* p, llvm::Function* f) {
  using namespace llvm;
  p = p->stripPointerCasts();
  auto* cast = dyn_cast<IntToPtrInst>(p);
  return cast && f->arg_size() > 1 && cast->getOperand(0) == f->getArg(1);
}

}  // namespace

unsigned lower_stop_check_loads(llvm::Module& m) {
  using namespace llvm;
  Function* f = m.getFunction("zex_stop_requested");
  if (!f || f->isDeclaration()) return 0;
  std::vector<CallInst*> reads;
  std::vector<LoadInst*> volatile_claims;
  for (BasicBlock& bb : *f)
    for (Instruction& i : bb) {
      // Since the library reads the claim word with a volatile load (smaller on Intel's compiler than
      // an atomic one: docs/decisions.md, "The stop check's claim read"), that load is the one to hoist.
      if (auto* load = dyn_cast<LoadInst>(&i)) {
        if (load->isVolatile() && !load->isAtomic() && load->getType()->isIntegerTy(32) &&
            load->getPointerAddressSpace() == kGlobalAS && reads_claim_word(load->getPointerOperand(), f))
          volatile_claims.push_back(load);
        continue;
      }
      auto* call = dyn_cast<CallInst>(&i);
      if (!call || call->arg_size() != 2) continue;
      Function* callee = call->getCalledFunction();
      // atomic_add / atom_add of (volatile __global int/uint*, 0): the translator's OpAtomicLoad.
      if (!callee || !(callee->getName().startswith("_Z10atomic_addPU3AS1V") ||
                       callee->getName().startswith("_Z8atom_addPU3AS1V")))
        continue;
      auto* zero = dyn_cast<ConstantInt>(call->getArgOperand(1));
      Value* p = call->getArgOperand(0);
      auto* pty = dyn_cast<PointerType>(p->getType());
      if (!zero || !zero->isZero() || !pty || pty->getAddressSpace() != kGlobalAS ||
          !call->getType()->isIntegerTy(32))
        continue;
      reads.push_back(call);
    }
  for (CallInst* call : reads) {
    IRBuilder<> ir(call);
    LoadInst* load = ir.CreateAlignedLoad(call->getType(), call->getArgOperand(0), Align(4));
    if (reads_claim_word(call->getArgOperand(0), f)) {
      // The claim word: unordered (a racing throw gives the old or the new value, never undef) and
      // !invariant.load, so that LICM hoists it out of PoCL's loop over the work-items (LICM's
      // canSinkOrHoistInst takes an invariant unordered load whatever the loop stores). The check is then
      // made once per work-group, as on a GPU where a group's work-items start together, and the loop
      // over the body is the one without the check (the load in it had made saxpy's loop 1.2x as long:
      // after each masked store, the next iteration's load of the claim word waited for it).
      // invariant.load says the word does not change while the kernel runs, which a throw in another
      // group contradicts; what LLVM 15 does with the promise is hoist or merge the read, and the
      // branch on it is right with either value (docs/decisions.md, "The stop check on zex-cpu").
      load->setAtomic(AtomicOrdering::Unordered);
      load->setMetadata(LLVMContext::MD_invariant_load, MDNode::get(m.getContext(), {}));
    } else {
      load->setAtomic(AtomicOrdering::Acquire);
    }
    call->replaceAllUsesWith(load);
    call->eraseFromParent();
  }
  for (LoadInst* load : volatile_claims) {
    // As the atomic form's claim read above: unordered (a racing throw gives the old or the new value)
    // and invariant, so that LICM hoists it out of the work-item loop; no longer volatile, which LICM
    // would never move.
    load->setVolatile(false);
    load->setAtomic(AtomicOrdering::Unordered);
    if (load->getAlign() < Align(4)) load->setAlignment(Align(4));
    load->setMetadata(LLVMContext::MD_invariant_load, MDNode::get(m.getContext(), {}));
  }
  return static_cast<unsigned>(reads.size() + volatile_claims.size());
}

}  // namespace zexcpu
