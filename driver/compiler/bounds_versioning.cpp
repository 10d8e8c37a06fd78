// Work-group range versioning of bounds checks (docs/cpu-driver-compiler.md, step 7).
//
// PoCL runs a work-group as a loop over its work-items, and LLVM vectorizes that loop only when no
// block in it has a side effect it cannot predicate; a zex throw path (a CAS and stores) is such a
// block, so a bounds-checked kernel stays scalar (docs/cpu-driver-compiler.md has the cost). When
// every throw in a kernel is guarded by checks that compare affine functions of the work-item's ids
// (zex's own `i >= n`, and the memory checks' `p - base <= size - bytes` on a pointer indexed by ids),
// the group's corner work-items bound each check for all of its work-items: the kernel gets a
// work-group-uniform branch to a copy of its body in which those checks are known to pass, and PoCL's
// loop over that copy has no throw path at all.
//
// Why the corners are enough. Each side of a check is built from the ids by add, sub, mul by a
// group-uniform value, shl by a constant, casts, getelementptr and ptrtoint. Modulo 2^w (the side's
// width) that is the integer affine function F(g) = c + sum k_d g_d, with c and k_d computed once in
// the new entry block. An affine function's extremes over the group's box of ids are at its corners;
// so if F lies in the side's range ([0, 2^w) unsigned, or signed) at every corner it lies there for
// every work-item, the side's value IS F(g) there (no wrap), and a comparison of two such sides that
// holds at every corner holds throughout. A zext/sext of an id-dependent value needs its operand exact
// the same way (the check is added to the predicate). Corner values are computed in i128 with ids
// below 2^32, so the predicate itself cannot overflow.
//
// Loops. A loop's induction variable (a header phi that ScalarEvolution reads as start + t * step, with a
// group-uniform start and a constant step) is one more variable of the forms: t runs over [0, count],
// where count is the exit count of an exit that every iteration passes (its block dominates the latch)
// and is group-uniform. The phi's value at the t-th pass through the header is start + t * step modulo
// 2^w, whatever wraps; the loop cannot pass the header more than count + 1 times, since that exit is
// tested on every iteration and taken at the latest after count back edges. So a check inside the loop
// on i * n + k holds for all its iterations if it holds at the box's and t's extremes: the check is
// hoisted out of the loop, for the whole group, without a second copy of the loop. The count is
// ScalarEvolution's, which reads the IR's no-wrap flags as LLVM's own loop passes do.

#include "compiler/parts.hpp"

#include <llvm/ADT/Triple.h>
#include <llvm/Analysis/AssumptionCache.h>
#include <llvm/Analysis/LoopInfo.h>
#include <llvm/Analysis/ScalarEvolution.h>
#include <llvm/Analysis/ScalarEvolutionExpressions.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/Dominators.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GetElementPtrTypeIterator.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <tuple>
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

// Builtins whose value is the same for every work-item of a group (with a constant dimension).
bool is_group_uniform_builtin(llvm::StringRef n) {
  return n == "_Z12get_group_idj" || n == "_Z14get_local_sizej" || n == "_Z17get_global_offsetj" ||
         n == "_Z14get_num_groupsj" || n == "_Z15get_global_sizej" || n == "_Z23get_enqueued_local_sizej";
}

// A byval kernel argument that the kernel only reads (through constant-index GEPs): its loads give the
// same value to every work-item (zex's bounds struct is one).
bool read_only_byval(const llvm::Argument* a) {
  using namespace llvm;
  if (!a->hasByValAttr()) return false;
  std::vector<const Value*> work{a};
  for (size_t i = 0; i < work.size(); ++i)
    for (const User* u : work[i]->users()) {
      if (auto* g = dyn_cast<GetElementPtrInst>(u)) {
        if (!g->hasAllConstantIndices() || g->getPointerOperand() != work[i]) return false;
        work.push_back(g);
      } else if (auto* l = dyn_cast<LoadInst>(u)) {
        if (l->isVolatile() || l->isAtomic()) return false;
      } else if (auto* cb = dyn_cast<CallBase>(u)) {
        // Passed on by value (a zex_state_t to a throw): the callee gets a copy.
        for (unsigned k = 0; k < cb->arg_size(); ++k)
          if (cb->getArgOperand(k) == work[i] && !cb->isByValArgument(k)) return false;
      } else {
        return false;
      }
    }
  return true;
}

enum class Kind { none, uniform, linear };

// What a value is, per work-item: the same for the group (uniform), an affine function of the ids
// (linear: which dimensions it may depend on), or neither.
struct Class {
  Kind kind = Kind::none;
  unsigned dims = 0;  // bit d: may depend on variable d (the ids 0-2, loop counters from kIds)
};

// The forms' variables: the three ids, then up to kLoops loops' iteration counters.
constexpr unsigned kIds = 3, kLoops = 8, kVars = kIds + kLoops;
using Coefs = std::array<llvm::Value*, kVars>;

// A loop's induction variable: phi == start + t * step (modulo 2^w) at the t-th pass through its
// header, t in [0, count]; start and count are group-uniform SCEVs (expanded in the new entry block).
struct LoopVar {
  const llvm::SCEV* start;
  llvm::APInt step;
  const llvm::SCEV* count;
};

struct Analysis {
  const llvm::DataLayout& dl;
  std::map<const llvm::Value*, Class> memo;
  std::map<const llvm::PHINode*, unsigned> loop_var;  // induction variable -> its variable (kIds + i)

  static int dim_of(const llvm::CallInst* call, llvm::StringRef name) {
    const llvm::Function* f = call->getCalledFunction();
    // 64-bit ids only (the forms' arithmetic is 64-bit; Physical32 modules are left alone).
    if (!f || f->getName() != name || !call->getType()->isIntegerTy(64) || call->arg_size() != 1) return -1;
    auto* d = llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(0));
    return d && d->getZExtValue() <= 2 ? static_cast<int>(d->getZExtValue()) : -1;
  }

  // The get_global_id / get_local_id call an extractelement reads (llvm-spirv reads the
  // GlobalInvocationId built-in as a vector of three calls and an extract).
  static llvm::Value* extracted(const llvm::ExtractElementInst* ex) {
    using namespace llvm;
    auto* idx = dyn_cast<ConstantInt>(ex->getIndexOperand());
    if (!idx) return nullptr;
    const Value* vec = ex->getVectorOperand();
    for (int steps = 0; steps < 4; ++steps) {
      auto* ins = dyn_cast<InsertElementInst>(vec);
      if (!ins) return nullptr;
      auto* at = dyn_cast<ConstantInt>(ins->getOperand(2));
      if (!at) return nullptr;
      if (at->getZExtValue() == idx->getZExtValue()) return const_cast<Value*>(ins->getOperand(1));
      vec = ins->getOperand(0);
    }
    return nullptr;
  }

  Class classify(const llvm::Value* v, int depth = 0) {
    auto it = memo.find(v);
    if (it != memo.end()) return it->second;
    Class c = depth > 24 ? Class{} : compute(v, depth);
    memo[v] = c;
    return c;
  }

  Class compute(const llvm::Value* v, int depth) {
    using namespace llvm;
    const Class none{}, uniform{Kind::uniform, 0};
    Type* t = v->getType();
    if (!t->isIntegerTy() && !t->isPointerTy()) return none;
    if (t->isIntegerTy() && t->getIntegerBitWidth() > 64) return none;
    if (isa<ConstantInt>(v) || isa<ConstantPointerNull>(v)) return uniform;
    if (auto* a = dyn_cast<Argument>(v)) return a->hasByValAttr() ? none : uniform;
    auto* inst = dyn_cast<Instruction>(v);
    if (!inst) return none;
    if (auto* phi = dyn_cast<PHINode>(inst)) {
      auto lv = loop_var.find(phi);
      return lv == loop_var.end() ? none : Class{Kind::linear, 1u << lv->second};
    }
    auto sub = [&](const Value* o) { return classify(o, depth + 1); };
    // Combines operands' classes: uniform if all are, linear (union of dims) if `linear_ok`.
    auto join = [&](std::initializer_list<const Value*> ops, bool linear_ok) {
      Class r = uniform;
      for (const Value* o : ops) {
        Class c = sub(o);
        if (c.kind == Kind::none) return none;
        if (c.kind == Kind::linear) {
          if (!linear_ok) return none;
          r.kind = Kind::linear;
          r.dims |= c.dims;
        }
      }
      return r;
    };
    if (auto* call = dyn_cast<CallInst>(inst)) {
      for (const char* n : {"_Z13get_global_idj", "_Z12get_local_idj"})
        if (int d = dim_of(call, n); d >= 0) return Class{Kind::linear, 1u << d};
      const Function* f = call->getCalledFunction();
      if (f && is_group_uniform_builtin(f->getName()) && call->arg_size() == 1 &&
          isa<ConstantInt>(call->getArgOperand(0)) && call->getType()->isIntegerTy(64))
        return uniform;
      // Integer intrinsics that cannot trap or touch memory (instcombine makes the memory checks'
      // `size >= b ? size - (b - 1) : 0` a usub.sat), of uniform operands.
      // Integer operands only (objectsize or ptrmask of a pointer argument would need the pointer).
      if (f && f->isIntrinsic() && f->doesNotAccessMemory() && isSafeToSpeculativelyExecute(call)) {
        for (const Use& u : call->args())
          if (!u->getType()->isIntegerTy() || sub(u.get()).kind != Kind::uniform) return none;
        return uniform;
      }
      return none;
    }
    if (auto* ex = dyn_cast<ExtractElementInst>(inst)) {
      const Value* e = extracted(ex);
      return e && isa<CallInst>(e) ? sub(e) : none;
    }
    if (auto* l = dyn_cast<LoadInst>(inst)) {
      // A load from a read-only byval argument (through constant GEPs).
      const Value* p = l->getPointerOperand();
      while (auto* g = dyn_cast<GetElementPtrInst>(p)) p = g->getPointerOperand();
      auto* a = dyn_cast<Argument>(p);
      if (!a || l->isVolatile() || l->isAtomic() || !read_only_byval(a)) return none;
      // Inside the object: the new entry block reads it for every work-item, where the original may
      // read it only under a guard.
      APInt off(dl.getIndexTypeSizeInBits(l->getPointerOperandType()), 0);
      const Value* b = l->getPointerOperand()->stripAndAccumulateConstantOffsets(dl, off, /*AllowNonInbounds=*/true);
      if (b != a || off.isNegative() ||
          off.getZExtValue() + dl.getTypeStoreSize(l->getType()).getFixedSize() >
              dl.getTypeAllocSize(a->getParamByValType()).getFixedSize())
        return none;
      return uniform;
    }
    if (auto* g = dyn_cast<GetElementPtrInst>(inst)) {
      Class r = sub(g->getPointerOperand());
      if (r.kind == Kind::none) return none;
      for (auto gi = gep_type_begin(g); gi != gep_type_end(g); ++gi) {
        Class c = sub(gi.getOperand());
        if (c.kind == Kind::none || (gi.isStruct() && !isa<ConstantInt>(gi.getOperand()))) return none;
        if (gi.getOperand()->getType()->getIntegerBitWidth() > 64) return none;
        if (c.kind == Kind::linear) {
          r.kind = Kind::linear;
          r.dims |= c.dims;
        }
      }
      return r;
    }
    if (auto* cst = dyn_cast<CastInst>(inst)) {
      switch (cst->getOpcode()) {
        case Instruction::ZExt: case Instruction::SExt: case Instruction::Trunc:
        case Instruction::BitCast: case Instruction::AddrSpaceCast:
          return sub(inst->getOperand(0));
        case Instruction::PtrToInt:
          // A pointer's address as a 64-bit integer (spir64 pointers are 64 bits).
          return t->getIntegerBitWidth() == 64 ? sub(inst->getOperand(0)) : none;
        default:
          return none;
      }
    }
    switch (inst->getOpcode()) {
      case Instruction::Add: case Instruction::Sub:
        return join({inst->getOperand(0), inst->getOperand(1)}, true);
      case Instruction::Mul: {
        Class a = sub(inst->getOperand(0)), b = sub(inst->getOperand(1));
        if (a.kind == Kind::none || b.kind == Kind::none) return none;
        if (a.kind == Kind::linear && b.kind == Kind::linear) return none;
        return a.kind == Kind::linear ? a : b;
      }
      case Instruction::Shl: case Instruction::LShr: case Instruction::AShr: {
        // Only by a constant amount below the width (a larger one is poison, which the original might
        // never have computed); only shl stays affine.
        auto* k = dyn_cast<ConstantInt>(inst->getOperand(1));
        if (!k || k->getZExtValue() >= t->getIntegerBitWidth()) return none;
        Class a = sub(inst->getOperand(0));
        if (a.kind == Kind::linear && inst->getOpcode() != Instruction::Shl) return none;
        return a;
      }
      case Instruction::And: case Instruction::Or: case Instruction::Xor:
        return join({inst->getOperand(0), inst->getOperand(1)}, false);
      case Instruction::ICmp:
        return join({inst->getOperand(0), inst->getOperand(1)}, false);
      case Instruction::Select:
        return join({inst->getOperand(0), inst->getOperand(1), inst->getOperand(2)}, false);
      default:
        return none;
    }
  }
};

// A linear value's affine form in the new entry block: value == c + sum k[d] * id_d (modulo 2^width),
// components of the value's width (64 for pointers); k[d] null where it does not depend on dimension d.
struct Form {
  unsigned width = 64;
  llvm::Value* c = nullptr;
  Coefs k{};
};

// A value that must equal its form exactly (no wrap) for the corners to speak for the group.
struct Exact {
  Form f;
  bool is_signed = false;
};

struct Emitter {
  Analysis& an;
  llvm::IRBuilder<>& ir;
  std::array<llvm::Value*, 3> first;  // the group's first global id per dimension (i64)
  const std::vector<LoopVar>* loops = nullptr;
  std::map<const llvm::Value*, llvm::Value*> uniform_copy;
  std::map<const llvm::Value*, Form> forms;
  std::vector<Exact> exact;

  llvm::Type* int_of(const llvm::Value* v) {
    llvm::Type* t = v->getType();
    return t->isPointerTy() ? llvm::Type::getInt64Ty(t->getContext()) : t;
  }

  // A uniform value recomputed in the entry block (flags that could make poison dropped). Pointers
  // become their 64-bit address.
  llvm::Value* uniform(const llvm::Value* v) {
    using namespace llvm;
    auto it = uniform_copy.find(v);
    if (it != uniform_copy.end()) return it->second;
    Value* r = nullptr;
    if (isa<Constant>(v) || isa<Argument>(v)) {
      r = const_cast<Value*>(v);
    } else if (auto* l = dyn_cast<LoadInst>(v)) {
      Value* p = const_cast<Value*>(l->getPointerOperand());
      std::vector<const GetElementPtrInst*> geps;
      while (auto* g = dyn_cast<GetElementPtrInst>(p)) {
        geps.push_back(g);
        p = g->getPointerOperand();
      }
      for (auto g = geps.rbegin(); g != geps.rend(); ++g) {
        std::vector<Value*> idx((*g)->idx_begin(), (*g)->idx_end());
        p = ir.CreateGEP((*g)->getSourceElementType(), p, idx);
      }
      // Frozen, like the intrinsics below: the original may read it only under a guard, and padding
      // reads as undef; a frozen value is some fixed value, and the checks that would use it are not
      // reached where the guard is false.
      r = ir.CreateFreeze(ir.CreateAlignedLoad(l->getType(), p, l->getAlign()));
    } else if (auto* call = dyn_cast<CallInst>(v)) {
      std::vector<Value*> args;
      for (const Use& u : call->args())
        args.push_back(isa<Constant>(u.get()) ? u.get() : uniform(u.get()));
      CallInst* ci = ir.CreateCall(call->getFunctionType(), call->getCalledOperand(), args);
      ci->setCallingConv(call->getCallingConv());
      // An intrinsic can return poison (ctlz of 0 with is_zero_poison) where the original computes it
      // only under a guard: frozen, so the predicate is never poison.
      r = call->getCalledFunction() && call->getCalledFunction()->isIntrinsic() ? ir.CreateFreeze(ci) : ci;
    } else if (auto* ex = dyn_cast<ExtractElementInst>(v)) {
      r = uniform(Analysis::extracted(ex));
    } else if (auto* g = dyn_cast<GetElementPtrInst>(v)) {
      std::vector<Value*> idx;
      for (const Use& u : g->indices()) idx.push_back(uniform(u.get()));
      r = ir.CreateGEP(g->getSourceElementType(), uniform_ptr(g->getPointerOperand()), idx);
    } else if (auto* cst = dyn_cast<CastInst>(v)) {
      if (cst->getOpcode() == Instruction::BitCast || cst->getOpcode() == Instruction::AddrSpaceCast ||
          cst->getOpcode() == Instruction::PtrToInt)
        r = uniform(cst->getOperand(0));  // pointers are already their address
      else
        r = ir.CreateCast(cst->getOpcode(), uniform(cst->getOperand(0)), cst->getType());
    } else if (auto* cmp = dyn_cast<ICmpInst>(v)) {
      r = ir.CreateICmp(cmp->getPredicate(), uniform(cmp->getOperand(0)), uniform(cmp->getOperand(1)));
    } else if (auto* sel = dyn_cast<SelectInst>(v)) {
      r = ir.CreateSelect(uniform(sel->getCondition()), uniform(sel->getTrueValue()), uniform(sel->getFalseValue()));
    } else {
      auto* bin = cast<BinaryOperator>(v);
      r = ir.CreateBinOp(bin->getOpcode(), uniform(bin->getOperand(0)), uniform(bin->getOperand(1)));
    }
    if (r->getType()->isPointerTy()) r = ir.CreatePtrToInt(r, int_of(v));
    uniform_copy[v] = r;
    return r;
  }

  // A uniform pointer as a pointer (for a GEP's base).
  llvm::Value* uniform_ptr(const llvm::Value* p) {
    return ir.CreateIntToPtr(uniform(p), p->getType());
  }

  // Coefficients combined once per operation and operands, so that forms with the same dependence on
  // the ids keep the same coefficient values (their variable part is then shared).
  std::map<std::tuple<int, llvm::Value*, llvm::Value*>, llvm::Value*> combined;
  llvm::Value* add(llvm::Value* a, llvm::Value* b) {
    if (!a || !b) return a ? a : b;
    llvm::Value*& r = combined[{0, a, b}];
    if (!r) r = ir.CreateAdd(a, b);
    return r;
  }
  llvm::Value* neg(llvm::Value* a) {
    llvm::Value*& r = combined[{1, a, nullptr}];
    if (!r) r = ir.CreateNeg(a);
    return r;
  }
  llvm::Value* mul(llvm::Value* a, llvm::Value* b) {
    if (!a) return nullptr;
    llvm::Value*& r = combined[{2, a, b}];
    if (!r) r = ir.CreateMul(a, b);
    return r;
  }
  llvm::Value* zero(unsigned w) { return llvm::ConstantInt::get(ir.getIntNTy(w), 0); }

  // A group-uniform SCEV as a value of its type in the new entry block (see expandable()).
  llvm::Value* expand(const llvm::SCEV* s) {
    using namespace llvm;
    if (auto* k = dyn_cast<SCEVConstant>(s)) return k->getValue();
    if (auto* u = dyn_cast<SCEVUnknown>(s)) return uniform(u->getValue());
    if (auto* p = dyn_cast<SCEVPtrToIntExpr>(s)) return ir.CreateZExtOrTrunc(expand(p->getOperand()), p->getType());
    if (auto* c = dyn_cast<SCEVCastExpr>(s)) {
      Value* o = expand(c->getOperand());
      if (isa<SCEVTruncateExpr>(s)) return ir.CreateTrunc(o, c->getType());
      if (isa<SCEVZeroExtendExpr>(s)) return ir.CreateZExt(o, c->getType());
      return ir.CreateSExt(o, c->getType());
    }
    if (auto* d = dyn_cast<SCEVUDivExpr>(s)) return ir.CreateUDiv(expand(d->getLHS()), expand(d->getRHS()));
    auto* n = cast<SCEVNAryExpr>(s);
    Value* r = expand(n->getOperand(0));
    for (size_t i = 1; i < n->getNumOperands(); ++i) {
      Value* o = expand(n->getOperand(i));
      switch (s->getSCEVType()) {
        case scAddExpr: r = ir.CreateAdd(r, o); break;
        case scMulExpr: r = ir.CreateMul(r, o); break;
        case scSMaxExpr: r = ir.CreateBinaryIntrinsic(Intrinsic::smax, r, o); break;
        case scUMaxExpr: r = ir.CreateBinaryIntrinsic(Intrinsic::umax, r, o); break;
        case scSMinExpr: r = ir.CreateBinaryIntrinsic(Intrinsic::smin, r, o); break;
        default: r = ir.CreateBinaryIntrinsic(Intrinsic::umin, r, o); break;
      }
    }
    return r;
  }

  Form uniform_form(const llvm::Value* v) {
    Form f;
    f.width = int_of(v)->getIntegerBitWidth();
    f.c = uniform(v);
    return f;
  }

  // The form at another width: components truncated, or sign-extended (the representatives the corner
  // values are computed from, so the integer function is the same).
  Form resize(const Form& in, unsigned w) {
    Form f;
    f.width = w;
    auto cv = [&](llvm::Value* x) -> llvm::Value* {
      if (!x || in.width == w) return x;
      return w < in.width ? ir.CreateTrunc(x, ir.getIntNTy(w)) : ir.CreateSExt(x, ir.getIntNTy(w));
    };
    f.c = cv(in.c);
    for (unsigned d = 0; d < kVars; ++d) f.k[d] = cv(in.k[d]);
    return f;
  }

  // An extension of a linear value: exact if its operand is (checked at the corners), then the same
  // integer function, whose components sign-extended represent it.
  Form extend(const llvm::Value* operand, unsigned w, bool is_signed) {
    Form in = form(operand);
    exact.push_back({in, is_signed});
    return resize(in, w);
  }

  Form form(const llvm::Value* v) {
    using namespace llvm;
    Class cl = an.classify(v);
    if (cl.kind == Kind::uniform) return uniform_form(v);
    auto it = forms.find(v);
    if (it != forms.end()) return it->second;
    Form f;
    f.width = int_of(v)->getIntegerBitWidth();
    unsigned w = f.width;
    if (auto* phi = dyn_cast<PHINode>(v)) {
      const unsigned var = an.loop_var.at(phi);
      const LoopVar& lv = (*loops)[var - kIds];
      f.c = expand(lv.start);
      f.k[var] = ConstantInt::get(ir.getContext(), lv.step);
    } else if (auto* call = dyn_cast<CallInst>(v)) {
      int d = Analysis::dim_of(call, "_Z13get_global_idj");
      bool local = d < 0;
      if (local) d = Analysis::dim_of(call, "_Z12get_local_idj");
      f.c = local ? ir.CreateNeg(first[d]) : zero(64);
      f.k[d] = ConstantInt::get(ir.getInt64Ty(), 1);
    } else if (auto* ex = dyn_cast<ExtractElementInst>(v)) {
      f = form(Analysis::extracted(ex));
    } else if (auto* g = dyn_cast<GetElementPtrInst>(v)) {
      f = form(g->getPointerOperand());
      const DataLayout& dl = an.dl;
      for (auto gi = gep_type_begin(g); gi != gep_type_end(g); ++gi) {
        if (StructType* st = gi.getStructTypeOrNull()) {
          uint64_t off = dl.getStructLayout(st)->getElementOffset(
              static_cast<unsigned>(cast<ConstantInt>(gi.getOperand())->getZExtValue()));
          f.c = ir.CreateAdd(f.c, ir.getInt64(off));
          continue;
        }
        Value* stride = ir.getInt64(dl.getTypeAllocSize(gi.getIndexedType()).getFixedSize());
        const Value* idx = gi.getOperand();
        // Indices narrower than the pointer are sign-extended.
        Form fi = an.classify(idx).kind == Kind::uniform
                      ? resize(uniform_form(idx), 64)
                      : (idx->getType()->getIntegerBitWidth() < 64 ? extend(idx, 64, true) : form(idx));
        f.c = ir.CreateAdd(f.c, ir.CreateMul(fi.c, stride));
        for (unsigned d = 0; d < kVars; ++d) f.k[d] = add(f.k[d], mul(fi.k[d], stride));
      }
    } else if (auto* cst = dyn_cast<CastInst>(v)) {
      const Value* op = cst->getOperand(0);
      switch (cst->getOpcode()) {
        case Instruction::ZExt: f = extend(op, w, false); break;
        case Instruction::SExt: f = extend(op, w, true); break;
        case Instruction::Trunc: f = resize(form(op), w); break;
        default: f = form(op); break;  // bitcast, addrspacecast, ptrtoint (64 bits)
      }
    } else {
      auto* bin = cast<BinaryOperator>(v);
      const Value* a = bin->getOperand(0);
      const Value* b = bin->getOperand(1);
      switch (bin->getOpcode()) {
        case Instruction::Add: case Instruction::Sub: {
          Form fa = form(a), fb = form(b);
          bool is_sub = bin->getOpcode() == Instruction::Sub;
          f.c = is_sub ? ir.CreateSub(fa.c, fb.c) : ir.CreateAdd(fa.c, fb.c);
          for (unsigned d = 0; d < kVars; ++d) {
            Value* kb = fb.k[d] && is_sub ? neg(fb.k[d]) : fb.k[d];
            f.k[d] = add(fa.k[d], kb);
          }
          break;
        }
        case Instruction::Mul: {
          if (an.classify(a).kind == Kind::uniform) std::swap(a, b);
          Form fa = form(a);
          Value* u = uniform(b);
          f.c = ir.CreateMul(fa.c, u);
          for (unsigned d = 0; d < kVars; ++d) f.k[d] = mul(fa.k[d], u);
          break;
        }
        default: {  // shl by a constant
          Form fa = form(a);
          Value* u = ir.CreateShl(ConstantInt::get(ir.getIntNTy(w), 1), bin->getOperand(1));
          f.c = ir.CreateMul(fa.c, u);
          for (unsigned d = 0; d < kVars; ++d) f.k[d] = mul(fa.k[d], u);
          break;
        }
      }
    }
    forms[v] = f;
    return f;
  }
};

// One recognised check: a conditional branch whose cold successor leads to a throw, on a condition
// that is an and (or, when the hot successor is the false one) of comparisons of linear or uniform
// values.
struct BoundsCheck {
  llvm::BranchInst* br = nullptr;
  unsigned hot = 0;  // successor index taken when the check passes
  // Comparisons that pass: lhs pred rhs.
  struct Leaf {
    llvm::ICmpInst* cmp;
    llvm::ICmpInst::Predicate pass_pred;
  };
  std::vector<Leaf> leaves;
};

// Splits `cond` (which must equal `want` for the check to pass) into comparisons that must all pass.
bool leaves_of(llvm::Value* cond, bool want, Analysis& an, std::vector<BoundsCheck::Leaf>* out, int depth = 0) {
  using namespace llvm;
  if (depth > 8) return false;
  Value *a = nullptr, *b = nullptr;
  auto* inst = dyn_cast<Instruction>(cond);
  if (!inst) return false;
  // want true: and(a, b) or select(a, b, false); want false: or(a, b) or select(a, true, b).
  if (inst->getOpcode() == Instruction::And && want) {
    a = inst->getOperand(0), b = inst->getOperand(1);
  } else if (inst->getOpcode() == Instruction::Or && !want) {
    a = inst->getOperand(0), b = inst->getOperand(1);
  } else if (auto* sel = dyn_cast<SelectInst>(inst)) {
    auto* k = dyn_cast<ConstantInt>(want ? sel->getFalseValue() : sel->getTrueValue());
    if (!k || k->isOne() == want) return false;
    a = sel->getCondition();
    b = want ? sel->getTrueValue() : sel->getFalseValue();
  } else if (inst->getOpcode() == Instruction::Xor && isa<ConstantInt>(inst->getOperand(1)) &&
             cast<ConstantInt>(inst->getOperand(1))->isOne()) {
    return leaves_of(inst->getOperand(0), !want, an, out, depth + 1);
  }
  if (a) return leaves_of(a, want, an, out, depth + 1) && leaves_of(b, want, an, out, depth + 1);
  auto* cmp = dyn_cast<ICmpInst>(inst);
  if (!cmp || !cmp->getOperand(0)->getType()->isIntegerTy()) return false;
  Class ca = an.classify(cmp->getOperand(0)), cb = an.classify(cmp->getOperand(1));
  if (ca.kind == Kind::none || cb.kind == Kind::none) return false;
  // eq/ne are not convex; fine when both sides are uniform.
  if (!cmp->isRelational() && (ca.kind == Kind::linear || cb.kind == Kind::linear)) return false;
  out->push_back({cmp, want ? cmp->getPredicate() : cmp->getInversePredicate()});
  return true;
}

// Whether `s` is an integer SCEV expand() can write in the new entry block: constants, group-uniform
// values, casts, sums, products, min/max and division by a non-zero constant of them.
bool expandable(const llvm::SCEV* s, Analysis& an, int depth = 0) {
  using namespace llvm;
  if (depth > 16 || !s->getType()->isIntegerTy() || s->getType()->getIntegerBitWidth() > 64) return false;
  if (isa<SCEVConstant>(s)) return true;
  if (auto* u = dyn_cast<SCEVUnknown>(s)) return an.classify(u->getValue()).kind == Kind::uniform;
  if (auto* p = dyn_cast<SCEVPtrToIntExpr>(s)) {
    auto* u = dyn_cast<SCEVUnknown>(p->getOperand());
    return u && an.classify(u->getValue()).kind == Kind::uniform;
  }
  if (isa<SCEVTruncateExpr>(s) || isa<SCEVZeroExtendExpr>(s) || isa<SCEVSignExtendExpr>(s))
    return expandable(cast<SCEVCastExpr>(s)->getOperand(), an, depth + 1);
  if (auto* d = dyn_cast<SCEVUDivExpr>(s)) {
    auto* k = dyn_cast<SCEVConstant>(d->getRHS());
    return k && !k->getValue()->isZero() && expandable(d->getLHS(), an, depth + 1);
  }
  switch (s->getSCEVType()) {
    case scAddExpr: case scMulExpr: case scSMaxExpr: case scUMaxExpr: case scSMinExpr: case scUMinExpr:
      for (const SCEV* o : cast<SCEVNAryExpr>(s)->operands())
        if (!expandable(o, an, depth + 1)) return false;
      return true;
    default:
      return false;
  }
}

// The induction variables of f's loops that the forms can use (see the top of the file), registered in
// `an`. Reads f only.
std::vector<LoopVar> loop_vars(llvm::Function& f, llvm::ScalarEvolution& se, llvm::LoopInfo& li, llvm::DominatorTree& dt,
                               Analysis& an) {
  using namespace llvm;
  std::vector<LoopVar> out;
  // Uniformity does not depend on the loops: a scratch analysis keeps `an` from memoizing a phi
  // before it is registered.
  Analysis scratch{an.dl, {}, {}};
  for (Loop* l : li.getLoopsInPreorder()) {
    BasicBlock* latch = l->getLoopLatch();
    if (!latch) continue;
    SmallVector<BasicBlock*, 8> exiting;
    l->getExitingBlocks(exiting);
    // The latch's own test first: a check's exit (the throw) bounds the loop too, but at the iteration
    // that fails, so the predicate would never hold.
    std::stable_partition(exiting.begin(), exiting.end(), [&](BasicBlock* b) { return b == latch; });
    const SCEV* count = nullptr;
    for (BasicBlock* b : exiting) {
      if (!dt.dominates(b, latch)) continue;  // an exit some iteration may skip bounds nothing
      const SCEV* c = se.getExitCount(l, b);
      if (!isa<SCEVCouldNotCompute>(c) && expandable(c, scratch)) {
        count = c;
        break;
      }
    }
    if (!count) continue;
    for (PHINode& phi : l->getHeader()->phis()) {
      if (out.size() >= kLoops) return out;
      if (!phi.getType()->isIntegerTy() || phi.getType()->getIntegerBitWidth() > 64) continue;
      auto* ar = dyn_cast<SCEVAddRecExpr>(se.getSCEV(&phi));
      if (!ar || ar->getLoop() != l || !ar->isAffine()) continue;
      auto* step = dyn_cast<SCEVConstant>(ar->getStepRecurrence(se));
      if (!step || !expandable(ar->getStart(), scratch)) continue;
      an.loop_var[&phi] = kIds + static_cast<unsigned>(out.size());
      out.push_back({ar->getStart(), step->getAPInt(), count});
    }
  }
  return out;
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
  Type* i128 = Type::getIntNTy(ctx, 128);
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
    Analysis an{m.getDataLayout(), {}, {}};
    // Read before anything changes; the SCEVs stay valid while f is only added to.
    DominatorTree dt(f);
    LoopInfo li(dt);
    TargetLibraryInfoImpl tlii(Triple(m.getTargetTriple()));
    TargetLibraryInfo tli(tlii);
    AssumptionCache ac(f);
    ScalarEvolution se(f, tli, ac, dt, li);
    const std::vector<LoopVar> loops = loop_vars(f, se, li, dt, an);
    std::vector<BoundsCheck> checks;
    for (BasicBlock& bb : f) {
      auto* br = dyn_cast<BranchInst>(bb.getTerminator());
      if (!br || !br->isConditional()) continue;
      bool cold0 = leads_to_throw(br->getSuccessor(0)), cold1 = leads_to_throw(br->getSuccessor(1));
      if (cold0 == cold1) continue;
      BoundsCheck c;
      c.br = br;
      c.hot = cold0 ? 1 : 0;
      if (!leaves_of(br->getCondition(), c.hot == 0, an, &c.leaves)) continue;
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

    // The predicate, in a new entry block: every check passes at every corner of the group's box of
    // global ids, and every value that must be exact is, at every corner (see the top of the file).
    BasicBlock* old_entry = &f.getEntryBlock();
    BasicBlock* pre = BasicBlock::Create(ctx, "zex.version", &f, old_entry);
    // Static allocas stay in the entry block, shared by both versions (only one runs per work-item).
    std::vector<AllocaInst*> allocas;
    for (Instruction& i : *old_entry)
      if (auto* a = dyn_cast<AllocaInst>(&i); a && a->isStaticAlloca()) allocas.push_back(a);
    for (AllocaInst* a : allocas) a->moveBefore(*pre, pre->end());
    IRBuilder<> ir(pre);
    auto call = [&](const char* name, unsigned d) {
      CallInst* ci = ir.CreateCall(builtin(name), {ConstantInt::get(i32, d)});
      ci->setCallingConv(CallingConv::SPIR_FUNC);
      return ci;
    };
    Emitter em{an, ir, {}, &loops, {}, {}, {}, {}};
    std::array<Value*, 3> last{};
    std::array<Value*, kVars> lo128{}, hi128{};
    Value* pred = ConstantInt::getTrue(ctx);
    for (unsigned d = 0; d < 3; ++d) {
      Value* size = call("_Z14get_local_sizej", d);
      em.first[d] = ir.CreateAdd(ir.CreateMul(call("_Z12get_group_idj", d), size), call("_Z17get_global_offsetj", d));
      last[d] = ir.CreateAdd(em.first[d], ir.CreateSub(size, ConstantInt::get(i64, 1)));
      lo128[d] = ir.CreateZExt(em.first[d], i128);
      hi128[d] = ir.CreateZExt(last[d], i128);
    }
    // A loop's counter runs from 0 to its exit count (unsigned).
    for (size_t i = 0; i < loops.size(); ++i) {
      lo128[kIds + i] = ConstantInt::get(i128, 0);
      hi128[kIds + i] = ir.CreateZExt(em.expand(loops[i].count), i128);
    }
    // The variables some form depends on (range() marks them): only theirs are tested below. Per group,
    // the predicate is the checks' whole cost (with it replaced by `true`, saxpy and stencil2d ran at
    // 0.95x the unchecked kernel, against 1.3x), and a 1-D kernel need not test the other two ids.
    unsigned used = 0;
    // A form's least and greatest exact value over the group's box: c plus, per dimension, the smaller
    // and the larger of k*first and k*last. Forms of accesses off one index (c[i], c[i+1], c[i-w]) share
    // their coefficients, so the variable part is computed once for all of them.
    std::map<Coefs, std::pair<Value*, Value*>> variable;
    auto range = [&](const Form& fm) {
      auto it = variable.find(fm.k);
      if (it == variable.end()) {
        Value* vmin = ConstantInt::get(i128, 0);
        Value* vmax = vmin;
        for (unsigned d = 0; d < kVars; ++d) {
          if (!fm.k[d]) continue;
          used |= 1u << d;
          Value* k = ir.CreateSExt(fm.k[d], i128);
          Value* at_lo = ir.CreateMul(k, lo128[d]);
          Value* at_hi = ir.CreateMul(k, hi128[d]);
          Value* rising = ir.CreateICmpSGE(k, ConstantInt::get(i128, 0));
          vmin = ir.CreateAdd(vmin, ir.CreateSelect(rising, at_lo, at_hi));
          vmax = ir.CreateAdd(vmax, ir.CreateSelect(rising, at_hi, at_lo));
        }
        it = variable.emplace(fm.k, std::make_pair(vmin, vmax)).first;
      }
      Value* c = ir.CreateSExt(fm.c, i128);
      return std::make_pair(ir.CreateAdd(c, it->second.first), ir.CreateAdd(c, it->second.second));
    };
    // The exact values [lo, hi] lie in a w-bit integer's range: (lo is above its least, hi below its
    // greatest).
    auto in_range = [&](std::pair<Value*, Value*> r, unsigned w, bool is_signed) {
      APInt lo = is_signed ? APInt::getSignedMinValue(w).sext(128) : APInt(128, 0);
      APInt hi = is_signed ? APInt::getSignedMaxValue(w).sext(128) : APInt::getMaxValue(w).zext(128);
      return std::make_pair(ir.CreateICmpSGE(r.first, ConstantInt::get(i128, lo)),
                            ir.CreateICmpSLE(r.second, ConstantInt::get(i128, hi)));
    };
    // Checks of a linear side against a uniform one, by family: the same comparison, the same uniform
    // value, the same coefficients (the stencil's in[c], in[c-1], in[c+w] against one `starts`). A
    // family holds for the group iff it holds for its least and its greatest constant term, so it costs
    // two comparisons however many accesses it has.
    struct Family {
      CmpInst::Predicate pred;  // linear pred uniform
      unsigned width;
      std::vector<Value*> cs;   // constant terms (width bits)
      Value* u;                 // the uniform side, extended to i128 as the comparison reads it
      Coefs k;
    };
    std::map<std::tuple<int, Value*, Coefs>, Family> families;
    std::vector<std::tuple<int, Value*, Coefs>> family_order;
    auto compare = [&](CmpInst::Predicate p, Value* x, Value* y) { return ir.CreateICmp(ICmpInst::getSignedPredicate(p), x, y); };
    for (const BoundsCheck& c : checks)
      for (const BoundsCheck::Leaf& leaf : c.leaves) {
        const Value* a = leaf.cmp->getOperand(0);
        const Value* b = leaf.cmp->getOperand(1);
        const bool is_signed = ICmpInst::isSigned(leaf.pass_pred);
        const bool a_uniform = an.classify(a).kind == Kind::uniform, b_uniform = an.classify(b).kind == Kind::uniform;
        if (a_uniform && b_uniform) {
          pred = ir.CreateAnd(pred, ir.CreateICmp(leaf.pass_pred, em.uniform(a), em.uniform(b)));
          continue;
        }
        const unsigned w = em.int_of(a)->getIntegerBitWidth();
        auto widen = [&](Value* u) { return is_signed ? ir.CreateSExt(u, i128) : ir.CreateZExt(u, i128); };
        if (a_uniform || b_uniform) {
          CmpInst::Predicate p = a_uniform ? ICmpInst::getSwappedPredicate(leaf.pass_pred) : leaf.pass_pred;
          const Value* lin = a_uniform ? b : a;
          Value* u = em.uniform(a_uniform ? a : b);
          Form fm = em.form(lin);
          auto key = std::make_tuple(static_cast<int>(p), u, fm.k);
          auto it = families.find(key);
          if (it == families.end()) {
            it = families.emplace(key, Family{p, w, {}, widen(u), fm.k}).first;
            family_order.push_back(key);
          }
          it->second.cs.push_back(fm.c);
          continue;
        }
        // Both sides linear: each must be exact throughout, and a pred b between their farthest values.
        auto ra = range(em.form(a)), rb = range(em.form(b));
        for (auto* r : {&ra, &rb}) {
          auto lim = in_range(*r, w, is_signed);
          pred = ir.CreateAnd(pred, ir.CreateAnd(lim.first, lim.second));
        }
        const bool a_below = ICmpInst::isLT(leaf.pass_pred) || ICmpInst::isLE(leaf.pass_pred);
        pred = ir.CreateAnd(pred, a_below ? compare(leaf.pass_pred, ra.second, rb.first)
                                          : compare(leaf.pass_pred, ra.first, rb.second));
      }
    for (const auto& key : family_order) {
      const Family& fam = families.at(key);
      Value* cmin = fam.cs[0];
      Value* cmax = fam.cs[0];
      for (size_t i = 1; i < fam.cs.size(); ++i) {
        cmin = ir.CreateBinaryIntrinsic(Intrinsic::smin, cmin, fam.cs[i]);
        cmax = ir.CreateBinaryIntrinsic(Intrinsic::smax, cmax, fam.cs[i]);
      }
      Form lo_form{fam.width, cmin, fam.k}, hi_form{fam.width, cmax, fam.k};
      std::pair<Value*, Value*> r{range(lo_form).first, range(hi_form).second};
      const bool is_signed = ICmpInst::isSigned(fam.pred);
      auto lim = in_range(r, fam.width, is_signed);
      // Below the uniform side: its greatest value passes, and its least does not wrap (the comparison
      // bounds the other end: greatest < u <= the type's maximum); above it, the other way round.
      const bool below = ICmpInst::isLT(fam.pred) || ICmpInst::isLE(fam.pred);
      pred = ir.CreateAnd(pred, below ? lim.first : lim.second);
      pred = ir.CreateAnd(pred, below ? compare(fam.pred, r.second, fam.u) : compare(fam.pred, r.first, fam.u));
    }
    for (const Exact& e : em.exact) {
      auto lim = in_range(range(e.f), e.f.width, e.is_signed);
      pred = ir.CreateAnd(pred, ir.CreateAnd(lim.first, lim.second));
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
      // Keep one-input phis: folding one away could make a value of the copy use itself.
      fast_br->getSuccessor(1 - c.hot)->removePredecessor(fast_bb, /*KeepOneInputPHIs=*/true);
      BranchInst::Create(fast_br->getSuccessor(c.hot), fast_br);
      fast_br->eraseFromParent();
    }
    MDBuilder md(ctx);
    // Ids and counters below 2^32 keep every extreme value of the predicate far inside i128 (each term
    // below 2^95); first <= last: the group's last id did not wrap.
    for (unsigned d = 0; d < kVars; ++d) {
      if (!(used & (1u << d))) continue;
      pred = ir.CreateAnd(pred, ir.CreateICmpULT(hi128[d], ConstantInt::get(i128, uint64_t(1) << 32)));
      if (d < kIds) pred = ir.CreateAnd(pred, ir.CreateICmpULE(em.first[d], last[d]));
    }
    ir.CreateCondBr(pred, cast<BasicBlock>(vmap[old_entry]), old_entry, md.createBranchWeights(1000, 1));
    ++versioned;
  }
  return versioned;
}

}  // namespace zexcpu
