// Fault injection: ZEX_CPU_FAIL=<entry point>:<n>:<result>[,...] makes the n-th call of that entry point
// fail with that result and change nothing; a malformed value makes zeInit fail.
//
// The variable is read when the driver loads, so each case runs in a child process of this same executable:
// FaultInjection.<Case> re-executes itself with ZEX_CPU_FAIL set and a filter that selects
// DISABLED_FaultChild.<Case> (disabled so that an ordinary run does not execute the child half).
#include "l0_fixture.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

extern char** environ;

namespace {

/// Runs the test `full_name` in a child with ZEX_CPU_FAIL=<fail> (unset when fail is null); returns its exit
/// status and output.
std::pair<int, std::string> run_child(const std::string& full_name, const char* fail) {
  std::vector<std::string> env_storage;
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    if (s.rfind("ZEX_CPU_FAIL=", 0) == 0 || s.rfind("GTEST_", 0) == 0) continue;
    env_storage.push_back(s);
  }
  if (fail) env_storage.push_back(std::string("ZEX_CPU_FAIL=") + fail);
  std::vector<char*> envp;
  for (auto& s : env_storage) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=" + full_name;
  std::string also = "--gtest_also_run_disabled_tests";
  char exe[] = "/proc/self/exe";
  char* argv[] = {exe, filter.data(), also.data(), nullptr};

  int fds[2];
  if (pipe(fds) != 0) return {-1, "pipe failed"};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  posix_spawn_file_actions_addclose(&fa, fds[0]);
  pid_t pid = 0;
  int rc = posix_spawn(&pid, exe, &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return {-1, "posix_spawn failed"};
  }
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) out.append(buf, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), out};
}

/// The parent half: the child must run exactly its one test and pass.
void expect_child_passes(const std::string& full_name, const char* fail) {
  auto [status, out] = run_child(full_name, fail);
  EXPECT_EQ(status, 0) << "ZEX_CPU_FAIL=" << (fail ? fail : "(unset)") << "\n--- child output ---\n" << out;
  EXPECT_NE(out.find("[  PASSED  ] 1 test."), std::string::npos) << "the child did not run " << full_name << "\n"
                                                                  << out;
}

}  // namespace

#define FAULT_CASE(name, fail) \
  TEST(FaultInjection, name) { expect_child_passes("DISABLED_FaultChild." #name, fail); }
#define MALFORMED_CASE(name, fail) \
  TEST(FaultInjection, name) { expect_child_passes("DISABLED_FaultInit." #name, fail); }

// ---- the cases (parent halves) ----
FAULT_CASE(NthHostAllocFails, "zeMemAllocHost:3:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY")
FAULT_CASE(SeveralEntryPoints,
           "zeMemAllocDevice:1:ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY,"
           "zeCommandListAppendLaunchKernel:2:ZE_RESULT_ERROR_DEVICE_LOST,"
           "zeEventHostSignal:1:ZE_RESULT_ERROR_INVALID_ARGUMENT")
FAULT_CASE(SameEntryPointTwice,
           "zeMemAllocShared:1:ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY,zeMemAllocShared:3:ZE_RESULT_ERROR_UNKNOWN")
FAULT_CASE(FailedFreeChangesNothing, "zeMemFree:1:ZE_RESULT_ERROR_DEVICE_LOST")
FAULT_CASE(FailedModuleCreate, "zeModuleCreate:1:ZE_RESULT_ERROR_MODULE_BUILD_FAILURE")
// The logs of failed zeModuleCreate and zeModuleDynamicLink calls are written even for an injected failure.
FAULT_CASE(FailedModuleCreateAndLinkWriteTheirLogs,
           "zeModuleCreate:1:ZE_RESULT_ERROR_MODULE_BUILD_FAILURE,zeModuleDynamicLink:1:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY")
FAULT_CASE(FailedExecute, "zeCommandQueueExecuteCommandLists:2:ZE_RESULT_ERROR_DEVICE_LOST")
FAULT_CASE(FailedKernelCreate, "zeKernelCreate:2:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY")
FAULT_CASE(FailedIpcOpenAndMapChangeNothing,
           "zeMemOpenIpcHandle:1:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY,zeVirtualMemMap:1:ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY,"
           "zePhysicalMemDestroy:1:ZE_RESULT_ERROR_UNKNOWN")
// Controls: unset, and a fault that is never reached, inject nothing.
FAULT_CASE(NoFaults, nullptr)
FAULT_CASE(NoFaultsBeforeTheNthCall, "zeMemAllocHost:100:ZE_RESULT_ERROR_UNKNOWN")
MALFORMED_CASE(MalformedNoFields, "garbage")
MALFORMED_CASE(MalformedMissingResult, "zeMemAllocHost:3")
MALFORMED_CASE(MalformedCountNotANumber, "zeMemAllocHost:three:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY")
MALFORMED_CASE(MalformedUnknownResult, "zeMemAllocHost:3:ZE_RESULT_ERROR_NO_SUCH_THING")
MALFORMED_CASE(MalformedSecondEntry, "zeMemAllocHost:3:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY,zeMemFree")
MALFORMED_CASE(MalformedZeroCount, "zeMemAllocHost:0:ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY")

// ---- the child halves: run only in the re-executed child, with ZEX_CPU_FAIL as above ----

class DISABLED_FaultChild : public L0Test {};

TEST_F(DISABLED_FaultChild, NthHostAllocFails) {
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void* p[4] = {};
  ZE_OK(zeMemAllocHost(context, &hd, 256, 0, &p[0]));
  ZE_OK(zeMemAllocHost(context, &hd, 256, 0, &p[1]));
  void* sentinel = reinterpret_cast<void*>(0x5a5a5a5a);
  p[2] = sentinel;
  EXPECT_ZE(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, zeMemAllocHost(context, &hd, 256, 0, &p[2]));
  EXPECT_EQ(p[2], sentinel) << "a failed call must change nothing";
  ZE_OK(zeMemAllocHost(context, &hd, 256, 0, &p[3])) << "only the third call fails";
  EXPECT_ZE_OK(zeMemAllocHost(context, &hd, 256, 0, &p[2]));
  for (void* x : p) EXPECT_ZE_OK(zeMemFree(context, x));
}

TEST_F(DISABLED_FaultChild, SeveralEntryPoints) {
  // zeMemAllocDevice: the first call fails, the second works.
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  void* d = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, zeMemAllocDevice(context, &dd, 64, 0, device, &d));
  EXPECT_EQ(d, nullptr);
  ZE_OK(zeMemAllocDevice(context, &dd, 64, 0, device, &d));
  ZE_OK(zeMemFree(context, d));

  // zeCommandListAppendLaunchKernel: the second append fails and appends nothing.
  ze_kernel_handle_t k = kernel(module("basic"), "add_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 1));
  ze_command_list_handle_t l = regular_list();
  ze_command_queue_handle_t q = queue();
  ZE_OK(launch(l, k, 1, 64));
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, launch(l, k, 1, 64));
  ZE_OK(launch(l, k, 1, 64));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
  EXPECT_EQ(p[0], 2) << "the failed append must not have added a launch";
  EXPECT_EQ(p[63], 2);

  // zeEventHostSignal: the first call fails and leaves the event unsignalled.
  ze_event_handle_t e = make_event();
  ASSERT_NE(e, nullptr);
  EXPECT_ZE(ZE_RESULT_ERROR_INVALID_ARGUMENT, zeEventHostSignal(e));
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeEventQueryStatus(e));
  ZE_OK(zeEventHostSignal(e));
  EXPECT_ZE_OK(zeEventQueryStatus(e));
}

TEST_F(DISABLED_FaultChild, SameEntryPointTwice) {
  ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void* p = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, zeMemAllocShared(context, &dd, &hd, 64, 0, device, &p));
  ZE_OK(zeMemAllocShared(context, &dd, &hd, 64, 0, device, &p));
  void* q = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_UNKNOWN, zeMemAllocShared(context, &dd, &hd, 64, 0, device, &q));
  EXPECT_EQ(q, nullptr);
  ZE_OK(zeMemAllocShared(context, &dd, &hd, 64, 0, device, &q));
  EXPECT_ZE_OK(zeMemFree(context, p));
  EXPECT_ZE_OK(zeMemFree(context, q));
}

TEST_F(DISABLED_FaultChild, FailedIpcOpenAndMapChangeNothing) {
  const size_t k64K = size_t{64} << 10;
  void* p = alloc_device(k64K);
  ASSERT_NE(p, nullptr);
  ze_ipc_mem_handle_t h{};
  ZE_OK(zeMemGetIpcHandle(context, p, &h));
  void* q = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, zeMemOpenIpcHandle(context, device, h, 0, &q));
  EXPECT_EQ(q, nullptr);
  ZE_OK(zeMemOpenIpcHandle(context, device, h, 0, &q));  // the failed open left nothing behind
  EXPECT_ZE_OK(zeMemCloseIpcHandle(context, q));
  void* va = nullptr;
  ZE_OK(zeVirtualMemReserve(context, reinterpret_cast<const void*>(uintptr_t{1} << 40), k64K, &va));
  ze_physical_mem_desc_t pd = {ZE_STRUCTURE_TYPE_PHYSICAL_MEM_DESC, nullptr, 0, k64K};
  ze_physical_mem_handle_t pm = nullptr;
  ZE_OK(zePhysicalMemCreate(context, device, &pd, &pm));
  EXPECT_ZE(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY, zeVirtualMemMap(context, va, k64K, pm, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));
  ZE_OK(zeVirtualMemMap(context, va, k64K, pm, 0, ZE_MEMORY_ACCESS_ATTRIBUTE_READWRITE));  // not mapped by the failure
  static_cast<char*>(va)[0] = 1;
  ZE_OK(zeVirtualMemUnmap(context, va, k64K));
  EXPECT_ZE(ZE_RESULT_ERROR_UNKNOWN, zePhysicalMemDestroy(context, pm));
  EXPECT_ZE_OK(zePhysicalMemDestroy(context, pm));  // still live after the failed destroy
  EXPECT_ZE_OK(zeVirtualMemFree(context, va, k64K));
}

TEST_F(DISABLED_FaultChild, FailedFreeChangesNothing) {
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  void* p = nullptr;
  ZE_OK(zeMemAllocHost(context, &hd, 4096, 0, &p));
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, zeMemFree(context, p));
  // Still a live allocation.
  ze_memory_allocation_properties_t mp = {ZE_STRUCTURE_TYPE_MEMORY_ALLOCATION_PROPERTIES, nullptr,
                                          ZE_MEMORY_TYPE_UNKNOWN, 0, 0};
  ZE_OK(zeMemGetAllocProperties(context, p, &mp, nullptr));
  EXPECT_EQ(mp.type, ZE_MEMORY_TYPE_HOST);
  void* base = nullptr;
  ZE_OK(zeMemGetAddressRange(context, static_cast<char*>(p) + 1, &base, nullptr));
  EXPECT_EQ(base, p);
  static_cast<char*>(p)[4095] = 1;
  EXPECT_ZE_OK(zeMemFree(context, p));
  ZE_OK(zeMemGetAllocProperties(context, p, &mp, nullptr));
  EXPECT_EQ(mp.type, ZE_MEMORY_TYPE_UNKNOWN);
}

TEST_F(DISABLED_FaultChild, FailedModuleCreate) {
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(),
                         spv.data(), nullptr, nullptr};
  ze_module_handle_t m = nullptr;
  EXPECT_ZE(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, zeModuleCreate(context, device, &md, &m, nullptr));
  EXPECT_EQ(m, nullptr);
  ZE_OK(zeModuleCreate(context, device, &md, &m, nullptr));
  EXPECT_NE(m, nullptr);
  EXPECT_ZE_OK(zeModuleDestroy(m));
}

TEST_F(DISABLED_FaultChild, FailedModuleCreateAndLinkWriteTheirLogs) {
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(),
                         spv.data(), nullptr, nullptr};
  auto m = reinterpret_cast<ze_module_handle_t>(uintptr_t(0xdeadbeef));
  ze_module_build_log_handle_t log = garbage_log();
  EXPECT_ZE(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE, zeModuleCreate(context, device, &md, &m, &log));
  EXPECT_EQ(m, nullptr);
  std::string text = failed_call_log(log);
  EXPECT_NE(text.find("ZEX_CPU_FAIL"), std::string::npos) << "the log must say the failure was injected: " << text;
  log = garbage_log();
  ZE_OK(zeModuleCreate(context, device, &md, &m, &log));  // the second call builds
  EXPECT_ZE_OK(zeModuleBuildLogDestroy(log));
  log = garbage_log();
  EXPECT_ZE(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, zeModuleDynamicLink(1, &m, &log));
  text = failed_call_log(log);
  EXPECT_NE(text.find("ZEX_CPU_FAIL"), std::string::npos) << "the link log must say the failure was injected: " << text;
  EXPECT_ZE_OK(zeModuleDestroy(m));
}

TEST_F(DISABLED_FaultChild, FailedExecute) {
  ze_kernel_handle_t k = kernel(module("basic"), "add_value");
  ASSERT_NE(k, nullptr);
  auto* p = static_cast<int*>(alloc_shared(64 * sizeof(int)));
  std::fill(p, p + 64, 0);
  ZE_OK(set_ptr(k, 0, p));
  ZE_OK(set_val(k, 1, 1));
  ze_command_list_handle_t l = regular_list();
  ze_command_queue_handle_t q = queue();
  ze_fence_handle_t f = fence(q);
  ZE_OK(launch(l, k, 1, 64));
  ZE_OK(zeCommandListClose(l));
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr));
  EXPECT_ZE(ZE_RESULT_ERROR_DEVICE_LOST, zeCommandQueueExecuteCommandLists(q, 1, &l, f));
  ZE_OK(zeCommandQueueSynchronize(q, UINT64_MAX));
  EXPECT_EQ(p[0], 1) << "the failed execution must not run the list";
  EXPECT_ZE(ZE_RESULT_NOT_READY, zeFenceQueryStatus(f)) << "nor signal its fence";
  ZE_OK(zeCommandQueueExecuteCommandLists(q, 1, &l, f));
  ZE_OK(zeFenceHostSynchronize(f, UINT64_MAX));
  EXPECT_EQ(p[0], 2);
}

TEST_F(DISABLED_FaultChild, FailedKernelCreate) {
  ze_module_handle_t m = module("basic");
  ASSERT_NE(m, nullptr);
  ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "empty"};
  ze_kernel_handle_t k1 = nullptr, k2 = nullptr, k3 = nullptr;
  ZE_OK(zeKernelCreate(m, &kd, &k1));
  EXPECT_ZE(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY, zeKernelCreate(m, &kd, &k2));
  EXPECT_EQ(k2, nullptr);
  ZE_OK(zeKernelCreate(m, &kd, &k3));
  EXPECT_ZE_OK(zeKernelDestroy(k1));
  EXPECT_ZE_OK(zeKernelDestroy(k3));
}

// A malformed ZEX_CPU_FAIL makes zeInit fail (and the loader must not be used further after that).
#define MALFORMED_CHILD(name)                                                           \
  TEST(DISABLED_FaultInit, name) {                                                      \
    ze_result_t r = zeInit(0);                                                          \
    EXPECT_NE(r, ZE_RESULT_SUCCESS) << "ZEX_CPU_FAIL=" << std::getenv("ZEX_CPU_FAIL");  \
  }
MALFORMED_CHILD(MalformedNoFields)
MALFORMED_CHILD(MalformedMissingResult)
MALFORMED_CHILD(MalformedCountNotANumber)
MALFORMED_CHILD(MalformedUnknownResult)
MALFORMED_CHILD(MalformedSecondEntry)
MALFORMED_CHILD(MalformedZeroCount)

void five_host_allocs_succeed(ze_context_handle_t context) {
  ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
  for (int i = 0; i < 5; ++i) {
    void* p = nullptr;
    ZE_OK(zeMemAllocHost(context, &hd, 256, 0, &p)) << "call " << i + 1;
    EXPECT_ZE_OK(zeMemFree(context, p));
  }
}
TEST_F(DISABLED_FaultChild, NoFaults) { five_host_allocs_succeed(context); }
TEST_F(DISABLED_FaultChild, NoFaultsBeforeTheNthCall) { five_host_allocs_succeed(context); }
