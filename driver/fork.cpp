// The fork() child handler (fork.hpp). Registered when the library is loaded: the loader loads
// zex-cpu from zeInit, so a process that can have workers has registered it.
#include "fork.hpp"

#include <pthread.h>

#include <new>
#include <vector>

namespace zexcpu {
namespace {

bool g_forked_child = false;  // written only in the child, before fork() returns there

void on_fork_child() { g_forked_child = true; }

const int g_registered = pthread_atfork(nullptr, nullptr, on_fork_child);

}  // namespace

bool forked_child() noexcept {
  (void)g_registered;
  return g_forked_child;
}

void keep_inherited(const void* object) noexcept {
  // Only a fork() child calls this, and it has one thread (its others were not copied). Never freed:
  // it must outlive every destructor that runs at the child's exit.
  static auto* kept = new (std::nothrow) std::vector<const void*>;
  if (!kept) return;
  try {
    kept->push_back(object);
  } catch (...) {  // out of memory: the object is still not released, only reported by LeakSanitizer
  }
}

}  // namespace zexcpu
