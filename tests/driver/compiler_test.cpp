// IR-level tests of zex-cpu's compiler steps (driver/compiler/), each called directly on small inputs:
// the SPIR-V check, the translation cache, the group builtins (run with LLVM's interpreter on known
// inputs), the lowering of leftover builtin variables, inlining, single exits, kernel names, kernel metadata
// and program globals.
// The driver as a whole is tested through the loader (driver_conformance); this executable links the
// compiler's static library instead.
#include "compiler/parts.hpp"
#include "compiler/translation_cache.hpp"

#include <gtest/gtest.h>
#include <llvm/Analysis/PostDominators.h>
#include <llvm/AsmParser/Parser.h>
#include <llvm/ExecutionEngine/ExecutionEngine.h>
#include <llvm/ExecutionEngine/GenericValue.h>
#include <llvm/ExecutionEngine/Interpreter.h>
#include <llvm/IR/CFG.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace zexcpu {
namespace {

constexpr const char* kSpirTarget =
    "target datalayout = \"e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024\"\n"
    "target triple = \"spir64-unknown-unknown\"\n";

std::unique_ptr<llvm::Module> parse_ir(llvm::LLVMContext& ctx, const std::string& body) {
  ctx.setOpaquePointers(false);  // as the compiler's modules (PoCL 3.1 reads typed pointers)
  llvm::SMDiagnostic diag;
  auto m = llvm::parseAssemblyString(std::string(kSpirTarget) + body, diag, ctx);
  if (!m) {
    std::string text;
    llvm::raw_string_ostream os(text);
    diag.print("test", os);
    ADD_FAILURE() << os.str();
  }
  return m;
}

std::string verify(const llvm::Module& m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::verifyModule(m, &os);
  return os.str();
}

std::vector<uint8_t> words_to_bytes(const std::vector<uint32_t>& w) {
  std::vector<uint8_t> b(w.size() * 4);
  memcpy(b.data(), w.data(), b.size());
  return b;
}

std::vector<uint8_t> read_spirv(const std::string& name) {
  std::ifstream f(std::string(ZEX_TEST_KERNEL_DIR) + "/" + name + ".spv", std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// --- spirv_check.cpp ----------------------------------------------------------------------------------

constexpr uint32_t op(uint32_t words, uint32_t opcode) { return words << 16 | opcode; }

TEST(SpirvCheck, AcceptsATranslatedModule) {
  std::vector<uint8_t> spv = read_spirv("basic");
  ASSERT_GT(spv.size(), 20u);
  SpirvFacts facts;
  std::string err;
  EXPECT_TRUE(check_spirv(spv.data(), spv.size(), &facts, &err)) << err;
  EXPECT_GE(facts.version, 0x00010000u);
}

TEST(SpirvCheck, RejectsATruncatedModule) {
  std::vector<uint8_t> spv = read_spirv("basic");
  ASSERT_GT(spv.size(), 100u);
  spv.resize((spv.size() / 2) & ~size_t{3});
  SpirvFacts facts;
  std::string err;
  EXPECT_FALSE(check_spirv(spv.data(), spv.size(), &facts, &err));
  EXPECT_FALSE(err.empty());
}

TEST(SpirvCheck, SpecConstantSizesComeFromTheirLiterals) {
  // OpDecorate %2 SpecId 7; OpDecorate %4 SpecId 9; %1 = OpTypeInt 16 0; %2 = OpSpecConstant %1 5;
  // %3 = OpTypeBool; %4 = OpSpecConstantTrue %3
  std::vector<uint32_t> w = {0x07230203, 0x00010000, 0, 5, 0,
                             op(4, 71), 2, 1, 7,
                             op(4, 71), 4, 1, 9,
                             op(4, 21), 1, 16, 0,
                             op(4, 50), 1, 2, 5,
                             op(2, 20), 3,
                             op(3, 48), 3, 4};
  std::vector<uint8_t> b = words_to_bytes(w);
  SpirvFacts facts;
  std::string err;
  ASSERT_TRUE(check_spirv(b.data(), b.size(), &facts, &err)) << err;
  EXPECT_EQ(facts.spec_sizes[7], 2u);
  EXPECT_EQ(facts.spec_sizes[9], 1u);
}

TEST(SpirvCheck, RejectsAnAlignmentThatIsNotAPowerOfTwo) {
  std::vector<uint32_t> w = {0x07230203, 0x00010000, 0, 5, 0, op(4, 71), 1, 44, 3};
  std::vector<uint8_t> b = words_to_bytes(w);
  SpirvFacts facts;
  std::string err;
  EXPECT_FALSE(check_spirv(b.data(), b.size(), &facts, &err));
  EXPECT_NE(err.find("power of two"), std::string::npos) << err;
}

TEST(SpirvCheck, RejectsAnInstructionPastTheEnd) {
  std::vector<uint32_t> w = {0x07230203, 0x00010000, 0, 5, 0, op(9, 71), 1, 44};
  std::vector<uint8_t> b = words_to_bytes(w);
  SpirvFacts facts;
  std::string err;
  EXPECT_FALSE(check_spirv(b.data(), b.size(), &facts, &err));
  EXPECT_FALSE(err.empty());
}

// --- translation_cache.cpp ----------------------------------------------------------------------------

uint64_t same_hash(std::string_view) { return 42; }

TEST(TranslationCache, KeysWithTheSameHashAreComparedInFull) {
  TranslationCache cache(1 << 20, &same_hash);
  const std::string a = TranslationCache::key("spirv-a", ""), b = TranslationCache::key("spirv-b", "");
  cache.put(a, "bitcode-a");
  std::string out;
  EXPECT_FALSE(cache.get(b, &out)) << "another module with the same hash must not get a's translation";
  EXPECT_TRUE(cache.get(a, &out));
  EXPECT_EQ(out, "bitcode-a");
  cache.put(b, "bitcode-b");
  EXPECT_EQ(cache.entries(), 2u);
  ASSERT_TRUE(cache.get(b, &out));
  EXPECT_EQ(out, "bitcode-b");
  ASSERT_TRUE(cache.get(a, &out));
  EXPECT_EQ(out, "bitcode-a");
}

TEST(TranslationCache, ConstantsArePartOfTheKey) {
  TranslationCache cache(1 << 20, &same_hash);
  cache.put(TranslationCache::key("spirv", std::string("\x07\0\0\0\x01", 5)), "one");
  std::string out;
  EXPECT_FALSE(cache.get(TranslationCache::key("spirv", std::string("\x07\0\0\0\x02", 5)), &out));
  EXPECT_TRUE(cache.get(TranslationCache::key("spirv", std::string("\x07\0\0\0\x01", 5)), &out));
  EXPECT_FALSE(cache.get(TranslationCache::key("spirv", ""), &out));
  // The SPIR-V size is in the key: moving bytes from the module to the constants is another key.
  EXPECT_NE(TranslationCache::key("ab", "c"), TranslationCache::key("a", "bc"));
}

TEST(TranslationCache, EvictsTheLeastRecentlyUsedBeyondItsBudget) {
  TranslationCache cache(4000);
  const std::string k1 = TranslationCache::key("1", ""), k2 = TranslationCache::key("2", ""),
                    k3 = TranslationCache::key("3", "");
  cache.put(k1, std::string(900, 'a'));
  cache.put(k2, std::string(900, 'b'));
  std::string out;
  ASSERT_TRUE(cache.get(k1, &out));  // k2 is now the least recently used
  cache.put(k3, std::string(900, 'c'));
  cache.put(TranslationCache::key("4", ""), std::string(900, 'd'));
  cache.put(TranslationCache::key("5", ""), std::string(900, 'e'));
  EXPECT_FALSE(cache.get(k2, &out));
  EXPECT_TRUE(cache.get(k1, &out));
  EXPECT_EQ(cache.entries(), 4u);
}

// --- group_builtins.cpp + group_builtins.cl ------------------------------------------------------------

// Runs the group builtins of a module with LLVM's interpreter.
class GroupIR : public ::testing::Test {
 protected:
  // Declares `decls` (IR declarations), links the builtins, and prepares the interpreter.
  void link(const std::string& decls) {
    auto m = parse_ir(ctx_, decls + "define spir_kernel void @k() {\n  ret void\n}\n");
    ASSERT_TRUE(m);
    // A use of each declaration, as a module that calls them has.
    std::vector<llvm::Function*> fs;
    for (llvm::Function& f : *m)
      if (f.isDeclaration()) fs.push_back(&f);
    llvm::GlobalVariable* keep = new llvm::GlobalVariable(
        *m, llvm::ArrayType::get(llvm::Type::getInt8PtrTy(ctx_), fs.size()), false,
        llvm::GlobalValue::ExternalLinkage, nullptr, "keep");
    std::vector<llvm::Constant*> uses;
    for (llvm::Function* f : fs) uses.push_back(llvm::ConstantExpr::getBitCast(f, llvm::Type::getInt8PtrTy(ctx_)));
    keep->setInitializer(llvm::ConstantArray::get(llvm::cast<llvm::ArrayType>(keep->getValueType()), uses));
    std::string err;
    ASSERT_TRUE(define_group_builtins(*m, 256, &err)) << err;
    ASSERT_EQ(verify(*m), "");
    module_ = m.get();
    LLVMLinkInInterpreter();
    std::string eerr;
    engine_.reset(llvm::EngineBuilder(std::move(m)).setEngineKind(llvm::EngineKind::Interpreter).setErrorStr(&eerr).create());
    ASSERT_TRUE(engine_) << eerr;
  }
  llvm::Function* fn(const std::string& name) {
    llvm::Function* f = module_->getFunction(name);
    EXPECT_TRUE(f && !f->isDeclaration()) << name << " is not defined";
    return f;
  }
  int64_t call_int(const std::string& name, int64_t x, unsigned bits) {
    llvm::Function* f = fn(name);
    if (!f) return 0;
    llvm::GenericValue a;
    a.IntVal = llvm::APInt(bits, static_cast<uint64_t>(x), true);
    return engine_->runFunction(f, {a}).IntVal.getSExtValue();
  }
  float call_float(const std::string& name, float x) {
    llvm::Function* f = fn(name);
    if (!f) return 0;
    llvm::GenericValue a;
    a.FloatVal = x;
    return engine_->runFunction(f, {a}).FloatVal;
  }

  llvm::LLVMContext ctx_;
  llvm::Module* module_ = nullptr;
  std::unique_ptr<llvm::ExecutionEngine> engine_;
};

// Itanium names of sub_group_[non_uniform_]<kind>_<op>(<type>).
std::string sg(const std::string& prefix, const std::string& kind, const std::string& op, const char* type) {
  std::string n = "sub_group_" + prefix + kind + "_" + op;
  return "_Z" + std::to_string(n.size()) + n + type;
}

struct IntCase {
  const char* prefix;
  const char* op;
  int64_t identity;
};

TEST_F(GroupIR, SubGroupIntScansAndReductions) {
  const std::vector<IntCase> cases = {
      {"", "add", 0},
      {"", "min", std::numeric_limits<int32_t>::max()},
      {"", "max", std::numeric_limits<int32_t>::min()},
      {"non_uniform_", "add", 0},
      {"non_uniform_", "mul", 1},
      {"non_uniform_", "min", std::numeric_limits<int32_t>::max()},
      {"non_uniform_", "max", std::numeric_limits<int32_t>::min()},
      {"non_uniform_", "and", -1},
      {"non_uniform_", "or", 0},
      {"non_uniform_", "xor", 0},
  };
  std::string decls;
  for (const IntCase& c : cases)
    for (const char* kind : {"reduce", "scan_inclusive", "scan_exclusive"})
      decls += "declare spir_func i32 @" + sg(c.prefix, kind, c.op, "i") + "(i32)\n";
  ASSERT_NO_FATAL_FAILURE(link(decls));
  for (const IntCase& c : cases)
    for (int64_t x : {3, 6, -5, 0}) {
      EXPECT_EQ(call_int(sg(c.prefix, "reduce", c.op, "i"), x, 32), x) << c.prefix << c.op;
      EXPECT_EQ(call_int(sg(c.prefix, "scan_inclusive", c.op, "i"), x, 32), x) << c.prefix << c.op;
      EXPECT_EQ(call_int(sg(c.prefix, "scan_exclusive", c.op, "i"), x, 32), c.identity)
          << "sub_group_" << c.prefix << "scan_exclusive_" << c.op << "(" << x << ")";
    }
}

TEST_F(GroupIR, SubGroupUnsignedIdentities) {
  ASSERT_NO_FATAL_FAILURE(link("declare spir_func i32 @" + sg("non_uniform_", "scan_exclusive", "min", "j") +
                               "(i32)\ndeclare spir_func i32 @" + sg("non_uniform_", "scan_exclusive", "max", "j") +
                               "(i32)\ndeclare spir_func i64 @" + sg("non_uniform_", "scan_exclusive", "and", "m") +
                               "(i64)\n"));
  EXPECT_EQ(static_cast<uint32_t>(call_int(sg("non_uniform_", "scan_exclusive", "min", "j"), 5, 32)), UINT32_MAX);
  EXPECT_EQ(call_int(sg("non_uniform_", "scan_exclusive", "max", "j"), 5, 32), 0);
  EXPECT_EQ(call_int(sg("non_uniform_", "scan_exclusive", "and", "m"), 6, 64), -1);
}

TEST_F(GroupIR, SubGroupLogicalScansAndReductions) {
  std::string decls;
  for (const char* o : {"logical_and", "logical_or", "logical_xor"})
    for (const char* kind : {"reduce", "scan_inclusive", "scan_exclusive"})
      decls += "declare spir_func i32 @" + sg("non_uniform_", kind, o, "i") + "(i32)\n";
  ASSERT_NO_FATAL_FAILURE(link(decls));
  for (int64_t x : {0, 1, 7}) {
    for (const char* o : {"logical_and", "logical_or", "logical_xor"}) {
      EXPECT_EQ(call_int(sg("non_uniform_", "reduce", o, "i"), x, 32), x != 0) << o << "(" << x << ")";
      EXPECT_EQ(call_int(sg("non_uniform_", "scan_inclusive", o, "i"), x, 32), x != 0) << o << "(" << x << ")";
    }
    EXPECT_EQ(call_int(sg("non_uniform_", "scan_exclusive", "logical_and", "i"), x, 32), 1);
    EXPECT_EQ(call_int(sg("non_uniform_", "scan_exclusive", "logical_or", "i"), x, 32), 0);
    EXPECT_EQ(call_int(sg("non_uniform_", "scan_exclusive", "logical_xor", "i"), x, 32), 0);
  }
}

TEST_F(GroupIR, SubGroupFloatScansAndReductions) {
  std::string decls;
  for (const char* prefix : {"", "non_uniform_"})
    for (const char* o : {"add", "min", "max"})
      for (const char* kind : {"reduce", "scan_inclusive", "scan_exclusive"})
        decls += "declare spir_func float @" + sg(prefix, kind, o, "f") + "(float)\n";
  for (const char* kind : {"reduce", "scan_inclusive", "scan_exclusive"})
    decls += "declare spir_func float @" + sg("non_uniform_", kind, "mul", "f") + "(float)\n";
  ASSERT_NO_FATAL_FAILURE(link(decls));
  const float inf = std::numeric_limits<float>::infinity();
  for (const char* prefix : {"", "non_uniform_"}) {
    for (const char* o : {"add", "min", "max"}) {
      EXPECT_EQ(call_float(sg(prefix, "reduce", o, "f"), 2.5f), 2.5f) << prefix << o;
      EXPECT_EQ(call_float(sg(prefix, "scan_inclusive", o, "f"), -1.5f), -1.5f) << prefix << o;
    }
    EXPECT_EQ(call_float(sg(prefix, "scan_exclusive", "add", "f"), 2.5f), 0.0f);
    EXPECT_EQ(call_float(sg(prefix, "scan_exclusive", "min", "f"), 2.5f), inf);
    EXPECT_EQ(call_float(sg(prefix, "scan_exclusive", "max", "f"), 2.5f), -inf);
  }
  EXPECT_EQ(call_float(sg("non_uniform_", "scan_exclusive", "mul", "f"), 3.0f), 1.0f);
  EXPECT_EQ(call_float(sg("non_uniform_", "reduce", "mul", "f"), 3.0f), 3.0f);
}

TEST_F(GroupIR, WorkGroupCollectivesGetTheirLocalScratch) {
  ASSERT_NO_FATAL_FAILURE(link("declare spir_func i32 @_Z29work_group_scan_exclusive_addi(i32)\n"
                               "declare spir_func i32 @_Z14work_group_alli(i32)\n"));
  for (const char* n : {"__zexcpu_group_scratch", "__zexcpu_group_result"}) {
    llvm::Function* f = module_->getFunction(n);
    ASSERT_TRUE(f) << n;
    EXPECT_FALSE(f->isDeclaration()) << n << " must be defined by the driver";
  }
  const llvm::GlobalVariable* slots = module_->getGlobalVariable("__zexcpu_group_scratch.slots", true);
  ASSERT_TRUE(slots);
  EXPECT_EQ(slots->getAddressSpace(), kLocalAS);
  EXPECT_EQ(llvm::cast<llvm::ArrayType>(slots->getValueType())->getNumElements(), 256u);
}

TEST(GroupBuiltins, AnUnknownGroupBuiltinIsABuildError) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "declare spir_func <4 x i32> @_Z16sub_group_balloti(i32)\n"
                    "define spir_kernel void @k(<4 x i32> addrspace(1)* %o) {\n"
                    "  %b = call spir_func <4 x i32> @_Z16sub_group_balloti(i32 1)\n"
                    "  store <4 x i32> %b, <4 x i32> addrspace(1)* %o\n  ret void\n}\n");
  ASSERT_TRUE(m);
  std::string err;
  EXPECT_FALSE(define_group_builtins(*m, 64, &err));
  EXPECT_NE(err.find("sub_group_ballot"), std::string::npos) << err;
}

TEST(GroupBuiltins, AModuleWithoutGroupBuiltinsIsLeftAlone) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx, "define spir_kernel void @k() {\n  ret void\n}\n");
  ASSERT_TRUE(m);
  std::string err;
  ASSERT_TRUE(define_group_builtins(*m, 64, &err)) << err;
  EXPECT_EQ(m->size(), 1u);
}

// --- ir_fixups.cpp ------------------------------------------------------------------------------------

// The builtin variable loaded whole (the use that was read after it was deleted) and through a GEP.
TEST(IrFixups, LeftoverBuiltinVariablesBecomeCalls) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "@__spirv_BuiltInGlobalInvocationId.2 = external addrspace(1) global <3 x i64>\n"
                    "@__spirv_BuiltInLocalInvocationId.3 = external addrspace(1) global <3 x i64>\n"
                    "define spir_kernel void @k(i64 addrspace(1)* %o) {\n"
                    "  %v = load <3 x i64>, <3 x i64> addrspace(1)* @__spirv_BuiltInGlobalInvocationId.2\n"
                    "  %x = extractelement <3 x i64> %v, i32 1\n"
                    "  store i64 %x, i64 addrspace(1)* %o\n"
                    "  %y = load i64, i64 addrspace(1)* getelementptr (<3 x i64>, <3 x i64> addrspace(1)* "
                    "@__spirv_BuiltInLocalInvocationId.3, i64 0, i64 2)\n"
                    "  store i64 %y, i64 addrspace(1)* %o\n"
                    "  ret void\n}\n");
  ASSERT_TRUE(m);
  std::string err;
  ASSERT_TRUE(lower_leftover_builtins(*m, &err)) << err;
  EXPECT_EQ(verify(*m), "");
  EXPECT_FALSE(m->getGlobalVariable("__spirv_BuiltInGlobalInvocationId.2", true));
  EXPECT_FALSE(m->getGlobalVariable("__spirv_BuiltInLocalInvocationId.3", true));
  llvm::Function* gid = m->getFunction("_Z13get_global_idj");
  llvm::Function* lid = m->getFunction("_Z12get_local_idj");
  ASSERT_TRUE(gid && lid);
  EXPECT_EQ(gid->getNumUses(), 3u) << "one call per element of the vector load";
  ASSERT_EQ(lid->getNumUses(), 1u);
  auto* call = llvm::cast<llvm::CallInst>(*lid->user_begin());
  EXPECT_EQ(llvm::cast<llvm::ConstantInt>(call->getArgOperand(0))->getZExtValue(), 2u);
}

TEST(IrFixups, GenericPointerOverloadBecomesGlobal) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "declare spir_func i32 @_Z10atomic_incPU3AS4Vi(i32 addrspace(4)*)\n"
                    "define spir_kernel void @k(i32 addrspace(4)* %p) {\n"
                    "  %r = call spir_func i32 @_Z10atomic_incPU3AS4Vi(i32 addrspace(4)* %p)\n  ret void\n}\n");
  ASSERT_TRUE(m);
  llvm::Function* f = m->getFunction("_Z10atomic_incPU3AS4Vi");
  ASSERT_TRUE(use_global_overload(*m, f));
  EXPECT_EQ(verify(*m), "");
  EXPECT_TRUE(m->getFunction("_Z10atomic_incPU3AS1Vi"));
  EXPECT_FALSE(m->getFunction("_Z10atomic_incPU3AS4Vi"));
}

TEST(IrFixups, PoclNames) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx, "declare spir_func void @_Z9mem_fencej(i32)\n");
  ASSERT_TRUE(m);
  ASSERT_TRUE(use_pocl_name(*m, m->getFunction("_Z9mem_fencej")));
  EXPECT_TRUE(m->getFunction("_Z13_cl_mem_fencej"));
}

// --- inline.cpp ---------------------------------------------------------------------------------------

TEST(Inline, HelpersAreInlinedAndDropped) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "define spir_func i32 @twice(i32 %x) noinline {\n  %y = add i32 %x, %x\n  ret i32 %y\n}\n"
                    "define spir_kernel void @k(i32 addrspace(1)* %o) {\n"
                    "  %r = call spir_func i32 @twice(i32 4) noinline\n"
                    "  store i32 %r, i32 addrspace(1)* %o\n  ret void\n}\n");
  ASSERT_TRUE(m);
  std::string err;
  ASSERT_TRUE(inline_everything(*m, &err)) << err;
  EXPECT_FALSE(m->getFunction("twice"));
  EXPECT_EQ(verify(*m), "");
}

TEST(Inline, RecursionIsABuildError) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "define spir_func i32 @f(i32 %x) {\n  %c = icmp eq i32 %x, 0\n  br i1 %c, label %z, label %r\n"
                    "z:\n  ret i32 0\nr:\n  %d = sub i32 %x, 1\n  %v = call spir_func i32 @f(i32 %d)\n  ret i32 %v\n}\n"
                    "define spir_kernel void @k(i32 addrspace(1)* %o, i32 %n) {\n"
                    "  %r = call spir_func i32 @f(i32 %n)\n  store i32 %r, i32 addrspace(1)* %o\n  ret void\n}\n");
  ASSERT_TRUE(m);
  std::string err;
  EXPECT_FALSE(inline_everything(*m, &err));
  EXPECT_NE(err.find("recursive"), std::string::npos) << err;
}

// --- bounds_versioning.cpp ----------------------------------------------------------------------------

TEST(BoundsVersioning, AGuardedThrowGetsAFastCopy) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "declare spir_func i64 @_Z13get_global_idj(i32)\n"
                    "declare spir_func void @zex_report_exception(i32)\n"
                    "define spir_kernel void @k(i32 addrspace(1)* %o, i64 %n) {\n"
                    "entry:\n  %g = call spir_func i64 @_Z13get_global_idj(i32 0)\n"
                    "  %ok = icmp ult i64 %g, %n\n  br i1 %ok, label %hot, label %cold\n"
                    "hot:\n  %p = getelementptr i32, i32 addrspace(1)* %o, i64 %g\n"
                    "  store i32 1, i32 addrspace(1)* %p\n  ret void\n"
                    "cold:\n  call spir_func void @zex_report_exception(i32 1)\n  ret void\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(version_bounds_checks(*m), 1u);
  EXPECT_EQ(verify(*m), "");
  EXPECT_EQ(m->getFunction("k")->getEntryBlock().getName(), "zex.version");
}

// --- defined_phis.cpp ---------------------------------------------------------------------------------

// A loop of barriers with a flag that is undefined when the loop does not run (hotspot's `computed`):
// the undefined input becomes false in the kernel with a barrier, and stays in the one without.
TEST(DefinedPhis, UndefinedInputsOfPhisBecomeZeroInKernelsWithBarriers) {
  llvm::LLVMContext ctx;
  const std::string body =
      "(i32 addrspace(1)* %o, i32 %n, i32 %t) {\n"
      "entry:\n  %go = icmp sgt i32 %n, 0\n  br i1 %go, label %loop, label %done\n"
      "loop:\n  %i = phi i32 [ 0, %entry ], [ %i1, %loop ]\n  %c = icmp slt i32 %t, %i\n"
      "  BARRIER  %i1 = add i32 %i, 1\n  %more = icmp slt i32 %i1, %n\n  br i1 %more, label %loop, label %done\n"
      "done:\n  %f = phi i1 [ undef, %entry ], [ %c, %loop ]\n  %v = phi i32 [ poison, %entry ], [ %i1, %loop ]\n"
      "  br i1 %f, label %st, label %out\n"
      "st:\n  store i32 %v, i32 addrspace(1)* %o\n  br label %out\n"
      "out:\n  ret void\n}\n";
  auto with = [&](const std::string& name, const std::string& barrier) {
    std::string b = body;
    b.replace(b.find("BARRIER"), 7, barrier);
    return "define spir_kernel void @" + name + b;
  };
  auto m = parse_ir(ctx, "declare spir_func void @_Z7barrierj(i32)\n" +
                             with("k", "call spir_func void @_Z7barrierj(i32 1)\n") + with("plain", ""));
  ASSERT_TRUE(m);
  EXPECT_EQ(define_undefined_phi_inputs(*m), 2u) << "the flag's undef and the value's poison, in k only";
  EXPECT_EQ(verify(*m), "");
  for (const char* f : {"k", "plain"}) {
    const llvm::BasicBlock* done = nullptr;
    for (const llvm::BasicBlock& bb : *m->getFunction(f))
      if (bb.getName() == "done") done = &bb;
    ASSERT_NE(done, nullptr);
    for (const llvm::PHINode& phi : done->phis()) {
      const llvm::Value* in = phi.getIncomingValueForBlock(&m->getFunction(f)->getEntryBlock());
      if (std::string(f) == "k")
        EXPECT_TRUE(llvm::isa<llvm::Constant>(in) && llvm::cast<llvm::Constant>(in)->isNullValue()) << f;
      else
        EXPECT_TRUE(llvm::isa<llvm::UndefValue>(in)) << "a kernel without barriers is left as it is";
    }
  }
  EXPECT_EQ(define_undefined_phi_inputs(*m), 0u) << "a second time changes nothing";
}

// --- single_exit.cpp ----------------------------------------------------------------------------------

// The blocks of `f` without successors.
std::vector<const llvm::BasicBlock*> exit_blocks(const llvm::Function& f) {
  std::vector<const llvm::BasicBlock*> out;
  for (const llvm::BasicBlock& bb : f)
    if (bb.getTerminator()->getNumSuccessors() == 0) out.push_back(&bb);
  return out;
}

TEST(SingleExit, EveryReturnAndUnreachableOfAKernelGoesToOneReturn) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "declare spir_func i64 @_Z12get_local_idj(i32)\n"
                    "declare spir_func void @_Z7barrierj(i32)\n"
                    "define spir_kernel void @k(i32 addrspace(1)* %o, i64 %n) {\n"
                    "entry:\n  %t = call spir_func i64 @_Z12get_local_idj(i32 0)\n"
                    "  %early = icmp uge i64 %t, %n\n  br i1 %early, label %out, label %work\n"
                    "out:\n  ret void\n"
                    "work:\n  call spir_func void @_Z7barrierj(i32 1)\n"
                    "  %odd = trunc i64 %t to i1\n  br i1 %odd, label %done, label %store\n"
                    "done:\n  ret void\n"
                    "store:\n  %big = icmp ugt i64 %t, 1000000\n  br i1 %big, label %never, label %st\n"
                    "never:\n  unreachable\n"
                    "st:\n  store i32 1, i32 addrspace(1)* %o\n  ret void\n}\n"
                    "define spir_kernel void @one(i32 addrspace(1)* %o) {\n  store i32 2, i32 addrspace(1)* %o\n"
                    "  ret void\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(give_kernels_one_exit(*m), 1u) << "only the kernel with several exits changes";
  EXPECT_EQ(verify(*m), "");
  std::vector<const llvm::BasicBlock*> exits = exit_blocks(*m->getFunction("k"));
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_TRUE(llvm::isa<llvm::ReturnInst>(exits[0]->getTerminator()));
  EXPECT_EQ(exits[0]->size(), 1u) << "the exit block holds only the return";
  EXPECT_EQ(llvm::pred_size(exits[0]), 4u) << "three returns and the unreachable branch to it";
  EXPECT_FALSE(give_one_exit(*m->getFunction("k"))) << "a second time changes nothing";
  EXPECT_EQ(exit_blocks(*m->getFunction("one")).size(), 1u);
}

// `if (t == 0) { if (b < 0) return; } barrier; use(v)`, as clang -O2 writes it: one return block that the
// inner branch reaches without passing the barrier.
TEST(SingleExit, AReturnBeforeABarrierArrivesAtIt) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "declare spir_func i64 @_Z12get_local_idj(i32)\n"
                    "declare spir_func void @_Z7barrierj(i32)\n"
                    "define spir_kernel void @k(i32 addrspace(1)* %o, i32 addrspace(1)* %b) {\n"
                    "entry:\n  %t = call spir_func i64 @_Z12get_local_idj(i32 0)\n"
                    "  %first = icmp eq i64 %t, 0\n  br i1 %first, label %then, label %join\n"
                    "then:\n  %x = load i32, i32 addrspace(1)* %b\n  %neg = icmp slt i32 %x, 0\n"
                    "  br i1 %neg, label %exit, label %join\n"
                    "join:\n  %v = add i64 %t, 7\n  call spir_func void @_Z7barrierj(i32 1)\n"
                    "  %w = trunc i64 %v to i32\n  store i32 %w, i32 addrspace(1)* %o\n  br label %exit\n"
                    "exit:\n  ret void\n}\n");
  ASSERT_TRUE(m);
  llvm::Function* k = m->getFunction("k");
  EXPECT_FALSE(give_one_exit(*k)) << "already one return";
  EXPECT_EQ(leave_at_the_next_barrier(*k), 1u);
  EXPECT_EQ(verify(*m), "") << "%v, computed before the barrier, reaches its use after it through memory";
  llvm::PostDominatorTree pdt(*k);
  const llvm::BasicBlock* barrier_block = nullptr;
  for (const llvm::BasicBlock& bb : *k)
    for (const llvm::Instruction& i : bb)
      if (const auto* call = llvm::dyn_cast<llvm::CallInst>(&i))
        if (call->getCalledFunction() && call->getCalledFunction()->getName() == "_Z7barrierj") barrier_block = &bb;
  ASSERT_NE(barrier_block, nullptr);
  EXPECT_TRUE(pdt.dominates(barrier_block, &k->getEntryBlock())) << "every work-item now meets the barrier";
  EXPECT_EQ(exit_blocks(*k).size(), 1u);
  EXPECT_EQ(leave_at_the_next_barrier(*k), 0u) << "a second time changes nothing";

  // A return after the last barrier, or one whose other paths meet no barrier, stays as it is.
  auto after = parse_ir(ctx,
                        "declare spir_func i64 @_Z12get_local_idj(i32)\n"
                        "declare spir_func void @_Z7barrierj(i32)\n"
                        "define spir_kernel void @k(i32 addrspace(1)* %o) {\n"
                        "entry:\n  call spir_func void @_Z7barrierj(i32 1)\n"
                        "  %t = call spir_func i64 @_Z12get_local_idj(i32 0)\n"
                        "  %odd = trunc i64 %t to i1\n  br i1 %odd, label %exit, label %st\n"
                        "st:\n  store i32 1, i32 addrspace(1)* %o\n  br label %exit\n"
                        "exit:\n  ret void\n}\n");
  ASSERT_TRUE(after);
  EXPECT_EQ(leave_at_the_next_barrier(*after->getFunction("k")), 0u);
}

// --- kernel_names.cpp ---------------------------------------------------------------------------------

TEST(KernelNames, LongAndPathLikeNamesGetShortInternalOnes) {
  const std::string long_name(300, 'q');
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "define spir_kernel void @\"" + long_name + "\"(i32 addrspace(1)* %o) {\n"
                    "  store i32 1, i32 addrspace(1)* %o\n  ret void\n}\n"
                    "define spir_kernel void @\"a/b\"(i32 addrspace(1)* %o) {\n"
                    "  call spir_kernel void @\"" + long_name + "\"(i32 addrspace(1)* %o)\n  ret void\n}\n"
                    "define spir_kernel void @short_one(i32 addrspace(1)* %o) {\n  ret void\n}\n"
                    "define spir_func void @zexcpu_kernel_0() {\n  ret void\n}\n");
  ASSERT_TRUE(m);
  CompiledProgram prog;
  analyze(*m, &prog);
  ASSERT_EQ(prog.kernels.size(), 3u);
  give_pocl_names(*m, &prog.kernels);
  EXPECT_EQ(verify(*m), "");
  std::map<std::string, std::string> pocl;
  for (const KernelInfo& k : prog.kernels) pocl[k.name] = k.pocl_name;
  EXPECT_EQ(pocl["short_one"], "short_one") << "a name PoCL takes is kept";
  EXPECT_EQ(pocl[long_name], "zexcpu_kernel_1") << "zexcpu_kernel_0 is taken by a function of the module";
  EXPECT_EQ(pocl["a/b"], "zexcpu_kernel_2");
  for (const auto& [user, internal] : pocl) {
    EXPECT_TRUE(pocl_takes_name(internal)) << internal;
    ASSERT_NE(m->getFunction(internal), nullptr) << internal;
    EXPECT_EQ(m->getFunction(internal)->getCallingConv(), llvm::CallingConv::SPIR_KERNEL);
  }
  EXPECT_FALSE(m->getFunction(long_name));
  // The kernel that called the long-named one calls it under its new name.
  const llvm::Function* caller = m->getFunction("zexcpu_kernel_2");
  ASSERT_NE(caller, nullptr);
  const auto* call = llvm::dyn_cast<llvm::CallInst>(&caller->getEntryBlock().front());
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->getCalledFunction(), m->getFunction("zexcpu_kernel_1"));
  EXPECT_TRUE(pocl_takes_name(std::string(kMaxPoclKernelName, 'x')));
  EXPECT_FALSE(pocl_takes_name(std::string(kMaxPoclKernelName + 1, 'x')));
  EXPECT_FALSE(pocl_takes_name(""));

  // PoCL's log speaks of the application's kernels; only whole internal names are replaced.
  EXPECT_EQ(with_user_names("error in zexcpu_kernel_2: zexcpu_kernel_1 (zexcpu_kernel_12, xzexcpu_kernel_1)\n",
                            prog.kernels),
            "error in a/b: " + long_name + " (zexcpu_kernel_12, xzexcpu_kernel_1)\n");
}

// --- kernel_metadata.cpp ------------------------------------------------------------------------------

TEST(KernelMetadata, ArgumentKindsAndSizes) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "%struct.S = type { i32, double }\n"
                    "declare spir_func void @imported(i32)\n"
                    "define spir_kernel void @k(float addrspace(1)* %g, i8 addrspace(3)* %l, i16 %v, "
                    "%struct.S* byval(%struct.S) %s) !reqd_work_group_size !0 {\n"
                    "  call spir_func void @imported(i32 0)\n  ret void\n}\n"
                    "!0 = !{i32 8, i32 2, i32 1}\n");
  ASSERT_TRUE(m);
  CompiledProgram out;
  analyze(*m, &out);
  ASSERT_EQ(out.kernels.size(), 1u);
  const KernelInfo& k = out.kernels[0];
  ASSERT_EQ(k.args.size(), 4u);
  EXPECT_EQ(k.args[0].kind, ArgKind::Pointer);
  EXPECT_EQ(k.args[0].size, 8u);
  EXPECT_EQ(k.args[1].kind, ArgKind::Local);
  EXPECT_EQ(k.args[2].kind, ArgKind::Value);
  EXPECT_EQ(k.args[2].size, 2u);
  EXPECT_EQ(k.args[3].kind, ArgKind::Value);
  EXPECT_EQ(k.args[3].size, 16u);
  EXPECT_EQ(k.reqd_group_size[0], 8u);
  EXPECT_EQ(k.reqd_group_size[1], 2u);
  EXPECT_EQ(k.attributes, "reqd_work_group_size(8,2,1)");
  ASSERT_EQ(out.imports.size(), 1u);
  EXPECT_EQ(out.imports[0], "imported");
}

// --- program_globals.cpp ------------------------------------------------------------------------------

TEST(ProgramGlobals, VariablesAndConstantsMoveToModuleStorage) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "@counter = addrspace(1) global { i32, i16 } { i32 7, i16 -1 }, align 4\n"
                    "@table = addrspace(2) constant [2 x i32] [i32 3, i32 4], align 4\n"
                    "define spir_kernel void @k(i32 addrspace(1)* %o) {\n"
                    "  %p = getelementptr { i32, i16 }, { i32, i16 } addrspace(1)* @counter, i64 0, i32 0\n"
                    "  %v = load i32, i32 addrspace(1)* %p\n  store i32 %v, i32 addrspace(1)* %o\n"
                    "  %q = getelementptr [2 x i32], [2 x i32] addrspace(2)* @table, i64 0, i64 1\n"
                    "  %w = load i32, i32 addrspace(2)* %q\n  store i32 %w, i32 addrspace(1)* %o\n  ret void\n}\n");
  ASSERT_TRUE(m);
  CompiledProgram out;
  ASSERT_EQ(assign_global_storage(*m, {}, &out), ZE_RESULT_SUCCESS);
  EXPECT_EQ(verify(*m), "");
  ASSERT_EQ(out.globals.size(), 2u);
  for (const GlobalInfo& g : out.globals) {
    ASSERT_TRUE(g.storage);
    if (g.name == "counter") {
      EXPECT_FALSE(g.constant);
      EXPECT_EQ(g.size, 8u);
      int32_t a;
      int16_t b;
      memcpy(&a, g.storage.get(), 4);
      memcpy(&b, g.storage.get() + 4, 2);
      EXPECT_EQ(a, 7);
      EXPECT_EQ(b, -1);
      EXPECT_FALSE(m->getGlobalVariable("counter", true)) << "kernels address the storage instead";
    } else {
      EXPECT_EQ(g.name, "table");
      EXPECT_TRUE(g.constant);
      int32_t t[2];
      memcpy(t, g.storage.get(), 8);
      EXPECT_EQ(t[0], 3);
      EXPECT_EQ(t[1], 4);
      EXPECT_FALSE(m->getGlobalVariable("table", true)) << "constants move too (NEO's constant surface)";
    }
  }
}

// The segments as IGC 1.0.12504 picks zebin sections: only [N x i8] data in the constant space is a string.
TEST(ProgramGlobals, SegmentsFollowIgcAndKernelsSeeTheStorage) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "@.str = private unnamed_addr addrspace(2) constant [3 x i8] c\"hi\\00\", align 1\n"
                    "@lut = addrspace(2) constant [4 x i8] c\"\\01\\02\\03\\04\", align 1\n"
                    "@wrapped = internal addrspace(2) constant { [3 x i8] } { [3 x i8] c\"ok\\00\" }, align 1\n"
                    "@zeros = addrspace(2) constant [4 x i8] zeroinitializer, align 1\n"
                    "@vec = addrspace(2) constant <4 x i8> <i8 1, i8 2, i8 3, i8 4>, align 4\n"
                    "@gchars = addrspace(1) global [3 x i8] c\"ab\\00\", align 1\n"
                    "define spir_kernel void @k(i64 addrspace(1)* %o) {\n"
                    "  %a = ptrtoint [3 x i8] addrspace(2)* @.str to i64\n  store i64 %a, i64 addrspace(1)* %o\n"
                    "  %b = ptrtoint { [3 x i8] } addrspace(2)* @wrapped to i64\n"
                    "  store i64 %b, i64 addrspace(1)* %o\n  ret void\n}\n");
  ASSERT_TRUE(m);
  CompiledProgram out;
  ASSERT_EQ(assign_global_storage(*m, {}, &out), ZE_RESULT_SUCCESS);
  EXPECT_EQ(verify(*m), "");
  std::map<std::string, const GlobalInfo*> by_name;
  for (const GlobalInfo& g : out.globals) by_name[g.name] = &g;
  ASSERT_EQ(by_name.size(), 6u);
  EXPECT_EQ(by_name[".str"]->segment, Segment::Strings);
  EXPECT_TRUE(by_name[".str"]->named) << "as on NEO, where every used global has a symbol";
  EXPECT_EQ(by_name["lut"]->segment, Segment::Strings) << "any [N x i8] data, text or not";
  EXPECT_EQ(by_name["wrapped"]->segment, Segment::Constants);
  EXPECT_EQ(by_name["zeros"]->segment, Segment::Constants);
  EXPECT_EQ(by_name["vec"]->segment, Segment::Constants);
  EXPECT_EQ(by_name["gchars"]->segment, Segment::Globals);
  ASSERT_EQ(out.blocks.size(), 3u) << "one block per segment";
  for (const GlobalInfo& g : out.globals) {
    const StorageBlock* in = nullptr;
    for (const StorageBlock& b : out.blocks)
      if (g.storage.get() >= b.mem.get() && g.storage.get() + g.size <= b.mem.get() + b.size) in = &b;
    ASSERT_NE(in, nullptr) << g.name;
    EXPECT_EQ(in->segment, g.segment) << g.name;
  }
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(by_name["wrapped"]->storage.get())), "ok");
  // The kernel stores the storage addresses themselves.
  std::string ir;
  llvm::raw_string_ostream os(ir);
  m->print(os, nullptr);
  for (const char* n : {".str", "wrapped"})
    EXPECT_NE(os.str().find(std::to_string(reinterpret_cast<uintptr_t>(by_name[n]->storage.get()))),
              std::string::npos)
        << n;
}

TEST(PoclBuild, OnlyOpenClOptionsReachPocl) {
  EXPECT_EQ(opencl_options("-ze-opt-disable -cl-fast-relaxed-math  -g -cl-mad-enable"),
            "-cl-fast-relaxed-math -cl-mad-enable");
  EXPECT_EQ(opencl_options(nullptr), "");
}

}  // namespace
}  // namespace zexcpu
