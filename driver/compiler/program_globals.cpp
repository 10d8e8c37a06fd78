// Program-scope variables (docs/cpu-driver-compiler.md, step 8). PoCL 3.1 has no program-scope
// variables of its own: each kernel object (one per kernel and group size) would get a private copy. So
// every mutable __global variable moves to storage zex-cpu owns, shared by all kernels of the module
// and by the host (zeModuleGetGlobalPointer), and the kernels address it there; a __constant one stays
// in the kernel objects and the storage holds a host copy of its value.
#include "compiler/parts.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace zexcpu {

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

ze_result_t assign_global_storage(llvm::Module& mod, const std::map<std::string, void*>& shared,
                                  CompiledProgram* out) {
  llvm::LLVMContext& ctx = mod.getContext();
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

  return ZE_RESULT_SUCCESS;
}

}  // namespace zexcpu
