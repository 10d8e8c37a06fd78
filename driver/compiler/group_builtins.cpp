// Sub-group and work-group builtins for the module (docs/cpu-driver-compiler.md, step 6). They are
// written in OpenCL C (group_builtins.cl), compiled to bitcode when the driver is built and embedded
// here; this file links the ones a module calls into it with LLVM's IR linker, and defines the __local
// scratch that the work-group collectives share (OpenCL C cannot declare it outside a kernel).
#include "compiler/parts.hpp"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>

#include <cctype>

namespace zexcpu {
namespace {

#include "group_builtins_bc.inc"  // kGroupBuiltinsBitcode: group_builtins.cl as SPIR bitcode

// The function name of an Itanium-mangled OpenCL builtin (_Z<len><name><parameters>), or "".
llvm::StringRef builtin_name(llvm::StringRef n) {
  if (!n.startswith("_Z")) return {};
  size_t i = 2, len = 0;
  while (i < n.size() && isdigit(static_cast<unsigned char>(n[i]))) len = len * 10 + (n[i++] - '0');
  if (len == 0 || i + len > n.size()) return {};
  return n.substr(i, len);
}

bool is_group_builtin(llvm::StringRef n) {
  if (n.startswith("sub_group_")) return true;
  if (n.startswith("work_group_")) return n != "work_group_barrier";  // PoCL has work_group_barrier
  return n == "get_sub_group_size" || n == "get_max_sub_group_size" || n == "get_num_sub_groups" ||
         n == "get_enqueued_num_sub_groups" || n == "get_sub_group_id" || n == "get_sub_group_local_id";
}

// `name`() returns the address of a new module-wide __local variable of `elems` 8-byte slots.
void define_local_accessor(llvm::Module& m, const char* name, uint64_t elems) {
  using namespace llvm;
  Function* f = m.getFunction(name);
  if (!f || !f->isDeclaration()) return;
  LLVMContext& ctx = m.getContext();
  Type* i64 = Type::getInt64Ty(ctx);
  auto* arr = ArrayType::get(i64, elems);
  auto* var = new GlobalVariable(m, arr, false, GlobalValue::InternalLinkage, UndefValue::get(arr),
                                 std::string(name) + ".slots", nullptr, GlobalValue::NotThreadLocal, kLocalAS);
  var->setAlignment(Align(8));
  f->setLinkage(GlobalValue::InternalLinkage);
  IRBuilder<> ir(BasicBlock::Create(ctx, "entry", f));
  Value* zero = ConstantInt::get(i64, 0);
  Value* p = ir.CreateInBoundsGEP(arr, var, {zero, zero});
  ir.CreateRet(ir.CreatePointerCast(p, f->getReturnType()));
}

}  // namespace

bool define_group_builtins(llvm::Module& m, size_t max_group, std::string* err) {
  std::vector<std::string> wanted;
  for (llvm::Function& f : m)
    if (f.isDeclaration() && !f.use_empty() && is_group_builtin(builtin_name(f.getName())))
      wanted.push_back(f.getName().str());
  if (wanted.empty()) return true;

  llvm::StringRef bytes(reinterpret_cast<const char*>(kGroupBuiltinsBitcode), sizeof kGroupBuiltinsBitcode);
  auto lib = llvm::getLazyBitcodeModule(llvm::MemoryBufferRef(bytes, "group_builtins.bc"), m.getContext());
  if (!lib) {
    *err = "internal error: zex-cpu's group builtins do not load: " + llvm::toString(lib.takeError());
    return false;
  }
  // Same target as the translator's modules; stated, so that the linker does not warn about it.
  (*lib)->setDataLayout(m.getDataLayout());
  (*lib)->setTargetTriple(m.getTargetTriple());
  if (llvm::Linker::linkModules(m, std::move(*lib), llvm::Linker::Flags::LinkOnlyNeeded)) {
    *err = "internal error: linking zex-cpu's group builtins failed";
    return false;
  }
  for (const std::string& n : wanted) {
    llvm::Function* f = m.getFunction(n);
    if (f && f->isDeclaration()) {
      *err = "the builtin " + builtin_name(n).str() + " (" + n +
             ") is not available on zex-cpu (PoCL 3.1 has no sub-group or work-group functions beyond the "
             "ones zex-cpu supplies)";
      return false;
    }
  }
  define_local_accessor(m, "__zexcpu_group_scratch", max_group);
  define_local_accessor(m, "__zexcpu_group_result", 1);
  return true;
}

}  // namespace zexcpu
