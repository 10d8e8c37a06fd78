// The compiled part of zex::Module: SPIR-V checks, validation and linking with SPIRV-Tools. Kept out
// of the headers so that users of zex do not compile against SPIRV-Tools.
#include <zex/detail/spirv.hpp>

#include "merge_throw_sites.hpp"

#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/linker.hpp>

#include <algorithm>
#include <cstring>
#include <map>
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

// One parsed instruction: where it is and which of its words are <id> operands.
struct ParsedInst {
  size_t offset;
  uint16_t num_words;
  uint16_t opcode;
  uint32_t result_id;
  std::vector<uint16_t> id_words;  // offsets (in the instruction) of SPV_OPERAND_TYPE_ID operands
  uint32_t first_operand = 0;      // the first operand word, when there is one
  uint32_t second_operand = 0;
  uint32_t third_operand = 0;
};

struct ParseState {
  const uint32_t* base;
  std::vector<ParsedInst> insts;
};

spv_result_t on_instruction(void* user, const spv_parsed_instruction_t* in) {
  auto* st = static_cast<ParseState*>(user);
  ParsedInst p{static_cast<size_t>(in->words - st->base), in->num_words, in->opcode, in->result_id, {}};
  for (uint16_t i = 0; i < in->num_operands; ++i) {
    const spv_parsed_operand_t& op = in->operands[i];
    if (op.type == SPV_OPERAND_TYPE_ID) p.id_words.push_back(op.offset);
  }
  if (in->num_words > 1) p.first_operand = in->words[1];
  if (in->num_words > 2) p.second_operand = in->words[2];
  if (in->num_words > 3) p.third_operand = in->words[3];
  st->insts.push_back(std::move(p));
  return SPV_SUCCESS;
}

// Both modules declare the work-item built-ins they use (e.g. __spirv_BuiltInGlobalInvocationId) as
// imported variables; nobody exports them, so the linker keeps one variable per module. The result
// is valid SPIR-V, but the LLVM SPIR-V translator recognizes a built-in variable by its name and
// turns the second one (renamed "....2" in LLVM) into an invalid internal declaration. So: one
// variable per (built-in, type), every use and entry-point interface redirected to it.
std::vector<uint32_t> merge_duplicate_builtins(const std::vector<uint32_t>& words, spv_target_env env) {
  constexpr uint16_t kOpName = 5, kOpEntryPoint = 15, kOpVariable = 59, kOpDecorate = 71,
                     kOpMemberDecorate = 72, kOpDecorateId = 332, kOpDecorateString = 5632;
  constexpr uint32_t kDecorationBuiltIn = 11;
  ParseState st{words.data(), {}};
  spv_context ctx = spvContextCreate(env);
  spv_diagnostic diag = nullptr;
  const spv_result_t r =
      spvBinaryParse(ctx, &st, words.data(), words.size(), nullptr, on_instruction, &diag);
  spvDiagnosticDestroy(diag);
  spvContextDestroy(ctx);
  if (r != SPV_SUCCESS) return words;  // the validator reports what is wrong

  std::map<uint32_t, uint32_t> builtin_of;  // variable id -> BuiltIn
  for (const auto& in : st.insts)
    if (in.opcode == kOpDecorate && in.num_words >= 4 && in.second_operand == kDecorationBuiltIn)
      builtin_of[in.first_operand] = in.third_operand;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> canonical;  // (built-in, type) -> first variable
  std::map<uint32_t, uint32_t> replace;                          // duplicate -> canonical
  for (const auto& in : st.insts) {
    if (in.opcode != kOpVariable) continue;
    auto b = builtin_of.find(in.result_id);
    if (b == builtin_of.end()) continue;
    auto key = std::make_pair(b->second, in.first_operand);  // first operand: the result type
    auto [it, fresh] = canonical.emplace(key, in.result_id);
    if (!fresh) replace[in.result_id] = it->second;
  }
  if (replace.empty()) return words;

  auto target = [&](uint32_t id) { return replace.count(id) != 0; };
  std::vector<uint32_t> out(words.begin(), words.begin() + 5);
  for (const auto& in : st.insts) {
    const uint32_t* w = words.data() + in.offset;
    switch (in.opcode) {
      case kOpVariable:
        if (target(in.result_id)) continue;
        break;
      case kOpName:
      case kOpDecorate:
      case kOpMemberDecorate:
      case kOpDecorateId:
      case kOpDecorateString:
        if (target(in.first_operand)) continue;
        break;
      case kOpEntryPoint: {
        // Execution model, function, name (a literal string), then the interface ids.
        size_t i = 3;
        while (i < in.num_words && (w[i] >> 24) != 0) ++i;
        ++i;  // the word holding the string's NUL
        std::vector<uint32_t> ep(w, w + std::min<size_t>(i, in.num_words));
        for (size_t k = i; k < in.num_words; ++k) {
          uint32_t id = target(w[k]) ? replace[w[k]] : w[k];
          if (std::find(ep.begin() + static_cast<std::ptrdiff_t>(i), ep.end(), id) == ep.end()) ep.push_back(id);
        }
        ep[0] = (static_cast<uint32_t>(ep.size()) << 16) | kOpEntryPoint;
        out.insert(out.end(), ep.begin(), ep.end());
        continue;
      }
      default:
        break;
    }
    const size_t at = out.size();
    out.insert(out.end(), w, w + in.num_words);
    for (uint16_t off : in.id_words)
      if (target(out[at + off])) out[at + off] = replace[out[at + off]];
  }
  return out;
}

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
  // A module of SPIR-V 1.0-1.3 gets the library built for SPIR-V <= 1.3, a newer one the 1.4 build.
  // SPIRV-Tools' linker refuses modules of different versions, so both are declared at the higher of
  // the two versions: raising a module's declared version keeps it valid, and the linked module then
  // asks the driver for no more than it needs.
  const uint32_t user_version = user.size() > 1 ? user[1] : 0;
  const bool old = user_version <= 0x00010300u;
  const std::vector<uint32_t>& library = old && !device_library_1_3().empty() ? device_library_1_3() : device_library();
  if (library.empty())
    throw std::runtime_error(
        "zex::Module: this zex library was built without its device library (zex_device.spv); "
        "rebuild zex with the device/ directory");
  const uint32_t version = std::max(user_version, library.size() > 1 ? library[1] : 0u);
  // One shared throw block per kernel instead of one per ZEX_THROW site: Intel's compiler inlines the
  // whole cold path at every site and never merges identical cold blocks, so a 17-site kernel grew
  // 8.6x at level 1; merged it is 1.48x, with the same report (docs/benchmarks-igc.md).
  std::vector<uint32_t> mine, lib = library;
  try {
    mine = zex_mts::merge_throw_sites(user);
  } catch (const std::invalid_argument&) {
    mine = user;  // validated already; the pass only declines shapes it does not know
  }
  mine[1] = lib[1] = version;
  spvtools::Context ctx(env_for(mine));
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
  if (spvtools::Link(ctx, {mine, lib}, &linked, opts) != SPV_SUCCESS)
    throw std::invalid_argument("zex::Module: linking the module with the zex device library failed; "
                                "SPIRV-Tools says:\n" +
                                (diag.text.empty() ? std::string("(no diagnostic)") : diag.text));
  linked = merge_duplicate_builtins(linked, env_for(linked));
  // What zex hands the driver must be valid too; an error here is zex's bug, not the user's.
  validate_spirv(linked, "the module linked with the zex device library");
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
