// zex::Module and zex::Kernel: a user's SPIR-V, validated, linked with the zex device library, and
// built by the driver once per debug level on first use (DESIGN.md §4).
#pragma once

#include <zex/abi.h>
#include <zex/context.hpp>
#include <zex/detail/spirv.hpp>
#include <zex/error.hpp>

#include <level_zero/ze_api.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

namespace zex {

namespace detail {

constexpr int kLevels = 3;

class ModuleState {
 public:
  ModuleState(const Device& dev, std::vector<uint32_t> spirv)
      : ctx_(dev.shared_state()), dev_(&dev.info()), spirv_(std::move(spirv)),
        kernel_names_(spirv_kernel_names(spirv_)) {}
  ModuleState(const ModuleState&) = delete;
  ModuleState& operator=(const ModuleState&) = delete;
  ~ModuleState() {
    for (auto m : native_)
      if (m) zeModuleDestroy(m);
  }

  // The driver's module specialized for `level`, built on first use. Thread-safe.
  ze_module_handle_t native(int level) {
    std::lock_guard<std::mutex> lock(mu_);
    ze_module_handle_t& m = native_[static_cast<size_t>(level)];
    if (!m) m = build(level);
    return m;
  }
  bool built(int level) {
    std::lock_guard<std::mutex> lock(mu_);
    return native_[static_cast<size_t>(level)] != nullptr;
  }

  const std::vector<uint32_t>& spirv() const noexcept { return spirv_; }
  const std::vector<std::string>& kernel_names() const noexcept { return kernel_names_; }
  const DeviceInfo& device() const noexcept { return *dev_; }
  ze_context_handle_t context() const noexcept { return ctx_->context(); }

 private:
  ze_module_handle_t build(int level) {
    uint32_t id = ZEX_SPEC_ID_DEBUG_LEVEL;
    int32_t value = level;
    const void* values[] = {&value};
    ze_module_constants_t constants{1, &id, values};
    ze_module_desc_t desc{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV,
                          spirv_.size() * sizeof(uint32_t),
                          reinterpret_cast<const uint8_t*>(spirv_.data()), "", &constants};
    ze_module_handle_t m = nullptr;
    ze_module_build_log_handle_t log = nullptr;
    ze_result_t r = zeModuleCreate(ctx_->context(), dev_->handle, &desc, &m, &log);
    if (r == ZE_RESULT_SUCCESS) {
      if (log) zeModuleBuildLogDestroy(log);
      return m;
    }
    std::string text;
    if (log) {
      size_t n = 0;
      if (zeModuleBuildLogGetString(log, &n, nullptr) == ZE_RESULT_SUCCESS && n > 0) {
        text.resize(n);
        if (zeModuleBuildLogGetString(log, &n, &text[0]) != ZE_RESULT_SUCCESS) text.clear();
        while (!text.empty() && text.back() == '\0') text.pop_back();
      }
      zeModuleBuildLogDestroy(log);
    }
    if (m) zeModuleDestroy(m);
    throw ZeError(r, "zeModuleCreate",
                  "building the module for debug level " + std::to_string(level) + " on " + dev_->name,
                  {}, text.empty() ? std::string("(the driver gave no build log)") : text);
  }

  std::shared_ptr<ContextState> ctx_;
  const DeviceInfo* dev_;
  std::vector<uint32_t> spirv_;
  std::vector<std::string> kernel_names_;
  std::mutex mu_;
  std::array<ze_module_handle_t, kLevels> native_{};
};

inline std::string join_names(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& n : v) s += (s.empty() ? "'" : ", '") + n + "'";
  return s.empty() ? std::string("none") : s;
}

}  // namespace detail

class Kernel;

/// A user's SPIR-V module on one device. Construction validates it with SPIRV-Tools and links the
/// zex device library after it; the driver builds it once per debug level, on the first launch at
/// that level, and caches it. Move-only; thread-safe.
class Module {
 public:
  /// From SPIR-V words.
  /// @throws std::invalid_argument (invalid SPIR-V, with the validator's diagnostic; link errors)
  Module(const Device& dev, const std::vector<uint32_t>& spirv_words) { init(dev, spirv_words); }
  /// From the bytes of a .spv file.
  /// @throws std::invalid_argument
  Module(const Device& dev, const std::vector<uint8_t>& spirv_bytes)
      : Module(dev, spirv_bytes.data(), spirv_bytes.size()) {}
  /// From the bytes of a .spv file.
  /// @throws std::invalid_argument
  Module(const Device& dev, const std::vector<char>& spirv_bytes)
      : Module(dev, spirv_bytes.data(), spirv_bytes.size()) {}
  /// From the bytes of a .spv file held in a std::string (e.g. read with an ifstream). A string that
  /// looks like a file name gets an error saying to read the file first.
  /// @throws std::invalid_argument
  Module(const Device& dev, const std::string& spirv_bytes) {
    if (spirv_bytes.size() < 256 && spirv_bytes.find('\0') == std::string::npos &&
        spirv_bytes.size() >= 4 && spirv_bytes.compare(spirv_bytes.size() - 4, 4, ".spv") == 0)
      throw std::invalid_argument("zex::Module: '" + spirv_bytes +
                                  "' looks like a file name; zex::Module takes the SPIR-V itself: read the "
                                  "file's bytes into a std::vector<char> and pass that");
    init(dev, detail::spirv_words(spirv_bytes.data(), spirv_bytes.size()));
  }
  /// From a buffer of `size_bytes` bytes of SPIR-V.
  /// @throws std::invalid_argument
  Module(const Device& dev, const void* data, size_t size_bytes) {
    init(dev, detail::spirv_words(data, size_bytes));
  }

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
  ze_module_handle_t handle(int level = 1) const { return live().native(checked_level(level)); }
  /// The linked SPIR-V (user module + device library).
  const std::vector<uint32_t>& spirv() const { return live().spirv(); }

  static int checked_level(int level) {
    if (level < 0 || level > 2)
      throw std::invalid_argument("zex: debug level " + std::to_string(level) + " is not 0, 1 or 2");
    return level;
  }

 private:
  void init(const Device& dev, const std::vector<uint32_t>& words) {
    if (!dev) throw std::invalid_argument("zex::Module: empty zex::Device");
    detail::validate_spirv(words, "the module's SPIR-V");
    state_ = std::make_shared<detail::ModuleState>(dev, detail::link_with_device_library(words));
  }
  detail::ModuleState& live() const {
    if (!state_) throw std::logic_error("zex: use of a moved-from zex::Module");
    return *state_;
  }
  std::shared_ptr<detail::ModuleState> state_;
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
    std::lock_guard<std::mutex> lock(live().mu);
    return state_->at(Module::checked_level(level)).kernel;
  }
  /// The kernel's parameter count including the trailing zex_state_t.
  /// @throws ZeError, std::invalid_argument
  uint32_t argument_count(int level = 1) const {
    std::lock_guard<std::mutex> lock(live().mu);
    return state_->at(Module::checked_level(level)).num_args;
  }

 private:
  friend class Module;
  friend class Stream;

  struct Level {
    ze_kernel_handle_t kernel = nullptr;
    uint32_t num_args = 0;
    uint32_t group[3] = {0, 0, 0};  // last group size set, to skip redundant zeKernelSetGroupSize
  };
  struct State {
    std::shared_ptr<detail::ModuleState> module;
    std::shared_ptr<const std::string> name;
    std::mutex mu;
    std::array<Level, detail::kLevels> levels{};
    ~State() {
      for (auto& l : levels)
        if (l.kernel) zeKernelDestroy(l.kernel);
    }
    // mu held.
    Level& at(int level) {
      Level& l = levels[static_cast<size_t>(level)];
      if (!l.kernel) create(level, l);
      return l;
    }
    void create(int level, Level& l) {
      ze_module_handle_t m = module->native(level);
      ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, name->c_str()};
      ze_kernel_handle_t k = nullptr;
      check(zeKernelCreate(m, &kd, &k), "zeKernelCreate", ("creating kernel '" + *name + "'").c_str());
      ze_kernel_properties_t props{};
      props.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES;
      ze_result_t r = zeKernelGetProperties(k, &props);
      if (r != ZE_RESULT_SUCCESS) {
        zeKernelDestroy(k);
        check(r, "zeKernelGetProperties", ("reading the properties of kernel '" + *name + "'").c_str());
      }
      // The report and claim word reach the kernel as integers, not as pointer arguments: the
      // driver must make host and device USM resident for it. A driver without the feature has
      // nothing to make resident, so UNSUPPORTED_FEATURE is not an error here.
      r = zeKernelSetIndirectAccess(k, ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST | ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE);
      if (r != ZE_RESULT_SUCCESS && r != ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) {
        zeKernelDestroy(k);
        check(r, "zeKernelSetIndirectAccess", ("declaring indirect access for kernel '" + *name + "'").c_str());
      }
      l.kernel = k;
      l.num_args = props.numKernelArgs;
    }
  };

  Kernel(std::shared_ptr<detail::ModuleState> m, std::string name) : state_(std::make_unique<State>()) {
    state_->module = std::move(m);
    state_->name = std::make_shared<const std::string>(std::move(name));
  }
  State& live() const {
    if (!state_) throw std::logic_error("zex: use of a moved-from zex::Kernel");
    return *state_;
  }
  std::unique_ptr<State> state_;
};

inline Kernel Module::kernel(const std::string& name) const {
  const auto& names = live().kernel_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw std::invalid_argument("zex::Module::kernel: no kernel named '" + name +
                                "' in this module; its kernels are: " + detail::join_names(names));
  return Kernel(state_, name);
}

}  // namespace zex
