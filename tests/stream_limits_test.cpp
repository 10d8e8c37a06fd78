// zex::Stream at the edges of what docs/integration.md §7 promises (issue 24): an Event that raises on
// one thread while another thread destroys its stream, and the bound on launches queued behind an event
// that only the caller will signal (Stream::kMaxEvents).
#include "zex_fixture.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

using zex_test::cfg1d;
using zex_test::env;
using zex_test::Usm;

// "An event outlives its stream": also when the stream is destroyed on one thread while the event's
// wait raises through it on another. Each round the raise starts first and the destructor a little
// later (0 to 1 ms, a different delay each round), so that some rounds destroy the stream in the
// middle of the raise. The event either raises the launch's exception (it came first, and the
// destructor waited for it) or nothing (the destructor came first and dropped it). Before the fix the
// event went on reading the stream's report and runs while the destructor freed them: a heap
// use-after-free in Stream::Impl::find (ASan; TSan: ctest -L threads).
TEST(Stream, AnEventRaisesOnAnotherThreadWhileItsStreamIsDestroyed) {
  auto& e = env();
  zex::Kernel vadd = e.mod.kernel("vadd");
  Usm<float> a(1024), b(1024), c(1024);
  int raised = 0;
  const int rounds = 40;
  for (int round = 0; round < rounds; ++round) {
    auto s = std::make_unique<zex::Stream>(e.dev);
    s->launch(vadd, cfg1d(4, 256, 1), c.get(), a.get(), b.get(), 1000u);  // throws: 24 work-items out of bounds
    zex::Event ev = s->record();
    while (!ev.ready()) std::this_thread::yield();  // so that the other thread goes straight to the raise
    std::atomic<bool> ready{false}, go{false};
    std::string what;
    std::thread waiter([&] {
      ready.store(true, std::memory_order_release);
      while (!go.load(std::memory_order_acquire)) {
      }
      try {
        ev.synchronize();
      } catch (const zex::KernelException& ex) {
        what = ex.kernel_name() + " " + std::to_string(ex.launch_id()) + " " + std::to_string(ex.thrower_count());
      }
    });
    while (!ready.load(std::memory_order_acquire)) {
    }
    go.store(true, std::memory_order_release);
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(25 * round);
    while (std::chrono::steady_clock::now() < until) {
    }
    s.reset();
    waiter.join();
    if (!what.empty()) {
      EXPECT_EQ(what, "vadd 1 24");
      ++raised;
    }
    EXPECT_NO_THROW(ev.synchronize()) << "raised once, or dropped with the stream";
  }
  // Which thread wins varies; both outcomes are right. Shown for the record.
  std::printf("the event raised first in %d of %d rounds\n", raised, rounds);
}

