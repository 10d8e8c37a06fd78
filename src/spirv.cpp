// The compiled part of zex::Module: SPIR-V checks, validation and linking with SPIRV-Tools. Kept out
// of the headers so that users of zex do not compile against SPIRV-Tools.
#include <zex/detail/spirv.hpp>
#include <zex/error.hpp>

#include "passes/passes.hpp"

#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/linker.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace zex {
namespace detail {

namespace {

constexpr uint32_t kMagic = 0x07230203u;
constexpr uint32_t kMagicSwapped = 0x03022307u;

uint32_t bswap(uint32_t v) { return __builtin_bswap32(v); }

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

// The module the validator is shown: its blocks in dominance order (passes::order_blocks: llvm-spirv-15
// writes some -O2 loops' exits before their bodies, which Intel's driver reads and zex::Module hands on
// reordered), in SPIR-V 1.4+ its entry-point interfaces completed (passes::complete_entry_point_interfaces:
// what llvm-spirv-15 omits, and zex::Module adds before handing the module on), the debug information
// set aside (passes::strip_debug_info), and, unless `own_names`, every OpName unique to its id
// (passes::unique_names: the validator's naming is quadratic in repeated names); docs/spirv-passes.md
// says why. A binary that does not parse goes to the validator as it is, for its diagnostic.
std::vector<uint32_t> validator_view(const std::vector<uint32_t>& words, bool own_names) {
  try {
    return passes::run_on_words(words, [own_names](passes::Module& m) {
      const bool ordered = passes::order_blocks(m);
      const bool completed = passes::complete_entry_point_interfaces(m);
      const bool stripped = passes::strip_debug_info(m) != 0;
      const bool renamed = !own_names && passes::unique_names(m) != 0;
      return ordered || completed || stripped || renamed;
    });
  } catch (const std::invalid_argument&) {
    return words;
  }
}

// What the passes start from and the driver gets: the user's module with its blocks in dominance
// order and its entry-point interfaces completed; a binary that does not parse as it is (the validator
// reports it).
std::vector<uint32_t> prepared(const std::vector<uint32_t>& words) {
  try {
    return passes::run_on_words(words, [](passes::Module& m) {
      const bool ordered = passes::order_blocks(m);
      return passes::complete_entry_point_interfaces(m) || ordered;
    });
  } catch (const std::invalid_argument&) {
    return words;
  }
}

}  // namespace

std::vector<uint32_t> spirv_words(const void* data, size_t size_bytes) {
  if (!data || size_bytes == 0) throw zex::InvalidArgument("zex::Module: the SPIR-V binary is empty");
  if (size_bytes % 4 != 0)
    throw zex::InvalidArgument("zex::Module: the SPIR-V binary has " + std::to_string(size_bytes) +
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
    throw zex::InvalidArgument(buf);
  }
  return words;
}

void validate_spirv(const std::vector<uint32_t>& words, const char* what) {
  if (words.size() < 5 || words[0] != kMagic)
    throw zex::InvalidArgument(std::string("zex::Module: ") + what +
                                " is not SPIR-V (too short or without the magic number 0x07230203)");
  spvtools::SpirvTools tools(passes::target_env(words));
  tools.SetMessageConsumer([](spv_message_level_t, const char*, const spv_position_t&, const char*) {});
  if (tools.Validate(validator_view(words, false))) return;
  // Refused: again with the module's own names, so that the message names ids as the module does.
  Diagnostics diag;
  tools.SetMessageConsumer(diag.consumer());
  const std::vector<uint32_t> shown = validator_view(words, true);
  const std::string where = shown != words ? "(word positions are in the module zex validates: blocks in dominance order, "
                                             "entry-point interfaces completed, debug information set aside)\n"
                                           : "";
  tools.Validate(shown);
  throw zex::InvalidArgument(std::string("zex::Module: ") + what + " (SPIR-V " + version_of(words) +
                              ") is invalid; SPIRV-Tools says:\n" + where +
                              (diag.text.empty() ? std::string("(no diagnostic)") : diag.text) +
                              "\nzex accepts what Intel's driver reads (block order, missing interface variables "
                              "and debug information are not refused, docs/spirv-passes.md); this is not one of "
                              "those: fix the instruction named above in the module's producer, and check the "
                              "module with `zex-spirv validate`");
}

namespace {

std::vector<uint32_t> link_once(std::vector<uint32_t> mine, std::vector<uint32_t> lib, uint32_t version) {
  mine[1] = lib[1] = version;
  spvtools::Context ctx(passes::target_env(mine));
  Diagnostics diag;
  ctx.SetMessageConsumer(diag.consumer());
  spvtools::LinkerOptions opts;
  // Linked as a "library" so that exports survive: the device library exports a constant
  // (zex_abi_version) so that Intel's driver registers the module's constant surface with
  // zeMemGetAddressRange, which the host needs to read the report's strings (docs/abi.md).
  // llvm-spirv's own output already carries the Linkage capability and exported kernels, so the
  // result has the shape drivers are given anyway. Every import must still be resolved.
  opts.SetCreateLibrary(true);
  opts.SetAllowPartialLinkage(false);
  std::vector<uint32_t> linked;
  // The user module's decorations go through the link in groups: the linker compares every decoration
  // with every other, and a module of thousands of kernels has tens of thousands.
  try {
    mine = passes::run_on_words(mine, [](passes::Module& m) { return passes::group_decorations(m); });
  } catch (const std::invalid_argument&) {
  }
  // The user module first: its memory model and addressing model win, and its entry points keep
  // their order.
  if (spvtools::Link(ctx, {mine, lib}, &linked, opts) != SPV_SUCCESS)
    throw zex::InvalidArgument("zex::Module: linking the module with the zex device library failed; "
                                "SPIRV-Tools says:\n" +
                                (diag.text.empty() ? std::string("(no diagnostic)") : diag.text));
  // The library's functions may use its own module-scope variables, which only the linked module's
  // entry points can list (SPIR-V 1.4+); the blocks stay in dominance order whatever a pass did.
  try {
    return passes::run_on_words(linked, [](passes::Module& m) {
      const bool expanded = passes::expand_decoration_groups(m);
      const bool merged = passes::merge_duplicate_builtins(m);
      const bool ordered = passes::order_blocks(m);
      return passes::complete_entry_point_interfaces(m) || expanded || merged || ordered;
    });
  } catch (const std::invalid_argument&) {
    return linked;
  }
}

}  // namespace

std::vector<uint32_t> link_with_device_library(const std::vector<uint32_t>& user, const std::vector<uint32_t>* library_override,
                                               bool merge_throw_sites, bool wrap_strings) {
  return link_module(user, library_override, merge_throw_sites, wrap_strings).words;
}

LinkedModule link_module(const std::vector<uint32_t>& user, const std::vector<uint32_t>* library_override,
                         bool merge_throw_sites, bool wrap_strings) {
  // A module of SPIR-V 1.0-1.3 gets the library built for SPIR-V <= 1.3, a newer one the 1.4 build.
  // SPIRV-Tools' linker refuses modules of different versions, so both are declared at the higher of
  // the two versions: raising a module's declared version keeps it valid, and the linked module then
  // asks the driver for no more than it needs.
  const uint32_t user_version = user.size() > 1 ? user[1] : 0;
  const bool old = user_version <= 0x00010300u;
  const std::vector<uint32_t>& library =
      library_override ? *library_override
                       : old && !device_library_1_3().empty() ? device_library_1_3() : device_library();
  if (library.size() < 5)
    throw zex::RuntimeError(
        "zex::Module: this zex library was built without its device library (zex_device.spv); "
        "rebuild zex with the device/ directory");
  if (user.size() < 5) throw zex::InvalidArgument("zex::Module: the module is not SPIR-V (shorter than its header)");
  const uint32_t version = std::max(user_version, library[1]);
  // llvm-spirv-15 writes some -O2 loops' exit blocks before their bodies and leaves out of the
  // entry-point interfaces the variables reached only through constants (a table of strings); SPIR-V
  // requires neither, so both are repaired first: the passes and the validation after the link see,
  // and the driver gets, the repaired module.
  const std::vector<uint32_t> completed = prepared(user);
  // A throw ends the work-item wherever it happens, and every throw path zex can identify gets an id
  // whose name, reason and frames the host keeps (docs/spirv-passes.md, "number_throw_paths"). First,
  // so that the string pass sees only the throws left with strings and the merge shares the sites.
  SiteTable sites;
  // In kernels where a barrier can follow a throw, the thrower runs on to every barrier instead of
  // returning (docs/spirv-passes.md, "Throws before barriers"). A shape the pass declines keeps the
  // throw's return; the flags were applied either way.
  auto converge = [](passes::Module& m) {
    try {
      passes::Module copy = m;
      if (passes::converge_throws_at_barriers(copy)) m = std::move(copy);
    } catch (const std::invalid_argument&) {
    }
    return true;
  };
  auto number = [&](SiteTable* table) {
    if (!merge_throw_sites) return completed;
    try {
      return passes::run_on_words(completed, [&](passes::Module& m) { return passes::number_throw_paths(m, table) && converge(m); });
    } catch (const std::invalid_argument&) {
      if (table) table->clear();
      return completed;
    }
  };
  const std::vector<uint32_t> numbered = number(&sites);
  // Strings passed to zex become struct-wrapped constants, so that Intel's compiler keeps them out of
  // .data.const.string, which the host cannot read on NEO 22.43 (docs/abi.md, "Where strings live").
  // Done before the merge: the merge then shares the rewritten sites as it shared the plain ones.
  auto wrap = [&](const std::vector<uint32_t>& w) {
    try {
      return wrap_strings ? passes::wrap_zex_strings(w) : w;
    } catch (const std::invalid_argument&) {
      return w;
    }
  };
  // One shared throw block per function instead of one per throw site: Intel's compiler inlines the
  // whole cold path at every site and never merges identical cold blocks (docs/benchmarks-igc.md).
  auto merge = [&](const std::vector<uint32_t>& w) {
    try {
      return merge_throw_sites ? passes::merge_throw_sites(w) : w;
    } catch (const std::invalid_argument&) {
      return w;
    }
  };
  // What zex hands the driver must be valid too; an error here is zex's bug, not the user's. Should a
  // pass have produced something the validator refuses, the module is linked without that pass: the
  // passes are repairs and optimizations, never the reason a module is refused. The site table holds
  // only with the numbering pass's output. Each attempt is made only when the one before it failed
  // (every pass is linear in the module, but a module of thousands of kernels makes each a second
  // or so), and an attempt whose words equal the previous one's is skipped.
  struct Attempt {
    std::function<std::vector<uint32_t>()> words;
    bool numbered;
  };
  const std::vector<Attempt> attempts{
      {[&] { return numbered != completed ? merge(wrap(numbered)) : std::vector<uint32_t>{}; }, true},
      // Without the ids (a device library without zex_throw_site, say), a throw still ends the work-item.
      {[&] {
         const std::vector<uint32_t> flagged = number(nullptr);
         return flagged != completed && flagged != numbered ? merge(wrap(flagged)) : std::vector<uint32_t>{};
       },
       false},
      {[&] { return merge(wrap(completed)); }, false},
      {[&] { return wrap(completed); }, false},
      {[&] { return completed; }, false}};
  std::vector<uint32_t> previous;
  std::exception_ptr failure;
  for (const Attempt& a : attempts) {
    std::vector<uint32_t> w = a.words();
    if (w.empty() || w == previous) continue;
    previous = std::move(w);
    try {
      std::vector<uint32_t> linked = link_once(previous, library, version);
      validate_spirv(linked, "the module linked with the zex device library");
      return LinkedModule{std::move(linked), a.numbered ? std::move(sites) : SiteTable{}};
    } catch (const std::invalid_argument&) {
      failure = std::current_exception();  // the last attempt's error is the one reported
    }
  }
  std::rethrow_exception(failure);
}

std::vector<std::string> spirv_kernel_names(const std::vector<uint32_t>& words) {
  return passes::kernel_names(passes::parse(words));
}

std::vector<std::string> spirv_kernels_without_state(const std::vector<uint32_t>& words) {
  return passes::kernels_without_state(passes::parse(words));
}

std::map<std::string, std::vector<uint8_t>> spirv_kernel_param_kinds(const std::vector<uint32_t>& words) {
  return passes::kernel_param_kinds(passes::parse(words));
}

namespace {
std::vector<std::pair<std::string, std::string>> zex_string_pairs(const passes::Module& m) {
  std::vector<std::pair<std::string, std::string>> out;
  for (passes::ZexString& s : passes::zex_strings(m)) out.emplace_back(std::move(s.name), std::move(s.bytes));
  return out;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> spirv_zex_strings(const std::vector<uint32_t>& words) {
  return zex_string_pairs(passes::parse(words));
}

ModuleFacts spirv_module_facts(const std::vector<uint32_t>& words) {
  const passes::Module m = passes::parse(words);
  return ModuleFacts{passes::kernel_names(m), passes::kernels_without_state(m), passes::kernel_param_kinds(m),
                     zex_string_pairs(m)};
}

}  // namespace detail
}  // namespace zex
