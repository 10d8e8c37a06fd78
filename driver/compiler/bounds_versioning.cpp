// Work-group range versioning of bounds checks (docs/cpu-driver-compiler.md, step 7).
//
// PoCL runs a work-group as a loop over its work-items, and LLVM vectorizes that loop only when no
// block in it has a side effect it cannot predicate; a zex throw path (a CAS and stores) is such a
// block, so a bounds-checked kernel stays scalar (docs/cpu-driver-compiler.md has the cost). When
// every throw in a kernel is guarded by an affine check on get_global_id against a value that is the
// same for the whole launch, the group's first and last work-items bound the check for all of its
// work-items: the kernel gets a work-group-uniform branch to a copy of its body in which those checks
// are known to pass, and PoCL's loop over that copy has no throw path at all.

#include "compiler/parts.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include <cstdlib>
#include <map>
#include <set>

namespace zexcpu {
namespace {

// The throw entry points of the report ABI: without values (version 1), with them (version 2, what
// ZEX_CHECK_BOUNDS calls), the fused zex_throw (claim, frame and status in one call), and
// zex_throw_site (version 3: what zex's pass turns a numbered zex_throw into).
bool is_throw_entry(llvm::StringRef name) {
  return name == "zex_report_exception" || name == "zex_report_exception_values" || name == "zex_throw" ||
         name == "zex_throw_site";
}

bool calls_throw(const llvm::BasicBlock& bb) {
  for (const llvm::Instruction& i : bb)
    if (auto* cb = llvm::dyn_cast<llvm::CallBase>(&i))
      if (const llvm::Function* f = cb->getCalledFunction())
        if (is_throw_entry(f->getName())) return true;
  return false;
}

// One recognised check: `br (icmp pred X, N)` where X = chain(get_global_id(dim)), N launch-invariant.
struct BoundsCheck {
  llvm::BranchInst* br = nullptr;
  unsigned hot = 0;                         // successor index taken when the check passes
  llvm::ICmpInst::Predicate pass_pred{};    // X pass_pred N  <=>  the check passes
  unsigned dim = 0;
  std::vector<llvm::Instruction*> chain;    // casts/adds from the get_global_id call to X, in order
  llvm::Value* bound = nullptr;             // N
};

// X: get_global_id(d) (d constant < 3) through zext/sext/trunc and add/sub of a constant.
bool affine_in_gid(llvm::Value* v, BoundsCheck* c, int depth = 0) {
  using namespace llvm;
  if (depth > 8) return false;
  if (auto* call = dyn_cast<CallInst>(v)) {
    Function* f = call->getCalledFunction();
    if (!f || f->getName() != "_Z13get_global_idj") return false;
    auto* d = dyn_cast<ConstantInt>(call->getArgOperand(0));
    if (!d || d->getZExtValue() > 2) return false;
    c->dim = static_cast<unsigned>(d->getZExtValue());
    return true;
  }
  // llvm-spirv reads the GlobalInvocationId built-in as a vector of three get_global_id calls and an
  // extract: a gid used twice (the check and a ZEX_CHECK_BOUNDS value) keeps that shape. The element
  // extracted is the call inserted at its index.
  if (auto* ex = dyn_cast<ExtractElementInst>(v)) {
    auto* idx = dyn_cast<ConstantInt>(ex->getIndexOperand());
    if (!idx) return false;
    Value* vec = ex->getVectorOperand();
    for (int steps = 0; steps < 4; ++steps) {
      auto* ins = dyn_cast<InsertElementInst>(vec);
      if (!ins) return false;
      auto* at = dyn_cast<ConstantInt>(ins->getOperand(2));
      if (!at) return false;
      if (at->getZExtValue() == idx->getZExtValue()) return affine_in_gid(ins->getOperand(1), c, depth + 1);
      vec = ins->getOperand(0);
    }
    return false;
  }
  auto* inst = dyn_cast<Instruction>(v);
  if (!inst || !inst->getType()->isIntegerTy() || inst->getType()->getIntegerBitWidth() > 64) return false;
  Value* from = nullptr;
  if (isa<ZExtInst>(inst) || isa<SExtInst>(inst) || isa<TruncInst>(inst)) {
    from = inst->getOperand(0);
  } else if (inst->getOpcode() == Instruction::Add) {
    if (isa<ConstantInt>(inst->getOperand(1))) from = inst->getOperand(0);
    else if (isa<ConstantInt>(inst->getOperand(0))) from = inst->getOperand(1);
  } else if (inst->getOpcode() == Instruction::Sub && isa<ConstantInt>(inst->getOperand(1))) {
    from = inst->getOperand(0);
  }
  if (!from || !affine_in_gid(from, c, depth + 1)) return false;
  c->chain.push_back(inst);
  return true;
}

// N: kernel arguments and constants combined by casts and arithmetic that cannot trap (no loads: memory
// may change between work-items).
bool launch_invariant(llvm::Value* v, int depth = 0) {
  using namespace llvm;
  if (depth > 8) return false;
  if (isa<Argument>(v)) return v->getType()->isIntegerTy();
  if (isa<ConstantInt>(v)) return true;
  auto* inst = dyn_cast<Instruction>(v);
  if (!inst) return false;
  if (isa<CastInst>(inst) && !isa<BitCastInst>(inst) && !isa<IntToPtrInst>(inst) && !isa<PtrToIntInst>(inst))
    return launch_invariant(inst->getOperand(0), depth + 1);
  switch (inst->getOpcode()) {
    case Instruction::Add: case Instruction::Sub: case Instruction::Mul: case Instruction::And:
    case Instruction::Or: case Instruction::Xor: case Instruction::Shl: case Instruction::LShr:
    case Instruction::AShr:
      // nsw/nuw/exact would make a poison the original never evaluates here; the copy drops them.
      return launch_invariant(inst->getOperand(0), depth + 1) && launch_invariant(inst->getOperand(1), depth + 1);
    default:
      return false;
  }
}

// Copies an invariant expression (or a gid chain, with `gid` for the get_global_id call) at the builder.
llvm::Value* rebuild(llvm::IRBuilder<>& ir, llvm::Value* v, llvm::Value* gid) {
  using namespace llvm;
  if (isa<Argument>(v) || isa<Constant>(v)) return v;
  if (isa<CallInst>(v)) return gid;
  auto* inst = cast<Instruction>(v);
  if (auto* cast = dyn_cast<CastInst>(inst))
    return ir.CreateCast(cast->getOpcode(), rebuild(ir, inst->getOperand(0), gid), inst->getType());
  return ir.CreateBinOp(static_cast<Instruction::BinaryOps>(inst->getOpcode()),
                        rebuild(ir, inst->getOperand(0), gid), rebuild(ir, inst->getOperand(1), gid));
}

}  // namespace

// Versions each kernel whose every throw site is behind recognised checks. Returns how many it versioned.
unsigned version_bounds_checks(llvm::Module& m) {
  using namespace llvm;
  unsigned versioned = 0;
  if (const char* off = getenv("ZEX_CPU_NO_VERSIONING"); off && *off && *off != '0') return 0;
  LLVMContext& ctx = m.getContext();
  Type* i32 = Type::getInt32Ty(ctx);
  Type* i64 = Type::getInt64Ty(ctx);
  auto builtin = [&](const char* name) {
    FunctionCallee c = m.getOrInsertFunction(name, FunctionType::get(i64, {i32}, false));
    if (auto* f = dyn_cast<Function>(c.getCallee())) {
      f->setCallingConv(CallingConv::SPIR_FUNC);
      f->addFnAttr(Attribute::NoUnwind);
    }
    return c;
  };
  for (Function& f : m) {
    if (f.isDeclaration() || f.getCallingConv() != CallingConv::SPIR_KERNEL) continue;
    bool throws = false, convergent = false;
    for (BasicBlock& bb : f)
      for (Instruction& i : bb)
        if (auto* cb = dyn_cast<CallBase>(&i)) {
          Function* callee = cb->getCalledFunction();
          if (callee && is_throw_entry(callee->getName())) throws = true;
          // Barriers and group collectives: PoCL would have to prove the version branch uniform.
          if (cb->isConvergent() || !callee || callee->getName().contains("barrier") ||
              callee->getName().contains("work_group"))
            convergent = true;
        }
    if (!throws || convergent) continue;

    // Blocks that lead to a throw: the throw block itself, or side-effect-free blocks that branch
    // unconditionally into one (the merged cold block's phis sit in such a chain's target).
    auto leads_to_throw = [&](BasicBlock* b) {
      for (int steps = 0; b && steps < 8; ++steps) {
        if (calls_throw(*b)) return true;
        for (Instruction& i : *b)
          if (i.mayHaveSideEffects()) return false;
        b = b->getSingleSuccessor();
      }
      return false;
    };
    std::vector<BoundsCheck> checks;
    for (BasicBlock& bb : f) {
      auto* br = dyn_cast<BranchInst>(bb.getTerminator());
      if (!br || !br->isConditional()) continue;
      bool cold0 = leads_to_throw(br->getSuccessor(0)), cold1 = leads_to_throw(br->getSuccessor(1));
      if (cold0 == cold1) continue;
      auto* cmp = dyn_cast<ICmpInst>(br->getCondition());
      if (!cmp || !cmp->isRelational()) continue;
      BoundsCheck c;
      c.br = br;
      c.hot = cold0 ? 1 : 0;
      ICmpInst::Predicate p = cmp->getPredicate();
      Value* x = cmp->getOperand(0);
      Value* n = cmp->getOperand(1);
      if (!affine_in_gid(x, &c)) {
        c.chain.clear();
        std::swap(x, n);
        p = ICmpInst::getSwappedPredicate(p);
        if (!affine_in_gid(x, &c)) continue;
      }
      if (!launch_invariant(n)) continue;
      c.pass_pred = c.hot == 0 ? p : ICmpInst::getInversePredicate(p);
      c.bound = n;
      checks.push_back(std::move(c));
    }
    if (checks.empty()) continue;
    // Every throw must become unreachable once the recognised checks pass; otherwise leave the kernel.
    {
      std::map<BasicBlock*, unsigned> folded;
      for (const BoundsCheck& c : checks) folded[c.br->getParent()] = c.hot;
      std::vector<BasicBlock*> stack{&f.getEntryBlock()};
      std::set<BasicBlock*> seen{&f.getEntryBlock()};
      bool throw_reachable = false;
      while (!stack.empty() && !throw_reachable) {
        BasicBlock* b = stack.back();
        stack.pop_back();
        if (calls_throw(*b)) throw_reachable = true;
        auto it = folded.find(b);
        Instruction* t = b->getTerminator();
        for (unsigned s = 0; s < t->getNumSuccessors(); ++s) {
          if (it != folded.end() && s != it->second) continue;
          if (seen.insert(t->getSuccessor(s)).second) stack.push_back(t->getSuccessor(s));
        }
      }
      if (throw_reachable) continue;
    }

    // The predicate, in a new entry block: for each check, the group's first and last work-items pass,
    // and every step of X goes up by exactly one per work-item between them (no wrap), so the check
    // passes for all the work-items in between.
    BasicBlock* old_entry = &f.getEntryBlock();
    BasicBlock* pre = BasicBlock::Create(ctx, "zex.version", &f, old_entry);
    // Static allocas stay in the entry block, shared by both versions (only one runs per work-item).
    std::vector<AllocaInst*> allocas;
    for (Instruction& i : *old_entry)
      if (auto* a = dyn_cast<AllocaInst>(&i); a && a->isStaticAlloca()) allocas.push_back(a);
    for (AllocaInst* a : allocas) a->moveBefore(*pre, pre->end());
    IRBuilder<> ir(pre);
    Value* first[3] = {nullptr, nullptr, nullptr};
    Value* span[3] = {nullptr, nullptr, nullptr};
    auto call = [&](const char* name, unsigned d) {
      CallInst* ci = ir.CreateCall(builtin(name), {ConstantInt::get(i32, d)});
      ci->setCallingConv(CallingConv::SPIR_FUNC);
      return ci;
    };
    Value* pred = ConstantInt::getTrue(ctx);
    for (const BoundsCheck& c : checks) {
      unsigned d = c.dim;
      if (!first[d]) {
        Value* size = call("_Z14get_local_sizej", d);
        first[d] = ir.CreateAdd(ir.CreateMul(call("_Z12get_group_idj", d), size), call("_Z17get_global_offsetj", d));
        span[d] = ir.CreateSub(size, ConstantInt::get(i64, 1));
      }
      Value* last = ir.CreateAdd(first[d], span[d]);
      // Each step at both ends (the gid itself cannot wrap within a group).
      Value* lo = first[d];
      Value* hi = last;
      for (Instruction* step : c.chain) {
        auto one = [&](Value* in) -> Value* {
          if (auto* cast = dyn_cast<CastInst>(step)) return ir.CreateCast(cast->getOpcode(), in, step->getType());
          Value* k = isa<ConstantInt>(step->getOperand(1)) ? step->getOperand(1) : step->getOperand(0);
          return ir.CreateBinOp(static_cast<Instruction::BinaryOps>(step->getOpcode()), in, k);
        };
        lo = one(lo);
        hi = one(hi);
        Value* diff = ir.CreateSub(hi, lo);
        Value* diff64 = diff->getType() == i64 ? diff : ir.CreateZExt(diff, i64);
        pred = ir.CreateAnd(pred, ir.CreateICmpUGE(hi, lo));
        pred = ir.CreateAnd(pred, ir.CreateICmpEQ(diff64, span[d]));
      }
      if (ICmpInst::isSigned(c.pass_pred)) pred = ir.CreateAnd(pred, ir.CreateICmpSGE(hi, lo));
      Value* n = rebuild(ir, c.bound, nullptr);
      pred = ir.CreateAnd(pred, ir.CreateICmp(c.pass_pred, lo, n));
      pred = ir.CreateAnd(pred, ir.CreateICmp(c.pass_pred, hi, n));
    }

    // The fast copy of the body, with the checks folded to their passing successor.
    std::vector<BasicBlock*> originals;
    for (BasicBlock& bb : f)
      if (&bb != pre) originals.push_back(&bb);
    ValueToValueMapTy vmap;
    SmallVector<BasicBlock*, 32> clones;
    for (BasicBlock* bb : originals) {
      BasicBlock* c = CloneBasicBlock(bb, vmap, ".zexfast", &f);
      vmap[bb] = c;
      clones.push_back(c);
    }
    remapInstructionsInBlocks(clones, vmap);
    for (const BoundsCheck& c : checks) {
      auto* fast_br = cast<BranchInst>(vmap[c.br]);
      BasicBlock* fast_bb = fast_br->getParent();
      fast_br->getSuccessor(1 - c.hot)->removePredecessor(fast_bb);
      BranchInst::Create(fast_br->getSuccessor(c.hot), fast_br);
      fast_br->eraseFromParent();
    }
    MDBuilder md(ctx);
    ir.CreateCondBr(pred, cast<BasicBlock>(vmap[old_entry]), old_entry, md.createBranchWeights(1000, 1));
    ++versioned;
  }
  return versioned;
}

}  // namespace zexcpu
