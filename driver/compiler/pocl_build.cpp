// The last step of every build (docs/cpu-driver-compiler.md, step 8): the module as SPIR bitcode (LLVM
// 15, typed pointers, spir64) -> clCreateProgramWithBinary -> clBuildProgram on PoCL. A builtin PoCL
// reports missing is retried under the spelling PoCL 3.1 has (ir_fixups.cpp).
#include "compiler/parts.hpp"

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/Function.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <sstream>

namespace zexcpu {

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

ze_result_t build_with_pocl(llvm::Module& mod, const char* build_flags, cl_context context, cl_device_id device,
                            CompiledProgram* out) {
  for (const char* n : {"_Z9mem_fencej", "_Z14read_mem_fencej", "_Z15write_mem_fencej"})
    if (llvm::Function* f = mod.getFunction(n)) use_pocl_name(mod, f);

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
        } else if (sym.find("_cl_") == std::string::npos && use_pocl_name(mod, f)) {
          renamed = true;
        }
      }
    }
    if (renamed) continue;
    out->log += "PoCL failed to build the program (clBuildProgram returned " + std::to_string(err) + ")";
    if (!pocl_log.empty()) out->log += ":\n" + with_user_names(pocl_log, out->kernels);
    return ZE_RESULT_ERROR_MODULE_BUILD_FAILURE;
  }
}

}  // namespace zexcpu
