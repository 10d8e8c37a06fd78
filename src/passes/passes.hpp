// zex's SPIR-V passes, each in its own file of src/passes/, all on the parsed module of ir.hpp. The
// order zex::Module runs them in, and what each one keeps, is in docs/spirv-passes.md.
#pragma once

#include "ir.hpp"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zex {
namespace passes {

/// The functions the module imports (OpDecorate LinkageAttributes "name" Import): id -> import name.
std::map<uint32_t, std::string> imported_functions(const Module& m);

/// Gives every function one shared cold region for its zex throw sites (merge_throw_sites.cpp).
/// Returns true if it changed the module; a shape it does not know is left as it is.
bool merge_throw_sites(Module& m);

/// One variable per (built-in, type) after linking, every use redirected to it (builtins.cpp).
/// Returns true if it changed the module.
bool merge_duplicate_builtins(Module& m);

/// The names of the module's kernels (OpEntryPoint Kernel), in order (entry_points.cpp).
std::vector<std::string> kernel_names(const Module& m);

/// Removes what the validator is not asked to check (validate.cpp): every OpExtInst of a
/// debug-information set (OpenCL.DebugInfo.100, NonSemantic.*) and its OpExtInstImport. Lines,
/// names and OpString stay. Returns the number of instructions removed.
size_t strip_debug_info(Module& m);

/// Word-level conveniences: parse, run, serialize. parse() errors are std::invalid_argument.
std::vector<uint32_t> merge_throw_sites(const std::vector<uint32_t>& words);
std::vector<uint32_t> merge_duplicate_builtins(const std::vector<uint32_t>& words);

}  // namespace passes
}  // namespace zex
