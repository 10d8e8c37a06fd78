// A program outside zex, built against the installed package (tests/package/CMakeLists.txt).
//   consumer abi              the installed headers and device library are usable (no driver needed)
//   consumer run <kernels>    end to end through the installed libzex and zex-cpu: a vadd that goes
//                             out of bounds is caught, then the same stream runs a clean launch
// Exit status 0 on success; every failure prints why.
#include <zex/abi.h>
#include <zex/zex.hpp>

#include <level_zero/ze_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <string>
#include <vector>

namespace {

int fail(const std::string& why) {
  std::cerr << "consumer: " << why << "\n";
  return 1;
}

std::vector<char> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

int checkAbi() {
  static_assert(sizeof(zex_state_t) == 24 && sizeof(zex_report_t) == 528, "installed abi.h");
  std::vector<char> spv = readFile(ZEX_CONSUMER_DEVICE_SPV);
  uint32_t magic = 0;
  if (spv.size() < 20)
    return fail(std::string("installed device library missing or empty: ") + ZEX_CONSUMER_DEVICE_SPV);
  std::memcpy(&magic, spv.data(), 4);
  if (magic != 0x07230203u)
    return fail("installed zex_device.spv is not SPIR-V");
  std::cout << "consumer: installed abi.h (report " << sizeof(zex_report_t) << " bytes), zex_device.spv ("
            << spv.size() << " bytes)\n";
  return 0;
}

template <class T>
T* allocShared(const zex::Context& ctx, const zex::Device& dev, size_t count) {
  ze_device_mem_alloc_desc_t d{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  ze_host_mem_alloc_desc_t h{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void* p = nullptr;
  if (zeMemAllocShared(ctx.handle(), &d, &h, count * sizeof(T), alignof(T), dev.handle(), &p) !=
      ZE_RESULT_SUCCESS)
    return nullptr;
  return static_cast<T*>(p);
}

int runEndToEnd(const std::string& kernels) {
  zex::Context ctx;
  zex::Device dev = ctx.device(0);
  zex::Module mod(dev, readFile(kernels));
  zex::Kernel vadd = mod.kernel("vadd");
  zex::Stream stream(dev);

  const uint32_t total = 32;
  float* a = allocShared<float>(ctx, dev, total);
  float* b = allocShared<float>(ctx, dev, total);
  float* c = allocShared<float>(ctx, dev, total);
  if (!a || !b || !c)
    return fail("zeMemAllocShared failed");
  for (uint32_t i = 0; i < total; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 1.0f;
    c[i] = 0.0f;
  }

  zex::LaunchConfig cfg;
  cfg.groups = {4, 1, 1};
  cfg.group_size = {8, 1, 1};
  cfg.debug_level = 2;
  const uint32_t n = 20;  // work-items 20..31 are out of bounds
  stream.launch(vadd, cfg, c, a, b, n);
  bool caught = false;
  try {
    stream.synchronize();
  } catch (const zex::KernelException& e) {
    caught = true;
    std::cout << "consumer: caught: " << e.what() << "\n";
    if (e.name() != "BoundsError" || e.reason() != "Out-of-bounds array access")
      return fail("unexpected name/reason: '" + e.name() + "' / '" + e.reason() + "'");
    if (e.kernel_name() != "vadd")
      return fail("unexpected kernel name '" + e.kernel_name() + "'");
    if (!e.global_id() || (*e.global_id())[0] < n || (*e.global_id())[0] >= total)
      return fail("level 2 report without the global id of an out-of-bounds work-item");
    if (e.frames().empty())
      return fail("level 2 report without frames");
  }
  if (!caught)
    return fail("synchronize() did not throw for an out-of-bounds vadd");

  // The stream stays usable.
  stream.launch(vadd, cfg, c, a, b, total);
  stream.synchronize();
  for (uint32_t i = 0; i < total; ++i)
    if (c[i] != static_cast<float>(i) + 1.0f)
      return fail("clean launch after the exception computed c[" + std::to_string(i) + "] = " +
                  std::to_string(c[i]));
  zeMemFree(ctx.handle(), a);
  zeMemFree(ctx.handle(), b);
  zeMemFree(ctx.handle(), c);
  std::cout << "consumer: exception caught, stream reused, results correct\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "abi")
      return checkAbi();
    if (mode == "run" && argc > 2)
      return runEndToEnd(argv[2]);
  } catch (const std::exception& e) {
    return fail(std::string("unexpected exception: ") + e.what());
  }
  return fail("usage: consumer abi | consumer run <kernels.spv>");
}
