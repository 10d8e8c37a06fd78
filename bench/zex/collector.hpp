// zex_bench's reporter: every repetition's time, so that main() prints ratios of medians and of the
// fastest repetitions.
#pragma once

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace zex_bench {

// Collects each benchmark's time per iteration (ns), every repetition, so that main() can print
// ratios of medians. Names lose their "/real_time" and "/manual_time" suffixes.
class Collector : public benchmark::ConsoleReporter {
 public:
  // Colors only on a terminal, so that logs and docs/benchmarks.md stay plain text.
  Collector() : ConsoleReporter(isatty(1) ? OO_Defaults : OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs) {
      if (r.error_occurred) continue;
      const bool median_of_reps = r.run_type == Run::RT_Aggregate && r.aggregate_name == "median";
      if (r.run_type != Run::RT_Iteration && !median_of_reps) continue;
      std::string name = r.run_name.str();
      for (const char* suffix : {"/real_time", "/manual_time"}) {
        const std::string sfx(suffix);
        if (name.size() > sfx.size() && name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0)
          name.resize(name.size() - sfx.size());
      }
      const double t = r.GetAdjustedRealTime() * to_ns(r.time_unit);
      const double c = r.GetAdjustedCPUTime() * to_ns(r.time_unit);
      if (median_of_reps) {
        medians[name] = t;
        cpu_medians[name] = c;
      } else {
        ns[name].push_back(t);
        cpu_ns[name].push_back(c);
      }
    }
    // The console shows the aggregates when there are repetitions; every run is recorded above.
    std::vector<Run> shown;
    for (const auto& r : runs)
      if (r.run_type == Run::RT_Aggregate || r.repetitions <= 1) shown.push_back(r);
    if (!shown.empty()) ConsoleReporter::ReportRuns(shown);
  }
  // The fastest repetition: the cost with the least interference from the rest of the machine.
  double fastest(const std::string& name, bool cpu = false) const {
    const auto& all = cpu ? cpu_ns : ns;
    auto it = all.find(name);
    if (it == all.end() || it->second.empty()) return 0.0;
    return *std::min_element(it->second.begin(), it->second.end());
  }
  // Google Benchmark's median over repetitions when there were repetitions, else ours; real time, or
  // the benchmark thread's CPU time (the host-side cost, insensitive to how the driver's worker
  // threads get scheduled on a busy machine).
  double median(const std::string& name, bool cpu = false) const {
    const auto& meds = cpu ? cpu_medians : medians;
    const auto& all = cpu ? cpu_ns : ns;
    auto m = meds.find(name);
    if (m != meds.end()) return m->second;
    auto it = all.find(name);
    if (it == all.end() || it->second.empty()) return 0.0;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  }
  static double to_ns(benchmark::TimeUnit u) {
    switch (u) {
      case benchmark::kSecond: return 1e9;
      case benchmark::kMillisecond: return 1e6;
      case benchmark::kMicrosecond: return 1e3;
      default: return 1.0;
    }
  }
  std::map<std::string, std::vector<double>> ns, cpu_ns;
  std::map<std::string, double> medians, cpu_medians;
};

}  // namespace zex_bench
