// fork(): a child of a process that has loaded zex-cpu inherits its objects (lists, queues, events,
// memory) but not its worker threads, and the locks those threads held stay held. Nothing inherited
// can work in the child, so every entry point answers at once instead of waiting for threads that do
// not exist (docs/cpu-driver.md, "fork()").
#pragma once

namespace zexcpu {

/// True in a child of fork() (pthread_atfork, registered when zex-cpu is loaded; fork.cpp).
bool forked_child() noexcept;

/// In a fork() child: records an inherited object that the child asked to destroy. Nothing is
/// released (the parent owns it); the record keeps it reachable until the child exits.
void keep_inherited(const void* object) noexcept;

}  // namespace zexcpu
