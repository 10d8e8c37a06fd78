// The compiled part of zex::Module: SPIR-V checks, validation and linking with SPIRV-Tools. Kept out
// of the headers so that users of zex do not compile against SPIRV-Tools.
#include <zex/module.hpp>

#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/linker.hpp>

#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace zex {
namespace detail {

namespace {

constexpr uint32_t kMagic = 0x07230203u;
constexpr uint32_t kMagicSwapped = 0x03022307u;

uint32_t bswap(uint32_t v) { return __builtin_bswap32(v); }

// The validator environment matching the module's declared SPIR-V version: llvm-spirv-15 emits 1.4,
// other compilers 1.0-1.6, and validating against an older version than declared rejects the module.
spv_target_env env_for(const std::vector<uint32_t>& words) {
  const uint32_t minor = words.size() > 1 ? (words[1] >> 8) & 0xff : 0;
  switch (minor) {
    case 0: return SPV_ENV_UNIVERSAL_1_0;
    case 1: return SPV_ENV_UNIVERSAL_1_1;
    case 2: return SPV_ENV_UNIVERSAL_1_2;
    case 3: return SPV_ENV_UNIVERSAL_1_3;
    case 4: return SPV_ENV_UNIVERSAL_1_4;
    case 5: return SPV_ENV_UNIVERSAL_1_5;
    default: return SPV_ENV_UNIVERSAL_1_6;
  }
}

std::string version_of(const std::vector<uint32_t>& words) {
  if (words.size() < 2) return "?";
  return std::to_string((words[1] >> 16) & 0xff) + "." + std::to_string((words[1] >> 8) & 0xff);
}

// Collects SPIRV-Tools' diagnostics so that they end up in the exception's message.
struct Diagnostics {
  std::string text;
  spvtools::MessageConsumer consumer() {
    return [this](spv_message_level_t level, const char*, const spv_position_t& pos, const char* msg) {
      const char* kind = level <= SPV_MSG_ERROR ? "error" : level == SPV_MSG_WARNING ? "warning" : "note";
      if (!text.empty()) text += "\n";
      text += std::string(kind) + " (word " + std::to_string(pos.index) + "): " + msg;
    };
  }
};

}  // namespace

std::vector<uint32_t> spirv_words(const void* data, size_t size_bytes) {
  if (!data || size_bytes == 0) throw std::invalid_argument("zex::Module: the SPIR-V binary is empty");
  if (size_bytes % 4 != 0)
    throw std::invalid_argument("zex::Module: the SPIR-V binary has " + std::to_string(size_bytes) +
                                " bytes, not a multiple of 4: it is truncated or not SPIR-V");
  std::vector<uint32_t> words(size_bytes / 4);
  std::memcpy(words.data(), data, size_bytes);
  if (words[0] == kMagicSwapped) {
    for (auto& w : words) w = bswap(w);
  } else if (words[0] != kMagic) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "zex::Module: not a SPIR-V binary (first word 0x%08x, expected the magic number "
                  "0x07230203); pass the bytes of a .spv file, not OpenCL C or LLVM bitcode",
                  words[0]);
    throw std::invalid_argument(buf);
  }
  return words;
}

void validate_spirv(const std::vector<uint32_t>& words, const char* what) {
  if (words.size() < 5 || words[0] != kMagic)
    throw std::invalid_argument(std::string("zex::Module: ") + what +
                                " is not SPIR-V (too short or without the magic number 0x07230203)");
  spvtools::SpirvTools tools(env_for(words));
  Diagnostics diag;
  tools.SetMessageConsumer(diag.consumer());
  if (!tools.Validate(words))
    throw std::invalid_argument(std::string("zex::Module: ") + what + " (SPIR-V " + version_of(words) +
                                ") is invalid; SPIRV-Tools says:\n" +
                                (diag.text.empty() ? std::string("(no diagnostic)") : diag.text));
}

std::vector<uint32_t> link_with_device_library(const std::vector<uint32_t>& user) {
  const std::vector<uint32_t>& lib = device_library();
  if (lib.empty())
    throw std::runtime_error(
        "zex::Module: this zex library was built without its device library (zex_device.spv); "
        "rebuild zex with the device/ directory");
  spvtools::Context ctx(env_for(user));
  Diagnostics diag;
  ctx.SetMessageConsumer(diag.consumer());
  spvtools::LinkerOptions opts;
  // Linked as a "library" so that exports survive: the device library exports a constant
  // (zex_abi_version) so that Intel's driver registers the module's constant surface with
  // zeMemGetAddressRange, which the host needs to read the report's strings (DESIGN.md §3.6).
  // llvm-spirv's own output already carries the Linkage capability and exported kernels, so the
  // result has the shape drivers are given anyway. Every import must still be resolved.
  opts.SetCreateLibrary(true);
  opts.SetAllowPartialLinkage(false);
  std::vector<uint32_t> linked;
  // The user module first: its memory model and addressing model win, and its entry points keep
  // their order.
  if (spvtools::Link(ctx, {user, lib}, &linked, opts) != SPV_SUCCESS)
    throw std::invalid_argument("zex::Module: linking the module with the zex device library failed; "
                                "SPIRV-Tools says:\n" +
                                (diag.text.empty() ? std::string("(no diagnostic)") : diag.text));
  return linked;
}

std::vector<std::string> spirv_kernel_names(const std::vector<uint32_t>& words) {
  std::vector<std::string> names;
  constexpr uint32_t kOpEntryPoint = 15, kExecutionModelKernel = 6, kOpFunction = 54;
  size_t i = 5;  // after the header
  while (i < words.size()) {
    const uint32_t count = words[i] >> 16, op = words[i] & 0xffff;
    if (count == 0 || i + count > words.size()) break;
    if (op == kOpFunction) break;  // entry points precede every function
    if (op == kOpEntryPoint && count >= 4 && words[i + 1] == kExecutionModelKernel) {
      const char* s = reinterpret_cast<const char*>(&words[i + 3]);
      const size_t max = (count - 3) * 4;
      names.emplace_back(s, strnlen(s, max));
    }
    i += count;
  }
  return names;
}

}  // namespace detail
}  // namespace zex
