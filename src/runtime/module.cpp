// zex::Module and zex::Kernel, cold half: checking and linking a module (the pass layer, through
// src/spirv/spirv.hpp), building it per debug level with the driver's build log on failure, and
// creating kernels. Once per module/level/kernel, so compiled rather than inline in every includer.
#include <zex/module.hpp>

#include "runtime/decoder.hpp"
#include "spirv/spirv.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace zex {
namespace detail {

namespace {

std::string join_names(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& n : v) s += (s.empty() ? "'" : ", '") + n + "'";
  return s.empty() ? std::string("none") : s;
}

}  // namespace

int checked_level(int level) {
  if (level < 0 || level > 2)
    throw zex::InvalidArgument("zex: debug level " + std::to_string(level) + " is not 0, 1 or 2");
  return level;
}

namespace {

// The process's site tables by id range. Bases only grow, so ranges never overlap and an id names one
// table for the process's life; a table whose modules are gone is dropped at the next registration.
struct SiteRegistry {
  struct Entry {
    uint32_t base, size;
    std::weak_ptr<const SiteTable> table;
  };
  Mutex mu;
  std::vector<Entry> entries;
  uint64_t next = 0;
};

SiteRegistry& site_registry() {
  static SiteRegistry* r = new SiteRegistry();  // never destroyed: modules may outlive static destruction
  return *r;
}

}  // namespace

uint32_t register_site_table(const std::shared_ptr<const SiteTable>& table) {
  if (!table || table->empty()) return 0;
  SiteRegistry& r = site_registry();
  LockGuard lock(r.mu);
  if (r.next + table->size() > ZEX_SITE_ID_MASK) return 0;  // ids left to the module's own table
  r.entries.erase(std::remove_if(r.entries.begin(), r.entries.end(), [](const SiteRegistry::Entry& e) { return e.table.expired(); }),
                  r.entries.end());
  const uint32_t base = static_cast<uint32_t>(r.next);
  r.next += table->size();
  r.entries.push_back({base, static_cast<uint32_t>(table->size()), table});
  return base;
}

std::shared_ptr<const SiteTable> find_site_table(uint32_t id, uint32_t* base) {
  SiteRegistry& r = site_registry();
  LockGuard lock(r.mu);
  for (const SiteRegistry::Entry& e : r.entries)
    if (id > e.base && id - e.base <= e.size) {
      if (auto t = e.table.lock()) {
        *base = e.base;
        return t;
      }
    }
  return nullptr;
}

ModuleState::ModuleState(const Device& dev, std::vector<uint32_t> spirv, SiteTable sites)
    : ModuleState(dev, std::move(spirv), std::move(sites), MemoryCheckCounts{}, {}) {}

ModuleState::ModuleState(const Device& dev, std::vector<uint32_t> spirv, SiteTable sites, MemoryCheckCounts memory,
                         std::vector<std::pair<std::string, MemoryParams>> memory_params)
    : ctx_(dev.shared_state()), dev_(&dev.info()), spirv_(std::move(spirv)),
      sites_(std::make_shared<const SiteTable>(std::move(sites))), site_base_(register_site_table(sites_)),
      memory_(memory), memory_params_(std::move(memory_params)) {
  ModuleFacts facts = spirv_module_facts(spirv_);  // one parse of the linked module
  kernel_names_ = std::move(facts.kernel_names);
  without_state_ = std::move(facts.kernels_without_state);
  for (auto& [name, kinds] : facts.param_kinds) param_kinds_.emplace_back(name, std::move(kinds));
  zex_strings_ = std::move(facts.zex_strings);
}

bool ModuleState::takes_state(const std::string& kernel) const {
  return std::find(without_state_.begin(), without_state_.end(), kernel) == without_state_.end();
}

std::vector<uint8_t> ModuleState::param_kinds(const std::string& kernel) const {
  for (const auto& [name, kinds] : param_kinds_)
    if (name == kernel) return kinds;
  return {};
}

const MemoryParams* ModuleState::memory_params(const std::string& kernel) const {
  for (const auto& [name, p] : memory_params_)
    if (name == kernel) return &p;
  return nullptr;
}

ModuleState::~ModuleState() {
  for (auto m : native_)
    if (m) zeModuleDestroy(m);
}

ze_module_handle_t ModuleState::native(int variant) {
  LockGuard lock(mu_);
  ze_module_handle_t& m = native_[static_cast<size_t>(variant)];
  if (!m) m = build(variant);
  return m;
}

ze_module_handle_t ModuleState::build(int variant) {
  const int level = variant % kLevels;
  const bool stop = variant >= kLevels;
  if (stop && stop_spirv_.empty()) {
    try {
      stop_spirv_ = spirv_with_stop_checks(spirv_);
    } catch (const std::invalid_argument& e) {
      throw zex::InvalidArgument(std::string("zex: cannot build this module for launches with stop_on_throw: ") +
                                 e.what() + "; launch without stop_on_throw");
    }
  }
  const std::vector<uint32_t>& words = stop ? stop_spirv_ : spirv_;
  // The level, and the site base when zex numbered sites (the module declares the constant only then:
  // a driver refuses a constant the module does not declare).
  uint32_t ids[] = {ZEX_SPEC_ID_DEBUG_LEVEL, ZEX_SPEC_ID_SITE_BASE};
  int32_t value = level;
  uint32_t base = site_base_;
  const void* values[] = {&value, &base};
  ze_module_constants_t constants{sites_->empty() ? 1u : 2u, ids, values};
  ze_module_desc_t desc{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV,
                        words.size() * sizeof(uint32_t), reinterpret_cast<const uint8_t*>(words.data()), "",
                        &constants};
  ze_module_handle_t m = nullptr;
  ze_module_build_log_handle_t log = nullptr;
  ze_result_t r = zeModuleCreate(dev_->context, dev_->handle, &desc, &m, &log);
  if (r == ZE_RESULT_SUCCESS) {
    if (log) zeModuleBuildLogDestroy(log);
    record_strings(variant, m);
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
                "building the module for debug level " + std::to_string(level) + (stop ? " with stop_on_throw" : "") +
                    " on " + dev_->name,
                {}, text.empty() ? std::string("(the driver gave no build log)") : text);
}

// The second line of defence for a report's strings (docs/design.md, "Where strings live"): the
// driver's own answer for where each string zex's passes named ended up. A report address found here
// is read from the module's SPIR-V, on the host, whether or not zeMemGetAddressRange knows it. Best
// effort: a string the driver cannot place is left to zeMemGetAddressRange.
void ModuleState::record_strings(int variant, ze_module_handle_t m) {
  auto known = std::make_unique<KnownStrings>();
  for (const auto& [name, bytes] : zex_strings_) {
    size_t size = 0;
    void* p = nullptr;
    if (zeModuleGetGlobalPointer(m, name.c_str(), &size, &p) != ZE_RESULT_SUCCESS || !p) continue;
    known->add(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)), bytes);
  }
  if (!known->empty()) known_[static_cast<size_t>(variant)] = std::move(known);
}

}  // namespace detail

Module::Module(const Device& dev, const std::vector<uint32_t>& spirv_words, const ModuleOptions& options) {
  init(dev, spirv_words, options);
}

Module::Module(const Device& dev, const std::string& spirv_bytes, const ModuleOptions& options) {
  if (spirv_bytes.size() < 256 && spirv_bytes.find('\0') == std::string::npos && spirv_bytes.size() >= 4 &&
      spirv_bytes.compare(spirv_bytes.size() - 4, 4, ".spv") == 0)
    throw zex::InvalidArgument("zex::Module: '" + spirv_bytes +
                                "' looks like a file name; zex::Module takes the SPIR-V itself: read the "
                                "file's bytes into a std::vector<char> and pass that");
  init(dev, detail::spirv_words(spirv_bytes.data(), spirv_bytes.size()), options);
}

Module::Module(const Device& dev, const void* data, size_t size_bytes, const ModuleOptions& options) {
  init(dev, detail::spirv_words(data, size_bytes), options);
}

namespace {

// ZEX_CHECK_MEMORY: "1" turns the memory checks on for every module, "0" or unset leaves each module's
// option; anything else is refused (a typo must not leave a user believing their kernels are checked).
bool check_memory_from_environment() {
  const char* e = std::getenv("ZEX_CHECK_MEMORY");
  if (!e || !*e || std::strcmp(e, "0") == 0) return false;
  if (std::strcmp(e, "1") == 0) return true;
  throw zex::InvalidArgument(std::string("zex::Module: ZEX_CHECK_MEMORY='") + e +
                             "' is neither 0 nor 1; set ZEX_CHECK_MEMORY=1 to check every module's memory "
                             "accesses, 0 (or unset it) to follow each module's ModuleOptions");
}

}  // namespace

void Module::init(const Device& dev, const std::vector<uint32_t>& words, const ModuleOptions& options) {
  if (!dev) throw zex::InvalidArgument("zex::Module: empty zex::Device");
  const bool check_memory = options.check_memory || check_memory_from_environment();
  detail::MemoryCheckInfo memory;
  detail::LinkedModule linked = detail::link_module(words, nullptr, true, true, nullptr, check_memory ? &memory : nullptr);
  MemoryCheckCounts counts;
  std::vector<std::pair<std::string, detail::MemoryParams>> params;
  if (check_memory) {
    counts = MemoryCheckCounts{true, memory.checked, memory.loaded, memory.from_integer, memory.untraced, memory.local,
                               memory.merged};
    for (detail::MemoryCheckedKernel& k : memory.kernels)
      params.emplace_back(std::move(k.name), detail::MemoryParams{k.user_params, std::move(k.bounded), std::move(k.local)});
  }
  state_ = std::make_shared<detail::ModuleState>(dev, std::move(linked.words), std::move(linked.sites), counts,
                                                 std::move(params));
}

void Module::throw_moved_from(const char* what) {
  throw zex::LogicError(std::string("zex: use of a moved-from ") + what);
}

Kernel Module::kernel(const std::string& name) const {
  const auto& names = live().kernel_names();
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw zex::InvalidArgument("zex::Module::kernel: no kernel named '" + name +
                                "' in this module; its kernels are: " + detail::join_names(names));
  return Kernel(state_, name);
}

Kernel::Kernel(std::shared_ptr<detail::ModuleState> m, std::string name) : state_(std::make_shared<State>()) {
  state_->module = std::move(m);
  state_->device = &state_->module->device();
  state_->takes_state = state_->module->takes_state(name);
  state_->param_kinds = state_->module->param_kinds(name);
  if (const detail::MemoryParams* mp = state_->module->memory_params(name)) {
    state_->hidden = mp->bounded.empty() ? 0 : 1;
    state_->checked = mp->bounded;
    state_->checked_local = mp->local;
    for (uint32_t a : mp->bounded) {
      state_->bounds.push_back(State::Bounds{a});
      state_->bounds.back().local = std::find(mp->local.begin(), mp->local.end(), a) != mp->local.end();
    }
    state_->bounds_table.assign(2 * mp->bounded.size(), 0);
  }
  state_->name = std::make_shared<const std::string>(std::move(name));
}

Kernel::State::~State() {
  for (auto& l : levels)
    if (l.kernel) zeKernelDestroy(l.kernel);
}

void Kernel::State::create(int variant, Level& l) {
  ze_module_handle_t m = module->native(variant);
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
  // The report and claim word reach the kernel as integers, not as pointer arguments: the driver
  // must make host and device USM resident for it. A driver without the feature has nothing to make
  // resident, so UNSUPPORTED_FEATURE is not an error here.
  r = zeKernelSetIndirectAccess(k, ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST | ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE);
  if (r != ZE_RESULT_SUCCESS && r != ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) {
    zeKernelDestroy(k);
    check(r, "zeKernelSetIndirectAccess", ("declaring indirect access for kernel '" + *name + "'").c_str());
  }
  l.kernel = k;
  l.num_args = props.numKernelArgs;
  // A new ze kernel holds no hidden bounds yet: its first launch sets them.
  bounds_set_on &= ~(1u << static_cast<unsigned>(variant));
  // A launch reads param_kinds[i] for every argument it sets, so it must cover them all.
  if (param_kinds.size() != l.num_args) param_kinds.assign(l.num_args, detail::param_kind::kOther);
}

}  // namespace zex
