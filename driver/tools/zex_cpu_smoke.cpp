// A smoke test of zex-cpu through the system loader (not a unit test: tests/driver/ holds those).
//   ZE_ENABLE_ALT_DRIVERS=$PWD/build/driver/libze_zex_cpu.so build/driver/zex_cpu_smoke [kernel.spv]
// Prints the device, then exercises memory, immediate and regular lists, events and fences; with a
// SPIR-V file whose kernel `vadd(global int* c, global const int* a, global const int* b)` adds two
// vectors, it launches that kernel too. Exits non-zero on the first failure.
#include <level_zero/ze_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <thread>
#include <vector>

#define CHECK(call)                                                                             \
  do {                                                                                          \
    ze_result_t r_ = (call);                                                                    \
    if (r_ != ZE_RESULT_SUCCESS) {                                                              \
      std::fprintf(stderr, "FAIL %s:%d: %s -> 0x%x\n", __FILE__, __LINE__, #call, unsigned(r_)); \
      std::exit(1);                                                                             \
    }                                                                                           \
  } while (0)
#define EXPECT(cond)                                                             \
  do {                                                                           \
    if (!(cond)) {                                                               \
      std::fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);        \
      std::exit(1);                                                              \
    }                                                                            \
  } while (0)

int main(int argc, char** argv) {
  CHECK(zeInit(0));
  uint32_t n = 0;
  CHECK(zeDriverGet(&n, nullptr));
  EXPECT(n == 1);
  ze_driver_handle_t driver;
  CHECK(zeDriverGet(&n, &driver));
  n = 1;
  ze_device_handle_t device;
  CHECK(zeDeviceGet(driver, &n, &device));
  ze_device_properties_t props{};
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  CHECK(zeDeviceGetProperties(device, &props));
  std::printf("device: %s, type %d, %u EUs, %u MHz, maxMemAllocSize %llu\n", props.name, int(props.type),
              props.numEUsPerSubslice, props.coreClockRate, (unsigned long long)props.maxMemAllocSize);
  EXPECT(std::strstr(props.name, "zex-cpu") != nullptr);
  ze_device_compute_properties_t cprops{};
  cprops.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
  CHECK(zeDeviceGetComputeProperties(device, &cprops));
  std::printf("compute: maxTotalGroupSize %u, maxSharedLocalMemory %u\n", cprops.maxTotalGroupSize,
              cprops.maxSharedLocalMemory);

  ze_context_desc_t cdesc{ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ze_context_handle_t ctx;
  CHECK(zeContextCreate(driver, &cdesc, &ctx));

  const size_t N = 1 << 20;
  ze_host_mem_alloc_desc_t hdesc{ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  ze_device_mem_alloc_desc_t ddesc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  int *host = nullptr, *dev = nullptr, *shared = nullptr;
  CHECK(zeMemAllocHost(ctx, &hdesc, N * sizeof(int), 64, reinterpret_cast<void**>(&host)));
  CHECK(zeMemAllocDevice(ctx, &ddesc, N * sizeof(int), 0, device, reinterpret_cast<void**>(&dev)));
  CHECK(zeMemAllocShared(ctx, &ddesc, &hdesc, N * sizeof(int), 0, device, reinterpret_cast<void**>(&shared)));
  void* base = nullptr;
  size_t size = 0;
  CHECK(zeMemGetAddressRange(ctx, host + 100, &base, &size));
  EXPECT(base == host && size == N * sizeof(int));
  EXPECT(zeMemGetAddressRange(ctx, &n, &base, &size) != ZE_RESULT_SUCCESS);
  ze_memory_allocation_properties_t mprops{};
  mprops.stype = ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES;
  CHECK(zeMemGetAllocProperties(ctx, dev + 5, &mprops, nullptr));
  EXPECT(mprops.type == ZE_MEMORY_TYPE_DEVICE);
  EXPECT(zeMemFree(ctx, host + 1) == ZE_RESULT_ERROR_INVALID_ARGUMENT);
  {
    // Over-aligned, and above maxMemAllocSize with relaxed limits.
    void* a = nullptr;
    CHECK(zeMemAllocDevice(ctx, &ddesc, 4096, size_t(1) << 16, device, &a));
    EXPECT((reinterpret_cast<uintptr_t>(a) & 0xffff) == 0);
    CHECK(zeMemFree(ctx, a));
    ze_relaxed_allocation_limits_exp_desc_t relaxed{ZE_STRUCTURE_TYPE_RELAXED_ALLOCATION_LIMITS_EXP_DESC, nullptr,
                                                    ZE_RELAXED_ALLOCATION_LIMITS_EXP_FLAG_MAX_SIZE};
    ze_device_mem_alloc_desc_t rdesc{ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, &relaxed, 0, 0};
    size_t big = props.maxMemAllocSize + (size_t(1) << 20);
    EXPECT(zeMemAllocDevice(ctx, &ddesc, big, 0, device, &a) == ZE_RESULT_ERROR_UNSUPPORTED_SIZE);
    CHECK(zeMemAllocDevice(ctx, &rdesc, big, 0, device, &a));
    static_cast<char*>(a)[big - 1] = 1;
    CHECK(zeMemGetAddressRange(ctx, static_cast<char*>(a) + big - 1, &base, &size));
    EXPECT(base == a && size == big);
    CHECK(zeMemFree(ctx, a));
  }

  // Events
  ze_event_pool_desc_t pdesc{ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 4};
  ze_event_pool_handle_t pool;
  CHECK(zeEventPoolCreate(ctx, &pdesc, 1, &device, &pool));
  ze_event_handle_t ev[4];
  for (uint32_t i = 0; i < 4; ++i) {
    ze_event_desc_t edesc{ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, i, 0, ZE_EVENT_SCOPE_FLAG_HOST};
    CHECK(zeEventCreate(pool, &edesc, &ev[i]));
  }

  // Immediate asynchronous list: wait on a host-signalled event, fill, copy, signal.
  ze_command_queue_desc_t qdesc{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, 0, 0, 0,
                                ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_list_handle_t imm;
  CHECK(zeCommandListCreateImmediate(ctx, device, &qdesc, &imm));
  int pattern = 7;
  CHECK(zeCommandListAppendMemoryFill(imm, dev, &pattern, sizeof(pattern), N * sizeof(int), nullptr, 1, &ev[0]));
  CHECK(zeCommandListAppendMemoryCopy(imm, host, dev, N * sizeof(int), ev[1], 0, nullptr));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT(zeEventQueryStatus(ev[1]) == ZE_RESULT_NOT_READY);
  EXPECT(zeEventHostSynchronize(ev[1], 1000000) == ZE_RESULT_NOT_READY);
  CHECK(zeEventHostSignal(ev[0]));
  CHECK(zeEventHostSynchronize(ev[1], UINT64_MAX));
  for (size_t i = 0; i < N; ++i) EXPECT(host[i] == 7);

  // Regular list executed twice on a queue, with a fence.
  ze_command_queue_handle_t queue;
  CHECK(zeCommandQueueCreate(ctx, device, &qdesc, &queue));
  ze_command_list_desc_t ldesc{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, 0, 0};
  ze_command_list_handle_t list;
  CHECK(zeCommandListCreate(ctx, device, &ldesc, &list));
  uint16_t pattern2 = 0x0102;
  CHECK(zeCommandListAppendMemoryFill(list, shared, &pattern2, sizeof(pattern2), N * sizeof(int), nullptr, 0, nullptr));
  CHECK(zeCommandListAppendBarrier(list, nullptr, 0, nullptr));
  CHECK(zeCommandListAppendMemoryCopy(list, host, shared, N * sizeof(int), ev[2], 0, nullptr));
  CHECK(zeCommandListClose(list));
  ze_fence_desc_t fdesc{ZE_STRUCTURE_TYPE_FENCE_DESC, nullptr, 0};
  ze_fence_handle_t fence;
  CHECK(zeFenceCreate(queue, &fdesc, &fence));
  for (int round = 0; round < 2; ++round) {
    std::memset(host, 0, N * sizeof(int));
    CHECK(zeEventHostReset(ev[2]));
    CHECK(zeFenceReset(fence));
    CHECK(zeCommandQueueExecuteCommandLists(queue, 1, &list, fence));
    CHECK(zeFenceHostSynchronize(fence, UINT64_MAX));
    CHECK(zeEventQueryStatus(ev[2]));
    CHECK(zeCommandQueueSynchronize(queue, UINT64_MAX));
    for (size_t i = 0; i < N; ++i) EXPECT(host[i] == 0x01020102);
  }

  // Optional kernel launch.
  if (argc > 1) {
    std::ifstream f(argv[1], std::ios::binary);
    std::vector<uint8_t> spv((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    EXPECT(!spv.empty());
    ze_module_desc_t mdesc{ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(),
                           spv.data(), nullptr, nullptr};
    ze_module_handle_t module;
    ze_module_build_log_handle_t log;
    ze_result_t r = zeModuleCreate(ctx, device, &mdesc, &module, &log);
    if (r != ZE_RESULT_SUCCESS) {
      size_t ls = 0;
      zeModuleBuildLogGetString(log, &ls, nullptr);
      std::vector<char> text(ls + 1);
      zeModuleBuildLogGetString(log, &ls, text.data());
      std::fprintf(stderr, "module build failed 0x%x: %s\n", unsigned(r), text.data());
      return 1;
    }
    zeModuleBuildLogDestroy(log);
    ze_kernel_desc_t kdesc{ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "vadd"};
    ze_kernel_handle_t kernel;
    CHECK(zeKernelCreate(module, &kdesc, &kernel));
    for (size_t i = 0; i < N; ++i) host[i] = int(i), shared[i] = 2 * int(i);
    CHECK(zeKernelSetGroupSize(kernel, 256, 1, 1));
    CHECK(zeKernelSetArgumentValue(kernel, 0, sizeof(dev), &dev));
    CHECK(zeKernelSetArgumentValue(kernel, 1, sizeof(host), &host));
    CHECK(zeKernelSetArgumentValue(kernel, 2, sizeof(shared), &shared));
    ze_group_count_t groups{uint32_t(N / 256), 1, 1};
    CHECK(zeEventHostReset(ev[3]));
    auto t0 = std::chrono::steady_clock::now();
    CHECK(zeCommandListAppendLaunchKernel(imm, kernel, &groups, ev[3], 0, nullptr));
    CHECK(zeEventHostSynchronize(ev[3], UINT64_MAX));
    auto t1 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < N; ++i) EXPECT(dev[i] == 3 * int(i));
    std::printf("vadd of %zu ints: %.3f ms\n", N, std::chrono::duration<double, std::milli>(t1 - t0).count());
    CHECK(zeKernelDestroy(kernel));
    CHECK(zeModuleDestroy(module));
  }

  CHECK(zeFenceDestroy(fence));
  CHECK(zeCommandListDestroy(list));
  CHECK(zeCommandQueueDestroy(queue));
  CHECK(zeCommandListDestroy(imm));
  for (auto e : ev) CHECK(zeEventDestroy(e));
  CHECK(zeEventPoolDestroy(pool));
  CHECK(zeMemFree(ctx, host));
  CHECK(zeMemFree(ctx, dev));
  CHECK(zeMemFree(ctx, shared));
  CHECK(zeContextDestroy(ctx));
  std::printf("zex-cpu smoke: OK\n");
  return 0;
}
