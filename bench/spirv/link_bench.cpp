// zex's link (zex::detail::link_module: the passes, the link with the embedded device library, the
// validation) repeated in one process, as a runtime that builds many modules, or a module at several
// debug levels, does. Each module given on the command line is one benchmark, BM_Link/<file name>;
// BM_ParseDeviceLibrary is the parse of the device library alone, which a link no longer repeats
// (parsed once per process; docs/benchmarks.md, "Link time").
//
//   link_bench <module.spv>... [benchmark flags]      (or: cmake --build <build> --target run-bench-spirv)
#include "spirv/spirv.hpp"
#include "spirv/ir.hpp"

#include <benchmark/benchmark.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

std::vector<uint32_t> read_words(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + path);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return zex::detail::spirv_words(bytes.data(), bytes.size());
}

void link_one(benchmark::State& state, const std::vector<uint32_t>& words) {
  size_t out = 0;
  for (auto _ : state) out += zex::detail::link_module(words).words.size();
  benchmark::DoNotOptimize(out);
  state.counters["words"] = double(words.size());
}

void BM_ParseDeviceLibrary(benchmark::State& state) {
  const std::vector<uint32_t>& lib = zex::detail::device_library();
  size_t n = 0;
  for (auto _ : state) n += zex::passes::parse(lib).insts.size();
  benchmark::DoNotOptimize(n);
  state.counters["words"] = double(lib.size());
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc < 2) {
    std::fprintf(stderr, "usage: link_bench <module.spv>... [benchmark flags]\n");
    return 2;
  }
  try {
    std::vector<std::vector<uint32_t>> modules;
    modules.reserve(size_t(argc - 1));
    for (int i = 1; i < argc; ++i) {
      modules.push_back(read_words(argv[i]));
      std::string name = argv[i];
      name = name.substr(name.find_last_of('/') + 1);
      const std::vector<uint32_t>* words = &modules.back();
      benchmark::RegisterBenchmark(("BM_Link/" + name).c_str(),
                                   [words](benchmark::State& s) { link_one(s, *words); })
          ->Unit(benchmark::kMillisecond);
    }
    benchmark::RegisterBenchmark("BM_ParseDeviceLibrary", BM_ParseDeviceLibrary)->Unit(benchmark::kMicrosecond);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "link_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
