// The fork() child handler (fork.hpp). Registered when the library is loaded: the loader loads
// zex-cpu from zeInit, so a process that can have workers has registered it.
#include "fork.hpp"

#include <pthread.h>

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

}  // namespace zexcpu
