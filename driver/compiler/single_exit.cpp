// One exit block per kernel (docs/cpu-driver-compiler.md, step 9; docs/cpu-driver.md, "PoCL 3.1's limits").
//
// Why: PoCL 3.1 forms a work-group function from the kernel's parallel regions, the code between
// barriers. It makes every block without successors an exit barrier (Kernel::getExitBlocks in
// lib/llvmopencl/Kernel.cc) and assumes that all work-items of a group take a branch that leads to a
// barrier the same way; for a barrier that does not post-dominate the entry it puts an extra barrier at
// the top of the branch that makes it conditional (ImplicitConditionalBarriers.cc). So:
// - several returns are several exit barriers, some inside work-item-dependent branches. clang's output
//   has one return block and PoCL's own cleanup usually merges returns again, but the kernel PoCL is
//   given should not depend on that (other SPIR-V producers, zex's passes): give_one_exit;
// - a return inside a work-item-dependent branch before a barrier (`if (t == 0) { if (x < 0) return; }
//   barrier(...)`, valid while no work-item takes it, as Rodinia's hotspot and nw are written) gets
//   PoCL's extra barrier inside the `t == 0` branch, and the launch crashed the process (SIGSEGV). Valid
//   OpenCL C takes such a return only if the whole group leaves before that barrier (a barrier is
//   reached by all work-items of a group or by none), so the return may as well arrive at the barrier
//   and leave after it, which makes the barrier unconditional: leave_at_the_next_barrier.
#include "compiler/parts.hpp"

#include <llvm/IR/CFG.h>
#include <llvm/IR/CallingConv.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/Local.h>

#include <map>
#include <set>
#include <vector>

namespace zexcpu {

bool give_one_exit(llvm::Function& f) {
  using namespace llvm;
  std::vector<Instruction*> exits;
  for (BasicBlock& bb : f) {
    Instruction* t = bb.getTerminator();
    // Kernels return void. An `unreachable` is an exit for PoCL too; reaching it is undefined behaviour,
    // so going to the return instead is as right as anything, and keeps PoCL from putting a barrier there.
    if (isa<ReturnInst>(t) || isa<UnreachableInst>(t)) exits.push_back(t);
  }
  if (exits.empty() || (exits.size() == 1 && isa<ReturnInst>(exits[0]))) return false;
  if (!f.getReturnType()->isVoidTy()) return false;  // not a kernel: left alone
  BasicBlock* exit = BasicBlock::Create(f.getContext(), "zexcpu.exit", &f);
  ReturnInst::Create(f.getContext(), exit);
  for (Instruction* t : exits) {
    BranchInst::Create(exit, t);
    t->eraseFromParent();
  }
  return true;
}

bool is_work_group_barrier(const llvm::Instruction& i) {
  const auto* call = llvm::dyn_cast<llvm::CallInst>(&i);
  const llvm::Function* callee = call ? call->getCalledFunction() : nullptr;
  if (!callee) return false;
  llvm::StringRef n = callee->getName();
  return n.contains("barrier") && !n.contains("sub_group");
}

namespace {

llvm::Instruction* first_barrier(llvm::BasicBlock& bb) {
  for (llvm::Instruction& i : bb)
    if (is_work_group_barrier(i)) return &i;
  return nullptr;
}

}  // namespace

unsigned leave_at_the_next_barrier(llvm::Function& f) {
  using namespace llvm;
  if (f.empty()) return 0;
  BasicBlock* exit = nullptr;
  for (BasicBlock& bb : f)
    if (isa<ReturnInst>(bb.getTerminator())) {
      if (exit) return 0;  // give_one_exit first
      exit = &bb;
    }
  if (!exit || exit->size() != 1) return 0;
  // The blocks from which a barrier can still be reached.
  std::set<BasicBlock*> before;
  std::vector<BasicBlock*> work;
  for (BasicBlock& bb : f)
    if (first_barrier(bb)) work.push_back(&bb);
  while (!work.empty()) {
    BasicBlock* b = work.back();
    work.pop_back();
    if (!before.insert(b).second) continue;
    for (BasicBlock* p : predecessors(b)) work.push_back(p);
  }
  // The returns to move: an edge to the exit from a block that can still reach a barrier, whose other
  // paths all meet one barrier first (the one the work-item would have reached).
  struct Move {
    BasicBlock* from;
    Instruction* barrier;
  };
  std::vector<Move> moves;
  for (BasicBlock* p : predecessors(exit)) {
    if (!before.count(p) || first_barrier(*p)) continue;
    std::set<BasicBlock*> seen;
    std::set<Instruction*> met;
    bool escapes = false;
    for (BasicBlock* s : successors(p))
      if (s != exit) work.push_back(s);
    while (!work.empty() && !escapes) {
      BasicBlock* b = work.back();
      work.pop_back();
      if (!seen.insert(b).second) continue;
      if (Instruction* bar = first_barrier(*b)) {
        met.insert(bar);
        continue;
      }
      if (b == exit) escapes = true;
      for (BasicBlock* s : successors(b)) work.push_back(s);
    }
    work.clear();
    if (!escapes && met.size() == 1) moves.push_back({p, *met.begin()});
  }
  if (moves.empty()) return 0;

  LLVMContext& ctx = f.getContext();
  Type* i1 = Type::getInt1Ty(ctx);
  Instruction* at = &*f.getEntryBlock().getFirstInsertionPt();
  auto* left = new AllocaInst(i1, 0, "zexcpu.left", at);
  Instruction* entry_store = new StoreInst(ConstantInt::getFalse(ctx), left, at);
  std::map<Instruction*, BasicBlock*> landing;  // barrier -> the block that starts with it
  for (const Move& m : moves) {
    BasicBlock*& land = landing[m.barrier];
    if (!land) {
      BasicBlock* bb = m.barrier->getParent();
      land = &bb->front() == m.barrier ? bb : bb->splitBasicBlock(m.barrier, "zexcpu.barrier");
      // After the barrier, a work-item that has left goes to the exit.
      BasicBlock* rest = land->splitBasicBlock(m.barrier->getNextNode(), "zexcpu.after");
      land->getTerminator()->eraseFromParent();
      auto* gone = new LoadInst(i1, left, "zexcpu.gone", land);
      BranchInst::Create(exit, rest, gone, land);
    }
    // The work-item records that it has left and arrives at the barrier instead of returning.
    BasicBlock* rec = BasicBlock::Create(ctx, "zexcpu.leave", &f, land);
    new StoreInst(ConstantInt::getTrue(ctx), left, rec);
    BranchInst::Create(land, rec);
    m.from->getTerminator()->replaceSuccessorWith(exit, rec);
  }
  // A value computed before a barrier and used after it no longer dominates its use (the barrier has a
  // new way in): it goes through memory. Only work-items that came the old way read it.
  DominatorTree dt(f);
  std::vector<Instruction*> demote;
  for (BasicBlock& bb : f)
    for (Instruction& i : bb)
      for (const Use& u : i.uses())
        if (!dt.dominates(&i, u)) {
          demote.push_back(&i);
          break;
        }
  for (Instruction* i : demote) {
    if (auto* phi = dyn_cast<PHINode>(i)) DemotePHIToStack(phi, entry_store);
    else DemoteRegToStack(*i, false, entry_store);
  }
  return static_cast<unsigned>(moves.size());
}

unsigned give_kernels_one_exit(llvm::Module& m) {
  unsigned changed = 0;
  for (llvm::Function& f : m) {
    if (f.isDeclaration() || f.getCallingConv() != llvm::CallingConv::SPIR_KERNEL) continue;
    bool one = give_one_exit(f);
    if (leave_at_the_next_barrier(f) || one) ++changed;
  }
  return changed;
}

}  // namespace zexcpu
