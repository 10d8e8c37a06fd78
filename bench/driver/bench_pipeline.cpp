// bench_driver: signalled launches pipelined like unsignalled ones, and one empty launch's latency through
// zex-cpu against PoCL directly, each interleaved with its baseline.
#include "bench_driver.hpp"

namespace zex_bench_driver {
namespace {

// ---------------------------------------------------------------------------------------------------------
// Pipelining of signalled launches, and single-launch latency against PoCL, each interleaved with its baseline
// in one benchmark so that both sides see the same machine state. One benchmark iteration is one sample of each
// side (order alternating); the counters are per-launch medians and bests over the samples and their ratios.

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
double best(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

/// kPipelineLaunches empty launches on one asynchronous immediate list. Signalled: every launch signals its own
/// event, the host waits on the last. Baseline: no event but on the last launch, which the host waits on.
/// Counters: µs per launch (median, best) of each side and signalled / unsignalled (target <= 1.2).
constexpr int kPipelineLaunches = 2000;

void BM_SignalledPipeline2000(benchmark::State& state) {
  ZeKernels& k = ze_kernels();
  if (!k.error.empty()) return state.SkipWithError(k.error.c_str());
  Ze& z = ze();
  ZeImmediate imm;
  if (!imm.ok) return state.SkipWithError("immediate list setup failed");
  ze_event_pool_handle_t pool = nullptr;
  ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE,
                             kPipelineLaunches};
  if (zeEventPoolCreate(z.context, &pd, 1, &z.device, &pool) != ZE_RESULT_SUCCESS)
    return state.SkipWithError("zeEventPoolCreate failed");
  std::vector<ze_event_handle_t> ev(kPipelineLaunches);
  for (uint32_t i = 0; i < uint32_t(kPipelineLaunches); ++i) {
    ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, i, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
    if (zeEventCreate(pool, &ed, &ev[i]) != ZE_RESULT_SUCCESS) return state.SkipWithError("zeEventCreate failed");
  }
  zeKernelSetGroupSize(k.empty, 1, 1, 1);
  ze_group_count_t gc = {1, 1, 1};
  // One timed sample: all launches appended, then one wait on the last launch's event.
  auto sample = [&](bool signalled) -> double {
    auto t0 = Clock::now();
    for (int i = 0; i < kPipelineLaunches; ++i) {
      bool last = i == kPipelineLaunches - 1;
      ze_event_handle_t e = signalled || last ? ev[i] : nullptr;
      if (zeCommandListAppendLaunchKernel(imm.list, k.empty, &gc, e, 0, nullptr) != ZE_RESULT_SUCCESS) return -1;
    }
    if (zeEventHostSynchronize(ev[kPipelineLaunches - 1], UINT64_MAX) != ZE_RESULT_SUCCESS) return -1;
    auto t1 = Clock::now();
    // Untimed: every event that was appended must be signalled by now (they retire in order), then reset.
    for (int i = 0; i < kPipelineLaunches; ++i) {
      bool used = signalled || i == kPipelineLaunches - 1;
      if (used && zeEventQueryStatus(ev[i]) != ZE_RESULT_SUCCESS) return -1;
      if (used) zeEventHostReset(ev[i]);
    }
    return 1e6 * seconds(t0, t1) / kPipelineLaunches;
  };
  if (sample(true) < 0 || sample(false) < 0) return state.SkipWithError("warm-up failed");  // PoCL compiles
  std::vector<double> sig, unsig, pair;
  bool sig_first = true;
  for (auto _ : state) {
    for (int side = 0; side < 2; ++side) {
      bool s = (side == 0) == sig_first;
      double us = sample(s);
      if (us < 0) return state.SkipWithError("launch, wait or event check failed");
      (s ? sig : unsig).push_back(us);
    }
    pair.push_back(sig.back() / unsig.back());
    sig_first = !sig_first;
  }
  for (ze_event_handle_t e : ev) zeEventDestroy(e);
  zeEventPoolDestroy(pool);
  state.counters["signalled_us_median"] = median(sig);
  state.counters["unsignalled_us_median"] = median(unsig);
  state.counters["signalled_us_best"] = best(sig);
  state.counters["unsignalled_us_best"] = best(unsig);
  state.counters["ratio_median"] = median(sig) / median(unsig);
  state.counters["ratio_best"] = best(sig) / best(unsig);
  state.counters["ratio_pair_median"] = median(pair);  // of each iteration's two neighbouring samples
}
BENCHMARK(BM_SignalledPipeline2000)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(41);

/// One empty launch with a signal event + zeEventHostSynchronize + zeEventHostReset on zex-cpu, against
/// clEnqueueNDRangeKernel + clFinish of the same kernel on PoCL directly. A sample is kLatencyBlock
/// round trips of one side. Counters: µs per round trip (median, best) and zex-cpu / PoCL (target <= 1.5).
constexpr int kLatencyBlock = 200;

void BM_EmptyLaunchLatency_ZexVsPocl(benchmark::State& state) {
  ZeKernels& k = ze_kernels();
  if (!k.error.empty()) return state.SkipWithError(k.error.c_str());
  Cl& c = cl();
  if (!c.error.empty()) return state.SkipWithError(c.error.c_str());
  ZeImmediate imm;
  if (!imm.ok) return state.SkipWithError("immediate list setup failed");
  zeKernelSetGroupSize(k.empty, 1, 1, 1);
  ze_group_count_t gc = {1, 1, 1};
  size_t g = 1, l = 1;
  auto sample = [&](bool zex) -> double {
    auto t0 = Clock::now();
    for (int i = 0; i < kLatencyBlock; ++i) {
      if (zex) {
        if (zeCommandListAppendLaunchKernel(imm.list, k.empty, &gc, imm.done, 0, nullptr) != ZE_RESULT_SUCCESS ||
            zeEventHostSynchronize(imm.done, UINT64_MAX) != ZE_RESULT_SUCCESS ||
            zeEventHostReset(imm.done) != ZE_RESULT_SUCCESS)
          return -1;
      } else if (clEnqueueNDRangeKernel(c.queue, c.empty, 1, nullptr, &g, &l, 0, nullptr, nullptr) != CL_SUCCESS ||
                 clFinish(c.queue) != CL_SUCCESS) {
        return -1;
      }
    }
    return 1e6 * seconds(t0, Clock::now()) / kLatencyBlock;
  };
  if (sample(true) < 0 || sample(false) < 0) return state.SkipWithError("warm-up failed");
  std::vector<double> zs, cs, pair;
  bool zex_first = true;
  for (auto _ : state) {
    for (int side = 0; side < 2; ++side) {
      bool zex = (side == 0) == zex_first;
      double us = sample(zex);
      if (us < 0) return state.SkipWithError(zex ? "zex-cpu launch failed" : "PoCL launch failed");
      (zex ? zs : cs).push_back(us);
    }
    pair.push_back(zs.back() / cs.back());
    zex_first = !zex_first;
  }
  state.counters["zex_us_median"] = median(zs);
  state.counters["pocl_us_median"] = median(cs);
  state.counters["zex_us_best"] = best(zs);
  state.counters["pocl_us_best"] = best(cs);
  state.counters["ratio_median"] = median(zs) / median(cs);
  state.counters["ratio_best"] = best(zs) / best(cs);
  state.counters["ratio_pair_median"] = median(pair);
}
BENCHMARK(BM_EmptyLaunchLatency_ZexVsPocl)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(41);

}  // namespace
}  // namespace zex_bench_driver
