// zex-cpu's group builtins (group_builtins.cpp + group_builtins.cl), run with LLVM's interpreter on known
// inputs.
#include "compiler_test_util.hpp"

namespace zexcpu {
namespace {

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

}  // namespace
}  // namespace zexcpu
