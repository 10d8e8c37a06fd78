// zex_bench: launch + synchronize, the launch call alone, 32 launches per synchronize (C++, C API and
// raw Level Zero), the wait alone, synchronize() to a caught exception, and adopting a context.
#include "bench_env.hpp"

namespace zex_bench {

// --- launch + synchronize -------------------------------------------------------------------------

void BM_LaunchSync_Raw(benchmark::State& state) {
  set_live_raw(int(state.range(0)));
  Raw raw;
  uint32_t token = 0;
  for (auto _ : state) {
    raw.launch(++token);
    raw.wait();
  }
  state.counters["streams"] = double(state.range(0));
}

void BM_LaunchSync_Zex(benchmark::State& state) {
  set_live_zex(int(state.range(0)));
  zex::Kernel k = g_env->mod.kernel("touch");
  zex::Stream s(g_env->dev);
  const auto cfg = one_item();
  uint32_t token = 0;
  s.launch(k, cfg, g_env->flag, ++token);  // first launch builds the kernel: not measured
  s.synchronize();
  for (auto _ : state) {
    s.launch(k, cfg, g_env->flag, ++token);
    s.synchronize();
  }
  state.counters["streams"] = double(state.range(0));
}

// A C API stream and kernel "touch", launched once (the kernel's build is not measured).
struct CStream {
  zex_stream_t s = nullptr;
  zex_kernel_t k = nullptr;
  zex_launch_config_t cfg{{1, 1, 1}, {1, 1, 1}, 1};
  uint32_t token = 0;
  zex_arg_t args[2];
  CStream() {
    c_check(zex_stream_create(g_c->dev, &s), "zex_stream_create");
    c_check(zex_kernel_create(g_c->mod, "touch", &k), "zex_kernel_create");
    args[0] = zex_arg_t{sizeof g_c->flag, &g_c->flag};
    args[1] = zex_arg_t{sizeof token, &token};
    launch();
    c_check(zex_stream_synchronize(s, nullptr), "zex_stream_synchronize");
  }
  ~CStream() {
    zex_stream_destroy(s);
    zex_kernel_destroy(k);
  }
  zex_result_t launch() {
    ++token;
    return zex_stream_launch(s, k, &cfg, 2, args);
  }
};

void BM_LaunchSync_C(benchmark::State& state) {
  CStream c;
  for (auto _ : state) {
    if (c.launch() != ZEX_SUCCESS || zex_stream_synchronize(c.s, nullptr) != ZEX_SUCCESS) {
      state.SkipWithError(zex_last_error_message());
      break;
    }
  }
  state.counters["streams"] = 1;
}

void BM_LaunchOnly_C(benchmark::State& state) {
  CStream c;
  for (auto _ : state) {
    auto t0 = Clock::now();
    const zex_result_t r = c.launch();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
    if (r != ZEX_SUCCESS || zex_stream_synchronize(c.s, nullptr) != ZEX_SUCCESS) {
      state.SkipWithError(zex_last_error_message());
      break;
    }
  }
  state.counters["streams"] = 1;
}

// --- the launch call alone (host side: arguments + one append), synchronized outside the timing ------

void BM_LaunchOnly_Raw(benchmark::State& state) {
  set_live_raw(int(state.range(0)));
  Raw raw;
  uint32_t token = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    raw.launch(++token);
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
    raw.wait();
  }
  state.counters["streams"] = double(state.range(0));
}

void BM_LaunchOnly_Zex(benchmark::State& state) {
  set_live_zex(int(state.range(0)));
  zex::Kernel k = g_env->mod.kernel("touch");
  zex::Stream s(g_env->dev);
  const auto cfg = one_item();
  uint32_t token = 0;
  s.launch(k, cfg, g_env->flag, ++token);
  s.synchronize();
  for (auto _ : state) {
    auto t0 = Clock::now();
    s.launch(k, cfg, g_env->flag, ++token);
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
    s.synchronize();
  }
  state.counters["streams"] = double(state.range(0));
}

// --- 32 launches, one synchronize -------------------------------------------------------------------


void BM_Batch32_Raw(benchmark::State& state) {
  set_live_raw(int(state.range(0)));
  Raw raw;
  uint32_t token = 0;
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) raw.launch(++token);
    raw.wait();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["streams"] = double(state.range(0));
}

void BM_Batch32_Zex(benchmark::State& state) {
  set_live_zex(int(state.range(0)));
  zex::Kernel k = g_env->mod.kernel("touch");
  zex::Stream s(g_env->dev);
  const auto cfg = one_item();
  uint32_t token = 0;
  s.launch(k, cfg, g_env->flag, ++token);
  s.synchronize();
  for (auto _ : state) {
    for (int i = 0; i < kBatch; ++i) s.launch(k, cfg, g_env->flag, ++token);
    s.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kBatch);
  state.counters["streams"] = double(state.range(0));
}

// --- the wait alone, on a launch that has already run -------------------------------------------------

void BM_SyncOnly_Raw(benchmark::State& state) {
  set_live_raw(1);
  Raw raw;
  uint32_t token = 0;
  for (auto _ : state) {
    raw.launch(++token);
    while (!raw.ready()) {
    }
    auto t0 = Clock::now();
    raw.wait();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
  }
}

void BM_SyncOnly_Zex(benchmark::State& state) {
  set_live_zex(1);
  zex::Kernel k = g_env->mod.kernel("touch");
  zex::Stream s(g_env->dev);
  const auto cfg = one_item();
  uint32_t token = 0;
  s.launch(k, cfg, g_env->flag, ++token);
  s.synchronize();
  for (auto _ : state) {
    s.launch(k, cfg, g_env->flag, ++token);
    while (!s.ready()) {
    }
    auto t0 = Clock::now();
    s.synchronize();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
  }
}

// --- synchronize() to a caught exception ----------------------------------------------------------------

void BM_SyncToCatch_Zex(benchmark::State& state) {
  set_live_zex(1);
  const int level = int(state.range(0));
  zex::Kernel k = g_env->mod.kernel("throw_now");
  zex::Stream s(g_env->dev);
  const auto cfg = one_item(level);
  volatile uint32_t* status = &s.slot().report->status;
  uint32_t token = 0;
  s.launch(k, cfg, ++token);
  try {
    s.synchronize();
  } catch (const zex::KernelException&) {
  }
  size_t chars = 0;
  for (auto _ : state) {
    s.launch(k, cfg, ++token);
    while (!s.ready()) {
    }
    if (*status == 0) {
      state.SkipWithError("the kernel finished without a report");
      break;
    }
    auto t0 = Clock::now();
    try {
      s.synchronize();
      state.SkipWithError("no exception");
      break;
    } catch (const zex::KernelException& e) {
      chars += std::strlen(e.what());
    }
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  state.counters["level"] = level;
  benchmark::DoNotOptimize(chars);
}

// zex::Context adopting a ze context, and dropping it: describing the devices, choosing the wait path,
// and with Arg(1) the device-loss watch (RAS snapshot, Info Log instance; Arg(0): ZEX_DEVICE_REPORT=0).
// The watch is the only thing a device-loss report costs before a loss; docs/benchmarks.md.
void BM_ContextAdopt(benchmark::State& state) {
  setenv("ZEX_DEVICE_REPORT", state.range(0) ? "1" : "0", 1);
  ze_driver_handle_t drv = g_env->ctx.driver();
  ze_context_handle_t raw = g_env->ctx.handle();
  for (auto _ : state) {
    zex::Context c(drv, raw);
    benchmark::DoNotOptimize(c.device_count());
  }
  unsetenv("ZEX_DEVICE_REPORT");
}

}  // namespace zex_bench
