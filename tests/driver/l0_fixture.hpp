// Shared fixture of the zex-cpu conformance suite. Everything goes through the system loader with the plain
// Level Zero API; the expectations come from the specification (ze_api.h doc comments), not from the
// driver's code, so the same suite is meaningful on any Level Zero driver.
#pragma once

#include <gtest/gtest.h>
#include <level_zero/ze_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <mutex>
#include <string>
#include <vector>

namespace zt {

/// The name of a ze_result_t, so that failures print "ZE_RESULT_ERROR_..." rather than a number.
inline std::string result_name(ze_result_t r) {
  switch (r) {
#define ZT_R(x) \
  case x:       \
    return #x;
    ZT_R(ZE_RESULT_SUCCESS)
    ZT_R(ZE_RESULT_NOT_READY)
    ZT_R(ZE_RESULT_ERROR_DEVICE_LOST)
    ZT_R(ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY)
    ZT_R(ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)
    ZT_R(ZE_RESULT_ERROR_MODULE_BUILD_FAILURE)
    ZT_R(ZE_RESULT_ERROR_MODULE_LINK_FAILURE)
    ZT_R(ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET)
    ZT_R(ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE)
    ZT_R(ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS)
    ZT_R(ZE_RESULT_ERROR_NOT_AVAILABLE)
    ZT_R(ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE)
    ZT_R(ZE_RESULT_ERROR_UNINITIALIZED)
    ZT_R(ZE_RESULT_ERROR_UNSUPPORTED_VERSION)
    ZT_R(ZE_RESULT_ERROR_UNSUPPORTED_FEATURE)
    ZT_R(ZE_RESULT_ERROR_INVALID_ARGUMENT)
    ZT_R(ZE_RESULT_ERROR_INVALID_NULL_HANDLE)
    ZT_R(ZE_RESULT_ERROR_HANDLE_OBJECT_IN_USE)
    ZT_R(ZE_RESULT_ERROR_INVALID_NULL_POINTER)
    ZT_R(ZE_RESULT_ERROR_INVALID_SIZE)
    ZT_R(ZE_RESULT_ERROR_UNSUPPORTED_SIZE)
    ZT_R(ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT)
    ZT_R(ZE_RESULT_ERROR_INVALID_SYNCHRONIZATION_OBJECT)
    ZT_R(ZE_RESULT_ERROR_INVALID_ENUMERATION)
    ZT_R(ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION)
    ZT_R(ZE_RESULT_ERROR_UNSUPPORTED_IMAGE_FORMAT)
    ZT_R(ZE_RESULT_ERROR_INVALID_NATIVE_BINARY)
    ZT_R(ZE_RESULT_ERROR_INVALID_GLOBAL_NAME)
    ZT_R(ZE_RESULT_ERROR_INVALID_KERNEL_NAME)
    ZT_R(ZE_RESULT_ERROR_INVALID_FUNCTION_NAME)
    ZT_R(ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION)
    ZT_R(ZE_RESULT_ERROR_INVALID_GLOBAL_WIDTH_DIMENSION)
    ZT_R(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX)
    ZT_R(ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE)
    ZT_R(ZE_RESULT_ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE)
    ZT_R(ZE_RESULT_ERROR_INVALID_MODULE_UNLINKED)
    ZT_R(ZE_RESULT_ERROR_INVALID_COMMAND_LIST_TYPE)
    ZT_R(ZE_RESULT_ERROR_OVERLAPPING_REGIONS)
    ZT_R(ZE_RESULT_ERROR_UNKNOWN)
#undef ZT_R
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "ze_result_t(0x%x)", static_cast<unsigned>(r));
      return buf;
    }
  }
}

/// True when the loader's validation layer is on: it answers some bad input before the driver sees it.
inline bool under_validation() {
  const char* v = std::getenv("ZE_ENABLE_VALIDATION_LAYER");
  return v && std::string(v) == "1";
}

/// Reads a SPIR-V module compiled at build time from tests/kernels/driver/<name>.cl.
inline std::vector<uint8_t> read_spirv(const std::string& name) {
  std::string path = std::string(ZEX_TEST_KERNEL_DIR) + "/" + name + ".spv";
  std::ifstream f(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

/// zeInit once per process; the loader crashes in zeDriverGet after a failed zeInit, so callers stop there.
inline ze_result_t init_once() {
  static ze_result_t r = zeInit(0);
  return r;
}

}  // namespace zt

// The result names are compared as strings so that a mismatch prints both names.
#define EXPECT_ZE(expected, expr) EXPECT_EQ(::zt::result_name(expected), ::zt::result_name(expr)) << #expr
#define ASSERT_ZE(expected, expr) ASSERT_EQ(::zt::result_name(expected), ::zt::result_name(expr)) << #expr
#define ZE_OK(expr) ASSERT_ZE(ZE_RESULT_SUCCESS, expr)
#define EXPECT_ZE_OK(expr) EXPECT_ZE(ZE_RESULT_SUCCESS, expr)

/// One driver, its first device and a fresh context per test. Objects made through the helpers are destroyed
/// in TearDown, after every pending event has been signalled so no launch is left waiting on memory we free.
class L0Test : public ::testing::Test {
 public:
  /// The text of a build log, destroying the log handle.
  static std::string build_log(ze_module_build_log_handle_t log) {
    if (!log) return {};
    size_t size = 0;
    std::string text;
    if (zeModuleBuildLogGetString(log, &size, nullptr) == ZE_RESULT_SUCCESS && size > 0) {
      std::vector<char> buf(size);
      if (zeModuleBuildLogGetString(log, &size, buf.data()) == ZE_RESULT_SUCCESS)
        text.assign(buf.data(), strnlen(buf.data(), size));
    }
    zeModuleBuildLogDestroy(log);
    return text;
  }
  /// A value no valid handle has: what a caller's uninitialized out-parameter may hold.
  static ze_module_build_log_handle_t garbage_log() {
    return reinterpret_cast<ze_module_build_log_handle_t>(uintptr_t(0xdeadbeef));
  }
  /// The log that a failed zeModuleCreate or zeModuleDynamicLink wrote over garbage_log(): it must be null
  /// or a log whose text is readable and that destroys (docs/cpu-driver.md "Build logs"). Returns its text.
  static std::string failed_call_log(ze_module_build_log_handle_t log) {
    EXPECT_NE(log, garbage_log()) << "the failed call left the log out-parameter unwritten";
    if (log == nullptr || log == garbage_log()) return {};
    size_t size = 0;
    EXPECT_ZE(ZE_RESULT_SUCCESS, zeModuleBuildLogGetString(log, &size, nullptr));
    std::vector<char> buf(size + 1, '\0');
    EXPECT_ZE(ZE_RESULT_SUCCESS, zeModuleBuildLogGetString(log, &size, buf.data()));
    EXPECT_ZE(ZE_RESULT_SUCCESS, zeModuleBuildLogDestroy(log));
    return std::string(buf.data(), strnlen(buf.data(), buf.size()));
  }

 protected:
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  ze_context_handle_t context = nullptr;

  void SetUp() override {
    ze_result_t r = zt::init_once();
    ASSERT_EQ("ZE_RESULT_SUCCESS", zt::result_name(r))
        << "zeInit failed; is ZE_ENABLE_ALT_DRIVERS set to libze_zex_cpu.so?";
    uint32_t n = 0;
    ZE_OK(zeDriverGet(&n, nullptr));
    ASSERT_GE(n, 1u);
    std::vector<ze_driver_handle_t> drivers(n);
    ZE_OK(zeDriverGet(&n, drivers.data()));
    driver = drivers[0];
    n = 0;
    ZE_OK(zeDeviceGet(driver, &n, nullptr));
    ASSERT_GE(n, 1u);
    std::vector<ze_device_handle_t> devices(n);
    ZE_OK(zeDeviceGet(driver, &n, devices.data()));
    device = devices[0];
    ze_context_desc_t cd = {ZE_STRUCTURE_TYPE_CONTEXT_DESC, nullptr, 0};
    ZE_OK(zeContextCreate(driver, &cd, &context));
  }

  void TearDown() override {
    // Release anything still waiting on a host event, then let queues and immediate lists drain.
    for (ze_event_handle_t e : events_) zeEventHostSignal(e);
    for (ze_command_queue_handle_t q : queues_) zeCommandQueueSynchronize(q, 60'000'000'000ull);
    for (auto it = cleanup_.rbegin(); it != cleanup_.rend(); ++it) (*it)();
    cleanup_.clear();
    if (context) {
      EXPECT_ZE_OK(zeContextDestroy(context));
    }
  }

  /// Registers a cleanup action, run in reverse order of registration.
  void defer(std::function<void()> f) { cleanup_.push_back(std::move(f)); }

  void* alloc_host(size_t size, size_t align = 64) {
    ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    void* p = nullptr;
    ze_result_t r = zeMemAllocHost(context, &hd, size, align, &p);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeMemAllocHost(" << size << ")";
    if (r == ZE_RESULT_SUCCESS) {
      defer([this, p] { zeMemFree(context, p); });
    }
    return p;
  }
  void* alloc_shared(size_t size, size_t align = 64) {
    ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
    void* p = nullptr;
    ze_result_t r = zeMemAllocShared(context, &dd, &hd, size, align, device, &p);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeMemAllocShared(" << size << ")";
    if (r == ZE_RESULT_SUCCESS) {
      defer([this, p] { zeMemFree(context, p); });
    }
    return p;
  }
  void* alloc_device(size_t size, size_t align = 64) {
    ze_device_mem_alloc_desc_t dd = {ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC, nullptr, 0, 0};
    void* p = nullptr;
    ze_result_t r = zeMemAllocDevice(context, &dd, size, align, device, &p);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeMemAllocDevice(" << size << ")";
    if (r == ZE_RESULT_SUCCESS) {
      defer([this, p] { zeMemFree(context, p); });
    }
    return p;
  }

  /// Builds tests/kernels/driver/<name>.cl (as SPIR-V); fails the test with the build log if it does not
  /// build. The test destroys it (see module() for one the fixture destroys).
  ze_module_handle_t build_module(const std::string& name, const ze_module_constants_t* constants = nullptr) {
    std::vector<uint8_t> spv = zt::read_spirv(name);
    EXPECT_FALSE(spv.empty()) << "missing SPIR-V for " << name;
    if (spv.empty()) return nullptr;
    ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(),
                           spv.data(), "", constants};
    ze_module_handle_t m = nullptr;
    ze_module_build_log_handle_t log = nullptr;
    ze_result_t r = zeModuleCreate(context, device, &md, &m, &log);
    std::string text = build_log(log);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeModuleCreate(" << name << "), log:\n" << text;
    return r == ZE_RESULT_SUCCESS ? m : nullptr;
  }
  /// build_module, destroyed with the fixture.
  ze_module_handle_t module(const std::string& name, const ze_module_constants_t* constants = nullptr) {
    ze_module_handle_t m = build_module(name, constants);
    if (m) defer([m] { zeModuleDestroy(m); });
    return m;
  }

  /// A kernel of `m` that the test destroys (see kernel() for one the fixture destroys).
  ze_kernel_handle_t create_kernel(ze_module_handle_t m, const char* name) {
    if (!m) return nullptr;
    ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, name};
    ze_kernel_handle_t k = nullptr;
    ze_result_t r = zeKernelCreate(m, &kd, &k);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeKernelCreate(" << name << ")";
    return r == ZE_RESULT_SUCCESS ? k : nullptr;
  }
  ze_kernel_handle_t kernel(ze_module_handle_t m, const char* name) {
    ze_kernel_handle_t k = create_kernel(m, name);
    if (k) defer([k] { zeKernelDestroy(k); });
    return k;
  }

  /// Sets pointer argument i.
  static ze_result_t set_ptr(ze_kernel_handle_t k, uint32_t i, const void* p) {
    return zeKernelSetArgumentValue(k, i, sizeof(void*), &p);
  }
  template <typename T>
  static ze_result_t set_val(ze_kernel_handle_t k, uint32_t i, const T& v) {
    return zeKernelSetArgumentValue(k, i, sizeof(T), &v);
  }

  /// The ordinal of the first command-queue group with compute support.
  uint32_t compute_ordinal() {
    uint32_t n = 0;
    zeDeviceGetCommandQueueGroupProperties(device, &n, nullptr);
    ze_command_queue_group_properties_t init = {};
    init.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
    std::vector<ze_command_queue_group_properties_t> props(n, init);
    zeDeviceGetCommandQueueGroupProperties(device, &n, props.data());
    for (uint32_t i = 0; i < n; ++i)
      if (props[i].flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) return i;
    return 0;
  }

  ze_command_list_handle_t immediate_list(ze_command_queue_mode_t mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS) {
    ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, compute_ordinal(), 0, 0,
                                  mode, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_list_handle_t l = nullptr;
    ze_result_t r = zeCommandListCreateImmediate(context, device, &qd, &l);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeCommandListCreateImmediate";
    if (r != ZE_RESULT_SUCCESS) return nullptr;
    // Before destroying the list, make sure everything appended to it has finished.
    ze_event_handle_t drain = make_event();
    defer([this, l, drain] {
      if (drain && zeCommandListAppendBarrier(l, drain, 0, nullptr) == ZE_RESULT_SUCCESS)
        zeEventHostSynchronize(drain, 10'000'000'000ull);
      zeCommandListDestroy(l);
    });
    return l;
  }

  ze_command_list_handle_t regular_list() {
    ze_command_list_desc_t ld = {ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, compute_ordinal(), 0};
    ze_command_list_handle_t l = nullptr;
    ze_result_t r = zeCommandListCreate(context, device, &ld, &l);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeCommandListCreate";
    if (r != ZE_RESULT_SUCCESS) return nullptr;
    defer([l] { zeCommandListDestroy(l); });
    return l;
  }

  ze_command_queue_handle_t queue(ze_command_queue_mode_t mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS) {
    ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, compute_ordinal(), 0, 0,
                                  mode, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
    ze_command_queue_handle_t q = nullptr;
    ze_result_t r = zeCommandQueueCreate(context, device, &qd, &q);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeCommandQueueCreate";
    if (r != ZE_RESULT_SUCCESS) return nullptr;
    queues_.push_back(q);
    defer([q] { zeCommandQueueDestroy(q); });
    return q;
  }

  ze_event_pool_handle_t event_pool(uint32_t count, ze_event_pool_flags_t flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE) {
    ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, flags, count};
    ze_event_pool_handle_t p = nullptr;
    ze_result_t r = zeEventPoolCreate(context, &pd, 1, &device, &p);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeEventPoolCreate";
    if (r != ZE_RESULT_SUCCESS) return nullptr;
    defer([p] { zeEventPoolDestroy(p); });
    return p;
  }

  /// A host-visible event, signalled and waited with host scope so the host sees device writes.
  /// The pipeline module's take_ticket kernel with a zeroed counter and `n` tickets (all -1) bound as its
  /// first two arguments: launch i (argument 2 = i) stores in tickets[i] the count of launches before it.
  struct Tickets {
    ze_kernel_handle_t k = nullptr;
    int* counter = nullptr;
    int* tickets = nullptr;
  };
  Tickets ticket_kernel(uint32_t n) {
    Tickets t;
    t.k = kernel(module("pipeline"), "take_ticket");
    t.counter = static_cast<int*>(alloc_shared(sizeof(int)));
    t.tickets = static_cast<int*>(alloc_shared(n * sizeof(int)));
    if (t.k == nullptr || t.counter == nullptr || t.tickets == nullptr) return Tickets{};
    *t.counter = 0;
    std::fill(t.tickets, t.tickets + n, -1);
    if (set_ptr(t.k, 0, t.counter) != ZE_RESULT_SUCCESS || set_ptr(t.k, 1, t.tickets) != ZE_RESULT_SUCCESS)
      return Tickets{};
    return t;
  }

  /// Events 0..n-1 of `pool`.
  std::vector<ze_event_handle_t> make_events(ze_event_pool_handle_t pool, uint32_t n) {
    std::vector<ze_event_handle_t> ev;
    for (uint32_t i = 0; i < n; ++i) ev.push_back(make_event(pool, i));
    return ev;
  }

  ze_event_handle_t make_event(ze_event_pool_handle_t pool = nullptr, uint32_t index = 0) {
    if (!pool) pool = event_pool(1);
    if (!pool) return nullptr;
    ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, index, ZE_EVENT_SCOPE_FLAG_HOST,
                          ZE_EVENT_SCOPE_FLAG_HOST};
    ze_event_handle_t e = nullptr;
    ze_result_t r = zeEventCreate(pool, &ed, &e);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeEventCreate";
    if (r != ZE_RESULT_SUCCESS) return nullptr;
    defer([e] { zeEventDestroy(e); });
    return e;
  }
  /// An event the test may leave unsignalled on purpose; TearDown signals it before freeing anything.
  ze_event_handle_t host_event(ze_event_pool_handle_t pool = nullptr, uint32_t index = 0) {
    ze_event_handle_t e = make_event(pool, index);
    if (e) events_.push_back(e);
    return e;
  }

  ze_fence_handle_t fence(ze_command_queue_handle_t q) {
    ze_fence_desc_t fd = {ZE_STRUCTURE_TYPE_FENCE_DESC, nullptr, 0};
    ze_fence_handle_t f = nullptr;
    ze_result_t r = zeFenceCreate(q, &fd, &f);
    EXPECT_ZE(ZE_RESULT_SUCCESS, r) << "zeFenceCreate";
    if (r != ZE_RESULT_SUCCESS) return nullptr;
    defer([f] { zeFenceDestroy(f); });
    return f;
  }

  /// Appends a launch of `k` with `groups` x `group_size` work-items (1D).
  static ze_result_t launch(ze_command_list_handle_t l, ze_kernel_handle_t k, uint32_t groups,
                            uint32_t group_size, ze_event_handle_t signal = nullptr, uint32_t nwait = 0,
                            ze_event_handle_t* wait = nullptr) {
    ze_result_t r = zeKernelSetGroupSize(k, group_size, 1, 1);
    if (r != ZE_RESULT_SUCCESS) return r;
    ze_group_count_t gc = {groups, 1, 1};
    return zeCommandListAppendLaunchKernel(l, k, &gc, signal, nwait, wait);
  }

  /// Adds `v` to each of the `n` ints at `p` (a multiple of 64) with basic.cl's add_value, to completion.
  void add_value(int* p, uint32_t n, int v) {
    ze_kernel_handle_t k = kernel(module("basic"), "add_value");
    ASSERT_NE(k, nullptr);
    ZE_OK(set_ptr(k, 0, p));
    ZE_OK(zeKernelSetArgumentValue(k, 1, sizeof v, &v));
    run(k, n / 64, 64);
  }

  /// Runs one launch to completion on a fresh asynchronous immediate list, waiting on a signal event.
  void run(ze_kernel_handle_t k, uint32_t groups, uint32_t group_size) {
    ze_command_list_handle_t l = immediate_list();
    ASSERT_NE(l, nullptr);
    ze_event_handle_t done = make_event();
    ASSERT_NE(done, nullptr);
    ZE_OK(launch(l, k, groups, group_size, done));
    ZE_OK(zeEventHostSynchronize(done, 60'000'000'000ull));
  }

 private:
  std::vector<std::function<void()>> cleanup_;
  std::vector<ze_event_handle_t> events_;
  std::vector<ze_command_queue_handle_t> queues_;
};

/// Elapsed milliseconds since `t0`.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
