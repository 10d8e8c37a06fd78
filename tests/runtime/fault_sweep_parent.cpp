// The fault-injection sweep's parent: one child process per rule, a few at a time, each killed after a
// timeout, and the judgement of what each ended in (fault_sweep.hpp).
#include "fault_sweep.hpp"

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

extern char** environ;
namespace fault_sweep {

// ---------------------------------------------------------------------------------------------
// The parent: one child per rule, a few at a time, each killed after a timeout.

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
  } else if (f.outcome == "ok" && f.degraded == "no-immediate-append") {
    if (!(c.spec->allowed & kNoImmediateAppend)) return fail("Stream::execute was refused (no immediate append)");
    verdict = "Stream::execute refused: UNSUPPORTED_FEATURE";
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

}  // namespace fault_sweep
