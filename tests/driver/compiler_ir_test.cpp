// zex-cpu's IR rewrites before PoCL sees a kernel: leftover builtin variables, the stop check's loads, inlining, bounds
// versioning, defined phis and single exits.
#include "compiler_test_util.hpp"

#include <llvm/IR/InstIterator.h>

namespace zexcpu {
namespace {

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


// --- stop_loads.cpp ----------------------------------------------------------------------------------

// zex_stop_requested as llvm-spirv reads it: atomic_add(p, 0) for each OpAtomicLoad. The claim word's read
// becomes a hoistable unordered invariant load, the status's an acquire load; atomic_add(p, 0) elsewhere
// (a user's read-modify-write) and a non-zero add stay calls.
TEST(StopLoads, TheStopChecksReadsBecomeLoads) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "declare spir_func i32 @_Z10atomic_addPU3AS1Vii(i32 addrspace(1)*, i32)\n"
                    "define spir_func i32 @zex_stop_requested(i64 %report, i64 %claim, i64 %id, i32 %u) {\n"
                    "  %c = inttoptr i64 %claim to i32 addrspace(1)*\n"
                    "  %owner = call spir_func i32 @_Z10atomic_addPU3AS1Vii(i32 addrspace(1)* %c, i32 0)\n"
                    "  %s = inttoptr i64 %report to i32 addrspace(1)*\n"
                    "  %status = call spir_func i32 @_Z10atomic_addPU3AS1Vii(i32 addrspace(1)* %s, i32 0)\n"
                    "  %bump = call spir_func i32 @_Z10atomic_addPU3AS1Vii(i32 addrspace(1)* %s, i32 1)\n"
                    "  %r = add i32 %owner, %status\n  ret i32 %r\n}\n"
                    "define spir_kernel void @k(i32 addrspace(1)* %p) {\n"
                    "  %v = call spir_func i32 @_Z10atomic_addPU3AS1Vii(i32 addrspace(1)* %p, i32 0)\n  ret void\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(lower_stop_check_loads(*m), 2u);
  EXPECT_EQ(verify(*m), "");
  std::vector<llvm::LoadInst*> loads;
  for (llvm::Instruction& i : llvm::instructions(*m->getFunction("zex_stop_requested")))
    if (auto* l = llvm::dyn_cast<llvm::LoadInst>(&i)) loads.push_back(l);
  ASSERT_EQ(loads.size(), 2u);
  EXPECT_EQ(loads[0]->getOrdering(), llvm::AtomicOrdering::Unordered);
  EXPECT_TRUE(loads[0]->hasMetadata(llvm::LLVMContext::MD_invariant_load));
  EXPECT_EQ(loads[1]->getOrdering(), llvm::AtomicOrdering::Acquire);
  EXPECT_FALSE(loads[1]->hasMetadata(llvm::LLVMContext::MD_invariant_load));
  EXPECT_EQ(m->getFunction("_Z10atomic_addPU3AS1Vii")->getNumUses(), 2u) << "the add of 1 and the kernel's read";
  EXPECT_EQ(lower_stop_check_loads(*m), 0u) << "nothing left to change";
}

// The library's present form (docs/decisions.md, "The stop check's claim read"): the claim word read
// with a volatile load, the status with OpAtomicLoad (atomic_add(p, 0)). The volatile load becomes the
// same hoistable unordered invariant load; a volatile load of anything else stays as it is.
TEST(StopLoads, AVolatileClaimReadBecomesTheHoistableLoad) {
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx,
                    "declare spir_func i32 @_Z10atomic_addPU3AS1Vii(i32 addrspace(1)*, i32)\n"
                    "define spir_func i32 @zex_stop_requested(i64 %report, i64 %claim, i64 %id, i32 %u) {\n"
                    "  %c = inttoptr i64 %claim to i32 addrspace(1)*\n"
                    "  %owner = load volatile i32, i32 addrspace(1)* %c, align 4\n"
                    "  %s = inttoptr i64 %report to i32 addrspace(1)*\n"
                    "  %other = load volatile i32, i32 addrspace(1)* %s, align 4\n"
                    "  %status = call spir_func i32 @_Z10atomic_addPU3AS1Vii(i32 addrspace(1)* %s, i32 0)\n"
                    "  %r0 = add i32 %owner, %status\n  %r = add i32 %r0, %other\n  ret i32 %r\n}\n");
  ASSERT_TRUE(m);
  EXPECT_EQ(lower_stop_check_loads(*m), 2u);
  EXPECT_EQ(verify(*m), "");
  std::vector<llvm::LoadInst*> loads;
  for (llvm::Instruction& i : llvm::instructions(*m->getFunction("zex_stop_requested")))
    if (auto* l = llvm::dyn_cast<llvm::LoadInst>(&i)) loads.push_back(l);
  ASSERT_EQ(loads.size(), 3u);
  EXPECT_FALSE(loads[0]->isVolatile());
  EXPECT_EQ(loads[0]->getOrdering(), llvm::AtomicOrdering::Unordered);
  EXPECT_TRUE(loads[0]->hasMetadata(llvm::LLVMContext::MD_invariant_load));
  EXPECT_TRUE(loads[1]->isVolatile()) << "a volatile read of the report is not the claim word's";
  EXPECT_FALSE(loads[1]->hasMetadata(llvm::LLVMContext::MD_invariant_load));
  EXPECT_EQ(loads[2]->getOrdering(), llvm::AtomicOrdering::Acquire);
  EXPECT_EQ(lower_stop_check_loads(*m), 0u) << "nothing left to change";
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

// The memory checks' shape (after instcombine): the offset of &o[y * w + x] from the allocation's base,
// loaded from the by-value bounds struct, against usub.sat(size, 3). Versioned; not versioned when the
// index multiplies two ids (not affine) or when the kernel writes the struct (its loads could differ
// between work-items).
TEST(BoundsVersioning, MemoryChecksOverTwoDimensionsGetAFastCopy) {
  const std::string head =
      "%b = type { i64, i64 }\n"
      "declare spir_func i64 @_Z13get_global_idj(i32)\n"
      "declare spir_func void @zex_throw_site(i32, i64, i64)\n"
      "declare i64 @llvm.usub.sat.i64(i64, i64)\n";
  auto kernel = [](const std::string& name, const std::string& index, const std::string& extra) {
    return "define spir_kernel void @" + name + "(float addrspace(1)* %o, i32 %w, %b* byval(%b) %bounds) {\n"
           "entry:\n  %pb = getelementptr %b, %b* %bounds, i32 0, i32 0\n  %base = load i64, i64* %pb\n"
           "  %pe = getelementptr %b, %b* %bounds, i32 0, i32 1\n  %end = load i64, i64* %pe\n" + extra +
           "  %size = sub i64 %end, %base\n  %starts = call i64 @llvm.usub.sat.i64(i64 %size, i64 3)\n"
           "  %x = call spir_func i64 @_Z13get_global_idj(i32 0)\n"
           "  %y = call spir_func i64 @_Z13get_global_idj(i32 1)\n  %wl = zext i32 %w to i64\n" + index +
           "  %p = getelementptr float, float addrspace(1)* %o, i64 %i\n"
           "  %a = ptrtoint float addrspace(1)* %p to i64\n  %off = sub i64 %a, %base\n"
           "  %ok = icmp ult i64 %off, %starts\n  br i1 %ok, label %hot, label %cold\n"
           "hot:\n  store float 1.0, float addrspace(1)* %p\n  ret void\n"
           "cold:\n  call spir_func void @zex_throw_site(i32 7, i64 %off, i64 %size)\n  ret void\n}\n";
  };
  const std::string affine = "  %row = mul i64 %y, %wl\n  %i = add i64 %row, %x\n";
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx, head + kernel("k", affine, "") +
                             kernel("square", "  %row = mul i64 %y, %x\n  %i = add i64 %row, %x\n", "") +
                             kernel("written", affine, "  store i64 0, i64* %pe\n"));
  ASSERT_TRUE(m);
  EXPECT_EQ(version_bounds_checks(*m), 1u);
  EXPECT_EQ(verify(*m), "");
  EXPECT_EQ(m->getFunction("k")->getEntryBlock().getName(), "zex.version");
  EXPECT_NE(m->getFunction("square")->getEntryBlock().getName(), "zex.version");
  EXPECT_NE(m->getFunction("written")->getEntryBlock().getName(), "zex.version");
}

// Shapes from a review of the versioning: an intrinsic of a pointer (objectsize) is not uniform (its
// copy would need the pointer: it crashed); a byval load past the object's end is not uniform (the new
// entry block would read it for every work-item); an intrinsic that may be poison (ctlz of 0), used
// under a guard, is frozen in the predicate.
TEST(BoundsVersioning, ReviewedShapesStaySound) {
  const std::string head =
      "%b = type { i64, i64 }\n"
      "declare spir_func i64 @_Z13get_global_idj(i32)\n"
      "declare spir_func void @zex_report_exception(i32)\n"
      "declare i64 @llvm.objectsize.i64.p1i8(i8 addrspace(1)*, i1, i1, i1)\n"
      "declare i64 @llvm.ctlz.i64(i64, i1)\n";
  auto kernel = [](const std::string& name, const std::string& bound) {
    return "define spir_kernel void @" + name + "(i32 addrspace(1)* %o, i64 %n, %b* byval(%b) %bounds) {\n"
           "entry:\n  %g = call spir_func i64 @_Z13get_global_idj(i32 0)\n" + bound +
           "  %ok = icmp ult i64 %g, %lim\n  br i1 %ok, label %hot, label %cold\n"
           "hot:\n  %p = getelementptr i32, i32 addrspace(1)* %o, i64 %g\n"
           "  store i32 1, i32 addrspace(1)* %p\n  ret void\n"
           "cold:\n  call spir_func void @zex_report_exception(i32 1)\n  ret void\n}\n";
  };
  llvm::LLVMContext ctx;
  auto m = parse_ir(
      ctx, head +
               kernel("objsize", "  %o8 = bitcast i32 addrspace(1)* %o to i8 addrspace(1)*\n"
                                 "  %lim = call i64 @llvm.objectsize.i64.p1i8(i8 addrspace(1)* %o8, i1 false, i1 true, i1 false)\n") +
               kernel("past_end", "  %q = getelementptr %b, %b* %bounds, i32 1, i32 0\n  %lim = load i64, i64* %q\n") +
               kernel("ctlz", "  %lim = call i64 @llvm.ctlz.i64(i64 %n, i1 true)\n"));
  ASSERT_TRUE(m);
  EXPECT_EQ(version_bounds_checks(*m), 1u) << "ctlz only";
  EXPECT_EQ(verify(*m), "");
  EXPECT_NE(m->getFunction("objsize")->getEntryBlock().getName(), "zex.version");
  EXPECT_NE(m->getFunction("past_end")->getEntryBlock().getName(), "zex.version");
  llvm::BasicBlock& pre = m->getFunction("ctlz")->getEntryBlock();
  ASSERT_EQ(pre.getName(), "zex.version");
  bool frozen = false;
  for (llvm::Instruction& i : pre) frozen = frozen || llvm::isa<llvm::FreezeInst>(i);
  EXPECT_TRUE(frozen) << "the recomputed ctlz is frozen";
}

// Checks on a loop's counter (versioning.cl's `looped` after -O2): the counter is one more variable of
// the forms, over [0, the latch's exit count], so the kernel is versioned. Not versioned: a counter whose
// count depends on the id (a triangular loop), and a step that is not a constant.
TEST(BoundsVersioning, ChecksOnALoopCounterGetAFastCopy) {
  auto kernel = [](const std::string& name, const std::string& bound, const std::string& step) {
    return "define spir_kernel void @" + name + "(i32 addrspace(1)* %data, i64 %base, i64 %starts, i32 %n, i32 %s) {\n"
           "entry:\n  %g = call spir_func i64 @_Z13get_global_idj(i32 0)\n  %conv = trunc i64 %g to i32\n"
           "  %lim = " + bound + "\n  %go = icmp sgt i32 %lim, 0\n  br i1 %go, label %pre, label %done\n"
           "pre:\n  %row = shl nsw i32 %conv, 1\n  br label %body\n"
           "latch:\n  %inc = add nsw i32 %k, " + step + "\n  %more = icmp slt i32 %inc, %lim\n"
           "  br i1 %more, label %body, label %done\n"
           "body:\n  %k = phi i32 [ 0, %pre ], [ %inc, %latch ]\n  %add = add nsw i32 %k, %row\n"
           "  %idx = sext i32 %add to i64\n  %p = getelementptr inbounds i32, i32 addrspace(1)* %data, i64 %idx\n"
           "  %a = ptrtoint i32 addrspace(1)* %p to i64\n  %off = sub i64 %a, %base\n"
           "  %ok = icmp ult i64 %off, %starts\n  br i1 %ok, label %latch, label %cold\n"
           "cold:\n  call spir_func void @zex_report_exception(i32 1)\n  ret void\n"
           "done:\n  ret void\n}\n";
  };
  llvm::LLVMContext ctx;
  auto m = parse_ir(ctx, "declare spir_func i64 @_Z13get_global_idj(i32)\n"
                         "declare spir_func void @zex_report_exception(i32)\n" +
                             kernel("k", "add i32 %n, 0", "1") + kernel("triangular", "add i32 %conv, 1", "1") +
                             kernel("stepped", "add i32 %n, 0", "%s"));
  ASSERT_TRUE(m);
  EXPECT_EQ(version_bounds_checks(*m), 1u);
  EXPECT_EQ(verify(*m), "");
  EXPECT_EQ(m->getFunction("k")->getEntryBlock().getName(), "zex.version");
  EXPECT_NE(m->getFunction("triangular")->getEntryBlock().getName(), "zex.version");
  EXPECT_NE(m->getFunction("stepped")->getEntryBlock().getName(), "zex.version");
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

}  // namespace
}  // namespace zexcpu
