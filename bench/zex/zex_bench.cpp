// zex library benchmarks, all in one run so that ratios compare like with like:
//  - launch + synchronize through zex vs the same launch through raw Level Zero (same kernel, same
//    arguments, an event per launch as zex uses), with 1, 100 and 1000 live zex streams;
//  - the launch call alone (host side), zex vs raw, at the same stream counts;
//  - a batch of 32 launches and one synchronize, zex vs raw, at the same stream counts;
//  - 2000 queued launches per synchronize of an empty kernel, in 1-item groups and in 64-item groups
//    (1 and 16 of them), zex vs raw (an event on the last launch only), at the same stream counts;
//  - a no-throw synchronize() vs a raw host wait on a launch whose event is already signaled;
//  - the time from synchronize() to a caught KernelException at debug levels 0, 1 and 2;
//  - launch + synchronize, and the launch call alone, through the C API (<zex/zex.h>, libzex.so) vs the
//    C++ API, 1 stream (target: C API <= 1.10x C++).
// At the end it prints the ratios (zex / raw) computed from this run's numbers.
//
//   ZE_ENABLE_ALT_DRIVERS=<build>/driver/libze_zex_cpu.so zex_bench <kernels.spv> [benchmark flags]
//   (or: cmake --build <build> --target run-bench-zex)
//
// The benchmarks are in launch_bench.cpp and queued_bench.cpp, their shared parts in bench_env.*, the
// reporter in collector.hpp; this file registers them (in an order that alternates raw and zex) and
// prints the ratios.
#include "bench_env.hpp"
#include "collector.hpp"

#include <cstdio>
#include <string>

using namespace zex_bench;

// Raw and zex alternate at each stream count so that drift in the machine's load hits both alike.
BENCHMARK(BM_LaunchSync_Raw)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchSync_Zex)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchSync_C)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchSync_Raw)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchSync_Zex)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchSync_Raw)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchSync_Zex)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LaunchOnly_Raw)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchOnly_Zex)->Arg(1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchOnly_C)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchOnly_Raw)->Arg(100)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchOnly_Zex)->Arg(100)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchOnly_Raw)->Arg(1000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LaunchOnly_Zex)->Arg(1000)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Batch32_Raw)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Batch32_Zex)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Batch32_Raw)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Batch32_Zex)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Batch32_Raw)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Batch32_Zex)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued_Raw)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued_Zex)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued_Raw)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued_Zex)->Arg(100)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued_Raw)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued_Zex)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Raw)->Args({1, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Zex)->Args({1, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Raw)->Args({100, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Zex)->Args({100, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Raw)->Args({1000, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Zex)->Args({1000, 1})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Raw)->Args({1, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Zex)->Args({1, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Raw)->Args({100, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Zex)->Args({100, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Raw)->Args({1000, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Queued64_Zex)->Args({1000, 16})->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_QueuedBusy_Raw)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_QueuedBusy_Zex)->Arg(10)->Arg(100)->Arg(1000)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_QueuedSaxpy_Raw)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_QueuedSaxpy_Zex)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_QueuedSaxpy_ZexStop)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_Stop_Plain)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Stop_Stop)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Graph_Raw)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Graph_Zex)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Graph_Raw)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Graph_Zex)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Graph_ZexDebugInfo)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Graph_ZexDebugInfo)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Graph_RawFloor)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Graph_RawFloor)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_GraphUpdate)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_SyncOnly_Raw)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SyncOnly_Zex)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ContextAdopt)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_SyncToCatch_Zex)->Arg(0)->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: zex_bench <bench_kernels.spv> [benchmark flags]\n");
    return 2;
  }
  try {
    g_spv_path = argv[1];
    g_env = new Env(read_file(argv[1]));  // never destroyed: see tests/runtime/zex_fixture.hpp
    {
      const std::vector<char> spv = read_file(argv[1]);
      g_c = new CEnv();  // never destroyed, likewise
      c_check(zex_context_create(&g_c->ctx), "zex_context_create");
      c_check(zex_device_get(g_c->ctx, 0, &g_c->dev), "zex_device_get");
      c_check(zex_module_create(g_c->dev, spv.data(), spv.size(), &g_c->mod), "zex_module_create");
      c_check(zex_context_alloc_shared(g_c->ctx, g_c->dev, 64, 64, reinterpret_cast<void**>(&g_c->flag)),
              "zex_context_alloc_shared");
    }
    std::printf("device: %s\n", g_env->dev.name().c_str());
    Collector rep;
    benchmark::RunSpecifiedBenchmarks(&rep);
    idle_streams().clear();
    idle_raw().clear();
    auto print_ratio = [&](bool cpu, const char* what, const std::string& a, const std::string& b) {
      const double x = rep.median(a, cpu), y = rep.median(b, cpu);
      if (x > 0 && y > 0) std::printf("  %-46s %9.3f us / %9.3f us = %.3fx\n", what, x / 1e3, y / 1e3, x / y);
    };
    auto ratio = [&](const char* what, const std::string& a, const std::string& b) { print_ratio(false, what, a, b); };
    auto cpu_ratio = [&](const char* what, const std::string& a, const std::string& b) { print_ratio(true, what, a, b); };
    std::printf("\nReal time, ratios of medians (this run):\n");
    for (const char* n : {"1", "100", "1000"})
      ratio(("launch+sync zex/raw, " + std::string(n) + " streams").c_str(),
            std::string("BM_LaunchSync_Zex/") + n, std::string("BM_LaunchSync_Raw/") + n);
    ratio("launch+sync C API/C++ (target <= 1.10x)", "BM_LaunchSync_C", "BM_LaunchSync_Zex/1");
    ratio("launch call alone C API/C++", "BM_LaunchOnly_C", "BM_LaunchOnly_Zex/1");
    for (const char* n : {"1", "100", "1000"})
      ratio(("launch call alone zex/raw, " + std::string(n) + " streams").c_str(),
            std::string("BM_LaunchOnly_Zex/") + n, std::string("BM_LaunchOnly_Raw/") + n);
    for (const char* n : {"1", "100", "1000"})
      ratio(("32 launches+sync zex/raw, " + std::string(n) + " streams").c_str(),
            std::string("BM_Batch32_Zex/") + n, std::string("BM_Batch32_Raw/") + n);
    std::printf("\nQueued launches (%d per synchronize), time per launch and zex/raw (throughput = raw/zex):\n", kQueued);
    for (const char* n : {"1", "100", "1000"}) {
      const double z = rep.median(std::string("BM_Queued_Zex/") + n), r = rep.median(std::string("BM_Queued_Raw/") + n);
      const double zf = rep.fastest(std::string("BM_Queued_Zex/") + n), rf = rep.fastest(std::string("BM_Queued_Raw/") + n);
      if (z > 0 && r > 0)
        std::printf("  %5s streams: zex %7.3f us, raw %7.3f us per launch: median %.3fx (throughput %.2f), fastest %.3fx\n", n,
                    z / 1e3 / kQueued, r / 1e3 / kQueued, z / r, r / z, zf / rf);
    }
    for (const char* g : {"1", "16"})
      for (const char* n : {"1", "100", "1000"}) {
        const std::string zn = std::string("BM_Queued64_Zex/") + n + "/" + g, rn = std::string("BM_Queued64_Raw/") + n + "/" + g;
        const double z = rep.median(zn), r = rep.median(rn), zf = rep.fastest(zn), rf = rep.fastest(rn);
        if (z > 0 && r > 0)
          std::printf("  %s x64 items, %5s streams: zex %7.3f us, raw %7.3f us per launch: median %.3fx (target <= 1.11x), fastest %.3fx\n",
                      g, n, z / 1e3 / kQueued, r / 1e3 / kQueued, z / r, zf / rf);
      }
    {
      const double z = rep.median("BM_QueuedSaxpy_Zex"), r = rep.median("BM_QueuedSaxpy_Raw");
      const double zf = rep.fastest("BM_QueuedSaxpy_Zex"), rf = rep.fastest("BM_QueuedSaxpy_Raw");
      if (z > 0 && r > 0)
        std::printf("  saxpy x%d: zex %7.3f us, raw %7.3f us per launch: median %.3fx (throughput %.2f), fastest %.3fx\n",
                    kSaxpyLaunches, z / 1e3 / kSaxpyLaunches, r / 1e3 / kSaxpyLaunches, z / r, r / z, zf / rf);
    }
    {
      const double z = rep.median("BM_QueuedSaxpy_ZexStop"), r = rep.median("BM_QueuedSaxpy_Zex");
      if (z > 0 && r > 0)
        std::printf("  saxpy x%d with stop_on_throw: %7.3f us, without %7.3f us per launch: median %.3fx (target <= 1.02x), fastest %.3fx\n",
                    kSaxpyLaunches, z / 1e3 / kSaxpyLaunches, r / 1e3 / kSaxpyLaunches, z / r,
                    rep.fastest("BM_QueuedSaxpy_ZexStop") / rep.fastest("BM_QueuedSaxpy_Zex"));
      for (const char* t : {"0", "1"}) {
        const double st = rep.median(std::string("BM_Stop_Stop/") + t), pl = rep.median(std::string("BM_Stop_Plain/") + t);
        if (st > 0 && pl > 0)
          std::printf("  4096x64 busy launch, %s: stop_on_throw %8.3f ms, without %8.3f ms: median %.3fx\n",
                      t[0] == '1' ? "throwing in its first group" : "nothing thrown", st / 1e6, pl / 1e6, st / pl);
      }
    }
    for (const char* n : {"1", "64"}) {
      const std::string zn = std::string("BM_Graph_Zex/") + n, rn = std::string("BM_Graph_Raw/") + n;
      const double z = rep.median(zn), r = rep.median(rn), zf = rep.fastest(zn), rf = rep.fastest(rn);
      if (z > 0 && r > 0)
        std::printf("  graph of 10 launches x%s items, %d executions: zex %7.3f us, raw %7.3f us per execution: median %.3fx (target <= 1.10x), fastest %.3fx\n",
                    n, kGraphExecutions, z / 1e3 / kGraphExecutions, r / 1e3 / kGraphExecutions, z / r, zf / rf);
      const std::string fn = std::string("BM_Graph_RawFloor/") + n;
      const double f = rep.median(fn), ff = rep.fastest(fn);
      if (z > 0 && f > 0)
        std::printf("  graph of 10 launches x%s items: zex %7.3f us, raw + one launch of a second kernel %7.3f us per execution: median %.3fx, fastest %.3fx\n",
                    n, z / 1e3 / kGraphExecutions, f / 1e3 / kGraphExecutions, z / f, zf / ff);
      const double g = rep.median(std::string("BM_Graph_ZexDebugInfo/") + n);
      if (z > 0 && g > 0)
        std::printf("  graph of 10 launches x%s items, module built with -g: %7.3f us per execution, %.3fx the module without\n",
                    n, g / 1e3 / kGraphExecutions, g / z);
    }
    {
      const double u = rep.median("BM_GraphUpdate/1"), n = rep.median("BM_GraphUpdate/0");
      if (u > 0 && n > 0)
        std::printf("  10-launch graph, one execution + synchronize: with an update of one launch %8.3f us, without %8.3f us: median %.3fx (the update: %+.3f us)\n",
                    u / 1e3, n / 1e3, u / n, (u - n) / 1e3);
    }
    ratio("launch+sync zex, 100 vs 1 streams", "BM_LaunchSync_Zex/100", "BM_LaunchSync_Zex/1");
    ratio("launch+sync zex, 1000 vs 1 streams", "BM_LaunchSync_Zex/1000", "BM_LaunchSync_Zex/1");
    ratio("launch+sync raw, 1000 vs 1 streams", "BM_LaunchSync_Raw/1000", "BM_LaunchSync_Raw/1");
    ratio("launch call alone zex, 100 vs 1 streams", "BM_LaunchOnly_Zex/100", "BM_LaunchOnly_Zex/1");
    ratio("launch call alone zex, 1000 vs 1 streams", "BM_LaunchOnly_Zex/1000", "BM_LaunchOnly_Zex/1");
    ratio("32 launches+sync zex, 1000 vs 1 streams", "BM_Batch32_Zex/1000", "BM_Batch32_Zex/1");
    ratio("32 launches+sync raw, 1000 vs 1 streams", "BM_Batch32_Raw/1000", "BM_Batch32_Raw/1");
    std::printf("\nHost thread CPU time, ratios of medians (this run):\n");
    for (const char* n : {"1", "100", "1000"})
      cpu_ratio(("launch+sync zex/raw, " + std::string(n) + " streams").c_str(),
                std::string("BM_LaunchSync_Zex/") + n, std::string("BM_LaunchSync_Raw/") + n);
    for (const char* n : {"1", "100", "1000"})
      cpu_ratio(("32 launches+sync zex/raw, " + std::string(n) + " streams").c_str(),
                std::string("BM_Batch32_Zex/") + n, std::string("BM_Batch32_Raw/") + n);
    cpu_ratio("launch+sync zex, 1000 vs 1 streams", "BM_LaunchSync_Zex/1000", "BM_LaunchSync_Zex/1");
    cpu_ratio("launch+sync raw, 1000 vs 1 streams", "BM_LaunchSync_Raw/1000", "BM_LaunchSync_Raw/1");
    cpu_ratio("32 launches+sync zex, 1000 vs 1 streams", "BM_Batch32_Zex/1000", "BM_Batch32_Zex/1");
    cpu_ratio("32 launches+sync raw, 1000 vs 1 streams", "BM_Batch32_Raw/1000", "BM_Batch32_Raw/1");
    // How much of the growth with stream count is zex's: the driver's own growth (raw) divided out.
    std::printf("\nGrowth with streams that zex adds (zex N/1 divided by raw N/1):\n");
    for (const char* n : {"100", "1000"}) {
      for (const char* b : {"BM_LaunchSync_", "BM_LaunchOnly_", "BM_Batch32_"}) {
        for (bool cpu : {false, true}) {
          if (cpu && std::string(b) == "BM_LaunchOnly_") continue;
          const double z = rep.median(std::string(b) + "Zex/" + n, cpu) / rep.median(std::string(b) + "Zex/1", cpu);
          const double r = rep.median(std::string(b) + "Raw/" + n, cpu) / rep.median(std::string(b) + "Raw/1", cpu);
          if (z > 0 && r > 0)
            std::printf("  %-46s %.3fx\n", (std::string(b + 3) + n + " streams, " + (cpu ? "cpu" : "real")).c_str(),
                        z / r);
        }
      }
    }
    // Medians of a busy machine's repetitions still move by tens of percent; the fastest repetition of
    // each is the cost with the least interference.
    auto min_ratio = [&](const char* what, const std::string& a, const std::string& b, bool cpu) {
      const double x = rep.fastest(a, cpu), y = rep.fastest(b, cpu);
      if (x > 0 && y > 0) std::printf("  %-46s %9.3f us / %9.3f us = %.3fx\n", what, x / 1e3, y / 1e3, x / y);
    };
    std::printf("\nFastest repetitions, zex/raw (real time; cpu = host thread CPU time):\n");
    for (const char* n : {"1", "100", "1000"}) {
      const std::string sn(n);
      min_ratio(("launch+sync, " + sn + " streams").c_str(), "BM_LaunchSync_Zex/" + sn, "BM_LaunchSync_Raw/" + sn, false);
      min_ratio(("launch+sync, " + sn + " streams, cpu").c_str(), "BM_LaunchSync_Zex/" + sn, "BM_LaunchSync_Raw/" + sn, true);
      min_ratio(("launch call alone, " + sn + " streams").c_str(), "BM_LaunchOnly_Zex/" + sn, "BM_LaunchOnly_Raw/" + sn, false);
      min_ratio(("32 launches+sync, " + sn + " streams").c_str(), "BM_Batch32_Zex/" + sn, "BM_Batch32_Raw/" + sn, false);
      min_ratio(("32 launches+sync, " + sn + " streams, cpu").c_str(), "BM_Batch32_Zex/" + sn, "BM_Batch32_Raw/" + sn, true);
    }
    std::printf("\nFastest repetitions, zex at 1000 (and 100) streams vs 1 stream:\n");
    for (const char* b : {"BM_LaunchSync_Zex/", "BM_LaunchOnly_Zex/", "BM_Batch32_Zex/"})
      for (const char* n : {"100", "1000"})
        min_ratio((std::string(b + 3) + n + " vs 1").c_str(), std::string(b) + n, std::string(b) + "1", false);
    min_ratio("no-throw synchronize() / raw host wait", "BM_SyncOnly_Zex", "BM_SyncOnly_Raw", false);

    std::printf("\nSynchronize (real time of the call alone, kernel already finished):\n");
    ratio("no-throw synchronize() / raw host wait", "BM_SyncOnly_Zex", "BM_SyncOnly_Raw");
    for (const char* l : {"0", "1", "2"})
      ratio(("sync->catch level " + std::string(l) + " / no-throw synchronize()").c_str(),
            std::string("BM_SyncToCatch_Zex/") + l, "BM_SyncOnly_Zex");
    benchmark::Shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "zex_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
