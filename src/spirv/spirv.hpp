// The SPIR-V layer's interface (src/spirv/, target zex_spirv): SPIR-V checks, the pass layer,
// validation and linking with SPIRV-Tools, and the embedded device library. What the runtime's
// zex::Module (src/runtime/module.cpp) and zex-spirv (tools/) call; private to the project, so that
// includers of <zex/zex.hpp> never see SPIRV-Tools.
#pragma once

#include <zex/detail/sites.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace zex {
namespace detail {

/// Seconds per step of link_module, in order (`zex-spirv link --times`).
using LinkSteps = std::vector<std::pair<std::string, double>>;

/// The module zex hands the driver and the table of the throw sites numbered in it.
struct LinkedModule {
  std::vector<uint32_t> words;
  SiteTable sites;
};

/// What link_module's memory checks (issue 27; src/spirv/passes/memory_checks.cpp) made of a module: per
/// kernel, its own parameter count and the pointer parameters whose allocation bounds it now takes (one
/// hidden by-value struct after its own parameters, two `ulong`s each, base and end, in this order; then
/// its zex_state_t),
/// and the module's global accesses checked and left unchecked, by reason.
struct MemoryCheckedKernel {
  std::string name;
  uint32_t user_params = 0;
  std::vector<uint32_t> bounded;
  std::vector<uint32_t> local;  // of `bounded`, the __local parameters: (0, the bytes the launch gives)
};
struct MemoryCheckInfo {
  std::vector<MemoryCheckedKernel> kernels;
  size_t checked = 0, loaded = 0, from_integer = 0, untraced = 0, local = 0;
  size_t merged = 0;  // checked accesses covered by an earlier check of the block (same pointer, or one group)
};

/// The words of a SPIR-V binary given as bytes (either endianness).
/// @throws std::invalid_argument if the size is not a multiple of 4 or the magic number is wrong
std::vector<uint32_t> spirv_words(const void* data, size_t size_bytes);
/// Runs SPIRV-Tools' validator (the environment of the module's SPIR-V version) on the module with its
/// debug information (OpenCL.DebugInfo.100, NonSemantic.*) set aside; docs/spirv-passes.md.
/// @throws std::invalid_argument whose message holds the validator's diagnostic; `what` names the module
void validate_spirv(const std::vector<uint32_t>& words, const char* what);
/// What zex::Module hands the driver, from the user module, which it validates first: the string wrapping (unless
/// `wrap_strings` is false: only for measurements), the throw-site merge (unless `merge_throw_sites` is
/// false), the link with the device library (user module first; `library` replaces the embedded one
/// when given), one variable per built-in, validation.
/// @throws std::invalid_argument with the linker's or validator's diagnostic (e.g. an import nobody exports)
std::vector<uint32_t> link_with_device_library(const std::vector<uint32_t>& user,
                                               const std::vector<uint32_t>* library = nullptr,
                                               bool merge_throw_sites = true, bool wrap_strings = true);
/// link_with_device_library, and the table of the throw sites the pass numbered in the words it
/// returns (empty when the module has none or the numbering had to be dropped).
/// With `memory` non-null the module gets zex's memory checks first (every attempt; a module the pass
/// cannot instrument is refused, never linked without them) and *memory says what they are.
LinkedModule link_module(const std::vector<uint32_t>& user, const std::vector<uint32_t>* library = nullptr,
                         bool merge_throw_sites = true, bool wrap_strings = true, LinkSteps* steps = nullptr,
                         MemoryCheckInfo* memory = nullptr);
/// The names of the module's kernels (OpEntryPoint Kernel).
/// @throws std::invalid_argument if the words are not a well-formed SPIR-V binary
std::vector<std::string> spirv_kernel_names(const std::vector<uint32_t>& words);
/// The kernels whose last parameter is not a zex_state_t (zex::Stream cannot launch them).
std::vector<std::string> spirv_kernels_without_state(const std::vector<uint32_t>& words);
/// Each kernel's parameter kinds (<zex/detail/param_kind.hpp>), the trailing zex_state_t included.
std::map<std::string, std::vector<uint8_t>> spirv_kernel_param_kinds(const std::vector<uint32_t>& words);
/// The strings zex's pass wrapped (docs/spirv-passes.md): (variable name "__zex_str_<n>", its bytes),
/// for zeModuleGetGlobalPointer after the module is built. Empty for a module the pass never saw.
/// @throws std::invalid_argument if the words are not a well-formed SPIR-V binary
std::vector<std::pair<std::string, std::string>> spirv_zex_strings(const std::vector<uint32_t>& words);

/// Everything zex::Module reads from its linked module, from one parse of it: the kernel names, the
/// kernels without a trailing zex_state_t, each kernel's parameter kinds, and the named zex strings.
struct ModuleFacts {
  std::vector<std::string> kernel_names;
  std::vector<std::string> kernels_without_state;
  std::map<std::string, std::vector<uint8_t>> param_kinds;
  std::vector<std::pair<std::string, std::string>> zex_strings;
};
/// @throws std::invalid_argument if the words are not a well-formed SPIR-V binary
ModuleFacts spirv_module_facts(const std::vector<uint32_t>& words);
/// The linked module `words` as zex builds it for launches with stop_on_throw: every kernel that takes a
/// zex_state_t first asks the device library whether to stop (passes/stop_on_throw.cpp).
/// @throws std::invalid_argument if the words do not parse or the module lacks the library's
///         zex_stop_requested
std::vector<uint32_t> spirv_with_stop_checks(const std::vector<uint32_t>& words);
/// The embedded device library (SPIR-V 1.4 words); empty if zex was built without it.
const std::vector<uint32_t>& device_library();
/// The same library as SPIR-V 1.3, for user modules of SPIR-V 1.0-1.3.
const std::vector<uint32_t>& device_library_1_3();
/// zex::Graph's own kernels (device/zex_graph.cl: the epilogue of an execution), a module of their own.
const std::vector<uint32_t>& graph_kernels();

}  // namespace detail
}  // namespace zex
