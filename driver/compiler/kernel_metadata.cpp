// What Level Zero needs to know about each kernel, read from the IR (docs/cpu-driver-compiler.md,
// step 5 and "Kernel arguments"): argument kinds and sizes, required group and sub-group sizes,
// source attributes, and the module's imports. PoCL's own argument info for programs created from
// binaries is incomplete.
#include "compiler/parts.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

namespace zexcpu {
namespace {

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

}  // namespace

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

}  // namespace zexcpu
