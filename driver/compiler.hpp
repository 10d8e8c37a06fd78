// The SPIR-V -> PoCL compiler of zex-cpu: SPIR-V (with specialization constants) -> LLVM IR with the
// LLVM SPIR-V translator -> every non-kernel function inlined -> SPIR bitcode (LLVM 15, typed pointers,
// spir64) -> a built PoCL program. Also extracts what the Level Zero side needs to know about each
// kernel (argument kinds and sizes, required group size) from the IR, because PoCL's own argument
// info for programs created from binaries is incomplete.
#pragma once

#include <CL/cl.h>
#include <level_zero/ze_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace zexcpu {

/// How a kernel argument is passed.
enum class ArgKind {
  Pointer,      ///< __global/__constant/generic pointer: an SVM (USM) pointer, 8 bytes
  Local,        ///< __local pointer: set with (size in bytes, nullptr)
  Value,        ///< by-value scalar, vector or struct (including byval struct pointers)
  Unsupported,  ///< images, samplers, pipes, queues: zex-cpu cannot pass them
};

struct ArgInfo {
  ArgKind kind = ArgKind::Value;
  size_t size = 0;        ///< bytes the application passes (pointer: 8; value: DataLayout alloc size)
  std::string type_name;  ///< LLVM type, for error messages
};

struct KernelInfo {
  std::string name;       ///< the application's name, for everything Level Zero answers
  std::string pocl_name;  ///< the name PoCL knows it by: `name`, or a short internal one (compiler/kernel_names.cpp)
  std::vector<ArgInfo> args;
  uint32_t reqd_group_size[3] = {0, 0, 0};  ///< all 0 when the kernel does not require one
  uint32_t reqd_subgroup_size = 0;          ///< 0 when not required
  std::string attributes;  ///< source attributes, space-separated: "reqd_work_group_size(8,2,1)" ...
};

/// Where a program-scope variable lives, as NEO places it (IGC 1.0.12504's zebin sections): mutable
/// variables in `.data.global`, constants whose initializer is an array of i8 (string literals,
/// `__func__`, any `__constant char[]` or uchar table) in `.data.const.string`, every other constant in
/// `.data.const`. NEO registers the first and the last as USM (zeMemGetAddressRange finds them); a
/// kernel's reference to the strings segment is a host pointer that it does not find.
enum class Segment : uint8_t { Constants, Globals, Strings };

/// A program-scope variable of the module (a SPIR-V CrossWorkgroup/UniformConstant global) with storage
/// that zex-cpu owns. PoCL 3.1 has no program-scope variables of its own: each kernel object (one per
/// kernel and group size) would get a private copy, and its address would be one no allocation knows.
/// So every variable and constant is moved to `storage`, inside its segment's block (StorageBlock), and
/// the kernels address it there: `storage` is the very address a kernel sees, as on NEO.
struct GlobalInfo {
  std::string name;
  size_t size = 0;
  bool constant = false;
  bool named = false;  ///< visible by name to zeModuleGetGlobalPointer (every named variable, as on NEO)
  Segment segment = Segment::Constants;
  std::shared_ptr<uint8_t> storage;  ///< `size` initialized bytes in a block (an aliasing pointer that owns it)
};

/// One segment's storage for a module: 64-byte aligned, the variables of that segment at their alignment.
struct StorageBlock {
  std::shared_ptr<uint8_t> mem;
  size_t size = 0;
  Segment segment = Segment::Constants;
};

/// The outcome of one module build.
struct CompiledProgram {
  cl_program program = nullptr;  ///< owned by the caller on success (clReleaseProgram)
  std::vector<KernelInfo> kernels;
  std::vector<GlobalInfo> globals;
  std::vector<StorageBlock> blocks;  ///< the storage of `globals`, one block per segment used
  std::vector<std::string> imports;  ///< functions/variables used but not defined: needs zeModuleDynamicLink
  std::string native_binary;  ///< zex-cpu's native format: a tag + the module's SPIR bitcode before inlining
  std::string log;            ///< build log: notes and warnings on success, the reason on failure
};

/// Specialization constants as given by ze_module_constants_t (values read with each constant's
/// own size, which comes from the SPIR-V module).
struct SpecConstants {
  uint32_t count = 0;
  const uint32_t* ids = nullptr;
  const void* const* values = nullptr;
};

/// Builds a module for `device` of `context`. A module with imports (see CompiledProgram::imports) is
/// analysed but not built (program stays null) until link_module.
/// - format ZE_MODULE_FORMAT_IL_SPIRV: `input` is SPIR-V.
/// - format ZE_MODULE_FORMAT_NATIVE: `input` is what zeModuleGetNativeBinary returned earlier.
/// `build_flags` may be null; OpenCL options in it ("-cl-...") are passed to PoCL, others are ignored.
/// Thread-safe (every build has its own LLVMContext).
/// Errors (out->log says why): ZE_RESULT_ERROR_MODULE_BUILD_FAILURE (invalid SPIR-V: bad magic, size
/// not a multiple of 4, truncated or malformed stream, translator error, recursion or indirect calls that
/// cannot be inlined, a specialization-constant id the module does not declare, PoCL build error),
/// ZE_RESULT_ERROR_INVALID_NATIVE_BINARY (a native binary zex-cpu did not produce),
/// ZE_RESULT_ERROR_INVALID_NULL_POINTER (constants with null id/value arrays or a null value),
/// ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY.
ze_result_t compile_module(ze_module_format_t format, const uint8_t* input, size_t size,
                           const SpecConstants& constants, const char* build_flags,
                           cl_context context, cl_device_id device, CompiledProgram* out);

/// Another module offered to link_module: its native binary and its program-scope variables.
struct LinkInput {
  const std::string* native = nullptr;
  std::vector<const GlobalInfo*> globals;
};

/// zeModuleDynamicLink for one module with imports: links the definitions it imports from `others`
/// (functions are copied in; imported mutable variables resolve to the exporting module's storage),
/// then builds it as compile_module does. Thread-safe.
/// Errors: ZE_RESULT_ERROR_MODULE_LINK_FAILURE (unresolved or conflicting symbols, or a build failure;
/// out->log says which), ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY.
ze_result_t link_module(const std::string& native, const std::vector<LinkInput>& others, const char* build_flags,
                        cl_context context, cl_device_id device, CompiledProgram* out);

}  // namespace zexcpu
