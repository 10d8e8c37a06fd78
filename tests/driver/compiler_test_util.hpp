// IR-level tests of zex-cpu's compiler steps (driver/compiler/), each called directly on small inputs,
// one file per stage: compiler_input_test.cpp (the SPIR-V check, the translation cache, PoCL's options),
// compiler_group_test.cpp (the group builtins, run with LLVM's interpreter on known inputs),
// compiler_ir_test.cpp (leftover builtin variables, the stop check's loads, inlining, bounds versioning, defined phis, single
// exits) and compiler_module_test.cpp (kernel names, kernel metadata, program globals).
// The driver as a whole is tested through the loader (driver_conformance); this executable links the
// compiler's static library instead.
//
// This header is what they share: LLVM IR parsed in the compiler's target and pointer mode, the
// verifier's text, and the test kernels' SPIR-V.
#pragma once

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

constexpr const char* kSpirTarget =
    "target datalayout = \"e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024\"\n"
    "target triple = \"spir64-unknown-unknown\"\n";

inline std::unique_ptr<llvm::Module> parse_ir(llvm::LLVMContext& ctx, const std::string& body) {
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

inline std::string verify(const llvm::Module& m) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::verifyModule(m, &os);
  return os.str();
}

inline std::vector<uint8_t> words_to_bytes(const std::vector<uint32_t>& w) {
  std::vector<uint8_t> b(w.size() * 4);
  memcpy(b.data(), w.data(), b.size());
  return b;
}

inline std::vector<uint8_t> read_spirv(const std::string& name) {
  std::ifstream f(std::string(ZEX_TEST_KERNEL_DIR) + "/" + name + ".spv", std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

}  // namespace zexcpu
