// The steps of zex-cpu's compiler (driver/compiler/*.cpp), one per file, as compile_module and
// link_module (module_compile.cpp) chain them. docs/cpu-driver-compiler.md describes each step and why
// it is there; the IR-level tests (tests/driver/compiler_*_test.cpp) call them one by one.
#pragma once

#include "compiler.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace llvm {
class Constant;
class DataLayout;
class Function;
class Instruction;
class LLVMContext;
class Module;
}  // namespace llvm

namespace zexcpu {

// SPIR address spaces (as produced by llvm-spirv -r).
constexpr unsigned kGlobalAS = 1;
constexpr unsigned kConstantAS = 2;
constexpr unsigned kLocalAS = 3;

// --- spirv_check.cpp: the SPIR-V stream before the translator sees it --------------------------------

/// The facts about a module that zex-cpu needs before translating it.
struct SpirvFacts {
  uint32_t version = 0;                     ///< the header's version word
  std::map<uint32_t, uint32_t> spec_sizes;  ///< SpecId -> bytes of the constant's scalar type
};

/// Parses `input` (`size` bytes, a multiple of 4) with SPIRV-Tools' spvBinaryParse and checks what the
/// translator takes for granted (it asserts or crashes otherwise). False with `err` if it is malformed.
bool check_spirv(const uint8_t* input, size_t size, SpirvFacts* facts, std::string* err);

// --- translate.cpp: SPIR-V -> LLVM bitcode with libLLVMSPIRVLib, in a child process -----------------

/// The sanitizer whose runtime is in the process (its init entry point is exported, whichever library
/// was built with it), or None; looked up once. Under one the translation runs in process (its
/// allocator is not fork()-safe), and program_globals.cpp gives no address hints under TSan/MSan.
enum class Sanitizer { None, Address, HwAddress, Thread, Memory };
Sanitizer sanitizer_in_process();

/// Translates SPIR-V `bytes` with `constants` applied. True with `bitcode`, or false with `err`.
/// Runs the translator in a fork()ed child unless ZEX_CPU_TRANSLATE_IN_PROCESS=1 or under a sanitizer.
bool translate_isolated(const std::string& bytes, const SpecConstants& constants, std::string* bitcode,
                        std::string* err);

// --- ir_fixups.cpp: what PoCL 3.1 needs of the translator's IR ---------------------------------------

/// Loads of __spirv_BuiltIn* variables the translator left (spirv-link duplicates) -> OpenCL calls.
bool lower_leftover_builtins(llvm::Module& m, std::string* err);
/// A call of a builtin's generic-pointer overload (PU3AS4) -> its __global overload (PU3AS1).
bool use_global_overload(llvm::Module& m, llvm::Function* f);
/// Renames a builtin to PoCL's internal "_cl_" spelling (mem_fence & co). False if it cannot.
bool use_pocl_name(llvm::Module& m, llvm::Function* f);

// --- stop_loads.cpp: the early-stop check's reads as hoistable loads --------------------------------

/// In zex_stop_requested (zex's early-stop check, if `m` has it): the claim word's read (a volatile load,
/// or atomic_add(p, 0), the translator's reading of OpAtomicLoad) becomes an unordered invariant load,
/// and any other atomic_add(p, 0) an acquire atomic load. Returns how many it changed.
unsigned lower_stop_check_loads(llvm::Module& m);

// --- group_builtins.cpp (+ group_builtins.cl): sub-group and work-group functions --------------------

/// Links the definitions of the group builtins `m` calls from zex-cpu's OpenCL C library, and gives
/// work-group collectives `max_group` slots of __local scratch. False with `err` for a group builtin
/// the library does not have.
bool define_group_builtins(llvm::Module& m, size_t max_group, std::string* err);

// --- inline.cpp: every non-kernel function inlined into its kernels ----------------------------------

/// Inlines every call (keeping the zex throw entry points for one round, for bounds-check versioning
/// in between). False with `err` for recursion or an indirect call.
bool inline_everything(llvm::Module& m, std::string* err);

// --- bounds_versioning.cpp: work-group range versioning of bounds checks -----------------------------

/// Versions each kernel whose every throw site is behind recognised bounds checks. Returns how many.
unsigned version_bounds_checks(llvm::Module& m);

// --- single_exit.cpp: one exit block per kernel, for PoCL's barriers --------------------------------

/// Makes every `ret` and `unreachable` of `f` (a void function) a branch to one new return block. False if
/// `f` already had a single return and nothing else without successors.
bool give_one_exit(llvm::Function& f);
/// In a function with one exit (give_one_exit): a return from a block that can still reach a barrier,
/// whose other paths all meet the same barrier first, becomes "record that the work-item has left, arrive
/// at that barrier, then go to the exit". Returns how many returns moved.
unsigned leave_at_the_next_barrier(llvm::Function& f);
/// give_one_exit and leave_at_the_next_barrier for every kernel of `m` (after inlining). Returns how many
/// changed.
unsigned give_kernels_one_exit(llvm::Module& m);
/// A work-group barrier as PoCL sees it: barrier, work_group_barrier (any overload), and what calls them
/// after inlining (the group collectives of group_builtins.cl). A sub-group is one work-item here.
bool is_work_group_barrier(const llvm::Instruction& i);

// --- defined_phis.cpp: undefined phi inputs made zero, for PoCL's barriers ---------------------------

/// In every kernel of `m` that calls a work-group barrier: each `undef`/`poison` input of a phi becomes
/// zero (PoCL 3.1 mis-runs such phis live across a barrier). Returns how many inputs changed.
unsigned define_undefined_phi_inputs(llvm::Module& m);

// --- kernel_metadata.cpp: what Level Zero needs to know about kernels --------------------------------

/// Fills out->kernels (arguments, required sizes, source attributes) and out->imports.
void analyze(const llvm::Module& mod, CompiledProgram* out);
/// Functions and variables `m` uses but does not define, and that PoCL does not provide.
std::vector<std::string> find_imports(const llvm::Module& m);

// --- program_globals.cpp: storage for program-scope variables ----------------------------------------

/// Gives each program-scope variable of `mod` its storage in out->globals and points mutable ones at it
/// (or, for names in `shared`, at another module's storage).
ze_result_t assign_global_storage(llvm::Module& mod, const std::map<std::string, void*>& shared,
                                  CompiledProgram* out);
/// The bytes of a constant initializer (the host's layout); false if it holds addresses.
bool constant_bytes(const llvm::Constant* c, const llvm::DataLayout& dl, uint8_t* out, size_t size);

// --- kernel_names.cpp: the names PoCL knows kernels by ------------------------------------------------

/// The longest kernel name zex-cpu gives PoCL as it is (PoCL 3.1 aborts over 252 characters).
constexpr size_t kMaxPoclKernelName = 128;
/// True for a name PoCL 3.1 can take: 1..kMaxPoclKernelName characters of [A-Za-z0-9_].
bool pocl_takes_name(const std::string& name);
/// Sets each kernel's pocl_name: its name where pocl_takes_name, else a short internal one
/// (zexcpu_kernel_<n>, unique in `m`) that the kernel's function in `m` is renamed to.
void give_pocl_names(llvm::Module& m, std::vector<KernelInfo>* kernels);
/// `log` (PoCL's) with every internal kernel name of `kernels` replaced by the application's name.
std::string with_user_names(const std::string& log, const std::vector<KernelInfo>& kernels);

// --- pocl_build.cpp: SPIR bitcode -> built PoCL program ----------------------------------------------

/// Writes `mod` as SPIR bitcode and builds it with PoCL, retrying with PoCL's spellings of builtins it
/// reports missing. On success out->program is set. PoCL's log names kernels as out->kernels' names.
ze_result_t build_with_pocl(llvm::Module& mod, const char* build_flags, cl_context context, cl_device_id device,
                            CompiledProgram* out);
/// Only OpenCL options ("-cl-...") of Level Zero build flags.
std::string opencl_options(const char* flags);

}  // namespace zexcpu
