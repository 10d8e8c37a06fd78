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
//
// The files: fault_sweep.hpp (the entry table, what the others share), fault_sweep_child.cpp (the
// workload), fault_sweep_parent.cpp (the children and their judgement), and this one (the tests).
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

using namespace fault_sweep;

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
