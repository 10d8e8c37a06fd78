// Runs a corpus case (corpus_cases.hpp) three ways, on buffers filled the same way each time: the
// unchanged kernel through raw Level Zero (its own module from the plain SPIR-V, a command queue and
// list), the unchanged kernel through zex::Module + zex::Stream, and the checked copy through zex with
// the buffers' lengths appended. Shared by the tests and the benchmark.
#pragma once

#include "corpus_cases.hpp"

#include <zex/zex.hpp>

#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace corpus {

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path + " (built by tests/corpus/CMakeLists.txt)");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

/// The case's buffers as shared USM, freshly filled.
class Buffers {
 public:
  Buffers(const zex::Context& ctx, const zex::Device& dev, const Case& c) : ctx_(ctx.handle()) {
    for (const Buffer& b : c.buffers) {
      ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
      ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
      void* p = nullptr;
      zex::check(zeMemAllocShared(ctx_, &dd, &hd, bytes(b), 64, dev.handle(), &p), "zeMemAllocShared");
      ptrs_.push_back(p);
      fill(b, p);
    }
  }
  ~Buffers() {
    for (void* p : ptrs_) zeMemFree(ctx_, p);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  void* const& operator[](size_t i) const { return ptrs_.at(i); }
  size_t size() const { return ptrs_.size(); }

 private:
  ze_context_handle_t ctx_;
  std::vector<void*> ptrs_;
};

/// The unchanged kernel's arguments as (size, pointer) pairs; a null pointer is a __local parameter.
inline std::vector<zex::KernelArg> plain_args(const Case& c, const Buffers& b) {
  std::vector<zex::KernelArg> out;
  for (const Arg& a : c.args) switch (a.kind) {
      case Arg::Buf: out.push_back({sizeof(void*), &b[static_cast<size_t>(a.i)]}); break;
      case Arg::I32: out.push_back({4, &a.i}); break;
      case Arg::F32: out.push_back({4, &a.f}); break;
      case Arg::Local: out.push_back({a.bytes, nullptr}); break;
    }
  return out;
}

/// The checked copy's arguments: the unchanged ones, then each buffer's length (32-bit, elements),
/// `lengths` (which must outlive the launch).
inline std::vector<zex::KernelArg> checked_args(const Case& c, const Buffers& b, const std::vector<uint32_t>& lengths) {
  std::vector<zex::KernelArg> out = plain_args(c, b);
  for (const uint32_t& n : lengths) out.push_back({4, &n});
  return out;
}

inline std::vector<uint32_t> lengths(const Case& c) {
  std::vector<uint32_t> n;
  for (const Buffer& b : c.buffers) n.push_back(static_cast<uint32_t>(b.count));
  return n;
}

/// Where CMake put the corpus's SPIR-V: <dir>/<suite>/<program>.spv and <dir>/checked/<program>.spv.
struct Paths {
  std::string spv_dir;
  std::string plain(const Case& c) const { return spv_dir + "/" + c.suite + "/" + c.program + ".spv"; }
  std::string checked(const Case& c) const { return spv_dir + "/checked/" + c.program + ".spv"; }
  /// The checked copy built with returns/zex/device.h (its checks as plain returns).
  std::string returns(const Case& c) const { return spv_dir + "/returns/" + c.program + ".spv"; }
};

/// zex::Modules by path, built once per process (each build runs the driver's compiler).
class Modules {
 public:
  explicit Modules(const zex::Device& dev) : dev_(dev) {}
  zex::Module& get(const std::string& path) {
    auto it = mods_.find(path);
    if (it == mods_.end()) it = mods_.emplace(path, std::make_unique<zex::Module>(dev_, read_bytes(path))).first;
    return *it->second;
  }

 private:
  zex::Device dev_;
  std::map<std::string, std::unique_ptr<zex::Module>> mods_;
};

/// Sets the kernel's group size and arguments and appends its launch to `list`.
inline void append_launch(ze_command_list_handle_t list, ze_kernel_handle_t k, const Case& c,
                          const std::vector<zex::KernelArg>& args) {
  zex::check(zeKernelSetGroupSize(k, c.group_size.x, c.group_size.y, c.group_size.z), "zeKernelSetGroupSize");
  for (size_t i = 0; i < args.size(); ++i)
    zex::check(zeKernelSetArgumentValue(k, static_cast<uint32_t>(i), args[i].size, args[i].value),
               "zeKernelSetArgumentValue");
  const ze_group_count_t g{c.groups.x, c.groups.y, c.groups.z};
  zex::check(zeCommandListAppendLaunchKernel(list, k, &g, nullptr, 0, nullptr), "zeCommandListAppendLaunchKernel");
}

/// The unchanged kernel through plain Level Zero: a module of the plain SPIR-V, one launch on a
/// command list executed on a synchronous queue. Throws zex::ZeError with the build log on failure.
class RawKernel {
 public:
  RawKernel(const zex::Context& ctx, const zex::Device& dev, const std::string& spv_path, const std::string& kernel)
      : ctx_(ctx.handle()), dev_(dev.handle()) {
    const std::vector<uint8_t> spv = read_bytes(spv_path);
    ze_module_desc_t md{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(), spv.data(), "",
                        nullptr};
    ze_module_build_log_handle_t log = nullptr;
    ze_result_t r = zeModuleCreate(ctx_, dev_, &md, &mod_, &log);
    std::string text;
    if (r != ZE_RESULT_SUCCESS && log) {
      size_t n = 0;
      zeModuleBuildLogGetString(log, &n, nullptr);
      text.resize(n);
      zeModuleBuildLogGetString(log, &n, text.data());
    }
    if (log) zeModuleBuildLogDestroy(log);
    if (r != ZE_RESULT_SUCCESS) throw std::runtime_error("zeModuleCreate(" + spv_path + ") failed: " + text);
    ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, kernel.c_str()};
    zex::check(zeKernelCreate(mod_, &kd, &kernel_), "zeKernelCreate");
    ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                               ZE_COMMAND_QUEUE_MODE_SYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    zex::check(zeCommandQueueCreate(ctx_, dev_, &qd, &queue_), "zeCommandQueueCreate");
    ze_command_list_desc_t ld{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, 0, 0};
    zex::check(zeCommandListCreate(ctx_, dev_, &ld, &list_), "zeCommandListCreate");
  }
  ~RawKernel() {
    if (list_) zeCommandListDestroy(list_);
    if (queue_) zeCommandQueueDestroy(queue_);
    if (kernel_) zeKernelDestroy(kernel_);
    if (mod_) zeModuleDestroy(mod_);
  }
  RawKernel(const RawKernel&) = delete;
  RawKernel& operator=(const RawKernel&) = delete;

  ze_kernel_handle_t handle() const noexcept { return kernel_; }

  void run(const Case& c, const std::vector<zex::KernelArg>& args) {
    zex::check(zeCommandListReset(list_), "zeCommandListReset");
    append_launch(list_, kernel_, c, args);
    zex::check(zeCommandListClose(list_), "zeCommandListClose");
    zex::check(zeCommandQueueExecuteCommandLists(queue_, 1, &list_, nullptr), "zeCommandQueueExecuteCommandLists");
    zex::check(zeCommandQueueSynchronize(queue_, UINT64_MAX), "zeCommandQueueSynchronize");
  }

 private:
  ze_context_handle_t ctx_;
  ze_device_handle_t dev_;
  ze_module_handle_t mod_ = nullptr;
  ze_kernel_handle_t kernel_ = nullptr;
  ze_command_queue_handle_t queue_ = nullptr;
  ze_command_list_handle_t list_ = nullptr;
};

inline zex::LaunchConfig config(const Case& c, int level) {
  zex::LaunchConfig cfg;
  cfg.groups = c.groups;
  cfg.group_size = c.group_size;
  cfg.debug_level = level;
  return cfg;
}

}  // namespace corpus
