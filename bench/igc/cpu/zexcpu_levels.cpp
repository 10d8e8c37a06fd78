// zex-cpu: what a bounds check costs a 2^24-element vector add when nothing throws, per zex debug level.
//
// Raw Level Zero through the system loader (ZE_ENABLE_ALT_DRIVERS=<libze_zex_cpu.so>), no zex host
// library: one module per variant, the zex ones being the same linked SPIR-V specialized through
// ze_module_constants_t (SpecId ZEX_SPEC_ID_DEBUG_LEVEL), and a zex_state_t built by hand that points
// at a host-USM report and a device-USM claim word. Every variant runs in the same process, with
// Google Benchmark's random interleaving of repetitions, and the ratios against the unchecked kernel
// are printed at the end (and written to --ratios_out=<file.json> if given).
//
//   zexcpu_levels <nocheck.spv> <silent.spv> <zex_linked.spv> [<cas_only.spv> [<zex_versioned.spv>]]
//                 [google benchmark flags]
// cas_only (optional control): the cold path is one CAS on the claim word, no zex library.
// zex_versioned (optional): the zex kernel with a work-group-uniform in-bounds fast path (zex0v..zex2v).
#include <benchmark/benchmark.h>
#include <level_zero/ze_api.h>
#include <zex/abi.h>

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr uint32_t kN = 1u << 24;
constexpr uint32_t kGroup = 256;

[[noreturn]] void fail(const char* call, ze_result_t r) {
  std::fprintf(stderr, "zexcpu_levels: %s failed: 0x%x\n", call, static_cast<unsigned>(r));
  std::exit(1);
}
#define ZE(call)                                   \
  do {                                             \
    ze_result_t r_ = (call);                       \
    if (r_ != ZE_RESULT_SUCCESS) fail(#call, r_);  \
  } while (0)

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "zexcpu_levels: cannot read %s\n", path.c_str());
    std::exit(1);
  }
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

struct Env {
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  ze_context_handle_t context = nullptr;
  ze_command_queue_handle_t queue = nullptr;
  float *a = nullptr, *b = nullptr, *c = nullptr;
  zex_report_t* report = nullptr;  // host USM
  uint32_t* claim = nullptr;       // device USM
  std::string device_name;
};
Env env;

struct Variant {
  std::string name;
  ze_module_handle_t module = nullptr;
  ze_kernel_handle_t kernel = nullptr;
  ze_command_list_handle_t list = nullptr;  // closed; re-executed every iteration
};
std::vector<Variant> variants;

void run_list(ze_command_list_handle_t list) {
  ZE(zeCommandQueueExecuteCommandLists(env.queue, 1, &list, nullptr));
  ZE(zeCommandQueueSynchronize(env.queue, UINT64_MAX));
}

ze_command_list_handle_t new_list() {
  ze_command_list_desc_t d{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, 0, 0};
  ze_command_list_handle_t l = nullptr;
  ZE(zeCommandListCreate(env.context, env.device, &d, &l));
  return l;
}

void setup() {
  ze_result_t r = zeInit(0);
  if (r != ZE_RESULT_SUCCESS) {
    // The loader crashes in zeDriverGet after a failed zeInit: stop here.
    std::fprintf(stderr, "zexcpu_levels: zeInit failed (0x%x); run with ZE_ENABLE_ALT_DRIVERS=<path of "
                 "libze_zex_cpu.so>\n", static_cast<unsigned>(r));
    std::exit(1);
  }
  uint32_t n = 1;
  ZE(zeDriverGet(&n, &env.driver));
  n = 1;
  ZE(zeDeviceGet(env.driver, &n, &env.device));
  ze_device_properties_t props{};
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  ZE(zeDeviceGetProperties(env.device, &props));
  env.device_name = props.name;
  ze_context_desc_t cd{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ZE(zeContextCreate(env.driver, &cd, &env.context));
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                             ZE_COMMAND_QUEUE_MODE_DEFAULT, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ZE(zeCommandQueueCreate(env.context, env.device, &qd, &env.queue));

  ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void* p = nullptr;
  for (float** buf : {&env.a, &env.b, &env.c}) {
    ZE(zeMemAllocDevice(env.context, &dd, sizeof(float) * kN, 64, env.device, &p));
    *buf = static_cast<float*>(p);
  }
  ZE(zeMemAllocHost(env.context, &hd, sizeof(zex_report_t), 64, &p));
  env.report = static_cast<zex_report_t*>(p);
  std::memset(env.report, 0, sizeof(zex_report_t));
  ZE(zeMemAllocDevice(env.context, &dd, sizeof(uint32_t), 4, env.device, &p));
  env.claim = static_cast<uint32_t*>(p);

  ze_command_list_handle_t init = new_list();
  const float one = 1.0f, two = 2.0f, zero = 0.0f;
  const uint32_t free_claim = 0;
  ZE(zeCommandListAppendMemoryFill(init, env.a, &one, sizeof one, sizeof(float) * kN, nullptr, 0, nullptr));
  ZE(zeCommandListAppendMemoryFill(init, env.b, &two, sizeof two, sizeof(float) * kN, nullptr, 0, nullptr));
  ZE(zeCommandListAppendMemoryFill(init, env.c, &zero, sizeof zero, sizeof(float) * kN, nullptr, 0, nullptr));
  ZE(zeCommandListAppendMemoryFill(init, env.claim, &free_claim, sizeof free_claim, sizeof free_claim, nullptr,
                                   0, nullptr));
  ZE(zeCommandListClose(init));
  run_list(init);
  ZE(zeCommandListDestroy(init));
}

// level < 0: no specialization constant; has_state: the kernel takes the zex_state_t as argument 4.
void add_variant(const std::string& name, const std::vector<uint8_t>& spv, int level, bool has_state) {
  Variant v;
  v.name = name;
  uint32_t id = ZEX_SPEC_ID_DEBUG_LEVEL;
  uint32_t value = static_cast<uint32_t>(level);  // the SpecConstant is a 32-bit int
  const void* values[] = {&value};
  ze_module_constants_t constants{1, &id, values};
  ze_module_desc_t md{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(), spv.data(),
                      "", level >= 0 ? &constants : nullptr};
  ze_module_build_log_handle_t log = nullptr;
  ze_result_t r = zeModuleCreate(env.context, env.device, &md, &v.module, &log);
  if (r != ZE_RESULT_SUCCESS) {
    size_t sz = 0;
    zeModuleBuildLogGetString(log, &sz, nullptr);
    std::string s(sz, '\0');
    zeModuleBuildLogGetString(log, &sz, s.data());
    std::fprintf(stderr, "zexcpu_levels: zeModuleCreate(%s) failed 0x%x:\n%s\n", name.c_str(),
                 static_cast<unsigned>(r), s.c_str());
    std::exit(1);
  }
  if (log) zeModuleBuildLogDestroy(log);
  ze_kernel_desc_t kd{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "vadd"};
  ZE(zeKernelCreate(v.module, &kd, &v.kernel));
  ZE(zeKernelSetGroupSize(v.kernel, kGroup, 1, 1));
  ZE(zeKernelSetArgumentValue(v.kernel, 0, sizeof(void*), &env.c));
  ZE(zeKernelSetArgumentValue(v.kernel, 1, sizeof(void*), &env.a));
  ZE(zeKernelSetArgumentValue(v.kernel, 2, sizeof(void*), &env.b));
  uint32_t n = kN;
  ZE(zeKernelSetArgumentValue(v.kernel, 3, sizeof n, &n));
  if (has_state) {
    // The state by value as the last argument: addresses as integers (ABI.md).
    zex_state_t st{reinterpret_cast<uint64_t>(env.report), reinterpret_cast<uint64_t>(env.claim),
                   0x7a65780000000000ull + static_cast<uint64_t>(level) + 1};
    ZE(zeKernelSetArgumentValue(v.kernel, 4, sizeof st, &st));
  }
  v.list = new_list();
  ze_group_count_t groups{kN / kGroup, 1, 1};
  ZE(zeCommandListAppendLaunchKernel(v.list, v.kernel, &groups, nullptr, 0, nullptr));
  ZE(zeCommandListClose(v.list));
  run_list(v.list);  // warm-up: the first launch may finish the CPU build
  variants.push_back(v);
}

// Nothing may throw in this benchmark, and every variant must really add.
void verify(const Variant& v) {
  std::vector<float> host(kN);
  const float zero = 0.0f;
  ze_command_list_handle_t l = new_list();
  ZE(zeCommandListAppendMemoryFill(l, env.c, &zero, sizeof zero, sizeof(float) * kN, nullptr, 0, nullptr));
  ZE(zeCommandListClose(l));
  run_list(l);
  run_list(v.list);
  ZE(zeCommandListReset(l));
  ZE(zeCommandListAppendMemoryCopy(l, host.data(), env.c, sizeof(float) * kN, nullptr, 0, nullptr));
  ZE(zeCommandListClose(l));
  run_list(l);
  ZE(zeCommandListDestroy(l));
  for (uint32_t i : {0u, 1u, kN / 2, kN - 1})
    if (host[i] != 3.0f) {
      std::fprintf(stderr, "zexcpu_levels: %s computed c[%u] = %g, expected 3\n", v.name.c_str(), i, host[i]);
      std::exit(1);
    }
  if (env.report->status != ZEX_STATUS_NONE) {
    std::fprintf(stderr, "zexcpu_levels: %s reported an exception (status %u)\n", v.name.c_str(),
                 env.report->status);
    std::exit(1);
  }
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

void BM_vadd(benchmark::State& state, size_t index) {
  const Variant& v = variants[index];
  // CPU seconds of the whole process (PoCL's worker threads included) per launch: what the kernel
  // cost, whether or not other jobs on the machine took the cores away in between.
  const double c0 = process_cpu_seconds();
  for (auto _ : state) run_list(v.list);
  state.counters["cpu_ms_per_launch"] =
      1e3 * (process_cpu_seconds() - c0) / static_cast<double>(state.iterations());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kN);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * kN * 3 * sizeof(float));
  state.SetLabel(env.device_name);
}

// Keeps the per-repetition times so that the ratios come from the same run as the table.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, std::vector<double>> seconds;  // variant -> seconds per iteration, per repetition
  std::map<std::string, std::vector<double>> cpu_ms;   // variant -> process CPU ms per launch
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Iteration && r.iterations > 0) {
        std::string name = r.run_name.function_name.substr(r.run_name.function_name.find('/') + 1);
        seconds[name].push_back(r.real_accumulated_time / static_cast<double>(r.iterations));
        auto c = r.counters.find("cpu_ms_per_launch");
        if (c != r.counters.end()) cpu_ms[name].push_back(c->second.value);
      }
    ConsoleReporter::ReportRuns(runs);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace

int main(int argc, char** argv) {
  std::string ratios_out;
  std::vector<char*> args;
  std::vector<std::string> files;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--ratios_out=", 0) == 0)
      ratios_out = a.substr(13);
    else if (i > 0 && a.rfind("--", 0) != 0)
      files.push_back(a);
    else
      args.push_back(argv[i]);
  }
  if (files.size() < 3 || files.size() > 5) {
    std::fprintf(stderr, "usage: zexcpu_levels <nocheck.spv> <silent.spv> <zex_linked.spv> [<cas_only.spv> "
                 "[<zex_versioned_linked.spv>]] [--ratios_out=f.json] [benchmark flags]\n");
    return 2;
  }
  setup();
  add_variant("nocheck", read_file(files[0]), -1, false);
  add_variant("silent", read_file(files[1]), -1, false);
  std::vector<uint8_t> zex = read_file(files[2]);
  for (int level = 0; level <= 2; ++level) add_variant("zex" + std::to_string(level), zex, level, true);
  if (files.size() >= 4) add_variant("cas-only", read_file(files[3]), -1, true);  // control: a bare CAS
  if (files.size() >= 5) {  // zex with work-group range versioning (vadd.cl, ZEXB_VERSIONED)
    std::vector<uint8_t> ver = read_file(files[4]);
    for (int level = 0; level <= 2; ++level) add_variant("zex" + std::to_string(level) + "v", ver, level, true);
  }
  for (const Variant& v : variants) verify(v);

  for (size_t i = 0; i < variants.size(); ++i)
    benchmark::RegisterBenchmark(("vadd_2^24/" + variants[i].name).c_str(), BM_vadd, i)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  int bargc = static_cast<int>(args.size());
  benchmark::Initialize(&bargc, args.data());
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);

  // Throughput ratio = baseline time / variant time (> 1 means faster than the unchecked kernel).
  auto base = reporter.seconds.find("nocheck");
  if (base == reporter.seconds.end()) return 0;
  const double t0 = median(base->second);
  const double b0 = *std::min_element(base->second.begin(), base->second.end());
  const double c0 = reporter.cpu_ms.count("nocheck") ? median(reporter.cpu_ms["nocheck"]) : 0.0;
  std::string json = "{\n  \"device\": \"" + env.device_name + "\",\n  \"n\": " + std::to_string(kN) +
                     ",\n  \"variants\": [\n";
  std::printf("\nthroughput vs nocheck (same run; median of %zu repetitions, best repetition vs best, and process "
              "CPU time per launch vs nocheck's):\n", base->second.size());
  bool first = true;
  for (const Variant& v : variants) {
    auto it = reporter.seconds.find(v.name);
    if (it == reporter.seconds.end()) continue;
    double t = median(it->second);
    double best = *std::min_element(it->second.begin(), it->second.end());
    double ratio = t0 / t, best_ratio = b0 / best;
    double cms = reporter.cpu_ms.count(v.name) ? median(reporter.cpu_ms[v.name]) : 0.0;
    double cpu_ratio = cms > 0 ? c0 / cms : 0.0;
    std::printf("  %-8s %8.3f ms  %6.2f GB/s  x%.3f (best: %8.3f ms, x%.3f; process CPU %7.2f ms, x%.3f)%s\n",
                v.name.c_str(), t * 1e3, 12.0 * kN / t / 1e9, ratio, best * 1e3, best_ratio, cms, cpu_ratio,
                v.name.rfind("zex", 0) == 0 ? (ratio >= 0.95 ? "  (target >= 0.95: met)" : "  (target >= 0.95: NOT met)")
                                            : "");
    json += std::string(first ? "" : ",\n") + "    {\"variant\": \"" + v.name + "\", \"ms\": " +
            std::to_string(t * 1e3) + ", \"throughput_vs_nocheck\": " + std::to_string(ratio) +
            ", \"best_ms\": " + std::to_string(best * 1e3) + ", \"best_vs_best_nocheck\": " + std::to_string(best_ratio) +
            ", \"cpu_ms\": " + std::to_string(cms) + ", \"cpu_efficiency_vs_nocheck\": " + std::to_string(cpu_ratio) +
            ", \"repetitions\": " + std::to_string(it->second.size()) + "}";
    first = false;
  }
  json += "\n  ]\n}\n";
  if (!ratios_out.empty()) std::ofstream(ratios_out) << json;
  benchmark::Shutdown();
  return 0;
}
