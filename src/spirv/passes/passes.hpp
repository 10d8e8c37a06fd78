// zex's SPIR-V passes, each in its own file of src/spirv/passes/, all on one IRContext (context.hpp): a
// pass takes the context and returns whether it changed the module (Status). The Module& forms are for
// callers without a context (tests, tools): each runs the pass on a context of its own. The order
// zex::Module runs them in, and what each one keeps, is in docs/spirv-passes.md.
#pragma once

#include "spirv/context.hpp"
#include "spirv/ir.hpp"

#include <zex/detail/sites.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zex {
namespace passes {

/// The functions the module imports (OpDecorate LinkageAttributes "name" Import): id -> import name.
std::map<uint32_t, std::string> imported_functions(const Module& m);

/// Gives every function one shared cold region for its zex throw sites (merge_throw_sites.cpp).
/// Returns Status::Changed if it changed the module; a shape it does not know is left as it is.
Status merge_throw_sites(IRContext& ctx);
inline bool merge_throw_sites(Module& m) {
  return run_on_module(m, [&](IRContext& c) { return merge_throw_sites(c); });
}

/// A throw ends the work-item wherever it happens (functions that may throw return a flag their callers
/// check), and every identified throw path gets an id: its zex_throw becomes zex_throw_site, and `sites`
/// (if given) receives the table, id k at [k - 1] (throw_paths.cpp). Returns Status::Changed if it changed the module.
Status number_throw_paths(IRContext& ctx, detail::SiteTable* sites);
inline bool number_throw_paths(Module& m, detail::SiteTable* sites) {
  return run_on_module(m, [&](IRContext& c) { return number_throw_paths(c, sites); });
}

/// A copy of every kernel that another function calls (OpenCL C allows it), as an ordinary function
/// the calls go to, so that number_throw_paths can make it return a flag (kernel_calls.cpp). Writes
/// the module with the copies to `out` and returns true; false (`out` untouched) if no kernel is called.
/// `names` receives each copy's id -> the kernel's OpName (the copy's own is `__zex_call_<name>`).
bool clone_called_kernels(const Module& in, Module* out, std::map<uint32_t, std::string>* names);

/// In a kernel where a work-group barrier can follow a throw, the thrower does not return: it sets a
/// private flag and runs on, its memory accesses redirected to scratch variables and its calls and
/// zex calls skipped, so that it still reaches every barrier (barrier_throws.cpp). Run after
/// number_throw_paths. Returns Status::Changed if it changed the module. A shape it does not know throws
/// std::invalid_argument and leaves the module as it was (it writes the module only at its end).
Status converge_throws_at_barriers(IRContext& ctx);
inline bool converge_throws_at_barriers(Module& m) {
  return run_on_module(m, [&](IRContext& c) { return converge_throws_at_barriers(c); });
}

/// Early stop, on a linked module (stop_on_throw.cpp): every kernel whose last parameter is a
/// zex_state_t gets a new entry block that calls the library's zex_stop_requested and returns if it
/// says so (the uniform question in kernels with group instructions). Returns Status::Changed if it
/// changed the module. @throws std::invalid_argument (module unchanged) if the module has no
/// zex_stop_requested of the library's signature.
Status add_stop_checks(IRContext& ctx);
inline bool add_stop_checks(Module& m) {
  return run_on_module(m, [&](IRContext& c) { return add_stop_checks(c); });
}

/// What zex's memory checks (issue 27) can check in one function: its accesses to global memory (loads,
/// stores, atomics) by whether their pointer traces back to a kernel's CrossWorkgroup pointer parameter
/// (memory_accesses.cpp says how), and why not.
struct KernelMemoryAccesses {
  std::string name;       // the function's OpName ("" without one)
  uint32_t function = 0;  // its id
  std::vector<uint32_t> checked_params;  // the parameters (indices) whose bounds the checks need
  size_t checked = 0;       // traced to a pointer parameter of the kernel
  size_t loaded = 0;        // the pointer was loaded from memory
  size_t from_integer = 0;  // made from an integer
  size_t helper = 0;        // a parameter of a function that is not a kernel
  size_t other = 0;         // any other derivation (inputs from different parameters, unknown shapes)
  size_t local = 0;         // Workgroup (__local) memory (analyze_memory_accesses does not split it; add_memory_checks checks static __local arrays)
};
struct MemoryAccessReport {
  std::vector<KernelMemoryAccesses> kernels;  // entry points, in module order
  std::vector<KernelMemoryAccesses> helpers;  // the other defined functions
};
/// Reads the module, changes nothing (memory_accesses.cpp).
MemoryAccessReport analyze_memory_accesses(IRContext& ctx);

/// What a kernel takes after add_memory_checks: its own `user_params` parameters, then per parameter
/// index in `bounded` (ascending) two `ulong`s, the base and the end of the allocation the pointer points
/// into, then its zex_state_t (added where it had none: `state_added`). For the `__local` parameters among
/// them (`local`, ascending) the two are relative to the group's local pointer: the launch passes 0 and
/// the bytes it gives the parameter.
struct KernelMemoryChecks {
  std::string name;
  uint32_t user_params = 0;
  std::vector<uint32_t> bounded;
  bool state_added = false;
  std::vector<uint32_t> local;
};
/// The module's global accesses (instructions, every defined function) by what add_memory_checks did
/// with them: checked, or left unchecked and why.
struct MemoryCheckCounts {
  size_t checked = 0;       // through a kernel's pointer parameter (__local ones too), or into a static __local array
  size_t merged = 0;        // of those, covered by an earlier check of the block: the same pointer, or a group's
  size_t loaded = 0;        // unchecked: the pointer was loaded from memory
  size_t from_integer = 0;  // unchecked: made from an integer
  size_t untraced = 0;      // unchecked: any other derivation (several parameters, a helper's caller unknown)
  size_t local = 0;         // __local accesses not checked: traced to no __local parameter or array of known size
};
/// What add_memory_checks adds: bounds checks (`memory`), and the kernels' own assertions (`asserts`:
/// every call of an imported __assert_fail or __devicelib_assert_fail becomes a zex_throw of
/// "AssertionError"; a module that asks for neither check, only for its asserts, keeps every kernel that
/// reaches no assert as it was).
struct CheckOptions {
  bool memory = true;
  bool asserts = true;
};
/// The imports add_memory_checks turns into throws (CheckOptions::asserts).
bool imports_assert(IRContext& ctx);

/// Bounds checks before every global access that traces to a kernel's pointer parameter, each failing
/// into a zex_throw of "OutOfBoundsAccess" (memory_checks.cpp); every kernel gets a zex_state_t last
/// (with `options.memory`; else only those that reach an assert). `kernels` (if given) receives each
/// kernel's parameters, in module order; `counts` (if given) what was checked. Returns Status::Changed if
/// it changed the module.
/// @throws std::invalid_argument (module unchanged) for a shape it does not handle.
Status add_memory_checks(IRContext& ctx, std::vector<KernelMemoryChecks>* kernels, MemoryCheckCounts* counts = nullptr,
                         const CheckOptions& options = {});

/// One variable per (built-in, type) after linking, every use redirected to it (builtins.cpp).
/// Returns Status::Changed if it changed the module.
Status merge_duplicate_builtins(IRContext& ctx);
inline bool merge_duplicate_builtins(Module& m) {
  return run_on_module(m, [&](IRContext& c) { return merge_duplicate_builtins(c); });
}

/// Struct-wraps the string constants whose address reaches a zex_* call (strings.cpp): each becomes a
/// new `{ [N x i8] }` variable named __zex_str_<n>, its zex uses re-pointed at member 0, the old
/// variable kept for its other users (never shared with printf). Returns Status::Changed if it changed the module.
Status wrap_zex_strings(IRContext& ctx);
inline bool wrap_zex_strings(Module& m) {
  return run_on_module(m, [&](IRContext& c) { return wrap_zex_strings(c); });
}

/// A __zex_str_<n> variable and its bytes (the whole array, NUL included).
struct ZexString {
  std::string name;
  std::string bytes;
};
/// The module's __zex_str_* variables (those wrap_zex_strings made), in name order of the module.
std::vector<ZexString> zex_strings(const Module& m);

/// Adds to every OpEntryPoint the module-scope variables its call tree uses and it does not list,
/// those reached through constants and initializers included, as SPIRV-Tools' validator counts them
/// (interfaces.cpp; llvm-spirv-15 omits them): every such variable in SPIR-V 1.4+, the Input/Output
/// ones before (the device library's built-ins after the link). Returns Status::Changed if it changed the module.
Status complete_entry_point_interfaces(IRContext& ctx);
inline bool complete_entry_point_interfaces(Module& m) {
  return run_on_module(m, [&](IRContext& c) { return complete_entry_point_interfaces(c); });
}

/// The names of the module's kernels (OpEntryPoint Kernel), in order (entry_points.cpp).
std::vector<std::string> kernel_names(const Module& m);

/// The kernels whose last parameter is not a zex_state_t (a by-value struct of three 64-bit
/// integers), which zex::Stream cannot launch (entry_points.cpp).
std::vector<std::string> kernels_without_state(const Module& m);

/// Each kernel's parameters as <zex/detail/param_kind.hpp> bytes, the trailing zex_state_t included,
/// by kernel name (entry_points.cpp).
std::map<std::string, std::vector<uint8_t>> kernel_param_kinds(const Module& m);

/// Puts every function's blocks in dominance order (block_order.cpp): a function whose blocks do not
/// all follow their immediate dominators gets a reverse post-order of its CFG, the entry first and the
/// unreachable blocks last; other functions are left as they are. Returns Status::Changed if it changed the module.
Status order_blocks(IRContext& ctx);
inline bool order_blocks(Module& m) {
  return run_on_module(m, [&](IRContext& c) { return order_blocks(c); });
}

/// Before the link: each decoration (with its literals) that the user module applies to many ids the
/// link does not look at becomes one OpDecorationGroup and OpGroupDecorate, so that SPIRV-Tools'
/// linker, quadratic in decorations, sees a few (decoration_groups.cpp). Returns Status::Changed if it changed
/// the module.
Status group_decorations(IRContext& ctx);
inline bool group_decorations(Module& m) {
  return run_on_module(m, [&](IRContext& c) { return group_decorations(c); });
}
/// After the link: every decoration group (but those OpGroupMemberDecorate uses) written out as one
/// OpDecorate per id again. Returns Status::Changed if it changed the module.
Status expand_decoration_groups(IRContext& ctx);
inline bool expand_decoration_groups(Module& m) {
  return run_on_module(m, [&](IRContext& c) { return expand_decoration_groups(c); });
}

/// Removes what the validator is not asked to check (validate.cpp): every OpExtInst of a
/// debug-information set (OpenCL.DebugInfo.100, NonSemantic.*) and its OpExtInstImport. Lines,
/// names and OpString stay. Returns the number of instructions removed.
size_t strip_debug_info(Module& m);

/// Replaces the string of every OpName by one unique to its target ("n<id>"), so that SPIRV-Tools'
/// validator names ids in linear time (validate.cpp). Returns the number of names replaced.
size_t unique_names(Module& m);

/// The module as the validator is shown it (validate.cpp), without changing `m`: no debug-information
/// instructions (as strip_debug_info), and unless `own_names` every OpName unique to its id (as
/// unique_names).
std::vector<uint32_t> validator_words(const Module& m, bool own_names);

/// Links zex's device library into `user` (link.cpp): the library's ids above the user's, each user
/// import of a library export replaced by it, equal types shared, imported built-ins left to the
/// driver. Returns Status::Changed. A shape it does not handle throws std::invalid_argument and leaves `user` as
/// it was (zex then links with SPIRV-Tools' linker).
Status link_device_library(IRContext& user, const Module& library);
inline bool link_device_library(Module& user, const Module& library) {
  return run_on_module(user, [&](IRContext& c) { return link_device_library(c, library); });
}

/// Runs `pass` (bool(Module&)) on the parsed words: the new words if it changed them, else `words`.
/// @throws std::invalid_argument if the words do not parse
template <class Pass>
std::vector<uint32_t> run_on_words(const std::vector<uint32_t>& words, Pass pass) {
  Module m = parse(words);
  return pass(m) ? to_words(m) : words;
}

/// Word-level conveniences (run_on_words).
inline std::vector<uint32_t> merge_throw_sites(const std::vector<uint32_t>& words) {
  return run_on_words(words, [](Module& m) { return merge_throw_sites(m); });
}
inline std::vector<uint32_t> wrap_zex_strings(const std::vector<uint32_t>& words) {
  return run_on_words(words, [](Module& m) { return wrap_zex_strings(m); });
}
inline std::vector<uint32_t> complete_entry_point_interfaces(const std::vector<uint32_t>& words) {
  return run_on_words(words, [](Module& m) { return complete_entry_point_interfaces(m); });
}
inline std::vector<uint32_t> order_blocks(const std::vector<uint32_t>& words) {
  return run_on_words(words, [](Module& m) { return order_blocks(m); });
}
inline std::vector<uint32_t> merge_duplicate_builtins(const std::vector<uint32_t>& words) {
  return run_on_words(words, [](Module& m) { return merge_duplicate_builtins(m); });
}

}  // namespace passes
}  // namespace zex
