// Thread safety: many threads, each with its own command list and kernel, launching concurrently.
#include "l0_fixture.hpp"

#include <algorithm>
#include <thread>

namespace {
constexpr int kThreads = 8;
constexpr int kLaunches = 40;
constexpr uint32_t kItems = 4096;

// Records a thread's first failing Level Zero result; each thread writes only its own slot.
class FirstError {
 public:
  explicit FirstError(ze_result_t* slot) : slot_(slot) {}
  bool operator()(ze_result_t r) const {
    if (r != ZE_RESULT_SUCCESS && *slot_ == ZE_RESULT_SUCCESS) *slot_ = r;
    return r == ZE_RESULT_SUCCESS;
  }

 private:
  ze_result_t* slot_;
};

// Runs body(t, check) on n threads at once and returns each thread's first failing result.
template <class Body>
std::vector<ze_result_t> run_threads(int n, Body body) {
  std::vector<ze_result_t> first_error(n, ZE_RESULT_SUCCESS);
  std::vector<std::thread> threads;
  for (int t = 0; t < n; ++t) threads.emplace_back([&, t] { body(t, FirstError(&first_error[t])); });
  for (auto& th : threads) th.join();
  return first_error;
}
}  // namespace

class Threads : public L0Test {
 protected:
  // One zero-filled shared buffer of kItems ints per thread.
  std::vector<int*> zeroed_buffers() {
    std::vector<int*> bufs;
    for (int t = 0; t < kThreads; ++t) {
      auto* p = static_cast<int*>(alloc_shared(kItems * sizeof(int)));
      if (p == nullptr) break;
      std::fill(p, p + kItems, 0);
      bufs.push_back(p);
    }
    return bufs;
  }

  // Every thread succeeded, and every element of thread t's buffer equals want(t).
  template <class Want>
  static void expect_sums(const std::vector<ze_result_t>& first_error, const std::vector<int*>& bufs, Want want) {
    for (int t = 0; t < kThreads; ++t) {
      EXPECT_ZE(ZE_RESULT_SUCCESS, first_error[t]) << "thread " << t;
      const int w = want(t);
      uint32_t bad = 0;
      for (uint32_t i = 0; i < kItems; ++i) bad += bufs[t][i] != w;
      EXPECT_EQ(bad, 0u) << "thread " << t << " element 0 = " << bufs[t][0] << ", expected " << w;
    }
  }
};

TEST_F(Threads, EightThreadsFortyLaunchesOnImmediateLists) {
  ze_module_handle_t m = module("basic");
  ASSERT_NE(m, nullptr);
  const std::vector<int*> bufs = zeroed_buffers();
  ASSERT_EQ(bufs.size(), size_t(kThreads));
  const uint32_t ordinal = compute_ordinal();
  const auto first_error = run_threads(kThreads, [&](int t, const FirstError& check) {
      // Everything this thread touches is its own: the spec allows that concurrency.
      ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "add_value"};
      ze_kernel_handle_t k = nullptr;
      if (!check(zeKernelCreate(m, &kd, &k))) return;
      ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, ordinal, 0, 0,
                                    ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
      ze_command_list_handle_t l = nullptr;
      ze_event_pool_handle_t pool = nullptr;
      ze_event_handle_t done = nullptr;
      ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, nullptr, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
      ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, nullptr, 0, ZE_EVENT_SCOPE_FLAG_HOST,
                            ZE_EVENT_SCOPE_FLAG_HOST};
      if (check(zeCommandListCreateImmediate(context, device, &qd, &l)) &&
          check(zeEventPoolCreate(context, &pd, 1, &device, &pool)) && check(zeEventCreate(pool, &ed, &done)) &&
          check(zeKernelSetArgumentValue(k, 0, sizeof(void*), &bufs[t])) && check(zeKernelSetGroupSize(k, 64, 1, 1))) {
        ze_group_count_t gc = {kItems / 64, 1, 1};
        for (int i = 0; i < kLaunches; ++i) {
          int v = (t + 1) * (i % 2 == 0 ? 1 : 2);  // varying arguments, captured at each append
          if (!check(zeKernelSetArgumentValue(k, 1, sizeof v, &v))) break;
          if (!check(zeCommandListAppendLaunchKernel(l, k, &gc, i == kLaunches - 1 ? done : nullptr, 0, nullptr)))
            break;
        }
        check(zeEventHostSynchronize(done, 120'000'000'000ull));
      }
      if (done) zeEventDestroy(done);
      if (pool) zeEventPoolDestroy(pool);
      if (l) zeCommandListDestroy(l);
      zeKernelDestroy(k);
  });
  expect_sums(first_error, bufs, [](int t) { return (t + 1) * (kLaunches / 2) * 3; });
}

TEST_F(Threads, EightThreadsRegularListsOnOwnQueues) {
  ze_module_handle_t m = module("basic");
  ASSERT_NE(m, nullptr);
  const std::vector<int*> bufs = zeroed_buffers();
  ASSERT_EQ(bufs.size(), size_t(kThreads));
  const uint32_t ordinal = compute_ordinal();
  const auto first_error = run_threads(kThreads, [&](int t, const FirstError& check) {
      ze_kernel_desc_t kd = {ZE_STRUCTURE_TYPE_KERNEL_DESC, nullptr, 0, "add_value"};
      ze_kernel_handle_t k = nullptr;
      if (!check(zeKernelCreate(m, &kd, &k))) return;
      ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, ordinal, 0, 0,
                                    ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
      ze_command_list_desc_t ld = {ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, ordinal, 0};
      ze_command_queue_handle_t q = nullptr;
      ze_command_list_handle_t l = nullptr;
      int v = t + 1;
      ze_group_count_t gc = {kItems / 64, 1, 1};
      if (check(zeCommandQueueCreate(context, device, &qd, &q)) && check(zeCommandListCreate(context, device, &ld, &l)) &&
          check(zeKernelSetArgumentValue(k, 0, sizeof(void*), &bufs[t])) &&
          check(zeKernelSetArgumentValue(k, 1, sizeof v, &v)) && check(zeKernelSetGroupSize(k, 64, 1, 1)) &&
          check(zeCommandListAppendLaunchKernel(l, k, &gc, nullptr, 0, nullptr)) && check(zeCommandListClose(l))) {
        for (int i = 0; i < kLaunches; ++i)
          if (!check(zeCommandQueueExecuteCommandLists(q, 1, &l, nullptr))) break;
        check(zeCommandQueueSynchronize(q, 120'000'000'000ull));
      }
      if (l) zeCommandListDestroy(l);
      if (q) zeCommandQueueDestroy(q);
      zeKernelDestroy(k);
  });
  expect_sums(first_error, bufs, [](int t) { return (t + 1) * kLaunches; });
}

TEST_F(Threads, ConcurrentAllocationsAndModuleBuilds) {
  std::vector<uint8_t> spv = zt::read_spirv("basic");
  ASSERT_FALSE(spv.empty());
  const auto first_error = run_threads(4, [&](int, const FirstError& check) {
      ze_host_mem_alloc_desc_t hd = {ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC, nullptr, 0};
      for (int i = 0; i < 200; ++i) {
        void* p = nullptr;
        if (!check(zeMemAllocHost(context, &hd, 4096 + 64 * i, 64, &p))) return;
        void* base = nullptr;
        check(zeMemGetAddressRange(context, static_cast<char*>(p) + 10, &base, nullptr));
        if (base != p) check(ZE_RESULT_ERROR_UNKNOWN);
        check(zeMemFree(context, p));
      }
      ze_module_desc_t md = {ZE_STRUCTURE_TYPE_MODULE_DESC, nullptr, ZE_MODULE_FORMAT_IL_SPIRV, spv.size(),
                             spv.data(), nullptr, nullptr};
      ze_module_handle_t mod = nullptr;
      if (check(zeModuleCreate(context, device, &md, &mod, nullptr))) check(zeModuleDestroy(mod));
  });
  for (int t = 0; t < 4; ++t) EXPECT_ZE(ZE_RESULT_SUCCESS, first_error[t]) << "thread " << t;
}
