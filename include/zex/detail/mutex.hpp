// A std::mutex behind an opaque wall: lock() and unlock() are compiled (src/runtime/mutex.cpp), so headers
// that need a lock on the launch path do not make every includer parse <mutex> (and with it
// <chrono> and <system_error>): that was a tenth of the umbrella header's parse time
// (docs/benchmarks.md, "Header parse time"). The cost is a call per lock, nothing next to a launch.
#pragma once

#include <cstddef>

namespace zex {
namespace detail {

class Mutex {
 public:
  Mutex() noexcept;
  ~Mutex();
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  void lock();
  void unlock() noexcept;

 private:
  alignas(alignof(std::max_align_t)) unsigned char storage_[64];
};

/// std::lock_guard for Mutex.
class LockGuard {
 public:
  explicit LockGuard(Mutex& m) : m_(m) { m_.lock(); }
  ~LockGuard() { m_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  Mutex& m_;
};

}  // namespace detail
}  // namespace zex
