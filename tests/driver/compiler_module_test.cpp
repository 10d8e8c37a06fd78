// zex-cpu's module-level steps: kernel names (short internal ones for PoCL), kernel metadata (argument
// kinds and sizes) and program globals (module storage, segments as IGC picks them).
#include "compiler_test_util.hpp"

namespace zexcpu {
namespace {

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

}  // namespace
}  // namespace zexcpu
