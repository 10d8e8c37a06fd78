// The fault-injection sweep (docs/reliability.md, "Fault-injection sweep"): every Level Zero entry
// point zex calls is made to fail at its 1st, 2nd and 3rd call in a process (zex-cpu's ZEX_CPU_FAIL),
// under a realistic workload, and each run must end in a zex::ZeError naming that call and result or
// in the degradation the code documents for it, and the same workload must then work fully again in
// the same process. No crash, no hang (each child is killed after a timeout), no leak under LSan.
//
// ZEX_CPU_FAIL is read once per process, so every rule runs in a child: FaultSweep.EveryCallAt1st2nd3rd
// re-executes this binary with ZEX_CPU_FAIL=<rule> and a filter selecting DISABLED_FaultSweepChild.Workload
// (disabled so that an ordinary run never executes the child half). The child runs the workload in
// rounds and prints one line per round; zex-cpu appends a line to ZEX_CPU_FAIL_LOG when the rule fires,
// so the parent tells a rule that fired from one whose n-th call never came.
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

namespace {

// ---------------------------------------------------------------------------------------------
// What each entry point's failure may end in (from the code that calls it; docs/reliability.md).

enum Allowed : unsigned {
  kZeError = 1,         // a zex::ZeError with call() == the entry point and result() == the injected one
  kSwallowed = 2,       // no visible change: a destroy or free whose result a destructor ignores, or a
                        // best-effort query with a fallback (zeModuleGetGlobalPointer)
  kNameUnreadable = 4,  // the exception is raised with every field right except a string the host had
                        // to read from device memory, shown as "<invalid address 0x...>"
};

struct EntrySpec {
  const char* name;
  ze_result_t result;  // what the rule injects
  unsigned allowed;
  const char* why;  // the documented outcome, for the table
};

constexpr ze_result_t kHost = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
constexpr ze_result_t kLost = ZE_RESULT_ERROR_DEVICE_LOST;

// Every Level Zero function zex calls (SweepList.CoversEveryCallZexMakes keeps this list equal to the
// calls in include/zex and src).
const EntrySpec kEntries[] = {
    {"zeInit", kHost, kZeError, "Context(): ZeError(zeInit); at n=1 the loader drops the driver"},
    {"zeDriverGet", kHost, kZeError, "Context(): ZeError(zeDriverGet)"},
    {"zeContextCreate", kHost, kZeError, "Context(): ZeError(zeContextCreate)"},
    {"zeContextDestroy", kLost, kSwallowed, "~ContextState ignores it"},
    {"zeDriverGetApiVersion", kLost, kSwallowed, "Context(): taken as API 1.0; streams wait through events"},
    {"zeDriverGetExtensionFunctionAddress", kLost, kSwallowed,
     "Context(): no host synchronize; streams wait through events"},
    {"zeDriverGetExtensionProperties", kLost, kSwallowed, "Context(): lists not known in order; events"},
    {"zeDeviceGet", kHost, kZeError, "Context(): ZeError"},
    {"zeDeviceGetProperties", kLost, kZeError | kSwallowed,
     "Context(): ZeError; its 2nd call per device (the device-loss watch's UUID): Info Log records not filtered"},
    {"zeDeviceGetCommandQueueGroupProperties", kLost, kZeError, "Context(): ZeError"},
    {"zeMemAllocHost", kHost, kZeError | kNameUnreadable | kSwallowed,
     "report slab: ZeError; string staging buffer: strings unread, or the thrower count unread (shown as 1)"},
    {"zeMemAllocDevice", ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, kZeError, "claim slab: ZeError"},
    {"zeMemFree", kLost, kSwallowed, "destructors ignore it"},
    // Only the C API calls it (zex_context_alloc_shared), which the sweep's C++ workload does not use, so
    // its rules do not fire here; c_api_test checks its failure (ZEX_ERROR_LEVEL_ZERO naming the call).
    {"zeMemAllocShared", kHost, kZeError, "C API only: zex_context_alloc_shared returns ZEX_ERROR_LEVEL_ZERO"},
    {"zeMemGetAddressRange", kLost, kNameUnreadable, "any failure is 'not found': <invalid address>"},
    {"zeCommandListCreateImmediate", kHost, kZeError, "stream or helper list: ZeError"},
    {"zeCommandListDestroy", kLost, kSwallowed, "destructors ignore it"},
    {"zeCommandListHostSynchronize", kLost, kZeError, "list path: synchronize() or ready(): ZeError"},
    {"zeCommandListAppendMemoryFill", kHost, kZeError, "slab zeroing or claim reset: ZeError, report kept"},
    {"zeCommandListAppendBarrier", kHost, kZeError | kNameUnreadable | kSwallowed,
     "slab zeroing: ZeError; string read: strings unread; thrower count read: shown as 1"},
    {"zeCommandListAppendMemoryCopy", kHost, kNameUnreadable | kSwallowed,
     "string read: strings unread; thrower count read (ABI 2): the count is shown as 1"},
    {"zeCommandListAppendLaunchKernel", kLost, kZeError, "launch: ZeError"},
    {"zeEventPoolCreate", kHost, kZeError, "stream or helper list: ZeError"},
    {"zeEventPoolDestroy", kLost, kSwallowed, "destructors ignore it"},
    {"zeEventCreate", kHost, kZeError, "stream event or helper list: ZeError"},
    {"zeEventDestroy", kLost, kSwallowed, "destructors ignore it"},
    {"zeEventHostSynchronize", kLost, kZeError | kNameUnreadable | kSwallowed,
     "stream wait or slab zeroing: ZeError; string read: strings unread; thrower count read: shown as 1"},
    {"zeEventHostReset", kLost, kZeError | kNameUnreadable | kSwallowed,
     "stream wait or slab zeroing: ZeError; string read: strings unread; thrower count read: shown as 1"},
    {"zeEventQueryStatus", kLost, kZeError, "Stream::ready(): ZeError"},
    {"zeKernelCreate", kHost, kZeError, "first launch at a level: ZeError"},
    {"zeKernelDestroy", kLost, kSwallowed, "destructors ignore it"},
    {"zeKernelGetProperties", kLost, kZeError, "first launch at a level: ZeError"},
    {"zeKernelSetIndirectAccess", kLost, kZeError, "first launch at a level: ZeError"},
    {"zeKernelSetGroupSize", kLost, kZeError, "launch: ZeError"},
    {"zeKernelSetArgumentValue", kLost, kZeError, "launch: ZeError"},
    {"zeModuleCreate", ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, kZeError, "first launch at a level: ZeError"},
    {"zeModuleDestroy", kLost, kSwallowed, "destructors ignore it"},
    {"zeModuleGetGlobalPointer", kLost, kSwallowed,
     "best effort: that string is read through zeMemGetAddressRange instead"},
    {"zeModuleBuildLogDestroy", kLost, kSwallowed, "ignored (success and failure paths)"},
    {"zeModuleBuildLogGetString", kLost, kSwallowed,
     "only after a real build failure, which the workload has none of"},
    // A device-loss report (src/runtime/device_report.cpp): snapshots at Context(), collection only after a
    // call answered DEVICE_LOST. Every one is best effort: the report says what could not be read. The
    // collection's calls never fire here (no rule loses the device); zex_device_lost_faults injects
    // them during a real loss (tests/runtime/device_lost_test.cpp).
    {"zeDeviceGetStatus", kHost, kSwallowed, "only while collecting a device-loss report: that device is not picked"},
    {"zeDeviceGetSubDevices", kHost, kZeError | kSwallowed,
     "Context(): the watch knows only the device's own UUID; Device::sub_devices(): ZeError (not in the workload)"},
    {"zesDeviceGetState", kHost, kSwallowed, "only while collecting a report: the state says 'unavailable'"},
    {"zesDeviceEnumRasErrorSets", kHost, kSwallowed, "Context(): the report notes the RAS counters as unread"},
    {"zesRasGetProperties", kHost, kSwallowed, "Context(): that RAS set is named by its index"},
    {"zesRasGetState", kHost, kSwallowed, "Context(): that set's snapshot counts from 0"},
    {"zesDriverEnumInfoLogsExt", kHost, kSwallowed, "Context(): the report says why there is no Info Log"},
    {"zesInfoLogGetPropertiesExt", kHost, kSwallowed, "Context(): that info log is skipped"},
    {"zesInfoLogCreateInstanceExt", kHost, kSwallowed, "Context(): the report says why there is no Info Log"},
    {"zesInfoLogInstanceReadWithMetadataExt", kHost, kSwallowed, "only while collecting: the report notes it"},
    {"zesInfoLogInstancePeekWithMetadataExt", kHost, kSwallowed, "zex peeks only at a shared default buffer"},
    {"zesInfoLogInstanceDeleteExt", kLost, kSwallowed, "~ContextState ignores it"},
};

std::string result_str(ze_result_t r) {
  const char* n = zex::result_name(r);
  return n ? n : std::to_string(static_cast<unsigned>(r));
}

// ---------------------------------------------------------------------------------------------
// The child: the workload, in rounds.

struct Round {
  std::string outcome = "ok";  // ok | zeerror | error (an exception zex should not have thrown)
  std::string step;            // where the ZeError or error came from
  std::string call, result;    // of the ZeError
  std::set<std::string> degraded;
  std::vector<std::string> failures;  // checks that did not hold
};

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

// ---------------------------------------------------------------------------------------------
// The parent: one child per rule, a few at a time, each killed after a timeout.

struct Child {
  std::string rule;        // ZEX_CPU_FAIL, empty for the baseline
  const EntrySpec* spec = nullptr;  // nullptr for the baseline
  unsigned n = 0;
  std::string out_path, log_path;
  pid_t pid = -1;
  std::chrono::steady_clock::time_point start;
  bool timed_out = false;
  int status = 0;
  double seconds = 0;
};

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> v;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      v.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  v.push_back(cur);
  return v;
}

bool spawn(Child& c) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    if (s.rfind("ZEX_CPU_FAIL", 0) == 0 || s.rfind("GTEST_", 0) == 0 ||
        s.rfind("ZEX_CPU_LENIENT_ADDRESS_RANGE=", 0) == 0)
      continue;
    env.push_back(s);
  }
  if (!c.rule.empty()) env.push_back("ZEX_CPU_FAIL=" + c.rule);
  // Under -DZEX_SANITIZE=ON: a destroy the driver refused leaks that object by definition (zex
  // ignores the result in a destructor and cannot retry; LSan reports the context, event pool or
  // kernel), so those children alone run without LSan's leak check. Every other child, the baseline
  // and zeMemFree's included (zex-cpu keeps a USM block it did not free reachable), keeps it.
  if (c.spec && std::strstr(c.spec->name, "Destroy")) {
    auto it = std::find_if(env.begin(), env.end(), [](const std::string& s) { return s.rfind("ASAN_OPTIONS=", 0) == 0; });
    if (it == env.end())
      env.push_back("ASAN_OPTIONS=detect_leaks=0");
    else
      *it += ":detect_leaks=0";
  }
  env.push_back("ZEX_CPU_FAIL_LOG=" + c.log_path);
  env.push_back("ZEX_CPU_LENIENT_ADDRESS_RANGE=1");
  env.push_back("ZEX_SWEEP_CHILD=1");
  std::vector<char*> envp;
  for (auto& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=DISABLED_FaultSweepChild.Workload";
  std::string also = "--gtest_also_run_disabled_tests";
  char exe[] = "/proc/self/exe";
  char* argv[] = {exe, filter.data(), also.data(), nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, c.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  // Its own process group, so that a hung child is killed with the processes it forked (zex-cpu
  // translates SPIR-V in a forked child).
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  ::unlink(c.log_path.c_str());
  int rc = posix_spawn(&c.pid, exe, &fa, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  c.start = std::chrono::steady_clock::now();
  return rc == 0;
}

unsigned env_unsigned(const char* name, unsigned dflt) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<unsigned>(std::strtoul(v, nullptr, 10)) : dflt;
}

// Runs every child, at most `jobs` at a time; each is killed (and marked) after `timeout_s`.
void run_all(std::vector<Child>& children, unsigned jobs, unsigned timeout_s) {
  size_t next = 0;
  std::vector<Child*> live;
  while (next < children.size() || !live.empty()) {
    while (next < children.size() && live.size() < jobs) {
      Child& c = children[next++];
      if (spawn(c)) {
        live.push_back(&c);
      } else {
        c.status = -1;
      }
    }
    for (auto it = live.begin(); it != live.end();) {
      Child& c = **it;
      int st = 0;
      pid_t p = waitpid(c.pid, &st, WNOHANG);
      const double el =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count();
      if (p == c.pid) {
        c.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        c.seconds = el;
        it = live.erase(it);
        continue;
      }
      if (el > timeout_s) {
        c.timed_out = true;
        ::kill(-c.pid, SIGKILL);
        waitpid(c.pid, &st, 0);
        c.status = 128 + SIGKILL;
        c.seconds = el;
        it = live.erase(it);
        continue;
      }
      ++it;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

struct ParsedRound {
  int round = 0;
  bool fired = false;
  std::string outcome, step, call, result, degraded, failures;
};

std::vector<ParsedRound> parse_rounds(const std::string& out) {
  std::vector<ParsedRound> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("SWEEP|", 0) != 0) continue;
    auto f = split(line, '|');
    if (f.size() < 9) continue;
    ParsedRound r;
    r.round = std::atoi(f[1].c_str());
    r.fired = f[2] == "1";
    r.outcome = f[3];
    r.step = f[4];
    r.call = f[5];
    r.result = f[6];
    r.degraded = f[7];
    r.failures = f[8];
    v.push_back(r);
  }
  return v;
}

bool is_ok(const ParsedRound& r) { return r.outcome == "ok" && r.degraded.empty() && r.failures.empty(); }

// Judges one child; returns its table row's outcome, and adds a failure (with the child's output)
// when the outcome is not one the code documents.
std::string judge(const Child& c, int* fired_count) {
  const std::string out = read_all(c.out_path);
  const std::string log = read_all(c.log_path);
  auto fail = [&](const std::string& why) {
    ADD_FAILURE() << (c.rule.empty() ? std::string("baseline (no rule)") : "ZEX_CPU_FAIL=" + c.rule) << ": "
                  << why << "\n--- child output ---\n"
                  << out << "--- ZEX_CPU_FAIL_LOG ---\n"
                  << log;
    return "FAIL: " + why;
  };
  if (c.timed_out) return fail("timed out (hang) after " + std::to_string(int(c.seconds)) + " s");
  if (c.status != 0) return fail("child exited with status " + std::to_string(c.status));
  auto rounds = parse_rounds(out);
  if (rounds.empty()) return fail("child printed no round");
  if (c.spec == nullptr) {
    if (!log.empty()) return fail("a fault fired without a rule");
    for (auto& r : rounds)
      if (!is_ok(r)) return fail("round " + std::to_string(r.round) + " not clean: " + r.failures);
    return "clean in " + std::to_string(rounds.size()) + " rounds";
  }
  const std::string expected_line =
      std::string(c.spec->name) + ":" + std::to_string(c.n) + ":" + result_str(c.spec->result) + "\n";
  size_t k = 0;
  while (k < rounds.size() && !rounds[k].fired) ++k;
  if (k == rounds.size()) {
    if (!log.empty()) return fail("the log has a line but no round saw it");
    for (auto& r : rounds)
      if (!is_ok(r)) return fail("rule never fired, yet round " + std::to_string(r.round) + " was not clean");
    return "not fired (" + std::to_string(rounds.size()) + " clean rounds: fewer calls per process)";
  }
  ++*fired_count;
  if (log != expected_line) return fail("ZEX_CPU_FAIL_LOG is '" + log + "', expected '" + expected_line + "'");
  if (std::string(c.spec->name) == "zeInit" && c.n == 1) {
    // The loader's own probe is the driver's first zeInit (docs/cpu-driver.md, "Fault injection"): the
    // loader unloads the driver for the rest of the process, so Context() must fail in every round,
    // naming zeInit, with whatever the loader then answers. Not zex's to recover from.
    for (auto& r : rounds)
      if (r.outcome != "zeerror" || r.call != "zeInit" || !r.failures.empty())
        return fail("round " + std::to_string(r.round) + " did not end in ZeError(zeInit)");
    return "ZeError(zeInit, " + rounds[0].result + ") in all " + std::to_string(rounds.size()) +
           " rounds: the loader drops a driver whose first zeInit failed (known, not zex's)";
  }
  for (size_t i = 0; i < k; ++i)
    if (!is_ok(rounds[i])) return fail("round before the fault not clean");
  const ParsedRound& f = rounds[k];
  std::string verdict;
  if (!f.failures.empty()) return fail("round " + std::to_string(f.round) + " (fault): " + f.failures);
  if (f.outcome == "zeerror") {
    if (!(c.spec->allowed & kZeError)) return fail("a ZeError where the code documents none");
    if (f.call != c.spec->name || f.result != result_str(c.spec->result))
      return fail("ZeError names " + f.call + " / " + f.result + ", not the injected call and result");
    verdict = "ZeError at '" + f.step + "'";
  } else if (f.outcome == "ok" && f.degraded.empty()) {
    if (!(c.spec->allowed & kSwallowed)) return fail("the fault fired and nothing happened");
    verdict = "swallowed";
  } else if (f.outcome == "ok" && f.degraded == "name-unreadable") {
    if (!(c.spec->allowed & kNameUnreadable)) return fail("a string was unreadable");
    verdict = "name shown as <invalid address>";
  } else {
    return fail("round " + std::to_string(f.round) + " ended in " + f.outcome);
  }
  if (k + 1 >= rounds.size()) return fail("no round after the fault");
  if (!is_ok(rounds[k + 1]))
    return fail("the round after the fault is not clean: " + rounds[k + 1].outcome + " " + rounds[k + 1].call +
                " " + rounds[k + 1].failures);
  return verdict + " (round " + std::to_string(f.round) + "), next round clean";
}

}  // namespace

// The child half: the workload in rounds until the rule fired, then one more; at most 3 rounds
// without a fault. One "SWEEP|round|fired|outcome|step|call|result|degraded|failures" line per round.
TEST(DISABLED_FaultSweepChild, Workload) {
  const char* log = std::getenv("ZEX_CPU_FAIL_LOG");
  ASSERT_TRUE(log && std::getenv("ZEX_SWEEP_CHILD")) << "run by FaultSweep.EveryCallAt1st2nd3rd";
  const auto spirv = zex_test::read_file(zex_test::kernel_spv());
  bool fired_before = false;
  for (int round = 1; round <= 4; ++round) {
    Round r = run_round(spirv);
    const bool fired = !fired_before && log_has_lines(log);
    std::string degraded, failures;
    for (auto& d : r.degraded) degraded += (degraded.empty() ? "" : ",") + d;
    for (auto& f : r.failures) failures += (failures.empty() ? "" : "; ") + f;
    std::printf("SWEEP|%d|%d|%s|%s|%s|%s|%s|%s\n", round, fired ? 1 : 0, r.outcome.c_str(), clean(r.step).c_str(),
                r.call.c_str(), r.result.c_str(), degraded.c_str(), clean(failures).c_str());
    std::fflush(stdout);
    if (fired_before) break;  // this was the round after the fault
    fired_before = fired;
    if (!fired && round == 3) break;
  }
}

TEST(FaultSweep, EveryCallAt1st2nd3rd) {
  if (!std::getenv("ZEX_TEST_SWEEP"))
    GTEST_SKIP() << "runs in the CTest entry zex_fault_sweep (ZEX_TEST_SWEEP=1, zex-cpu)";
  const auto t0 = std::chrono::steady_clock::now();
  std::string dir = std::filesystem::temp_directory_path() / "zex-sweep-XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  std::vector<Child> children;
  // The baseline first: the workload itself must be clean without a fault (and it fills PoCL's cache).
  children.push_back(Child{});
  // ZEX_SWEEP_SHARD=k/n (CTest runs the sweep as several entries, so that they share the cores): the
  // rules whose place in the list is k modulo n; the baseline runs in every shard.
  unsigned shard = 0, shards = 1;
  if (const char* v = std::getenv("ZEX_SWEEP_SHARD")) {
    ASSERT_EQ(std::sscanf(v, "%u/%u", &shard, &shards), 2) << "ZEX_SWEEP_SHARD=" << v << ": expected k/n";
    ASSERT_TRUE(shards > 0 && shard < shards) << "ZEX_SWEEP_SHARD=" << v << ": expected 0 <= k < n";
  }
  size_t place = 0;
  for (const auto& e : kEntries)
    for (unsigned n = 1; n <= 3; ++n) {
      if (place++ % shards != shard) continue;
      Child c;
      c.spec = &e;
      c.n = n;
      c.rule = std::string(e.name) + ":" + std::to_string(n) + ":" + result_str(e.result);
      children.push_back(c);
    }
  for (size_t i = 0; i < children.size(); ++i) {
    children[i].out_path = dir + "/child" + std::to_string(i) + ".out";
    children[i].log_path = dir + "/child" + std::to_string(i) + ".log";
  }
  const unsigned jobs = std::max(1u, env_unsigned("ZEX_SWEEP_JOBS", 4));
  const unsigned timeout = env_unsigned("ZEX_SWEEP_TIMEOUT", 120);
  {
    std::vector<Child> first(children.begin(), children.begin() + 1);
    run_all(first, 1, timeout);
    children[0] = first[0];
  }
  std::vector<Child> rest(children.begin() + 1, children.end());
  run_all(rest, jobs, timeout);
  std::copy(rest.begin(), rest.end(), children.begin() + 1);

  int fired = 0, tried = 0;
  std::map<std::string, int> outcomes;
  std::ostringstream table;
  table << "| rule | outcome | seconds |\n|---|---|---|\n";
  for (auto& c : children) {
    const std::string verdict = judge(c, &fired);
    if (c.spec) ++tried;
    std::string kind = verdict.substr(0, verdict.find(" ("));
    if (kind.rfind("ZeError at", 0) == 0) kind = "ZeError";
    if (kind.rfind("ZeError(zeInit", 0) == 0) kind = "ZeError in every round (loader)";
    ++outcomes[kind];
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.1f", c.seconds);
    table << "| " << (c.rule.empty() ? "(baseline, no rule)" : c.rule) << " | " << verdict << " | " << secs
          << " |\n";
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  table << "\nrules tried: " << tried << ", fired: " << fired << "; outcomes:";
  for (auto& [k, v] : outcomes) table << " " << k << " " << v << ";";
  table << " " << jobs << " children at a time, " << static_cast<int>(total) << " s\n";
  std::cout << table.str();
  if (const char* report = std::getenv("ZEX_SWEEP_REPORT")) std::ofstream(report) << table.str();
  // A rule that can fire must fire: the whole sweep firing almost nothing would mean the injection or
  // the log broke, not that zex is robust.
  EXPECT_GE(fired, tried / 2) << "fewer than half the rules fired: is ZEX_CPU_FAIL_LOG written?";
  std::filesystem::remove_all(dir);
}

// The sweep's list must be the calls zex makes: a new call in include/zex, src or common (the Sysman
// declarations zex shares with zex-cpu) fails here until it
// is added to kEntries (with its documented outcome), and a call zex no longer makes must leave it.
TEST(SweepList, CoversEveryCallZexMakes) {
  // `\bze[A-Z][A-Za-z]+\(` scanned by hand: std::regex draws -Wmaybe-uninitialized from GCC 12's
  // own headers in the sanitizer build.
  auto is_ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  auto is_alpha = [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; };
  std::set<std::string> used;
  for (const char* sub : {"include/zex", "src", "common"}) {
    for (auto& p : std::filesystem::recursive_directory_iterator(std::string(ZEX_SOURCE_DIR) + "/" + sub)) {
      if (!p.is_regular_file()) continue;
      const std::string text = read_all(p.path().string());
      for (size_t i = text.find("ze"); i != std::string::npos; i = text.find("ze", i + 1)) {
        if (i > 0 && is_ident(text[i - 1])) continue;
        // ze[A-Z]... or zes[A-Z]... (Sysman)
        const size_t k = i + 2 < text.size() && text[i + 2] == 's' ? i + 3 : i + 2;
        if (k >= text.size() || !std::isupper(static_cast<unsigned char>(text[k]))) continue;
        size_t j = k + 1;
        while (j < text.size() && is_alpha(text[j])) ++j;
        if (j < text.size() && text[j] == '(') used.insert(text.substr(i, j - i));
      }
    }
  }
  ASSERT_GT(used.size(), 20u) << "found almost no ze calls under " << ZEX_SOURCE_DIR;
  std::set<std::string> listed;
  for (const auto& e : kEntries) listed.insert(e.name);
  for (const auto& u : used)
    EXPECT_TRUE(listed.count(u)) << u << " is called in include/zex, src or common but is not in the sweep's kEntries "
                                 << "(tests/runtime/fault_sweep_test.cpp): add it with its documented outcome";
  for (const auto& l : listed)
    EXPECT_TRUE(used.count(l)) << l << " is in the sweep's kEntries but no longer called by zex: remove it";
}
