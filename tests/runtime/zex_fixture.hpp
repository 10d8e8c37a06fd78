// Shared setup of the zex library's tests: one context, device and module of test kernels per
// process (building a module runs the driver's compiler, which is slow), USM buffers, and the line
// numbers of the throws in tests/kernels/runtime/zex_test_kernels.cl.
#pragma once

#include <zex/zex.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace zex_test {

inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline const char* kernel_spv() { return ZEX_TEST_KERNEL_SPV; }
inline const char* kernel_source() { return ZEX_TEST_KERNEL_SOURCE; }

/// The line of tests/kernels/runtime/zex_test_kernels.cl that holds "LINE:<marker>".
inline uint32_t line_of(const std::string& marker) {
  std::ifstream f(kernel_source());
  std::string line;
  for (uint32_t n = 1; std::getline(f, line); ++n)
    if (line.find("LINE:" + marker) != std::string::npos) return n;
  throw std::runtime_error("no LINE:" + marker + " in " + std::string(kernel_source()));
}

struct Env {
  zex::Context ctx;
  zex::Device dev;
  zex::Module mod;
  Env() : ctx(), dev(ctx.device(0)), mod(dev, read_file(kernel_spv())) {}
};

/// The process's test environment. Deliberately never destroyed: its ze objects would otherwise be
/// destroyed after the loader's own teardown at exit.
inline Env& env() {
  static Env* e = new Env();
  return *e;
}

/// A shared-USM array of n T, zero-filled.
template <class T>
class Usm {
 public:
  explicit Usm(size_t n, ze_context_handle_t ctx = env().ctx.handle(), ze_device_handle_t dev = env().dev.handle())
      : ctx_(ctx), n_(n) {
    ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    void* p = nullptr;
    zex::check(zeMemAllocShared(ctx, &dd, &hd, n * sizeof(T) + 1, 64, dev, &p), "zeMemAllocShared");
    p_ = static_cast<T*>(p);
    for (size_t i = 0; i < n; ++i) p_[i] = T();
  }
  ~Usm() { zeMemFree(ctx_, p_); }
  Usm(const Usm&) = delete;
  Usm& operator=(const Usm&) = delete;
  T* get() const { return p_; }
  T& operator[](size_t i) { return p_[i]; }
  size_t size() const { return n_; }

 private:
  ze_context_handle_t ctx_;
  T* p_ = nullptr;
  size_t n_;
};

inline zex::LaunchConfig cfg1d(uint32_t groups, uint32_t size, int level = -1) {
  zex::LaunchConfig c;
  c.groups = {groups, 1, 1};
  c.group_size = {size, 1, 1};
  c.debug_level = level;
  return c;
}

/// True in the CTest entry zex_tests_fault_<name>, which sets ZEX_TEST_FAULT=<name> and a ZEX_CPU_FAIL
/// rule for the whole process (tests/runtime/CMakeLists.txt).
inline bool fault_run(const char* name) {
  const char* v = std::getenv("ZEX_TEST_FAULT");
  return v && std::string(v) == name;
}

/// Sets (or unsets, with nullptr) an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_.c_str(), old_.c_str(), 1);
    else
      unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_, old_;
  bool had_ = false;
};

/// Runs f, which must throw zex::KernelException, and returns a copy of it.
template <class F>
zex::KernelException expect_kernel_exception(F&& f) {
  try {
    f();
  } catch (const zex::KernelException& e) {
    return e;
  }
  throw std::runtime_error("expected a zex::KernelException, none was thrown");
}

/// Moves t onto itself through a reference, so that the compiler does not see the self-move.
template <class T>
void self_move(T& t) {
  T& alias = t;
  t = std::move(alias);
}

}  // namespace zex_test
