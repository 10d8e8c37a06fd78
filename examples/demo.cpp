// zex demo: a kernel goes out of bounds, the host catches the exception at debug levels 0, 1 and 2,
// and then uses the same stream for a clean launch.
//
//   make demo                     (from the repository root; runs on zex-cpu)
//   zex_demo [path/to/vadd.spv]   (any Level Zero driver)
#include <zex/zex.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

namespace {

std::vector<char> read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "zex_demo: cannot open %s\n", path);
    std::exit(2);
  }
  return std::vector<char>(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Shared USM: the host fills and reads it directly, kernels use it as a device pointer.
float* alloc(const zex::Device& dev, size_t n) {
  ze_device_mem_alloc_desc_t dd{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  ze_host_mem_alloc_desc_t hd{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void* p = nullptr;
  zex::check(zeMemAllocShared(dev.context_handle(), &dd, &hd, n * sizeof(float), 64, dev.handle(), &p),
             "zeMemAllocShared");
  return static_cast<float*>(p);
}

}  // namespace

int main(int argc, char** argv) try {
  zex::Context ctx;
  zex::Device dev = ctx.device(0);
  std::printf("zex demo on %s\n\n", dev.name().c_str());

  zex::Module mod(dev, read_file(argc > 1 ? argv[1] : ZEX_DEMO_SPV));
  zex::Kernel vadd = mod.kernel("vadd");
  zex::Stream stream(dev);

  const uint32_t n = 1000, group = 256, groups = (n + group - 1) / group + 1;  // one group too many
  float* a = alloc(dev, n);
  float* b = alloc(dev, n);
  float* c = alloc(dev, n);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = float(i);
    b[i] = 2.0f * float(i);
  }

  for (int level = 0; level <= 2; ++level) {
    zex::LaunchConfig cfg;
    cfg.groups = {groups, 1, 1};
    cfg.group_size = {group, 1, 1};
    cfg.debug_level = level;
    std::printf("--- debug_level=%d: %u work-items over %u elements\n", level, groups * group, n);
    stream.launch(vadd, cfg, c, static_cast<const float*>(a), static_cast<const float*>(b), n);
    try {
      stream.synchronize();
      std::printf("no exception?!\n");
      return 1;
    } catch (const zex::KernelException& e) {
      std::printf("caught: %s\n\n", e.what());
    }
  }

  // The same stream, a correct launch: it still works.
  zex::LaunchConfig cfg;
  cfg.groups = {(n + 7) / 8, 1, 1};
  cfg.group_size = {8, 1, 1};
  for (uint32_t i = 0; i < n; ++i) c[i] = -1.0f;
  stream.launch(vadd, cfg, c, static_cast<const float*>(a), static_cast<const float*>(b), n);
  stream.synchronize();
  uint32_t bad = 0;
  for (uint32_t i = 0; i < n; ++i) bad += c[i] != 3.0f * float(i);
  std::printf("--- clean launch on the same stream: %u work-items, no exception, c[i] == a[i] + b[i] for %u of "
              "%u elements (c[999] = %.0f)\n",
              cfg.groups[0] * 8, n - bad, n, double(c[999]));
  zeMemFree(dev.context_handle(), a);
  zeMemFree(dev.context_handle(), b);
  zeMemFree(dev.context_handle(), c);
  return bad == 0 ? 0 : 1;
} catch (const std::exception& e) {
  std::fprintf(stderr, "zex_demo: %s\n", e.what());
  return 1;
}
