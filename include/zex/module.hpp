// zex::Module and zex::Kernel: a user's SPIR-V, validated, rewritten by zex's passes, linked with the
// zex device library, and built by the driver once per debug level on first use (docs/design.md,
// "Modules"). Building is cold and compiled (src/runtime/module.cpp); what a launch reads is inline.
#pragma once

#include <zex/abi.h>
#include <zex/context.hpp>
#include <zex/detail/mutex.hpp>
#include <zex/detail/sites.hpp>
#include <zex/detail/param_kind.hpp>
#include <zex/error.hpp>

#include <level_zero/ze_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace zex {

/// How zex::Module builds a module (docs/integration.md, "Memory checks").
struct ModuleOptions {
  /// Bounds checks on every global load, store and atomic whose pointer traces back to one of a kernel's
  /// pointer arguments: an access outside the allocation the argument points into throws
  /// "OutOfBoundsAccess" instead of happening. ZEX_CHECK_MEMORY=1 in the environment turns this on for
  /// every module zex builds.
  bool check_memory = false;
};

/// What a module's memory checks are (Module::memory_checks()): the global accesses (instructions in
/// the module, not executions) checked, and those left unchecked by reason.
struct MemoryCheckCounts {
  bool enabled = false;     // the module was built with check_memory
  size_t checked = 0;       // accesses through a kernel's pointer argument or into a __local array, each checked
  size_t loaded = 0;        // unchecked: the pointer was loaded from memory
  size_t from_integer = 0;  // unchecked: the pointer was made from an integer
  size_t untraced = 0;      // unchecked: another derivation (pointers of several arguments, say)
  size_t local = 0;         // unchecked: __local accesses traced to no __local parameter or array of known size
  // Of `checked`, those with no compare of their own: an earlier check of the same block covers them (the
  // same pointer, or the same base and index moved by a constant: docs/integration.md).
  size_t merged = 0;
};

namespace detail {

// A kernel's memory-check parameters (ModuleOptions::check_memory): after its `user_params` own
// parameters, two `ulong`s (base, end) per index in `bounded`, then its zex_state_t; for the __local
// parameters among them (`local`), (0, the bytes the launch gives the parameter).
struct MemoryBounds;
struct MemoryParams {
  uint32_t user_params = 0;
  std::vector<uint32_t> bounded;
  std::vector<uint32_t> local;
};

constexpr int kLevels = 3;
// The driver modules a ModuleState builds: one per debug level, and one per level for launches with
// stop_on_throw (the linked module with the stop checks, passes/stop_on_throw.cpp). Variant v is
// level v % kLevels, with early stop if v >= kLevels.
constexpr int kVariants = 2 * kLevels;
constexpr int variant_of(int level, bool stop_on_throw) noexcept { return level + (stop_on_throw ? kLevels : 0); }

// The strings zex's passes put in the module's constant surface, by the address the driver gave
// them (src/runtime/decoder.hpp).
struct KnownStrings;

/// A linked module on one device and the driver's module for each debug level, built on first use.
/// Shared by the Module and its Kernels. Thread-safe.
class ModuleState {
 public:
  ModuleState(const Device& dev, std::vector<uint32_t> spirv, SiteTable sites = {});
  ModuleState(const Device& dev, std::vector<uint32_t> spirv, SiteTable sites, MemoryCheckCounts memory,
              std::vector<std::pair<std::string, MemoryParams>> memory_params);
  ModuleState(const ModuleState&) = delete;
  ModuleState& operator=(const ModuleState&) = delete;
  ~ModuleState();

  /// The driver's module for `variant` (variant_of: a level, with or without early stop), built on
  /// first use.
  /// @throws ZeError with the build log; InvalidArgument if the stop checks cannot be added
  ze_module_handle_t native(int variant);

  const std::vector<uint32_t>& spirv() const noexcept { return spirv_; }
  const std::vector<std::string>& kernel_names() const noexcept { return kernel_names_; }
  /// False for a kernel whose last parameter is not a zex_state_t.
  bool takes_state(const std::string& kernel) const;
  /// The kernel's parameter kinds (<zex/detail/param_kind.hpp>) from the SPIR-V; empty if unknown.
  std::vector<uint8_t> param_kinds(const std::string& kernel) const;
  /// The kernel's memory-check parameters; null without memory checks.
  const MemoryParams* memory_params(const std::string& kernel) const;
  const MemoryCheckCounts& memory_checks() const noexcept { return memory_; }
  const DeviceInfo& device() const noexcept { return *dev_; }
  ze_context_handle_t context() const noexcept { return dev_->context; }
  /// The strings of the module built for `variant`, by their relocated addresses; null before the
  /// build or when the driver could not say where they are.
  const KnownStrings* known_strings(int variant) const noexcept { return known_[static_cast<size_t>(variant)].get(); }
  /// The throw sites zex numbered when it linked the module (detail/sites.hpp): what a report's
  /// site id means. The same for every level.
  const SiteTable& sites() const noexcept { return *sites_; }
  /// What this module's device adds to its site ids (register_site_table); 0 without sites.
  uint32_t site_base() const noexcept { return site_base_; }

 private:
  ze_module_handle_t build(int variant);
  void record_strings(int variant, ze_module_handle_t m);

  std::shared_ptr<ContextState> ctx_;  // keeps the context (and *dev_) alive
  const DeviceInfo* dev_;
  std::vector<uint32_t> spirv_;
  std::shared_ptr<const SiteTable> sites_;
  uint32_t site_base_ = 0;
  std::vector<std::string> kernel_names_;
  std::vector<std::string> without_state_;  // kernels whose last parameter is not a zex_state_t
  // By kernel name; a vector of pairs, as <map> would add to every includer's parse time for a lookup
  // made once per Kernel.
  std::vector<std::pair<std::string, std::vector<uint8_t>>> param_kinds_;
  std::vector<std::pair<std::string, std::string>> zex_strings_;  // name, bytes (record_strings)
  MemoryCheckCounts memory_;
  std::vector<std::pair<std::string, MemoryParams>> memory_params_;
  Mutex mu_;
  std::vector<uint32_t> stop_spirv_;  // spirv_ with the stop checks, made by the first stop variant's build
  std::array<ze_module_handle_t, kVariants> native_{};
  std::array<std::unique_ptr<KnownStrings>, kVariants> known_;
};

/// @throws std::invalid_argument unless 0 <= level <= 2
int checked_level(int level);

}  // namespace detail

class Kernel;

/// Forgets every allocation bound the memory checks looked up (ModuleOptions::check_memory): call it
/// after freeing memory whose address a later allocation of another size may reuse, before launching
/// with that address (zex caches each argument's allocation by its pointer; docs/integration.md).
/// Thread-safe; costs one atomic increment.
void forget_memory_bounds() noexcept;

/// A user's SPIR-V module on one device. Construction validates it with SPIRV-Tools and links the
/// zex device library after it; the driver builds it once per debug level, on the first launch at
/// that level, and caches it. Move-only; thread-safe.
class Module {
 public:
  /// From SPIR-V words. `options`: ModuleOptions (memory checks).
  /// @throws std::invalid_argument (invalid SPIR-V, with the validator's diagnostic; link errors; a
  ///         module the memory checks cannot instrument; ZEX_CHECK_MEMORY set to neither 0 nor 1)
  Module(const Device& dev, const std::vector<uint32_t>& spirv_words, const ModuleOptions& options = {});
  /// From the bytes of a .spv file.
  /// @throws std::invalid_argument
  Module(const Device& dev, const std::vector<uint8_t>& spirv_bytes, const ModuleOptions& options = {})
      : Module(dev, spirv_bytes.data(), spirv_bytes.size(), options) {}
  /// From the bytes of a .spv file.
  /// @throws std::invalid_argument
  Module(const Device& dev, const std::vector<char>& spirv_bytes, const ModuleOptions& options = {})
      : Module(dev, spirv_bytes.data(), spirv_bytes.size(), options) {}
  /// From the bytes of a .spv file held in a std::string (e.g. read with an ifstream). A string that
  /// looks like a file name gets an error saying to read the file first.
  /// @throws std::invalid_argument
  Module(const Device& dev, const std::string& spirv_bytes, const ModuleOptions& options = {});
  /// From a buffer of `size_bytes` bytes of SPIR-V.
  /// @throws std::invalid_argument
  Module(const Device& dev, const void* data, size_t size_bytes, const ModuleOptions& options = {});

  Module(Module&&) noexcept = default;
  Module& operator=(Module&&) noexcept = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  ~Module() = default;

  /// The kernel `name`. The driver module is not built yet (that happens at the first launch).
  /// @throws std::invalid_argument naming the kernel and listing the module's kernels
  Kernel kernel(const std::string& name) const;

  /// The names of the module's kernels.
  const std::vector<std::string>& kernel_names() const { return live().kernel_names(); }
  /// The driver's module for `level` (built now if needed), for interop.
  /// @throws ZeError with the build log if the driver fails to build it; std::invalid_argument
  ze_module_handle_t handle(int level = 1) const { return live().native(detail::checked_level(level)); }
  /// The linked SPIR-V (user module + device library).
  const std::vector<uint32_t>& spirv() const { return live().spirv(); }
  /// What the module's memory checks cover (enabled == false without ModuleOptions::check_memory).
  const MemoryCheckCounts& memory_checks() const { return live().memory_checks(); }

  /// @throws std::invalid_argument unless 0 <= level <= 2
  static int checked_level(int level) { return detail::checked_level(level); }

 private:
  void init(const Device& dev, const std::vector<uint32_t>& words, const ModuleOptions& options);
  detail::ModuleState& live() const {
    if (__builtin_expect(!state_, 0)) throw_moved_from("zex::Module");
    return *state_;
  }
  [[noreturn]] static void throw_moved_from(const char* what);
  std::shared_ptr<detail::ModuleState> state_;

  friend class Kernel;
};

class Stream;

/// A kernel of a Module (keeps the module alive). Launch it with Stream::launch. Move-only. One
/// Kernel may be launched from several threads (launches of the same Kernel are serialized, since a
/// Level Zero kernel's arguments are state); give each thread its own Kernel to launch in parallel.
class Kernel {
 public:
  Kernel(Kernel&&) noexcept = default;
  Kernel& operator=(Kernel&&) noexcept = default;
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  ~Kernel() = default;

  /// The kernel's name.
  const std::string& name() const { return *live().name; }
  /// The driver's kernel for `level` (building the module if needed), for interop.
  /// @throws ZeError, std::invalid_argument
  ze_kernel_handle_t handle(int level = 1) const {
    detail::LockGuard lock(live().mu);
    return state_->at(detail::checked_level(level)).kernel;
  }
  /// The kernel's parameter count including the trailing zex_state_t (and, in a module built with
  /// check_memory, the hidden bounds before it: hidden_argument_count()).
  /// @throws ZeError, std::invalid_argument
  uint32_t argument_count(int level = 1) const {
    detail::LockGuard lock(live().mu);
    return state_->at(detail::checked_level(level)).num_args;
  }
  /// The parameters zex's memory checks added between the kernel's own and its zex_state_t: 1 (a
  /// by-value struct of two `ulong`s, allocation base and end, per checked_arguments() entry, in that
  /// order) when any argument is checked, else 0. A launch through zex sets it; a runtime that sets
  /// arguments itself sets it too (docs/integration.md).
  uint32_t hidden_argument_count() const { return live().hidden; }
  /// The kernel's own arguments whose allocation bounds the hidden struct carries, ascending (empty
  /// without check_memory or when the kernel accesses no memory through its arguments).
  const std::vector<uint32_t>& checked_arguments() const { return live().checked; }
  /// The `__local` parameters among checked_arguments(), ascending: their entry in the hidden struct is
  /// (0, the bytes the launch gives the parameter), not an allocation's addresses.
  const std::vector<uint32_t>& local_checked_arguments() const { return live().checked_local; }

 private:
  friend class Module;
  friend class Stream;
  friend class Graph;
  friend struct detail::MemoryBounds;  // src/runtime/memory_bounds.hpp

  struct Level {
    ze_kernel_handle_t kernel = nullptr;
    uint32_t num_args = 0;
    uint32_t group[3] = {0, 0, 0};  // last group size set, to skip redundant zeKernelSetGroupSize
  };
  struct State {
    std::shared_ptr<detail::ModuleState> module;
    std::shared_ptr<const std::string> name;
    const detail::DeviceInfo* device = nullptr;  // the module's: a launch on another device's stream is refused
    bool takes_state = true;  // its last parameter is a zex_state_t (from the module's SPIR-V)
    // One param_kind byte per parameter (from the SPIR-V), which a launch checks its scalars against;
    // once a level is created, exactly num_args long (all kOther, unchecked, if the SPIR-V and the
    // driver disagree on the count).
    std::vector<uint8_t> param_kinds;
    // check_memory: the parameters between the kernel's own and its zex_state_t (1: the bounds struct,
    // when any argument is checked), and per bounded argument the allocation last looked up for it
    // (set_memory_bounds).
    uint32_t hidden = 0;
    std::vector<uint32_t> checked;  // the bounded arguments, as the struct holds them (fixed at creation)
    std::vector<uint32_t> checked_local;  // of those, the __local parameters
    struct Bounds {
      uint32_t arg;  // the argument's index
      uint64_t pointer = 0, base = 0, end = 0, generation = 0;  // a __local argument's pointer: its bytes
      bool known = false;
      bool local = false;  // a __local parameter: (0, the bytes the launch gives it), nothing looked up
    };
    std::vector<Bounds> bounds;
    // The hidden argument's value, (base, end) per bounded argument, and the variants
    // (detail::variant_of) whose ze kernel holds it already: a launch sets it only when it changed.
    std::vector<uint64_t> bounds_table;
    uint32_t bounds_set_on = 0;
    detail::Mutex mu;
    std::array<Level, detail::kVariants> levels{};  // by variant (detail::variant_of)
    ~State();
    // mu held.
    Level& at(int variant) {
      Level& l = levels[static_cast<size_t>(variant)];
      if (__builtin_expect(!l.kernel, 0)) create(variant, l);
      return l;
    }
    void create(int variant, Level& l);  // compiled: builds the module if needed
  };

  Kernel(std::shared_ptr<detail::ModuleState> m, std::string name);
  State& live() const {
    if (__builtin_expect(!state_, 0)) Module::throw_moved_from("zex::Kernel");
    return *state_;
  }
  // Shared with the launch records of the streams that launched it, so that what a pending launch
  // uses (the ze kernel, its module, the module's strings) outlives the zex::Kernel.
  std::shared_ptr<State> state_;
};

}  // namespace zex
