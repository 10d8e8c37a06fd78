// The fault-injection sweep's child: the workload, in rounds, one line per round (fault_sweep.hpp).
#include "fault_sweep.hpp"

#include <zex/graph.hpp>

#include <optional>

#include "zex_fixture.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace fault_sweep {

// ---------------------------------------------------------------------------------------------
// The child: the workload, in rounds.

std::string clean(std::string s) {
  for (char& c : s)
    if (c == '|' || c == '\n' || c == '\r') c = ' ';
  return s;
}

// The kernels write here: plain host memory, which zex-cpu (PoCL's CPU device) accepts as a pointer
// argument. A USM buffer would make the harness call zeMemAllocShared and zeMemFree itself, and its
// zeMemFree would take one of the call numbers the sweep means for zex's own.
alignas(64) uint32_t g_buffer[16];
uint32_t* const g_count = g_buffer;

Round run_round(const std::vector<uint8_t>& spirv) {
  Round r;
  // ZEX_SWEEP_TRACE=1: each step on stderr with its start time, to see where a slow or hung child is.
  static const bool trace = std::getenv("ZEX_SWEEP_TRACE") != nullptr;
  const auto t0 = std::chrono::steady_clock::now();
  auto step = [&](std::string s) {
    r.step = std::move(s);
    if (trace)
      std::fprintf(stderr, "%8.3f s  %s\n",
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), r.step.c_str());
  };
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) r.failures.push_back(r.step + ": " + what);
  };
  try {
    step("Context()");
    zex::Context ctx;
    zex::Device dev = ctx.device(0);
    step("Module()");
    zex::Module mod(dev, spirv);
    zex::Kernel mt = mod.kernel("maybe_throw");
    zex::Kernel cn = mod.kernel("throw_computed_name");
    step("Stream() 1");
    zex::Stream s1(dev);
    step("Stream() 2");
    zex::Stream s2(dev);
    for (int level = 0; level <= 2; ++level) {
      const std::string at = " at level " + std::to_string(level);
      step("clean launch" + at);
      g_count[0] = 0;
      s1.launch(mt, zex_test::cfg1d(2, 4, level), g_count, uint32_t(0));
      s1.synchronize();
      expect(g_count[0] == 8, "count " + std::to_string(g_count[0]) + ", expected 8");
      step("throwing launch" + at);
      g_count[0] = 0;
      s1.launch(mt, zex_test::cfg1d(2, 4, level), g_count, uint32_t(1));
      try {
        s1.synchronize();
        expect(false, "no KernelException");
      } catch (const zex::KernelException& ex) {
        expect(g_count[0] == 7, "count " + std::to_string(g_count[0]) + ", expected 7 (the thrower returns, the others go on)");
        expect(ex.kernel_name() == "maybe_throw", "kernel_name '" + ex.kernel_name() + "'");
        expect(ex.debug_level() == level, "debug_level " + std::to_string(ex.debug_level()));
        // zex numbered the throw (issue 15): name, reason and frame from the module's table at every
        // level, the work-item at level 2.
        expect(ex.name() == "StreamError", "name '" + ex.name() + "'");
        expect(ex.reason() == "asked to throw", "reason '" + ex.reason() + "'");
        expect(!ex.frames().empty() && ex.frames()[0].function == "maybe_throw" &&
                   ex.frames()[0].file == zex_test::kernel_source(),
               "frame 0");
        if (level == 2)
          expect(ex.global_id() && (*ex.global_id() == std::array<uint64_t, 3>{0, 0, 0}), "global id");
        else
          expect(!ex.global_id(), "a global id below level 2");
      }
      // Stream::ready() (zeEventQueryStatus) on a clean launch, polled to its end.
      step("ready()" + at);
      s1.launch(mt, zex_test::cfg1d(2, 4, level), g_count, uint32_t(0));
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!s1.ready()) {
        if (std::chrono::steady_clock::now() > deadline) {
          expect(false, "ready() stayed false for 30 s");
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      s1.synchronize();
    }
    // A name the string pass cannot place: with ZEX_CPU_LENIENT_ADDRESS_RANGE=1 (set by the parent)
    // zeMemGetAddressRange finds it and the host reads it with a device-to-host copy on the helper list,
    // so this is the step that runs the validated-read path (docs/design.md, "Where strings live").
    // Twice, with different names: the second read reuses the helper list, its event and its staging
    // buffer, so a read that failed half-way must leave them fit for the next one (a stale event would
    // let the second read see the first name's bytes).
    for (uint32_t which : {1u, 0u}) {
      const std::string expected = which ? "SecondName" : "FirstName";
      step("computed name " + expected);
      s2.launch(cn, zex_test::cfg1d(2, 4, 1), which);
      try {
        s2.synchronize();
        expect(false, "no KernelException");
      } catch (const zex::KernelException& ex) {
        expect(ex.kernel_name() == "throw_computed_name", "kernel_name '" + ex.kernel_name() + "'");
        expect(ex.reason() == "a computed name", "reason '" + ex.reason() + "'");
        if (ex.name().rfind("<invalid address 0x", 0) == 0)
          r.degraded.insert("name-unreadable");
        else
          expect(ex.name() == expected, "name '" + ex.name() + "'");
      }
    }
    step("clean launch after");
    g_count[0] = 0;
    s2.launch(mt, zex_test::cfg1d(2, 4, 1), g_count, uint32_t(0));
    s2.synchronize();
    expect(g_count[0] == 8, "count " + std::to_string(g_count[0]) + ", expected 8");
    // A graph (issue 26), recorded once and executed three times; the second execution throws
    // (plan_throw reads plan[execution]). Counter and plan in g_buffer, for the reason above.
    step("Graph()");
    zex::Kernel ce = mod.kernel("count_execution");
    zex::Kernel pt = mod.kernel("plan_throw");
    uint32_t* counter = g_buffer + 8;
    uint32_t* plan = g_buffer + 9;
    counter[0] = 0;
    plan[0] = 0;
    plan[1] = 1;
    plan[2] = 0;
    zex::Graph graph(dev, "sweep");
    graph.launch(ce, zex_test::cfg1d(1, 1, 1), counter);
    const zex::GraphLaunch h_pt = graph.launch(pt, zex_test::cfg1d(1, 4, 1), static_cast<const uint32_t*>(plan),
                                               static_cast<const uint32_t*>(counter), uint32_t(3));
    step("Graph::close()");
    graph.close();
    step("Queue()");
    zex::Queue queue(dev);
    step("Queue::execute() x3");
    for (int i = 0; i < 3; ++i) queue.execute(graph);
    step("Queue::synchronize()");
    try {
      queue.synchronize();
      expect(false, "no KernelException from the graph");
    } catch (const zex::KernelException& ex) {
      expect(ex.execution() == std::optional<uint64_t>(1), "execution " + std::to_string(ex.execution().value_or(99)));
      expect(ex.executions_thrown() == 1, "executions_thrown " + std::to_string(ex.executions_thrown()));
      expect(ex.kernel_name() == "plan_throw", "kernel_name '" + ex.kernel_name() + "'");
    }
    expect(counter[0] == 3, "graph counter " + std::to_string(counter[0]) + ", expected 3");
    // The same graph on a stream (Stream::execute, immediate append): executions 3 and 4, 4 throws.
    // Without the entry point (its lookup failed), Stream::execute refuses with UNSUPPORTED_FEATURE.
    step("Stream::execute() x2");
    bool appended = true;
    try {
      s2.execute(graph);
    } catch (const zex::ZeError& ex) {
      if (ex.result() != ZE_RESULT_ERROR_UNSUPPORTED_FEATURE) throw;
      r.degraded.insert("no-immediate-append");
      appended = false;
    }
    if (appended) {
      s2.execute(graph);
      step("Stream::synchronize() of a graph");
      try {
        s2.synchronize();
        expect(false, "no KernelException from the graph on the stream");
      } catch (const zex::KernelException& ex) {
        expect(ex.execution() == std::optional<uint64_t>(4), "execution " + std::to_string(ex.execution().value_or(99)));
      }
      expect(counter[0] == 5, "graph counter " + std::to_string(counter[0]) + ", expected 5");
    }
    // Graph::update: in place on mutable command lists; recorded again with ZEX_GRAPH_UPDATE=rerecord
    // (the zex_fault_sweep_events entries). A plan of zeros: the next execution throws nothing.
    step("Graph::update()");
    uint32_t* plan2 = g_buffer + 12;
    plan2[0] = plan2[1] = plan2[2] = 0;
    const uint32_t before = counter[0];
    graph.update(h_pt, static_cast<const uint32_t*>(plan2), static_cast<const uint32_t*>(counter), uint32_t(3));
    step("Queue::execute() after Graph::update()");
    queue.execute(graph);
    queue.synchronize();
    expect(counter[0] == before + 1, "graph counter " + std::to_string(counter[0]) + " after the update, expected " +
                                         std::to_string(before + 1));
    // A throw nobody synchronizes for: ~Stream discards it (waits, resets the claim word).
    step("unsynchronized throw, then destroy");
    s2.launch(mt, zex_test::cfg1d(2, 4, 2), g_count, uint32_t(1));
  } catch (const zex::ZeError& ex) {
    r.outcome = "zeerror";
    r.call = ex.call();
    r.result = result_str(ex.result());
  } catch (const std::exception& ex) {
    r.outcome = "error";
    r.failures.push_back(r.step + ": unexpected exception: " + ex.what());
  }
  return r;
}

bool log_has_lines(const char* path) {
  std::ifstream f(path);
  std::string line;
  return static_cast<bool>(std::getline(f, line));
}

}  // namespace fault_sweep
