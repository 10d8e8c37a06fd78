// What the benchmarks that time whole passes share (bench/corpus, bench/memory): the process's CPU time,
// the timed loop, and a reporter that keeps every repetition's wall time and `proc_cpu_ms` counter by benchmark name
// (without "/manual_time"), for main()'s ratios of medians and of the fastest repetitions.
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <map>
#include <string>
#include <vector>

namespace zex_bench_timing {

// The whole process's CPU time (the driver's worker threads included), in seconds: the work a pass
// costs, less sensitive than its wall time to how a shared machine schedules those threads.
inline double process_cpu() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
// The calling thread's CPU time, in seconds: what a host call costs its caller, without the driver's
// worker threads running the kernels it queued.
inline double thread_cpu() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

// The timed loop of a benchmark: `prepare()` (refilling buffers) outside the timed region, `run()` timed
// by the wall clock (the benchmark's manual time) and by the process's CPU time (counter proc_cpu_ms).
template <class Prepare, class Run>
void time_passes(benchmark::State& state, Prepare prepare, Run run) {
  double cpu = 0;
  for (auto _ : state) {
    prepare();
    const double c0 = process_cpu();
    const auto t0 = std::chrono::steady_clock::now();
    run();
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    cpu += process_cpu() - c0;
  }
  state.counters["proc_cpu_ms"] = 1e3 * cpu / static_cast<double>(state.iterations());
}

class Collector : public benchmark::ConsoleReporter {
 public:
  Collector() : ConsoleReporter(OO_Tabular) {}
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const auto& r : runs)
      if (!r.error_occurred && r.run_type == Run::RT_Iteration) {
        std::string name = r.run_name.str();
        const std::string sfx = "/manual_time";
        if (name.size() > sfx.size() && name.compare(name.size() - sfx.size(), sfx.size(), sfx) == 0)
          name.resize(name.size() - sfx.size());
        wall[name].push_back(r.GetAdjustedRealTime());
        auto c = r.counters.find("proc_cpu_ms");
        if (c != r.counters.end()) cpu[name].push_back(c->second.value);
        auto k = r.counters.find("call_cpu_us");
        if (k != r.counters.end()) call[name].push_back(k->second.value);
      }
    ConsoleReporter::ReportRuns(runs);
  }
  // wall: in the benchmark's unit; cpu: the proc_cpu_ms counter; call: the call_cpu_us counter, where a
  // benchmark sets one (the calling thread's CPU time in the calls it times apart).
  std::map<std::string, std::vector<double>> wall, cpu, call;
};

inline double min_of(const std::vector<double>& v) { return v.empty() ? 0.0 : *std::min_element(v.begin(), v.end()); }
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace zex_bench_timing
