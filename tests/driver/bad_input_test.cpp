// Bad input answers as the specification says (ze_api.h @returns lists). With the validation layer on, the
// layer answers the parameter checks itself, with the same documented results, so these hold either way.
#include "l0_fixture.hpp"

#include <memory>

using BadInput = L0Test;

TEST_F(BadInput, NullHandles) {
  uint32_t n = 0;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeDeviceGet(nullptr, &n, nullptr));
  ze_device_properties_t dp = {};
  dp.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeDeviceGetProperties(nullptr, &dp));
  ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
  ze_context_handle_t c = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeContextCreate(nullptr, &cd, &c));
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void* p = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeMemAllocHost(nullptr, &hd, 64, 0, &p));
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeMemAllocDevice(context, &dd, 64, 0, nullptr, &p));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeMemFree(nullptr, &n));
  void* base = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeMemGetAddressRange(nullptr, &n, &base, nullptr));
  ze_command_list_desc_t ld = {ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, 0, 0};
  ze_command_list_handle_t l = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeCommandListCreate(context, nullptr, &ld, &l));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeCommandListClose(nullptr));
  ze_command_queue_handle_t q = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeCommandQueueSynchronize(q, 0));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeEventHostSignal(nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeEventQueryStatus(nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeEventHostSynchronize(nullptr, 0));
  ze_fence_desc_t fd = {ZE_STRUCTURE_TYPE_FENCE_DESC, nullptr, 0};
  ze_fence_handle_t f = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeFenceCreate(nullptr, &fd, &f));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeKernelSetGroupSize(nullptr, 1, 1, 1));
  int v = 0;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeKernelSetArgumentValue(nullptr, 0, sizeof v, &v));
  ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "vadd"};
  ze_kernel_handle_t k = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_HANDLE, zeKernelCreate(nullptr, &kd, &k));
}

TEST_F(BadInput, NullPointers) {
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeDriverGet(nullptr, nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeDeviceGetProperties(device, nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeDeviceGetComputeProperties(device, nullptr));
  ze_context_handle_t c = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeContextCreate(driver, nullptr, &c));
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void* p = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeMemAllocHost(context, nullptr, 64, 0, &p));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeMemAllocHost(context, &hd, 64, 0, nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeMemFree(context, nullptr));
  ze_memory_allocation_properties_t mp = {ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, nullptr,
                                          ZE_MEMORY_TYPE_UNKNOWN, 0, 0};
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeMemGetAllocProperties(context, nullptr, &mp, nullptr));
  int x = 0;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeMemGetAllocProperties(context, &x, nullptr, nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeMemGetAddressRange(context, nullptr, nullptr, nullptr));
  ze_module_handle_t m = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeModuleCreate(context, device, nullptr, &m, nullptr));
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, 16, nullptr, nullptr,
                         nullptr};
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeModuleCreate(context, device, &md, &m, nullptr));
  ze_command_list_handle_t l = immediate_list();
  ASSERT_NE(l, nullptr);
  int buf[4] = {};
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER,
            zeCommandListAppendMemoryCopy(l, nullptr, buf, sizeof buf, nullptr, 0, nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER,
            zeCommandListAppendMemoryCopy(l, buf, nullptr, sizeof buf, nullptr, 0, nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER,
            zeCommandListAppendMemoryFill(l, buf, nullptr, 4, sizeof buf, nullptr, 0, nullptr));
  ze_kernel_handle_t k = kernel(module("basic"), "empty");
  ASSERT_NE(k, nullptr);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeCommandListAppendLaunchKernel(l, k, nullptr, nullptr, 0, nullptr));
  ze_group_count_t gc = {1, 1, 1};
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_SIZE, zeCommandListAppendLaunchKernel(l, k, &gc, nullptr, 1, nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeKernelGetProperties(k, nullptr));
  uint32_t gx, gy;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeKernelSuggestGroupSize(k, 64, 1, 1, &gx, &gy, nullptr));
  ze_command_queue_handle_t q = queue();
  ASSERT_NE(q, nullptr);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeCommandQueueExecuteCommandLists(q, 1, nullptr, nullptr));
  ze_event_pool_handle_t pool = event_pool(1);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_NULL_POINTER, zeEventCreate(pool, nullptr, nullptr));
}

TEST_F(BadInput, InvalidEnumerationsAndSizes) {
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0x10};
  void* p = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ENUMERATION, zeMemAllocHost(context, &hd, 64, 0, &p));
  hd.flags = 0;
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT, zeMemAllocHost(context, &hd, 64, 3, &p));
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT, zeMemAllocHost(context, &hd, 64, 48, &p));
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, static_cast<ze_module_format_t>(7), spv.size(),
                         spv.data(), nullptr, nullptr};
  ze_module_handle_t m = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ENUMERATION, zeModuleCreate(context, device, &md, &m, nullptr));
  md.format = ZE_MODULE_FORMAT_IL_SPIRV;
  md.inputSize = 0;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_SIZE, zeModuleCreate(context, device, &md, &m, nullptr));
  ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, compute_ordinal(), 0, 0,
                                static_cast<ze_command_queue_mode_t>(3), ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_queue_handle_t q = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ENUMERATION, zeCommandQueueCreate(context, device, &qd, &q));
  ze_command_queue_handle_t good = queue();
  ASSERT_NE(good, nullptr);
  ze_command_list_handle_t l = regular_list();
  ZE_OK(zeCommandListClose(l));
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_SIZE, zeCommandQueueExecuteCommandLists(good, 0, &l, nullptr));
}

TEST_F(BadInput, ZeroSizeAllocations) {
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  void* p = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, zeMemAllocHost(context, &hd, 0, 0, &p));
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, zeMemAllocDevice(context, &dd, 0, 0, device, &p));
  EXPECT_ZE(ZE_RESULT_ERROR_UNSUPPORTED_SIZE, zeMemAllocShared(context, &dd, &hd, 0, 0, device, &p));
}

TEST_F(BadInput, HugeAllocations) {
  ze_device_properties_t dp = {};
  dp.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  ZE_OK(zeDeviceGetProperties(device, &dp));
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  auto is_oom = [](ze_result_t r) {
    return r == ZE_RESULT_ERROR_UNSUPPORTED_SIZE || r == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY ||
           r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  };
  for (size_t size : {size_t{1} << 62, size_t(dp.maxMemAllocSize) + 1, SIZE_MAX}) {
    void* p = reinterpret_cast<void*>(0x1);
    ze_result_t r = zeMemAllocHost(context, &hd, size, 0, &p);
    EXPECT_TRUE(is_oom(r)) << "host " << size << ": " << zt::result_name(r);
    if (r == ZE_RESULT_SUCCESS) zeMemFree(context, p);
    r = zeMemAllocDevice(context, &dd, size, 0, device, &p);
    EXPECT_TRUE(is_oom(r)) << "device " << size << ": " << zt::result_name(r);
    if (r == ZE_RESULT_SUCCESS) zeMemFree(context, p);
    r = zeMemAllocShared(context, &dd, &hd, size, 0, device, &p);
    EXPECT_TRUE(is_oom(r)) << "shared " << size << ": " << zt::result_name(r);
    if (r == ZE_RESULT_SUCCESS) zeMemFree(context, p);
  }
  // The driver is still usable afterwards.
  EXPECT_NE(alloc_host(4096), nullptr);
}

TEST_F(BadInput, FreeUnknownPointer) {
  int on_stack = 0;
  auto on_heap = std::make_unique<int[]>(256);
  EXPECT_NE(zeMemFree(context, &on_stack), ZE_RESULT_SUCCESS);
  EXPECT_NE(zeMemFree(context, on_heap.get()), ZE_RESULT_SUCCESS);
  // An interior pointer of a live allocation is not an allocation either, and the allocation survives.
  auto* p = static_cast<char*>(alloc_host(4096));
  ASSERT_NE(p, nullptr);
  EXPECT_NE(zeMemFree(context, p + 64), ZE_RESULT_SUCCESS);
  ze_memory_allocation_properties_t mp = {ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, nullptr,
                                          ZE_MEMORY_TYPE_UNKNOWN, 0, 0};
  ZE_OK(zeMemGetAllocProperties(context, p, &mp, nullptr));
  EXPECT_EQ(mp.type, ZE_MEMORY_TYPE_HOST);
  // A pointer already freed is unknown.
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void* q = nullptr;
  ZE_OK(zeMemAllocHost(context, &hd, 4096, 0, &q));
  ZE_OK(zeMemFree(context, q));
  EXPECT_NE(zeMemFree(context, q), ZE_RESULT_SUCCESS) << "double free must be refused";
}

namespace {
/// Builds `bytes` as SPIR-V and returns the result and the build log.
std::pair<ze_result_t, std::string> build(ze_context_handle_t ctx, ze_device_handle_t dev,
                                          const std::vector<uint8_t>& bytes) {
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, bytes.size(),
                         bytes.data(), nullptr, nullptr};
  ze_module_handle_t m = nullptr;
  ze_module_build_log_handle_t log = nullptr;
  ze_result_t r = zeModuleCreate(ctx, dev, &md, &m, &log);
  if (r == ZE_RESULT_SUCCESS && m) zeModuleDestroy(m);
  return {r, L0Test::build_log(log)};
}
bool has_text(const std::string& s) {
  return s.find_first_not_of(" \t\r\n") != std::string::npos;
}
}  // namespace

TEST_F(BadInput, InvalidSpirvNotSpirvAtAll) {
  std::string junk = "this is not SPIR-V, just text that goes on for a while....";
  auto [r, log] = build(context, device, std::vector<uint8_t>(junk.begin(), junk.end()));
  EXPECT_ZE(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, r);
  EXPECT_TRUE(has_text(log)) << "the build log must say why the build failed";
  std::cout << "build log: " << log << "\n";
}

TEST_F(BadInput, InvalidSpirvTruncated) {
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  ASSERT_GT(spv.size(), 100u);
  spv.resize((spv.size() / 2) & ~size_t{3});
  auto [r, log] = build(context, device, spv);
  EXPECT_ZE(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, r);
  EXPECT_TRUE(has_text(log)) << "the build log must say why the build failed";
  std::cout << "build log: " << log << "\n";
}

TEST_F(BadInput, InvalidSpirvCorruptBody) {
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  ASSERT_GT(spv.size(), 100u);
  // Keep the 5-word header (magic, version, generator, bound, schema); overwrite the instruction stream.
  for (size_t i = 20; i < spv.size(); ++i) spv[i] = uint8_t(0xff - i);
  auto [r, log] = build(context, device, spv);
  EXPECT_ZE(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, r);
  EXPECT_TRUE(has_text(log)) << "the build log must say why the build failed";
  std::cout << "build log: " << log << "\n";
}

TEST_F(BadInput, InvalidSpirvSizeNotWordMultiple) {
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  spv.resize(spv.size() - 1);
  auto [r, log] = build(context, device, spv);
  EXPECT_NE(r, ZE_RESULT_SUCCESS);
  EXPECT_TRUE(r == ZE_RESULT_ERROR_MODULE_BUILD_FAILURE || r == ZE_RESULT_ERROR_INVALID_SIZE) << zt::result_name(r);
}

TEST_F(BadInput, DriverWorksAfterFailedBuild) {
  std::string junk = "garbage garbage garbage garbage!";
  auto [r, log] = build(context, device, std::vector<uint8_t>(junk.begin(), junk.end()));
  EXPECT_NE(r, ZE_RESULT_SUCCESS);
  ze_kernel_handle_t k = kernel(module("basic"), "store_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 8));
  run(k, 1, 64);
  EXPECT_EQ(p[63], 8);
}

TEST_F(BadInput, UnknownKernelName) {
  ze_module_handle_t m = module("atomics");
  ASSERT_NE(m, nullptr);
  ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "vadd"};  // exists, but in another module
  ze_kernel_handle_t k = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_KERNEL_NAME, zeKernelCreate(m, &kd, &k));
}

TEST_F(BadInput, LaunchWithArgumentsNeverSet) {
  // The specification leaves this undefined; running the kernel would dereference garbage, so the only safe
  // answer is a refusal at append time.
  ze_kernel_handle_t k = kernel(module("basic"), "vadd");
  ASSERT_NE(k, nullptr);
  ze_command_list_handle_t l = immediate_list();
  ZE_OK(zeKernelSetGroupSize(k, 1, 1, 1));
  ze_group_count_t gc = {1, 1, 1};
  EXPECT_NE(zeCommandListAppendLaunchKernel(l, k, &gc, nullptr, 0, nullptr), ZE_RESULT_SUCCESS);
  // Two of three set is still not all.
  auto* a = static_cast<float*>(alloc_shared(sizeof(float)));
  ZE_OK(set_ptr(k, 0, a));
  ZE_OK(set_ptr(k, 1, a));
  EXPECT_NE(zeCommandListAppendLaunchKernel(l, k, &gc, nullptr, 0, nullptr), ZE_RESULT_SUCCESS);
}
