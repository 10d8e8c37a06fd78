// SPIR-V -> LLVM IR (libLLVMSPIRVLib, in a child process) -> inline everything -> SPIR bitcode -> PoCL
// program. docs/cpu-driver-compiler.md describes the steps and why each is there.
//
// Why inline: PoCL 3.1 turns each kernel into a work-group function and rewrites the work-item builtins
// (get_global_id & co) only inside the kernel; a non-inlined helper that calls one keeps a reference to
// PoCL's internal globals (_group_id_x ...) and the kernel object fails to load. So every non-kernel
// function with a body is made internal + alwaysinline, inlined, and dropped.
#include "compiler.hpp"

#include <LLVMSPIRVLib/LLVMSPIRVLib.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/PassManager.h>
#include <llvm/IR/DiagnosticInfo.h>
#include <llvm/IR/DiagnosticPrinter.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Transforms/IPO/AlwaysInliner.h>
#include <llvm/Transforms/IPO/GlobalDCE.h>
#include <llvm/Transforms/InstCombine/InstCombine.h>
#include <llvm/Transforms/Scalar/EarlyCSE.h>
#include <llvm/Transforms/Scalar/SROA.h>
#include <llvm/Transforms/Scalar/SimplifyCFG.h>
#include <llvm/Transforms/Utils/Cloning.h>
#include <llvm/Transforms/Utils/ValueMapper.h>
#include <llvm/IR/MDBuilder.h>
#ifdef ZEXCPU_HAVE_SPIRV_TOOLS
#include <spirv-tools/libspirv.h>
#endif

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>
#include <sstream>

namespace zexcpu {
namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;
// zex-cpu's native binary: this tag, then the module's bitcode after translation (before inlining). The
// tag lets zeModuleCreate(ZE_MODULE_FORMAT_NATIVE) reject binaries of other drivers with a clear message.
constexpr char kNativeTag[] = "ZEXCPU-SPIR-BC-1";
constexpr size_t kNativeTagSize = sizeof(kNativeTag) - 1;

// SPIR address spaces (as produced by llvm-spirv -r).
constexpr unsigned kGlobalAS = 1;
constexpr unsigned kConstantAS = 2;
constexpr unsigned kLocalAS = 3;

std::string hex32(uint32_t v) {
  char buf[16];
  snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

// Options passed to PoCL: only OpenCL ones ("-cl-..."); Level Zero/IGC flags such as
// "-ze-opt-disable" mean nothing to PoCL and would make clBuildProgram fail.
std::string opencl_options(const char* flags) {
  std::string out;
  if (!flags) return out;
  std::istringstream in(flags);
  std::string tok;
  while (in >> tok) {
    if (tok.rfind("-cl-", 0) == 0) {
      if (!out.empty()) out += ' ';
      out += tok;
    }
  }
  return out;
}

// Reads the bytes of a constant initializer into `out` (little-endian, the host's layout, which is
// the kernel's layout on the CPU). Returns false for initializers that hold addresses.
bool constant_bytes(const llvm::Constant* c, const llvm::DataLayout& dl, uint8_t* out, size_t size) {
  using namespace llvm;
  if (isa<ConstantAggregateZero>(c) || isa<UndefValue>(c) || isa<ConstantPointerNull>(c)) {
    memset(out, 0, size);
    return true;
  }
  if (auto* ci = dyn_cast<ConstantInt>(c)) {
    uint64_t v = ci->getZExtValue();
    memcpy(out, &v, std::min<size_t>(size, 8));
    return true;
  }
  if (auto* cf = dyn_cast<ConstantFP>(c)) {
    APInt bits = cf->getValueAPF().bitcastToAPInt();
    uint64_t v = bits.getZExtValue();
    memcpy(out, &v, std::min<size_t>(size, 8));
    return true;
  }
  if (auto* cds = dyn_cast<ConstantDataSequential>(c)) {
    StringRef raw = cds->getRawDataValues();
    memcpy(out, raw.data(), std::min<size_t>(size, raw.size()));
    return true;
  }
  if (auto* st = dyn_cast<ConstantStruct>(c)) {
    const StructLayout* sl = dl.getStructLayout(st->getType());
    memset(out, 0, size);
    for (unsigned i = 0; i < st->getNumOperands(); ++i) {
      auto* op = st->getOperand(i);
      size_t off = sl->getElementOffset(i);
      size_t sz = dl.getTypeAllocSize(op->getType());
      if (!constant_bytes(op, dl, out + off, sz)) return false;
    }
    return true;
  }
  if (isa<ConstantArray>(c) || isa<ConstantVector>(c)) {
    auto* agg = cast<Constant>(c);
    Type* elt = isa<ConstantArray>(c) ? cast<ArrayType>(c->getType())->getElementType()
                                      : cast<VectorType>(c->getType())->getElementType();
    size_t esz = dl.getTypeAllocSize(elt);
    for (unsigned i = 0; i < agg->getNumOperands(); ++i)
      if (!constant_bytes(cast<Constant>(agg->getOperand(i)), dl, out + i * esz, esz)) return false;
    return true;
  }
  memset(out, 0, size);
  return false;
}

// The translator assumes a well-formed stream (it asserts or crashes on a truncated one), so walk the
// instruction stream first: header, then every instruction's word count must fit in the module.
bool check_structure(const uint8_t* input, size_t size, std::map<uint32_t, uint32_t>* spec_sizes, std::string* err) {
  size_t n = size / 4;
  std::vector<uint32_t> w(n);
  memcpy(w.data(), input, n * 4);
  uint32_t version = w[1];
  if ((version & 0xff0000ffu) != 0 || version > 0x00010600u || version < 0x00010000u) {
    *err = "unsupported version word " + hex32(version);
    return false;
  }
  if (w[3] == 0) {
    *err = "id bound is 0";
    return false;
  }
  const uint32_t bound = w[3];
  std::map<uint32_t, uint32_t> spec_ids, type_bytes, spec_types;  // result -> SpecId / bytes / type
  size_t i = 5;
  bool in_function = false;
  std::vector<uint32_t> entry_functions;
  std::vector<uint32_t> defined_functions;
  while (i < n) {
    uint32_t count = w[i] >> 16, opcode = w[i] & 0xffff;
    if (count == 0) {
      *err = "instruction at word " + std::to_string(i) + " (opcode " + std::to_string(opcode) +
             ") has a word count of 0";
      return false;
    }
    if (i + count > n) {
      *err = "instruction at word " + std::to_string(i) + " (opcode " + std::to_string(opcode) + ") needs " +
             std::to_string(count) + " words but the module ends after " + std::to_string(n - i) +
             " (truncated?)";
      return false;
    }
    // LLVM asserts (or miscompiles) on alignments that are not powers of two; the validator lets them
    // through, so check the Alignment decoration and the Aligned memory operand here.
    auto bad_align = [](uint32_t a) { return a == 0 || (a & (a - 1)) != 0; };
    uint32_t mem_operand_at = 0;
    switch (opcode) {
      case 61: mem_operand_at = 4; break;  // OpLoad: type, result, pointer, [mask]
      case 62: mem_operand_at = 3; break;  // OpStore: pointer, object, [mask]
      case 63: mem_operand_at = 3; break;  // OpCopyMemory: target, source, [mask]
      case 64: mem_operand_at = 4; break;  // OpCopyMemorySized: target, source, size, [mask]
      case 71:                             // OpDecorate target Alignment n
        if (count >= 4 && w[i + 2] == 44 && bad_align(w[i + 3])) {
          *err = "Alignment decoration " + std::to_string(w[i + 3]) + " at word " + std::to_string(i) +
                 " is not a power of two";
          return false;
        }
        break;
      case 72:  // OpMemberDecorate struct member Alignment n
        if (count >= 5 && w[i + 3] == 44 && bad_align(w[i + 4])) {
          *err = "Alignment member decoration " + std::to_string(w[i + 4]) + " at word " + std::to_string(i) +
                 " is not a power of two";
          return false;
        }
        break;
      default: break;
    }
    if (mem_operand_at && count > mem_operand_at && (w[i + mem_operand_at] & 0x2)) {
      if (count <= mem_operand_at + 1 || bad_align(w[i + mem_operand_at + 1])) {
        *err = "Aligned memory operand at word " + std::to_string(i) + " is missing or not a power of two";
        return false;
      }
    }
    // Specialization constants' sizes: SpecId decorations and the scalar types of OpSpecConstant*.
    switch (opcode) {
      case 71:  // OpDecorate target SpecId n
        if (count >= 4 && w[i + 2] == 1) spec_ids[w[i + 1]] = w[i + 3];
        break;
      case 20:  // OpTypeBool
        if (count >= 2) type_bytes[w[i + 1]] = 1;
        break;
      case 21:  // OpTypeInt width signedness
      case 22:  // OpTypeFloat width
        if (count >= 3) type_bytes[w[i + 1]] = w[i + 2] / 8;
        break;
      case 48:  // OpSpecConstantTrue type result
      case 49:  // OpSpecConstantFalse
      case 50:  // OpSpecConstant type result value...
        if (count >= 3) spec_types[w[i + 2]] = w[i + 1];
        break;
      default: break;
    }
    // A stream cut at an instruction boundary parses; what it lacks is the end of a function or the
    // function an entry point names.
    if (opcode == 54 /* OpFunction */) {
      if (in_function) {
        *err = "OpFunction at word " + std::to_string(i) + " inside another function (missing OpFunctionEnd)";
        return false;
      }
      in_function = true;
      if (count >= 3) defined_functions.push_back(w[i + 2]);
    } else if (opcode == 56 /* OpFunctionEnd */) {
      if (!in_function) {
        *err = "OpFunctionEnd at word " + std::to_string(i) + " outside a function";
        return false;
      }
      in_function = false;
    } else if (opcode == 15 /* OpEntryPoint */ && count >= 3) {
      entry_functions.push_back(w[i + 2]);
    }
    i += count;
  }
  if (in_function) {
    *err = "the last function has no OpFunctionEnd (truncated?)";
    return false;
  }
  spec_sizes->clear();
  for (auto& [result, id] : spec_ids) {
    auto t = spec_types.find(result);
    if (t == spec_types.end()) continue;
    auto b = type_bytes.find(t->second);
    if (b != type_bytes.end() && b->second >= 1 && b->second <= 8) (*spec_sizes)[id] = b->second;
  }
  for (uint32_t f : entry_functions) {
    if (f >= bound || std::find(defined_functions.begin(), defined_functions.end(), f) == defined_functions.end()) {
      *err = "entry point function %" + std::to_string(f) + " is not defined in the module (truncated?)";
      return false;
    }
  }
#ifdef ZEXCPU_HAVE_SPIRV_TOOLS
  // The translator trusts its input: an id used but never defined, or of the wrong kind, makes it assert
  // or crash (found by mutating valid modules). So validate fully before translating.
  spv_context sctx = spvContextCreate(SPV_ENV_UNIVERSAL_1_6);
  spv_const_binary_t bin{w.data(), n};
  spv_diagnostic diag = nullptr;
  spv_result_t pr = spvValidate(sctx, &bin, &diag);
  if (pr != SPV_SUCCESS) {
    *err = diag && diag->error ? std::string(diag->error) : "SPIRV-Tools rejected the module";
    if (diag && diag->position.index) *err += " (at word " + std::to_string(diag->position.index) + ")";
  }
  spvDiagnosticDestroy(diag);
  spvContextDestroy(sctx);
  if (pr != SPV_SUCCESS) return false;
#endif
  return true;
}

ArgInfo describe_arg(const llvm::Argument& a, const llvm::DataLayout& dl) {
  using namespace llvm;
  ArgInfo info;
  Type* t = a.getType();
  std::string tn;
  raw_string_ostream os(tn);
  t->print(os);
  info.type_name = os.str();
  if (auto* pt = dyn_cast<PointerType>(t)) {
    if (a.hasByValAttr()) {
      info.kind = ArgKind::Value;
      info.size = dl.getTypeAllocSize(a.getParamByValType());
      return info;
    }
    if (!pt->isOpaque()) {
      if (auto* st = dyn_cast<StructType>(pt->getNonOpaquePointerElementType())) {
        // Images, samplers, pipes, queues, events: opaque OpenCL types zex-cpu cannot pass.
        if (st->hasName() && st->getName().startswith("opencl.")) {
          info.kind = ArgKind::Unsupported;
          info.size = 8;
          return info;
        }
      }
    }
    if (pt->getAddressSpace() == kLocalAS) {
      info.kind = ArgKind::Local;
      info.size = 0;
      return info;
    }
    info.kind = ArgKind::Pointer;
    info.size = sizeof(void*);
    return info;
  }
  if (auto* st = dyn_cast<StructType>(t)) {
    if (st->isOpaque()) {
      info.kind = ArgKind::Unsupported;
      return info;
    }
  }
  info.kind = ArgKind::Value;
  info.size = dl.getTypeAllocSize(t);
  return info;
}

uint32_t md_uint(const llvm::MDNode* md, unsigned i) {
  if (!md || i >= md->getNumOperands()) return 0;
  if (auto* c = llvm::mdconst::dyn_extract<llvm::ConstantInt>(md->getOperand(i)))
    return static_cast<uint32_t>(c->getZExtValue());
  return 0;
}

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

// ---------------------------------------------------------------------------------------------------
// Work-group range versioning of bounds checks (docs/cpu-driver-compiler.md, step 7).
//
// PoCL runs a work-group as a loop over its work-items, and LLVM vectorizes that loop only when no
// block in it has a side effect it cannot predicate; a zex throw path (a CAS and stores) is such a
// block, so a bounds-checked kernel stays scalar (0.70-0.78x the unchecked one on a vector add). When
// every throw in a kernel is guarded by an affine check on get_global_id against a value that is the
// same for the whole launch, the group's first and last work-items bound the check for all of its
// work-items: the kernel gets a work-group-uniform branch to a copy of its body in which those checks
// are known to pass, and PoCL's loop over that copy has no throw path at all.

constexpr const char* kThrowEntry = "zex_report_exception";

bool calls_named(const llvm::BasicBlock& bb, llvm::StringRef name) {
  for (const llvm::Instruction& i : bb)
    if (auto* cb = llvm::dyn_cast<llvm::CallBase>(&i))
      if (const llvm::Function* f = cb->getCalledFunction())
        if (f->getName() == name) return true;
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
          if (callee && callee->getName() == kThrowEntry) throws = true;
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
        if (calls_named(*b, kThrowEntry)) return true;
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
        if (calls_named(*b, kThrowEntry)) throw_reachable = true;
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

bool inline_everything(llvm::Module& m, std::string* err) {
  // Round one keeps the throw entry points as calls so the checks that guard them can be found.
  if (!inline_round(m, {"zex_report_exception", "zex_report_frame", "zex_signal_exception"}, err)) return false;
  version_bounds_checks(m);
  return inline_round(m, {}, err);
}

// ---------------------------------------------------------------------------------------------------
// Translation in a child process.
//
// libLLVMSPIRVLib 15 reports many errors by printing them and calling std::exit() (its error mode is a
// global that the shared library does not export), and it asserts or crashes on some malformed input.
// A driver must not take the application down for a bad module, so the translation runs in a fork()ed
// child that inherits the loaded libraries (no exec, no reload of LLVM) and
// sends the bitcode back through a pipe. The child touches only its own LLVMContext and the translator,
// and leaves with _exit(), so the parent's other threads (whose locks the child does not own) and its
// atexit handlers never run in it.

int g_child_status_fd = -1;  // in the child: where to report before an exit the translator forced

void write_all(int fd, const void* data, size_t n) {
  auto* p = static_cast<const char*>(data);
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

// Message to the parent: status (0 = bitcode follows, 1 = error text follows), length, payload.
void send(int fd, uint32_t status, const std::string& payload) {
  uint64_t len = payload.size();
  write_all(fd, &status, sizeof status);
  write_all(fd, &len, sizeof len);
  write_all(fd, payload.data(), payload.size());
}

// The translation itself: SPIR-V (+ specialization constants) -> LLVM bitcode.
bool translate(const std::string& bytes, const SpecConstants& constants, std::string* bitcode, std::string* err) {
  llvm::LLVMContext ctx;
  ctx.setOpaquePointers(false);
  SPIRV::TranslatorOpts opts;
  opts.enableAllExtensions();
  // Builtins as OpenCL 1.2 mangled calls (_Z13get_global_idj ...), which PoCL's kernel library has.
  opts.setDesiredBIsRepresentation(SPIRV::BIsRepresentation::OpenCL12);
  if (constants.count) {
    std::vector<llvm::SpecConstInfoTy> info;
    std::istringstream is(bytes);
    if (!llvm::getSpecConstInfo(is, info)) {
      *err = "could not read the module's specialization constants";
      return false;
    }
    for (uint32_t i = 0; i < constants.count; ++i) {
      uint32_t id = constants.ids[i];
      auto it = std::find_if(info.begin(), info.end(), [&](const auto& p) { return p.first == id; });
      if (it == info.end()) {
        // Intel's driver fails the build the same way.
        *err = "specialization constant id " + std::to_string(id) + " is not declared by the module";
        return false;
      }
      uint64_t v = 0;
      memcpy(&v, constants.values[i], std::min<size_t>(it->second, sizeof v));
      opts.setSpecConst(id, v);
    }
  }
  std::istringstream is(bytes);
  llvm::Module* raw = nullptr;
  std::string terr;
  if (!llvm::readSpirv(ctx, opts, is, raw, terr)) {
    delete raw;
    *err = "SPIR-V translation failed: " + (terr.empty() ? std::string("unknown translator error") : terr);
    return false;
  }
  std::unique_ptr<llvm::Module> mod(raw);
  llvm::raw_string_ostream os(*bitcode);
  llvm::WriteBitcodeToFile(*mod, os);
  os.flush();
  return true;
}

[[noreturn]] void child_translate(int fd, const std::string& bytes, const SpecConstants& constants) {
  g_child_status_fd = fd;
  // Registered last, so it runs first when the translator calls std::exit(): no other handler (the
  // application's, the loader's, PoCL's) runs in the child.
  atexit([] {
    send(g_child_status_fd, 1, "");
    _exit(3);
  });
  // A crash or abort is reported through the pipe: no crash handler of the application, no core file.
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) signal(sig, SIG_DFL);
  rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  std::string bitcode, err;
  if (!translate(bytes, constants, &bitcode, &err)) {
    send(fd, 1, err);
    _exit(1);
  }
  send(fd, 0, bitcode);
  _exit(0);
}

// Translations of this process, by input: a module built again (zex builds one per debug level, tests
// and applications rebuild the same ones) skips the translator and its child process. Keyed by two
// 64-bit hashes and the size of the SPIR-V and the specialization-constant values; bounded in bytes.
class TranslationCache {
 public:
  struct Key {
    uint64_t h1, h2, size;
    bool operator<(const Key& o) const { return std::tie(h1, h2, size) < std::tie(o.h1, o.h2, o.size); }
  };
  static Key key(const std::string& bytes, const std::string& constants) {
    uint64_t h1 = 0xcbf29ce484222325ull, h2 = 0x9e3779b97f4a7c15ull;
    auto mix = [&](const std::string& d) {
      for (unsigned char c : d) {
        h1 = (h1 ^ c) * 0x100000001b3ull;
        h2 = (h2 ^ c) * 0xff51afd7ed558ccdull;
        h2 ^= h2 >> 29;
      }
    };
    mix(bytes);
    mix(constants);
    return Key{h1, h2, bytes.size() + (constants.size() << 32)};
  }
  bool get(const Key& k, std::string* bitcode) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(k);
    if (it == map_.end()) return false;
    lru_.splice(lru_.begin(), lru_, it->second);
    *bitcode = it->second->second;
    return true;
  }
  void put(const Key& k, const std::string& bitcode) {
    if (bitcode.size() > kBudget / 4) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (map_.count(k)) return;
    lru_.emplace_front(k, bitcode);
    map_[k] = lru_.begin();
    bytes_ += bitcode.size();
    while (bytes_ > kBudget && !lru_.empty()) {
      bytes_ -= lru_.back().second.size();
      map_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }

 private:
  static constexpr size_t kBudget = 64u << 20;
  std::mutex mu_;
  std::list<std::pair<Key, std::string>> lru_;
  std::map<Key, std::list<std::pair<Key, std::string>>::iterator> map_;
  size_t bytes_ = 0;
};
TranslationCache& translation_cache() {
  static TranslationCache* c = new TranslationCache;  // never destroyed: builds may run at exit
  return *c;
}

// Runs child_translate in a child process. Returns true with the bitcode, or false with a message.
// The fork costs little in a small process, but its page tables are copied and, afterwards, the
// parent's first write to each page it had before the fork takes a fault: about 0.1 s per GB resident on
// the development VM. ZEX_CPU_TRANSLATE_IN_PROCESS=1 skips the child (faster in huge processes; a bad
// module may then terminate the process).
bool translate_isolated(const std::string& bytes, const SpecConstants& constants, std::string* bitcode,
                        std::string* err) {
  static const bool in_process = [] {
    const char* v = getenv("ZEX_CPU_TRANSLATE_IN_PROCESS");
    return v && *v && strcmp(v, "0") != 0;
  }();
  if (in_process) return translate(bytes, constants, bitcode, err);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    *err = std::string("pipe failed: ") + strerror(errno);
    return false;
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    *err = std::string("pipe failed: ") + strerror(errno);
    close(out_pipe[0]);
    close(out_pipe[1]);
    return false;
  }
  pid_t pid = fork();
  if (pid < 0) {
    // No child processes allowed (a sandbox, a process limit): translate here, at the translator's risk.
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) close(fd);
    return translate(bytes, constants, bitcode, err);
  }
  if (pid == 0) {
    dup2(err_pipe[1], 2);  // what the translator prints goes to the build log
    // Keep only stdio and the result pipe: descriptors of other threads' pipes (other builds running
    // at the same time) must not stay open here and delay their EOF.
    int keep = out_pipe[1];
    if (keep > 3) syscall(SYS_close_range, 3u, static_cast<unsigned>(keep - 1), 0u);
    syscall(SYS_close_range, static_cast<unsigned>(keep + 1), ~0u, 0u);
    child_translate(keep, bytes, constants);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);

  std::string data, errtext;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  bool timed_out = false;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    int r = poll(fds, 2, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (r < 0 && errno != EINTR) break;
    for (auto& f : fds) {
      if (f.fd < 0 || !(f.revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buf[65536];
      ssize_t n = read(f.fd, buf, sizeof buf);
      if (n > 0) {
        (f.fd == out_pipe[0] ? data : errtext).append(buf, static_cast<size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        close(f.fd);
        f.fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds)
    if (f.fd >= 0) close(f.fd);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  pid_t w;
  do {
    w = waitpid(pid, &status, 0);
  } while (w < 0 && errno == EINTR);
  // (w < 0 with ECHILD: the application reaps children itself; the pipe still says what happened.)

  while (!errtext.empty() && (errtext.back() == '\n' || errtext.back() == '\r')) errtext.pop_back();
  uint32_t st = 1;
  uint64_t len = 0;
  if (!timed_out && data.size() >= sizeof st + sizeof len) {
    memcpy(&st, data.data(), sizeof st);
    memcpy(&len, data.data() + sizeof st, sizeof len);
    if (data.size() == sizeof st + sizeof len + len) {
      std::string payload = data.substr(sizeof st + sizeof len);
      if (st == 0) {
        *bitcode = std::move(payload);
        return true;
      }
      *err = payload.empty() ? "SPIR-V translation failed" : payload;
      if (!errtext.empty() && errtext.find(payload) == std::string::npos) *err += ": " + errtext;
      else if (payload.empty() && !errtext.empty()) *err += ": " + errtext;
      return false;
    }
  }
  if (timed_out) {
    *err = "the SPIR-V translator did not finish within 300 s";
  } else if (w == pid && WIFSIGNALED(status)) {
    *err = "the SPIR-V translator crashed on this module (signal " + std::to_string(WTERMSIG(status)) + ")";
  } else {
    *err = "the SPIR-V translator failed on this module";
  }
  if (!errtext.empty()) *err += ": " + errtext;
  return false;
}

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
      if (auto* ce = dyn_cast<ConstantExpr>(u))
        if (ce->use_empty()) ce->destroyConstant();
    }
    if (g->use_empty()) g->eraseFromParent();
  }
  return true;
}

// Functions and variables the module uses but does not define, and that PoCL does not provide: the
// module's imports (SPIR-V Import linkage). OpenCL builtins come out of the translator Itanium-mangled
// (_Z...), as printf, or with a "__" prefix; LLVM intrinsics start with "llvm.".
std::vector<std::string> find_imports(const llvm::Module& m) {
  std::vector<std::string> out;
  for (const llvm::Function& f : m) {
    if (!f.isDeclaration() || f.isIntrinsic() || f.use_empty()) continue;
    llvm::StringRef n = f.getName();
    if (n.startswith("_Z") || n.startswith("__") || n.startswith("llvm.") || n == "printf") continue;
    out.push_back(n.str());
  }
  for (const llvm::GlobalVariable& g : m.globals())
    if (g.isDeclaration() && !g.use_empty() && !g.getName().startswith("llvm.")) out.push_back(g.getName().str());
  return out;
}

// LLVM's default diagnostic handler calls exit(1) on errors (the IR linker reports through it): collect
// the messages instead.
void collect_diagnostics(llvm::LLVMContext& ctx, std::string* sink) {
  ctx.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo& di, void* context) {
        auto* text = static_cast<std::string*>(context);
        std::string msg;
        llvm::raw_string_ostream os(msg);
        llvm::DiagnosticPrinterRawOStream printer(os);
        di.print(printer);
        os.flush();
        if (di.getSeverity() == llvm::DS_Error) *text += "error: ";
        else if (di.getSeverity() == llvm::DS_Warning) *text += "warning: ";
        else return;
        *text += msg + "\n";
      },
      sink);
}

// The kernel's OpenCL C attributes as they were written, for zeKernelGetSourceAttributes.
std::string source_attributes(const llvm::Function& f) {
  std::string out;
  auto add = [&](const std::string& a) { out += (out.empty() ? "" : " ") + a; };
  auto triple = [&](const char* name) {
    if (auto* md = f.getMetadata(name))
      add(std::string(name) + "(" + std::to_string(md_uint(md, 0)) + "," + std::to_string(md_uint(md, 1)) + "," +
          std::to_string(md_uint(md, 2)) + ")");
  };
  triple("reqd_work_group_size");
  triple("work_group_size_hint");
  if (auto* md = f.getMetadata("vec_type_hint")) {
    if (md->getNumOperands() >= 2) {
      if (auto* c = llvm::dyn_cast<llvm::ConstantAsMetadata>(md->getOperand(0))) {
        llvm::Type* t = c->getType();
        unsigned n = 1;
        if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t)) {
          n = vt->getNumElements();
          t = vt->getElementType();
        }
        bool is_signed = md_uint(md, 1) != 0;
        std::string base;
        if (t->isHalfTy()) base = "half";
        else if (t->isFloatTy()) base = "float";
        else if (t->isDoubleTy()) base = "double";
        else if (t->isIntegerTy(8)) base = is_signed ? "char" : "uchar";
        else if (t->isIntegerTy(16)) base = is_signed ? "short" : "ushort";
        else if (t->isIntegerTy(32)) base = is_signed ? "int" : "uint";
        else if (t->isIntegerTy(64)) base = is_signed ? "long" : "ulong";
        if (!base.empty()) add("vec_type_hint(" + base + (n > 1 ? std::to_string(n) : "") + ")");
      }
    }
  }
  if (auto* md = f.getMetadata("intel_reqd_sub_group_size"))
    add("intel_reqd_sub_group_size(" + std::to_string(md_uint(md, 0)) + ")");
  return out;
}

void analyze(const llvm::Module& mod, CompiledProgram* out) {
  const llvm::DataLayout& dl = mod.getDataLayout();
  out->kernels.clear();
  for (const llvm::Function& f : mod) {
    if (f.isDeclaration() || f.getCallingConv() != llvm::CallingConv::SPIR_KERNEL) continue;
    KernelInfo k;
    k.name = f.getName().str();
    for (const llvm::Argument& a : f.args()) k.args.push_back(describe_arg(a, dl));
    if (auto* md = f.getMetadata("reqd_work_group_size"))
      for (unsigned i = 0; i < 3; ++i) k.reqd_group_size[i] = md_uint(md, i);
    if (auto* md = f.getMetadata("intel_reqd_sub_group_size")) k.reqd_subgroup_size = md_uint(md, 0);
    k.attributes = source_attributes(f);
    out->kernels.push_back(std::move(k));
  }
  out->imports = find_imports(mod);
}

std::unique_ptr<llvm::Module> parse_native(llvm::LLVMContext& ctx, const uint8_t* input, size_t size,
                                           std::string* err) {
  if (size < kNativeTagSize || memcmp(input, kNativeTag, kNativeTagSize) != 0) {
    *err = "native binary was not produced by zex-cpu's zeModuleGetNativeBinary (missing the '" +
           std::string(kNativeTag) + "' tag)";
    return nullptr;
  }
  auto buf = llvm::MemoryBuffer::getMemBuffer(
      llvm::StringRef(reinterpret_cast<const char*>(input) + kNativeTagSize, size - kNativeTagSize), "native",
      false);
  auto parsed = llvm::parseBitcodeFile(buf->getMemBufferRef(), ctx);
  if (!parsed) {
    *err = "native binary: invalid bitcode: " + llvm::toString(parsed.takeError());
    return nullptr;
  }
  return std::move(*parsed);
}

// ---------------------------------------------------------------------------------------------------
// Sub-group and work-group builtins. PoCL 3.1's kernel library has none of them (get_sub_group_size,
// sub_group_reduce_add, work_group_reduce_add, work_group_broadcast ... are all missing), while the
// Level Zero SPIR-V environment requires the Groups capability. So zex-cpu defines the ones a module
// calls, before inlining:
//  - sub-groups have one work-item (PoCL runs a group's work-items one after the other; the device
//    reports sub-group size 1): a reduction or inclusive scan is the value itself, an exclusive scan
//    the operation's identity, a broadcast the value, get_sub_group_id the local linear id;
//  - work-group collectives go through local memory between barriers (which PoCL supports in
//    kernels): every work-item stores its value in a slot of a module-wide __local array, then the
//    first work-item reduces (or each one scans its prefix) and a result slot is shared.

// A parsed OpenCL builtin name: _Z<len><name><parameter codes>.
struct Mangled {
  std::string name, params;
};
bool demangle_simple(llvm::StringRef n, Mangled* out) {
  if (!n.startswith("_Z")) return false;
  size_t i = 2, len = 0;
  while (i < n.size() && isdigit(static_cast<unsigned char>(n[i]))) len = len * 10 + (n[i++] - '0');
  if (len == 0 || i + len > n.size()) return false;
  out->name = n.substr(i, len).str();
  out->params = n.substr(i + len).str();
  return true;
}

bool define_group_builtins(llvm::Module& m, size_t max_group, std::string* err) {
  using namespace llvm;
  LLVMContext& ctx = m.getContext();
  Type* i32 = Type::getInt32Ty(ctx);
  Type* i64 = Type::getInt64Ty(ctx);
  Type* void_ty = Type::getVoidTy(ctx);
  auto builtin = [&](const char* name, Type* ret, ArrayRef<Type*> params, bool convergent) {
    FunctionCallee c = m.getOrInsertFunction(name, FunctionType::get(ret, params, false));
    if (auto* f = dyn_cast<Function>(c.getCallee())) {
      f->setCallingConv(CallingConv::SPIR_FUNC);
      f->addFnAttr(Attribute::NoUnwind);
      if (convergent) f->addFnAttr(Attribute::Convergent);
    }
    return c;
  };
  auto call = [](IRBuilder<>& ir, FunctionCallee c, ArrayRef<Value*> args) {
    CallInst* ci = ir.CreateCall(c, args);
    ci->setCallingConv(CallingConv::SPIR_FUNC);
    return ci;
  };
  auto local_linear_id = [&](IRBuilder<>& ir) {
    return call(ir, builtin("_Z19get_local_linear_idv", i64, {}, false), {});
  };
  auto local_size = [&](IRBuilder<>& ir, unsigned d) {
    return call(ir, builtin("_Z14get_local_sizej", i64, {i32}, false), {ConstantInt::get(i32, d)});
  };
  auto group_items = [&](IRBuilder<>& ir) {
    return ir.CreateMul(ir.CreateMul(local_size(ir, 0), local_size(ir, 1)), local_size(ir, 2));
  };
  auto barrier = [&](IRBuilder<>& ir) {
    CallInst* c = call(ir, builtin("_Z7barrierj", void_ty, {i32}, true), {ConstantInt::get(i32, 1)});
    c->addFnAttr(Attribute::Convergent);
  };
  GlobalVariable* scratch = nullptr;
  GlobalVariable* result = nullptr;
  auto slots = [&]() {
    if (!scratch) {
      auto* arr = ArrayType::get(i64, max_group);
      scratch = new GlobalVariable(m, arr, false, GlobalValue::InternalLinkage, UndefValue::get(arr),
                                   "__zexcpu_group_scratch", nullptr, GlobalValue::NotThreadLocal, kLocalAS);
      scratch->setAlignment(Align(8));
      result = new GlobalVariable(m, i64, false, GlobalValue::InternalLinkage, UndefValue::get(i64),
                                  "__zexcpu_group_result", nullptr, GlobalValue::NotThreadLocal, kLocalAS);
      result->setAlignment(Align(8));
    }
  };
  auto slot = [&](IRBuilder<>& ir, Value* index, Type* t) {
    Value* p = ir.CreateInBoundsGEP(scratch->getValueType(), scratch, {ConstantInt::get(i64, 0), index});
    return ir.CreateBitCast(p, PointerType::get(t, kLocalAS));
  };
  auto result_slot = [&](IRBuilder<>& ir, Type* t) { return ir.CreateBitCast(result, PointerType::get(t, kLocalAS)); };

  enum class Op { Add, Min, Max, And, Or };
  auto combine = [&](IRBuilder<>& ir, Op op, Value* a, Value* b, bool is_signed) -> Value* {
    Type* t = a->getType();
    bool fp = t->isFloatingPointTy();
    switch (op) {
      case Op::Add: return fp ? ir.CreateFAdd(a, b) : ir.CreateAdd(a, b);
      case Op::Min:
        if (fp) return ir.CreateMinNum(a, b);
        return ir.CreateSelect(is_signed ? ir.CreateICmpSLT(a, b) : ir.CreateICmpULT(a, b), a, b);
      case Op::Max:
        if (fp) return ir.CreateMaxNum(a, b);
        return ir.CreateSelect(is_signed ? ir.CreateICmpSGT(a, b) : ir.CreateICmpUGT(a, b), a, b);
      case Op::And: return ir.CreateAnd(a, b);
      case Op::Or: return ir.CreateOr(a, b);
    }
    return a;
  };
  auto identity = [&](Op op, Type* t, bool is_signed) -> Constant* {
    if (t->isFloatingPointTy()) {
      const fltSemantics& sem = t->getFltSemantics();
      if (op == Op::Add) return ConstantFP::get(t, 0.0);
      return ConstantFP::get(t, APFloat::getInf(sem, /*Negative=*/op == Op::Max));
    }
    unsigned bits = t->getIntegerBitWidth();
    switch (op) {
      case Op::Add:
      case Op::Or: return ConstantInt::get(t, 0);
      case Op::And: return ConstantInt::get(t, 1);
      case Op::Min: return ConstantInt::get(t, is_signed ? APInt::getSignedMaxValue(bits) : APInt::getMaxValue(bits));
      case Op::Max: return ConstantInt::get(t, is_signed ? APInt::getSignedMinValue(bits) : APInt::getMinValue(bits));
    }
    return ConstantInt::get(t, 0);
  };
  // for (i = from; i < to; ++i) acc = combine(acc, scratch[i]); returns the final acc.
  auto fold = [&](IRBuilder<>& ir, Function* f, Op op, Value* init, Value* from, Value* to, bool is_signed) {
    BasicBlock* pre = ir.GetInsertBlock();
    BasicBlock* head = BasicBlock::Create(ctx, "fold", f);
    BasicBlock* body = BasicBlock::Create(ctx, "fold.body", f);
    BasicBlock* done = BasicBlock::Create(ctx, "fold.done", f);
    ir.CreateBr(head);
    ir.SetInsertPoint(head);
    PHINode* i = ir.CreatePHI(i64, 2);
    PHINode* acc = ir.CreatePHI(init->getType(), 2);
    i->addIncoming(from, pre);
    acc->addIncoming(init, pre);
    ir.CreateCondBr(ir.CreateICmpULT(i, to), body, done);
    ir.SetInsertPoint(body);
    Value* v = ir.CreateLoad(init->getType(), slot(ir, i, init->getType()));
    Value* next = combine(ir, op, acc, v, is_signed);
    i->addIncoming(ir.CreateAdd(i, ConstantInt::get(i64, 1)), body);
    acc->addIncoming(next, body);
    ir.CreateBr(head);
    ir.SetInsertPoint(done);
    return static_cast<Value*>(acc);
  };

  std::vector<Function*> todo;
  for (Function& f : m)
    if (f.isDeclaration() && !f.use_empty()) todo.push_back(&f);
  for (Function* f : todo) {
    Mangled mn;
    if (!demangle_simple(f->getName(), &mn)) continue;
    const std::string& n = mn.name;
    bool sub = n.rfind("sub_group_", 0) == 0 || n == "get_sub_group_size" || n == "get_max_sub_group_size" ||
               n == "get_num_sub_groups" || n == "get_enqueued_num_sub_groups" || n == "get_sub_group_id" ||
               n == "get_sub_group_local_id";
    bool work = n.rfind("work_group_", 0) == 0 && n != "work_group_barrier";
    if (!sub && !work) continue;
    if (n == "sub_group_barrier") {
      // One work-item per sub-group: only the memory ordering remains.
      f->setLinkage(GlobalValue::InternalLinkage);
      IRBuilder<> ir(BasicBlock::Create(ctx, "entry", f));
      ir.CreateFence(AtomicOrdering::SequentiallyConsistent);
      ir.CreateRetVoid();
      continue;
    }
    Type* ret = f->getReturnType();
    bool is_signed = !mn.params.empty() && (mn.params[0] == 'i' || mn.params[0] == 'l' || mn.params[0] == 'c' ||
                                            mn.params[0] == 's');
    Op op = Op::Add;
    if (n.find("_min") != std::string::npos) op = Op::Min;
    if (n.find("_max") != std::string::npos) op = Op::Max;
    bool all = n == "sub_group_all" || n == "work_group_all";
    bool any = n == "sub_group_any" || n == "work_group_any";
    if (all) op = Op::And;
    if (any) op = Op::Or;
    bool reduce = n.find("_reduce_") != std::string::npos || all || any;
    bool scan_incl = n.find("_scan_inclusive_") != std::string::npos;
    bool scan_excl = n.find("_scan_exclusive_") != std::string::npos;
    bool broadcast = n == "sub_group_broadcast" || n == "work_group_broadcast";
    bool known = reduce || scan_incl || scan_excl || broadcast || !work;
    if (!known || (ret->isVoidTy() && n != "sub_group_barrier")) {
      *err = "the builtin " + n + " is not available on zex-cpu (PoCL 3.1 has no sub-group or work-group functions "
             "beyond the ones zex-cpu supplies)";
      return false;
    }
    f->setLinkage(GlobalValue::InternalLinkage);
    IRBuilder<> ir(BasicBlock::Create(ctx, "entry", f));
    Value* x = f->arg_size() ? f->getArg(0) : nullptr;
    auto as_flag = [&](IRBuilder<>& b, Value* v) { return b.CreateZExt(b.CreateICmpNE(v, ConstantInt::get(v->getType(), 0)), ret); };
    if (sub) {
      if (n == "get_sub_group_size" || n == "get_max_sub_group_size") {
        ir.CreateRet(ConstantInt::get(ret, 1));
      } else if (n == "get_num_sub_groups" || n == "get_enqueued_num_sub_groups") {
        ir.CreateRet(ir.CreateTrunc(group_items(ir), ret));
      } else if (n == "get_sub_group_id") {
        ir.CreateRet(ir.CreateTrunc(local_linear_id(ir), ret));
      } else if (n == "get_sub_group_local_id") {
        ir.CreateRet(ConstantInt::get(ret, 0));
      } else if (!x) {
        *err = "the builtin " + n + " is not available on zex-cpu";
        return false;
      } else if (all || any) {
        ir.CreateRet(as_flag(ir, x));
      } else if (scan_excl) {
        ir.CreateRet(identity(op, ret, is_signed));
      } else {
        ir.CreateRet(x);  // reduce, inclusive scan, broadcast, shuffles of a one-item sub-group
      }
      continue;
    }
    // Work-group collectives.
    slots();
    Value* lid = local_linear_id(ir);
    Type* t = (all || any) ? ret : x->getType();
    Value* v = (all || any) ? as_flag(ir, x) : x;
    if (broadcast) {
      // work_group_broadcast(x, local_id_x [, local_id_y [, local_id_z]])
      Value* target = ir.CreateZExtOrTrunc(f->getArg(1), i64);
      if (f->arg_size() >= 3)
        target = ir.CreateAdd(target, ir.CreateMul(ir.CreateZExtOrTrunc(f->getArg(2), i64), local_size(ir, 0)));
      if (f->arg_size() >= 4)
        target = ir.CreateAdd(target, ir.CreateMul(ir.CreateZExtOrTrunc(f->getArg(3), i64),
                                                   ir.CreateMul(local_size(ir, 0), local_size(ir, 1))));
      BasicBlock* write = BasicBlock::Create(ctx, "write", f);
      BasicBlock* join = BasicBlock::Create(ctx, "join", f);
      ir.CreateCondBr(ir.CreateICmpEQ(lid, target), write, join);
      ir.SetInsertPoint(write);
      ir.CreateStore(x, result_slot(ir, t));
      ir.CreateBr(join);
      ir.SetInsertPoint(join);
      barrier(ir);
      Value* r = ir.CreateLoad(t, result_slot(ir, t));
      barrier(ir);
      ir.CreateRet(r);
      continue;
    }
    ir.CreateStore(v, slot(ir, lid, t));
    barrier(ir);
    if (reduce) {
      BasicBlock* first = BasicBlock::Create(ctx, "first", f);
      BasicBlock* join = BasicBlock::Create(ctx, "join", f);
      ir.CreateCondBr(ir.CreateICmpEQ(lid, ConstantInt::get(i64, 0)), first, join);
      ir.SetInsertPoint(first);
      Value* acc = fold(ir, f, op, v, ConstantInt::get(i64, 1), group_items(ir), is_signed);
      ir.CreateStore(acc, result_slot(ir, t));
      ir.CreateBr(join);
      ir.SetInsertPoint(join);
      barrier(ir);
      Value* r = ir.CreateLoad(t, result_slot(ir, t));
      barrier(ir);
      ir.CreateRet(r);
    } else {
      Value* to = scan_incl ? ir.CreateAdd(lid, ConstantInt::get(i64, 1)) : lid;
      Value* acc = fold(ir, f, op, identity(op, t, is_signed), ConstantInt::get(i64, 0), to, is_signed);
      barrier(ir);
      ir.CreateRet(acc);
    }
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

// The second half of every build: inline, give program-scope variables their storage, hand the bitcode
// to PoCL. `shared` maps names of variables that another (linked) module owns to that module's storage.
ze_result_t build_for_pocl(llvm::LLVMContext& ctx, llvm::Module& mod, const char* build_flags,
                           const std::map<std::string, void*>& shared, cl_context context, cl_device_id device,
                           CompiledProgram* out) {
  size_t max_group = 4096;
  clGetDeviceInfo(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof max_group, &max_group, nullptr);
  std::string group_err;
  if (!define_group_builtins(mod, max_group, &group_err)) {
    out->log += group_err;
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  std::string inline_err;
  if (!inline_everything(mod, &inline_err)) {
    out->log += inline_err;
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
  std::string verr;
  llvm::raw_string_ostream vos(verr);
  if (llvm::verifyModule(mod, &vos)) {
    out->log += "internal error: the translated module does not verify: " + vos.str();
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }

  const llvm::DataLayout& dl = mod.getDataLayout();
  out->globals.clear();
  std::vector<llvm::GlobalVariable*> to_erase;
  auto redirect = [&](llvm::GlobalVariable& g, void* where) {
    auto* addr = llvm::ConstantInt::get(llvm::Type::getInt64Ty(ctx), reinterpret_cast<uintptr_t>(where));
    g.replaceAllUsesWith(llvm::ConstantExpr::getIntToPtr(addr, g.getType()));
    to_erase.push_back(&g);
  };
  for (llvm::GlobalVariable& g : mod.globals()) {
    if (g.isDeclaration() || g.getName().startswith("llvm.")) continue;
    unsigned as = g.getAddressSpace();
    if (as != kGlobalAS && as != kConstantAS) continue;
    GlobalInfo gi;
    gi.name = g.getName().str();
    gi.size = dl.getTypeAllocSize(g.getValueType());
    gi.constant = g.isConstant() || as == kConstantAS;
    // Program-scope variables are found by name whatever their linkage (spirv-link drops the Export
    // decorations it resolved, and the translator then makes them internal); string literals and other
    // compiler-made constants (".str", private linkage) are not.
    gi.named = g.hasName() && !g.getName().startswith(".") && !g.hasPrivateLinkage();
    if (gi.constant && !gi.named) continue;  // string literals and the like stay in the kernel objects only
    if (!gi.constant && gi.named) {
      auto it = shared.find(gi.name);
      if (it != shared.end()) {
        redirect(g, it->second);  // an imported variable: the exporting module's storage
        continue;
      }
    }
    size_t alloc = std::max<size_t>(64, (gi.size + 63) & ~size_t(63));
    auto* mem = static_cast<uint8_t*>(aligned_alloc(64, alloc));
    if (!mem) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    gi.storage.reset(mem, free);
    memset(mem, 0, alloc);
    bool known = !g.hasInitializer() || constant_bytes(g.getInitializer(), dl, mem, gi.size);
    if (!known) {
      // An initializer that holds addresses: leave the variable in the kernel objects (per-kernel copies,
      // as PoCL has it) rather than guess; the host cannot reach it.
      out->log += "warning: program-scope variable '" + gi.name +
                  "' has an address in its initializer; zeModuleGetGlobalPointer cannot return it" +
                  (gi.constant ? "\n" : " and each kernel gets its own copy\n");
      continue;
    }
    if (!gi.constant) redirect(g, mem);  // kernels address the shared storage directly
    out->globals.push_back(std::move(gi));
  }
  for (auto* g : to_erase) g->eraseFromParent();

  // PoCL 3.1's kernel library has some builtins only under its internal "_cl_" names (mem_fence & co);
  // clang's OpenCL headers rename them when PoCL compiles source, nothing does for SPIR input.
  auto use_pocl_name = [&](llvm::Function* f) {
    llvm::StringRef n = f->getName();
    size_t digits = 2;
    while (digits < n.size() && isdigit(static_cast<unsigned char>(n[digits]))) ++digits;
    if (!n.startswith("_Z") || digits == 2) return false;
    unsigned len = 0;
    if (n.substr(2, digits - 2).getAsInteger(10, len)) return false;
    std::string renamed = "_Z" + std::to_string(len + 4) + "_cl_" + n.substr(digits).str();
    if (mod.getFunction(renamed)) return false;
    f->setName(renamed);
    return true;
  };
  for (const char* n : {"_Z9mem_fencej", "_Z14read_mem_fencej", "_Z15write_mem_fencej"})
    if (llvm::Function* f = mod.getFunction(n)) use_pocl_name(f);

  std::string options = opencl_options(build_flags);
  for (int attempt = 0;; ++attempt) {
    std::string bitcode;
    {
      llvm::raw_string_ostream os(bitcode);
      llvm::WriteBitcodeToFile(mod, os);
    }
    const unsigned char* bin = reinterpret_cast<const unsigned char*>(bitcode.data());
    size_t bin_size = bitcode.size();
    cl_int bin_status = CL_SUCCESS, err = CL_SUCCESS;
    cl_program prog = clCreateProgramWithBinary(context, 1, &device, &bin_size, &bin, &bin_status, &err);
    if (!prog || err != CL_SUCCESS) {
      out->log += "PoCL rejected the SPIR bitcode: clCreateProgramWithBinary returned " + std::to_string(err) +
                  " (binary status " + std::to_string(bin_status) + ")";
      if (prog) clReleaseProgram(prog);
      return err == CL_OUT_OF_HOST_MEMORY ? ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY
                                          : ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    err = clBuildProgram(prog, 1, &device, options.c_str(), nullptr, nullptr);
    size_t log_size = 0;
    std::string pocl_log;
    if (clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size) == CL_SUCCESS &&
        log_size > 1) {
      pocl_log.resize(log_size);
      clGetProgramBuildInfo(prog, device, CL_PROGRAM_BUILD_LOG, log_size, pocl_log.data(), nullptr);
      while (!pocl_log.empty() && (pocl_log.back() == '\0' || pocl_log.back() == '\n')) pocl_log.pop_back();
    }
    if (err == CL_SUCCESS) {
      // PoCL's log of a successful build is its optimizer's remarks: not the application's business.
      out->program = prog;
      return ZE_RESULT_SUCCESS;
    }
    clReleaseProgram(prog);
    // Builtins missing under their standard name: retry with the __global overload of a generic-pointer
    // builtin (PoCL 3.1 has almost no generic-address-space overloads; on the CPU every address space
    // is the same memory), or with PoCL's internal "_cl_" name.
    bool renamed = false;
    if (attempt < 3) {
      const std::string key = "Cannot find symbol ";
      for (size_t at = pocl_log.find(key); at != std::string::npos; at = pocl_log.find(key, at + 1)) {
        size_t b0 = at + key.size(), e0 = pocl_log.find_first_of(" \n", b0);
        std::string sym = pocl_log.substr(b0, e0 == std::string::npos ? std::string::npos : e0 - b0);
        llvm::Function* f = mod.getFunction(sym);
        if (!f || !f->isDeclaration()) continue;
        if (sym.find("PU3AS4") != std::string::npos) {
          if (use_global_overload(mod, f)) renamed = true;
        } else if (sym.find("_cl_") == std::string::npos && use_pocl_name(f)) {
          renamed = true;
        }
      }
    }
    if (renamed) continue;
    out->log += "PoCL failed to build the program (clBuildProgram returned " + std::to_string(err) + ")";
    if (!pocl_log.empty()) out->log += ":\n" + pocl_log;
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
}

}  // namespace

ze_result_t compile_module(ze_module_format_t format, const uint8_t* input, size_t size,
                           const SpecConstants& constants, const char* build_flags,
                           cl_context context, cl_device_id device, CompiledProgram* out) {
  out->log.clear();
  llvm::LLVMContext ctx;
  // PoCL 3.1 reads SPIR 1.2-style bitcode: typed pointers.
  ctx.setOpaquePointers(false);
  std::string diagnostics;
  collect_diagnostics(ctx, &diagnostics);
  std::unique_ptr<llvm::Module> mod;

  if (format == ZE_MODULE_FORMAT_NATIVE) {
    std::string err;
    mod = parse_native(ctx, input, size, &err);
    if (!mod) {
      out->log = err;
      return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
    }
    if (constants.count)
      out->log = "warning: specialization constants are ignored for a native binary (already applied)\n";
  } else {
    if (size % 4 != 0) {
      out->log = "invalid SPIR-V: size " + std::to_string(size) + " is not a multiple of 4";
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    if (size < 20) {
      out->log = "invalid SPIR-V: " + std::to_string(size) + " bytes is shorter than the 20-byte header";
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    uint32_t magic;
    memcpy(&magic, input, 4);
    if (magic != kSpirvMagic) {
      out->log = "invalid SPIR-V: magic number " + hex32(magic) + " (expected " + hex32(kSpirvMagic) + ")";
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    std::string structure_err;
    std::map<uint32_t, uint32_t> spec_sizes;  // SpecId -> bytes
    if (!check_structure(input, size, &spec_sizes, &structure_err)) {
      out->log = "invalid SPIR-V: " + structure_err;
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    std::string bytes(reinterpret_cast<const char*>(input), size);
    uint32_t version;
    memcpy(&version, input + 4, 4);
    if (version > 0x00010400u) {
      // llvm-spirv 15 reads SPIR-V up to 1.4. Modules of later versions that use no later feature (such
      // as a 1.4 module whose version word was raised to link with a 1.5 one) translate as 1.4; a module
      // that does use one fails in the translator, with its message in the log.
      const uint32_t v14 = 0x00010400u;
      memcpy(&bytes[4], &v14, 4);
      out->log += "note: SPIR-V " + std::to_string((version >> 16) & 0xff) + "." +
                  std::to_string((version >> 8) & 0xff) + " module read as SPIR-V 1.4\n";
    }
    if (constants.count) {
      if (!constants.ids || !constants.values) {
        out->log = "ze_module_constants_t: numConstants is " + std::to_string(constants.count) +
                   " but pConstantIds or pConstantValues is null";
        return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
      }
      for (uint32_t i = 0; i < constants.count; ++i)
        if (!constants.values[i]) {
          out->log = "specialization constant id " + std::to_string(constants.ids[i]) + ": null value pointer";
          return ZE_RESULT_ERROR_INVALID_NULL_POINTER;
        }
    }
    // The constants as the translator will read them (each with its own size), for the cache key.
    std::string applied;
    for (uint32_t i = 0; i < constants.count; ++i) {
      auto it = spec_sizes.find(constants.ids[i]);
      if (it == spec_sizes.end()) {
        // Intel's driver fails the build the same way.
        out->log += "specialization constant id " + std::to_string(constants.ids[i]) +
                    " is not declared by the module";
        return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
      }
      applied.append(reinterpret_cast<const char*>(&constants.ids[i]), 4);
      applied.append(static_cast<const char*>(constants.values[i]), it->second);
    }
    std::string translated, terr;
    const TranslationCache::Key key = TranslationCache::key(bytes, applied);
    if (!translation_cache().get(key, &translated)) {
      if (!translate_isolated(bytes, constants, &translated, &terr)) {
        out->log += terr;
        return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
      }
      translation_cache().put(key, translated);
    }
    auto buf = llvm::MemoryBuffer::getMemBuffer(translated, "translated", false);
    auto parsed = llvm::parseBitcodeFile(buf->getMemBufferRef(), ctx);
    if (!parsed) {
      out->log += "internal error: the translator's bitcode does not parse: " + llvm::toString(parsed.takeError());
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
    mod = std::move(*parsed);
    std::string lerr;
    if (!lower_leftover_builtins(*mod, &lerr)) {
      out->log += lerr;
      return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
    }
  }

  analyze(*mod, out);
  // The native binary is the module before inlining, so that it keeps its exports and imports for
  // zeModuleDynamicLink, and without storage addresses, which belong to this process.
  {
    std::string bitcode;
    llvm::raw_string_ostream os(bitcode);
    llvm::WriteBitcodeToFile(*mod, os);
    os.flush();
    out->native_binary.assign(kNativeTag, kNativeTagSize);
    out->native_binary += bitcode;
  }
  if (!out->imports.empty()) {
    // As on Intel's driver, the module builds; its kernels wait for zeModuleDynamicLink.
    out->log += "note: the module imports";
    for (auto& n : out->imports) out->log += " " + n;
    out->log += "; link it with zeModuleDynamicLink before creating kernels\n";
    return ZE_RESULT_SUCCESS;
  }
  ze_result_t r = build_for_pocl(ctx, *mod, build_flags, {}, context, device, out);
  out->log += diagnostics;
  return r;
}

ze_result_t link_module(const std::string& native, const std::vector<LinkInput>& others, const char* build_flags,
                        cl_context context, cl_device_id device, CompiledProgram* out) {
  out->log.clear();
  llvm::LLVMContext ctx;
  ctx.setOpaquePointers(false);
  std::string diagnostics;
  collect_diagnostics(ctx, &diagnostics);
  std::string err;
  auto dest = parse_native(ctx, reinterpret_cast<const uint8_t*>(native.data()), native.size(), &err);
  if (!dest) {
    out->log = err;
    return ZE_RESULT_ERROR_MODULE_LINK_FAILURE;
  }
  std::vector<std::string> wanted = find_imports(*dest);
  std::map<std::string, void*> shared;
  llvm::Linker linker(*dest);
  for (const LinkInput& o : others) {
    auto src = parse_native(ctx, reinterpret_cast<const uint8_t*>(o.native->data()), o.native->size(), &err);
    if (!src) {
      out->log = err;
      return ZE_RESULT_ERROR_MODULE_LINK_FAILURE;
    }
    // Only the definitions this module imports; kernels and everything else of the other module stay
    // there.
    bool exports_any = false;
    for (const std::string& n : wanted) {
      llvm::GlobalValue* gv = src->getNamedValue(n);
      if (gv && !gv->isDeclaration() && !gv->hasLocalLinkage()) exports_any = true;
    }
    if (!exports_any) continue;
    for (const GlobalInfo* g : o.globals)
      if (!g->constant && g->named && g->storage &&
          std::find(wanted.begin(), wanted.end(), g->name) != wanted.end())
        shared[g->name] = g->storage.get();
    if (linker.linkInModule(std::move(src), llvm::Linker::Flags::LinkOnlyNeeded)) {
      out->log = "linking failed:\n" + diagnostics;
      return ZE_RESULT_ERROR_MODULE_LINK_FAILURE;
    }
  }
  std::vector<std::string> missing = find_imports(*dest);
  if (!missing.empty()) {
    out->log = "unresolved imports:";
    for (auto& n : missing) out->log += " " + n;
    return ZE_RESULT_ERROR_MODULE_LINK_FAILURE;
  }
  analyze(*dest, out);
  ze_result_t r = build_for_pocl(ctx, *dest, build_flags, shared, context, device, out);
  out->log += diagnostics;
  return r == ZE_RESULT_SUCCESS ? r : ZE_RESULT_ERROR_MODULE_LINK_FAILURE;
}

}  // namespace zexcpu
