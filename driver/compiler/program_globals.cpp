// Program-scope variables (docs/cpu-driver-compiler.md, step 8). PoCL 3.1 has no program-scope
// variables of its own: each kernel object (one per kernel and group size) would get a private copy, at
// an address no allocation knows. So every program-scope variable and constant moves to storage zex-cpu
// owns, laid out in one block per segment the way NEO lays out a zebin (Segment in compiler.hpp), and
// the kernels address it there (the address is a constant in the bitcode). The segment decides what
// zeMemGetAddressRange finds (module_registry.cpp): the constant and global surfaces, not the strings.
#include "compiler/parts.hpp"

#include <llvm/IR/Constants.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/DerivedTypes.h>
#include <llvm/IR/GlobalVariable.h>
#include <llvm/IR/Module.h>

#include <sys/mman.h>
#include <unistd.h>

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

namespace {

// IGC 1.0.12504's rule for `.data.const.string` (ProgramScopeConstantAnalysis.cpp): a constant-space
// global whose initializer is a ConstantDataSequential that isString(), i.e. [N x i8] data. Not a struct
// that wraps one, not [N x i32], not <N x i8>, not zeroinitializer; name, linkage and uses do not matter.
Segment segment_of(const llvm::GlobalVariable& g, bool constant) {
  if (!constant) return Segment::Globals;
  auto* cds = g.hasInitializer() ? llvm::dyn_cast<llvm::ConstantDataSequential>(g.getInitializer()) : nullptr;
  bool string = cds && cds->isString() && g.getAddressSpace() == kConstantAS;
  return string ? Segment::Strings : Segment::Constants;
}

// FNV-1a, 64-bit: the key of a segment's address (map_stable).
uint64_t fnv(uint64_t h, const void* data, size_t n) {
  auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

// Storage for one segment at an address that depends only on `key` (the segment's contents) and on
// how many segments with the same key this process already holds. The kernels' bitcode holds the
// address, and PoCL's kernel cache is keyed by the bitcode: with an address of the heap (different in
// every process, ASLR) every process compiled every kernel again, about 0.2-1 s each. The address is
// only a hint: one that is taken (the same module built twice, another mapping, a sanitizer's shadow)
// moves to the next slot, and after 16 the kernel's choice is taken, which is as correct, only not
// cached across processes. Zero-filled; freed with munmap by the returned owner.
std::shared_ptr<uint8_t> map_stable(size_t size, uint64_t key) {
  constexpr uintptr_t kBase = 0x300000000000ull;  // above ASan's shadow, below the libraries and stacks
  constexpr uint64_t kSlots = 1ull << 16;         // of 2 MiB: 128 GiB of address space to hash into
  constexpr size_t kSlot = size_t(2) << 20;
  // TSan and MSan allow application mappings only in their own ranges (a hint elsewhere is at best
  // moved): no hints under them.
  const Sanitizer san = sanitizer_in_process();
  const bool hints = san != Sanitizer::Thread && san != Sanitizer::Memory;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t len = (size + page - 1) / page * page;
  for (uint64_t k = hints ? 0 : 16; k <= 16; ++k) {
    void* hint = k < 16 ? reinterpret_cast<void*>(kBase + (key + k) % kSlots * kSlot) : nullptr;
    void* p = mmap(hint, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    if (hint && p != hint) {
      munmap(p, len);
      continue;
    }
    return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [len](uint8_t* q) { munmap(q, len); });
  }
  return nullptr;
}

struct Placed {
  llvm::GlobalVariable* g;
  GlobalInfo info;
  std::vector<uint8_t> bytes;
  size_t offset = 0;
};

}  // namespace

ze_result_t assign_global_storage(llvm::Module& mod, const std::map<std::string, void*>& shared,
                                  CompiledProgram* out) {
  llvm::LLVMContext& ctx = mod.getContext();
  const llvm::DataLayout& dl = mod.getDataLayout();
  out->globals.clear();
  out->blocks.clear();
  std::vector<llvm::GlobalVariable*> to_erase;
  auto redirect = [&](llvm::GlobalVariable& g, void* where) {
    auto* addr = llvm::ConstantInt::get(llvm::Type::getInt64Ty(ctx), reinterpret_cast<uintptr_t>(where));
    g.replaceAllUsesWith(llvm::ConstantExpr::getIntToPtr(addr, g.getType()));
    to_erase.push_back(&g);
  };
  std::vector<Placed> placed;
  size_t segment_size[3] = {0, 0, 0};
  for (llvm::GlobalVariable& g : mod.globals()) {
    if (g.isDeclaration() || g.getName().startswith("llvm.")) continue;
    unsigned as = g.getAddressSpace();
    if (as != kGlobalAS && as != kConstantAS) continue;
    Placed p{&g, GlobalInfo{}, {}, 0};
    GlobalInfo& gi = p.info;
    gi.name = g.getName().str();
    gi.size = dl.getTypeAllocSize(g.getValueType());
    gi.constant = g.isConstant() || as == kConstantAS;
    // As on NEO, where IGC gives every used global a symbol under its LLVM name, internal ones and string
    // literals (".str") included (spirv-link drops the Export decorations it resolved, and the translator
    // then makes them internal).
    gi.named = g.hasName();
    gi.segment = segment_of(g, gi.constant);
    if (!gi.constant && gi.named) {
      auto it = shared.find(gi.name);
      if (it != shared.end()) {
        redirect(g, it->second);  // an imported variable: the exporting module's storage
        continue;
      }
    }
    p.bytes.assign(gi.size, 0);
    if (g.hasInitializer() && !constant_bytes(g.getInitializer(), dl, p.bytes.data(), gi.size)) {
      // An initializer that holds addresses: leave the variable in the kernel objects (per-kernel copies,
      // as PoCL has it) rather than guess; the host cannot reach it.
      out->log += "warning: program-scope variable '" + gi.name +
                  "' has an address in its initializer; zeModuleGetGlobalPointer cannot return it" +
                  (gi.constant ? "\n" : " and each kernel gets its own copy\n");
      continue;
    }
    size_t align = std::max<size_t>({g.getAlign().valueOrOne().value(),
                                     dl.getABITypeAlign(g.getValueType()).value(), 16});
    size_t& end = segment_size[static_cast<int>(gi.segment)];
    p.offset = (end + align - 1) / align * align;
    end = p.offset + std::max<size_t>(gi.size, 1);
    placed.push_back(std::move(p));
  }
  uint8_t* base[3] = {nullptr, nullptr, nullptr};
  std::shared_ptr<uint8_t> owner[3];
  uint64_t key[3] = {0xcbf29ce484222325ull, 0xcbf29ce484222325ull, 0xcbf29ce484222325ull};
  for (const Placed& p : placed) {  // what a segment holds decides where it goes
    uint64_t& h = key[static_cast<int>(p.info.segment)];
    h = fnv(h, p.info.name.data(), p.info.name.size());
    h = fnv(h, &p.offset, sizeof p.offset);
    h = fnv(h, p.bytes.data(), p.bytes.size());
  }
  for (int s = 0; s < 3; ++s) {
    if (segment_size[s] == 0) continue;
    key[s] = fnv(key[s], &s, sizeof s);
    owner[s] = map_stable(segment_size[s], key[s]);
    if (!owner[s]) return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
    base[s] = owner[s].get();
    out->blocks.push_back(StorageBlock{owner[s], segment_size[s], static_cast<Segment>(s)});
  }
  for (Placed& p : placed) {
    int s = static_cast<int>(p.info.segment);
    uint8_t* at = base[s] + p.offset;
    memcpy(at, p.bytes.data(), p.bytes.size());
    p.info.storage = std::shared_ptr<uint8_t>(owner[s], at);
    redirect(*p.g, at);  // kernels address the module's storage directly
    out->globals.push_back(std::move(p.info));
  }
  for (auto* g : to_erase) g->eraseFromParent();
  return ZE_RESULT_SUCCESS;
}

}  // namespace zexcpu
