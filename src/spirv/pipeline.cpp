// The compiled part of zex::Module: SPIR-V checks, validation and linking with SPIRV-Tools. Kept out
// of the headers so that users of zex do not compile against SPIRV-Tools.
#include "spirv/spirv.hpp"
#include <zex/error.hpp>

#include "spirv/passes/passes.hpp"

#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/linker.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <new>
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

// Step times for `zex-spirv link --times` (LinkSteps in <src/spirv/spirv.hpp>): nothing without one.
class StepClock {
 public:
  explicit StepClock(LinkSteps* steps) : steps_(steps), last_(std::chrono::steady_clock::now()) {}
  void step(const char* name) {
    if (!steps_) return;
    const auto now = std::chrono::steady_clock::now();
    steps_->emplace_back(name, std::chrono::duration<double>(now - last_).count());
    last_ = now;
  }

 private:
  LinkSteps* steps_;
  std::chrono::steady_clock::time_point last_;
};

// The module the validator is shown: its blocks in dominance order (passes::order_blocks: llvm-spirv-15
// writes some -O2 loops' exits before their bodies, which Intel's driver reads and zex::Module hands on
// reordered), in SPIR-V 1.4+ its entry-point interfaces completed (passes::complete_entry_point_interfaces:
// what llvm-spirv-15 omits, and zex::Module adds before handing the module on); passes::validator_words
// then sets the debug information aside and, unless asked for the module's own names, gives every OpName
// one unique to its id (the validator's naming is quadratic in repeated names); docs/spirv-passes.md says
// why. False (and `m` unspecified) for a binary that does not parse or a repair that declines: the
// validator is then shown the words as they are, for its diagnostic.
bool repaired(const std::vector<uint32_t>& words, passes::Module* m) {
  try {
    *m = passes::parse(words);
    passes::order_blocks(*m);
    passes::complete_entry_point_interfaces(*m);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

// The validator's verdict alone, silent, for the success path: without the friendly names it would build
// for every id of the module (a third of the validator's time on 4,000 kernels) and that only a message
// uses. A refused module is validated again with names and a consumer (validate_spirv), so no message
// loses them.
bool validates(spv_target_env env, const std::vector<uint32_t>& words) {
  spvtools::SpirvTools tools(env);
  tools.SetMessageConsumer([](spv_message_level_t, const char*, const spv_position_t&, const char*) {});
  spvtools::ValidatorOptions options;
  options.SetFriendlyNames(false);
  return tools.Validate(words.data(), words.size(), options);
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
  passes::Module m;
  const bool parsed = repaired(words, &m);
  if (validates(passes::target_env(words), parsed ? passes::validator_words(m, false) : words)) return;
  // Refused: again with the module's own names, so that the message names ids as the module does.
  spvtools::SpirvTools tools(passes::target_env(words));
  Diagnostics diag;
  tools.SetMessageConsumer(diag.consumer());
  const std::vector<uint32_t> shown = parsed ? passes::validator_words(m, true) : words;
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

// SPIRV-Tools' linker: what link_device_library declines (docs/spirv-passes.md, "The link").
std::vector<uint32_t> link_with_spirv_tools(std::vector<uint32_t> mine, std::vector<uint32_t> lib, uint32_t version) {
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
  return linked;
}

// What zex hands the driver, and the module the validator is shown of it.
struct Linked {
  std::vector<uint32_t> words;
  passes::IRContext module;
};

// The user module (after the passes) linked with the device library: zex's own linker on the parsed
// module, SPIRV-Tools' where zex's declines the shape or `spirv_tools`; then the repairs the linked
// module needs. The library's functions may use its own module-scope variables, which only the linked
// module's entry points can list (SPIR-V 1.4+); the blocks stay in dominance order whatever a pass did.
// `*own` says whether zex's linker linked it.
Linked link_once(passes::IRContext mine, const passes::Module& lib, const std::vector<uint32_t>& lib_words, uint32_t version,
                 bool spirv_tools, bool* own) {
  mine.module().header[1] = version;
  bool linked = false;
  if (!spirv_tools) {
    try {
      linked = mine.record(passes::link_device_library(mine, lib)) == passes::Status::Changed;
    } catch (const std::invalid_argument&) {  // declined before it wrote (passes.hpp)
      mine.invalidate();
    }
  }
  *own = linked;
  if (!linked) mine = passes::IRContext::from_words(link_with_spirv_tools(mine.words(), lib_words, version));
  // None of these declines a shape (none throws but std::bad_alloc), so none needs a copy to go back to.
  mine.record(passes::expand_decoration_groups(mine));
  mine.record(passes::merge_duplicate_builtins(mine));
  mine.record(passes::order_blocks(mine));
  mine.record(passes::complete_entry_point_interfaces(mine));
  std::vector<uint32_t> words = mine.words();
  return Linked{std::move(words), std::move(mine)};
}

// Validates `m` as the validator is shown it (passes::validator_words); if the validator refuses it,
// validate_spirv of `words` (the same module) throws with the diagnostic.
void validate_module(const passes::Module& m, const std::vector<uint32_t>& words, const char* what) {
  if (validates(passes::target_env(words), passes::validator_words(m, false))) return;
  validate_spirv(words, what);
  throw zex::InvalidArgument(std::string("zex::Module: ") + what + " is invalid (no diagnostic)");
}

// The embedded device library (the SPIR-V <= 1.3 build with `old`), parsed on first use, then shared
// by every link in the process: links on several threads only read it. A parse error (a corrupt build)
// throws on each call.
const passes::Module& parsed_device_library(bool old) {
  if (old) {
    static const passes::Module m = passes::parse(device_library_1_3());
    return m;
  }
  static const passes::Module m = passes::parse(device_library());
  return m;
}

}  // namespace

std::vector<uint32_t> link_with_device_library(const std::vector<uint32_t>& user, const std::vector<uint32_t>* library_override,
                                               bool merge_throw_sites, bool wrap_strings) {
  return link_module(user, library_override, merge_throw_sites, wrap_strings).words;
}

LinkedModule link_module(const std::vector<uint32_t>& user, const std::vector<uint32_t>* library_override,
                         bool merge_throw_sites, bool wrap_strings, LinkSteps* steps, MemoryCheckInfo* memory) {
  StepClock clock(steps);
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
  if (user.size() < 5 || user[0] != kMagic) validate_spirv(user, "the module's SPIR-V");  // throws its message
  const uint32_t version = std::max(user_version, library[1]);
  // The user module is parsed once into the IR context every pass below works on, and written out
  // once, for the link (docs/spirv-passes.md, "The IR context"); a binary that does not parse is
  // refused with the validator's diagnostic.
  auto parse_user = [&]() {
    try {
      return passes::IRContext::from_words(user);
    } catch (const std::invalid_argument&) {
      validate_spirv(user, "the module's SPIR-V");
      throw;
    }
  };
  // A pass that declines a shape throws before it writes (passes.hpp), so the module is as it was and
  // the context only drops its analyses. Any exception of a pass but an allocation failure is a
  // decline: the passes see the user's module before the validator does.
  auto guarded = [](passes::IRContext& ctx, auto&& pass) {
    try {
      return ctx.record(pass(ctx)) == passes::Status::Changed;
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception&) {
      ctx.invalidate();
      return false;
    }
  };
  // llvm-spirv-15 writes some -O2 loops' exit blocks before their bodies and leaves out of the
  // entry-point interfaces the variables reached only through constants (a table of strings); SPIR-V
  // requires neither, so both are repaired first: the passes and the validation see, and the driver
  // gets, the repaired module. The two run as one step: a decline of either (neither has one but
  // std::bad_alloc) leaves the module as parsed, which is parsed again.
  auto repaired = [&]() {
    passes::IRContext ctx = parse_user();
    try {
      ctx.record(passes::order_blocks(ctx));
      ctx.record(passes::complete_entry_point_interfaces(ctx));
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception&) {
      ctx = parse_user();
    }
    return ctx;
  };
  // The memory checks (passes/memory_checks.cpp) were asked for: every attempt below has them, and a
  // module the pass declines is refused with the pass's reason (the user asked for checks; a module
  // linked without them would look checked and be silent).
  // A module that imports __assert_fail or __devicelib_assert_fail (AdaptiveCpp's and DPC++'s assert)
  // gets zex's definition without check_memory too: each call becomes a throw of "AssertionError"
  // (nothing else defines them: the driver would refuse the module, or abort in the assert).
  auto instrument = [&](passes::IRContext& ctx) {
    if (!memory && !passes::imports_assert(ctx)) return;
    std::vector<passes::KernelMemoryChecks> kernels;
    passes::MemoryCheckCounts counts;
    try {
      ctx.record(passes::add_memory_checks(ctx, &kernels, &counts, passes::CheckOptions{memory != nullptr, true}));
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {
      if (!memory)
        throw zex::InvalidArgument(std::string("zex::Module: the module calls __assert_fail or __devicelib_assert_fail, "
                                               "and zex cannot make its asserts throw (") + e.what() + ")");
      throw zex::InvalidArgument(std::string("zex::Module: cannot add memory checks to this module (") + e.what() +
                                 "); build it without check_memory (and without ZEX_CHECK_MEMORY=1)");
    }
    if (!memory) return;
    MemoryCheckInfo info;
    for (passes::KernelMemoryChecks& k : kernels)
      info.kernels.push_back(MemoryCheckedKernel{std::move(k.name), k.user_params, std::move(k.bounded), std::move(k.local)});
    info.checked = counts.checked;
    info.merged = counts.merged;
    info.loaded = counts.loaded;
    info.from_integer = counts.from_integer;
    info.untraced = counts.untraced;
    info.local = counts.local;
    *memory = std::move(info);
  };
  passes::IRContext completed = repaired();
  clock.step("parse and repair");
  instrument(completed);
  if (memory) clock.step("memory checks");
  // The embedded device library is parsed once per process (a link only reads it); an override, the
  // tests' and zex-spirv's --library, on every link.
  passes::Module parsed_override;
  if (library_override) parsed_override = passes::parse(library);
  const passes::Module& lib = library_override ? parsed_override : parsed_device_library(&library == &device_library_1_3());
  // A throw ends the work-item wherever it happens, and every throw path zex can identify gets an id
  // whose name, reason and frames the host keeps (docs/spirv-passes.md, "number_throw_paths"). First,
  // so that the string pass sees only the throws left with strings and the merge shares the sites.
  // In kernels where a barrier can follow a throw, the thrower runs on to every barrier instead of
  // returning (docs/spirv-passes.md, "Throws before barriers"). A shape the pass declines keeps the
  // throw's return; the flags were applied either way.
  SiteTable sites;
  auto number = [&](SiteTable* table, passes::IRContext& m) {
    if (!merge_throw_sites) return false;
    const bool changed = guarded(m, [&](passes::IRContext& x) { return passes::number_throw_paths(x, table); });
    if (!changed) {
      if (table) table->clear();
      return false;
    }
    guarded(m, [](passes::IRContext& x) { return passes::converge_throws_at_barriers(x); });
    return true;
  };
  // Strings passed to zex become struct-wrapped constants, so that Intel's compiler keeps them out of
  // .data.const.string, which the host cannot read on NEO 22.43 (docs/abi.md, "Where strings live").
  // Done before the merge: the merge then shares the rewritten sites as it shared the plain ones.
  auto wrap = [&](passes::IRContext& m) {
    if (wrap_strings) guarded(m, [](passes::IRContext& x) { return passes::wrap_zex_strings(x); });
  };
  // One shared throw block per function instead of one per throw site: Intel's compiler inlines the
  // whole cold path at every site and never merges identical cold blocks (docs/benchmarks-igc.md).
  auto merge = [&](passes::IRContext& m) {
    if (merge_throw_sites) guarded(m, [](passes::IRContext& x) { return passes::merge_throw_sites(x); });
  };
  // What zex hands the driver must be valid. The validator checks the linked module only: when it
  // refuses the first attempt, the user's module is validated, and refused with the validator's
  // message if it is invalid; otherwise the refusal is zex's bug, not the user's. Should a pass have
  // produced something the validator refuses, the module is linked without that pass: the passes are
  // repairs and optimizations, never the reason a module is refused. The site table holds only with
  // the numbering pass's output. Each attempt is made only when the one before it failed (on the
  // user's module parsed and repaired again), and an attempt whose words equal the previous one's is
  // skipped; zex's own linker's output that the validator refuses is linked again with SPIRV-Tools'
  // before the next attempt.
  struct Attempt {
    std::function<bool(passes::IRContext&)> make;  // false: nothing new to try
    bool numbered;
  };
  const std::vector<Attempt> attempts{
      {[&](passes::IRContext& m) {
         if (!number(&sites, m)) return false;
         clock.step("number throw paths");
         wrap(m);
         clock.step("wrap strings");
         merge(m);
         clock.step("merge throw sites");
         return true;
       },
       true},
      // Without the ids (a device library without zex_throw_site, say), a throw still ends the work-item.
      {[&](passes::IRContext& m) {
         if (!number(nullptr, m)) return false;
         wrap(m);
         merge(m);
         return true;
       },
       false},
      {[&](passes::IRContext& m) {
         wrap(m);
         merge(m);
         return true;
       },
       false},
      {[&](passes::IRContext& m) {
         wrap(m);
         return true;
       },
       false},
      {[&](passes::IRContext&) { return true; }, false}};
  std::vector<uint32_t> previous;
  std::exception_ptr failure;
  bool user_validated = false;
  bool first = true;
  for (const Attempt& a : attempts) {
    passes::IRContext m = first ? std::move(completed) : repaired();
    if (!first) instrument(m);
    first = false;
    if (!a.make(m)) continue;
    // The one serialisation of the user's module: kept to skip an attempt that makes the same module
    // and for SPIRV-Tools' linker should zex's output be refused.
    std::vector<uint32_t> w = m.words();
    if (w == previous) continue;
    previous = std::move(w);
    for (bool spirv_tools : {false, true}) {
      bool own = false;
      try {
        Linked linked = link_once(spirv_tools ? passes::IRContext::from_words(previous) : std::move(m), lib, library,
                                  version, spirv_tools, &own);
        clock.step(spirv_tools ? "link (SPIRV-Tools)" : "link");
        validate_module(linked.module.module(), linked.words, "the module linked with the zex device library");
        clock.step("validate the linked module");
        return LinkedModule{std::move(linked.words), a.numbered ? std::move(sites) : SiteTable{}};
      } catch (const std::invalid_argument&) {
        failure = std::current_exception();  // the last attempt's error is the one reported
      }
      if (!user_validated) {
        user_validated = true;
        // The user's module (repaired): refused with the validator's message on it.
        validate_module(repaired().module(), user, "the module's SPIR-V");
      }
      if (!own) break;  // SPIRV-Tools' linker made this one already: linking it again would not differ
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

std::vector<uint32_t> spirv_with_stop_checks(const std::vector<uint32_t>& words) {
  passes::IRContext ctx = passes::IRContext::from_words(words);
  return passes::add_stop_checks(ctx) == passes::Status::Changed ? ctx.words() : words;
}

}  // namespace detail
}  // namespace zex
