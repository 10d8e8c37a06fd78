// zex demo: a kernel goes out of bounds, the host catches the exception at debug levels 0, 1 and 2,
// and then uses the same stream for a clean launch.
//
//   make demo                     (from the repository root; runs on zex-cpu)
//   zex_demo [--device <i>] [path/to/vadd.spv]   (any Level Zero driver; device i of the driver, default 0)
//   ZEX_CPU_DEVICES=2 zex_demo --device 1        (on zex-cpu standing in for two GPUs: a throw on device 1 of 2)
#include <zex/zex.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  size_t index = 0;
  const char* spv = ZEX_DEMO_SPV;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      char* end = nullptr;
      index = std::strtoul(argv[++i], &end, 10);
      if (*end != '\0') {
        std::fprintf(stderr, "zex_demo: --device wants a device index, not '%s'\n", argv[i]);
        return 2;
      }
    } else {
      spv = argv[i];
    }
  }
  zex::Context ctx;
  zex::Device dev = ctx.device(index);  // std::out_of_range (a zex::OutOfRange) past the last device
  std::printf("zex demo on %s (device %zu of %zu)\n\n", dev.name().c_str(), index + 1, ctx.device_count());

  zex::Module mod(dev, read_file(spv));
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
