// What zex asks of Level Zero, counted with the loader's tracing layer: a synchronize() where nothing
// was thrown appends no command, copies nothing and waits once; slabs allocate a bounded number of
// times. Runs in the CTest entry zex_tests_tracing (ZE_ENABLE_TRACING_LAYER=1).
#include "zex_fixture.hpp"

#include <zex/graph.hpp>

#include <level_zero/layers/zel_tracing_api.h>

#include <atomic>
#include <cstdlib>
#include <vector>

using zex_test::cfg1d;
using zex_test::env;
using zex_test::Usm;

namespace {

struct Counts {
  std::atomic<int> appends{0}, copies{0}, allocs{0}, waits{0}, launches{0}, barriers{0}, submissions{0};
};

template <class P>
void on_append(P*, ze_result_t, void* user, void**) {
  ++static_cast<Counts*>(user)->appends;
}
void on_copy(ze_command_list_append_memory_copy_params_t* p, ze_result_t r, void* user, void** inst) {
  on_append(p, r, user, inst);
  ++static_cast<Counts*>(user)->copies;
}
void on_launch(ze_command_list_append_launch_kernel_params_t* p, ze_result_t r, void* user, void** inst) {
  on_append(p, r, user, inst);
  ++static_cast<Counts*>(user)->launches;
}
void on_barrier(ze_command_list_append_barrier_params_t* p, ze_result_t r, void* user, void** inst) {
  on_append(p, r, user, inst);
  ++static_cast<Counts*>(user)->barriers;
}
template <class P>
void on_alloc(P*, ze_result_t, void* user, void**) {
  ++static_cast<Counts*>(user)->allocs;
}
template <class P>
void on_submit(P*, ze_result_t, void* user, void**) {
  ++static_cast<Counts*>(user)->submissions;
}
template <class P>
void on_wait(P*, ze_result_t, void* user, void**) {
  ++static_cast<Counts*>(user)->waits;
}

class Tracer {
 public:
  explicit Tracer(Counts* c) {
    zel_tracer_desc_t d{ZEL_STRUCTURE_TYPE_TRACER_DESC, nullptr, c};
    zex::check(zelTracerCreate(&d, &t_), "zelTracerCreate");
    zel_core_callbacks_t cb{};
    auto& l = cb.CommandList;
    l.pfnAppendWriteGlobalTimestampCb = on_append;
    l.pfnAppendBarrierCb = on_barrier;
    l.pfnAppendMemoryRangesBarrierCb = on_append;
    l.pfnAppendMemoryCopyCb = on_copy;
    l.pfnAppendMemoryFillCb = on_append;
    l.pfnAppendMemoryCopyRegionCb = on_append;
    l.pfnAppendMemoryCopyFromContextCb = on_append;
    l.pfnAppendImageCopyCb = on_append;
    l.pfnAppendImageCopyRegionCb = on_append;
    l.pfnAppendImageCopyToMemoryCb = on_append;
    l.pfnAppendImageCopyFromMemoryCb = on_append;
    l.pfnAppendMemoryPrefetchCb = on_append;
    l.pfnAppendMemAdviseCb = on_append;
    l.pfnAppendSignalEventCb = on_append;
    l.pfnAppendWaitOnEventsCb = on_append;
    l.pfnAppendEventResetCb = on_append;
    l.pfnAppendQueryKernelTimestampsCb = on_append;
    l.pfnAppendLaunchKernelCb = on_launch;
    l.pfnAppendLaunchCooperativeKernelCb = on_append;
    l.pfnAppendLaunchKernelIndirectCb = on_append;
    l.pfnAppendLaunchMultipleKernelsIndirectCb = on_append;
    cb.Mem.pfnAllocHostCb = on_alloc;
    cb.Mem.pfnAllocDeviceCb = on_alloc;
    cb.Mem.pfnAllocSharedCb = on_alloc;
    cb.Event.pfnHostSynchronizeCb = on_wait;
    cb.Fence.pfnHostSynchronizeCb = on_wait;
    cb.CommandQueue.pfnSynchronizeCb = on_wait;
    cb.CommandQueue.pfnExecuteCommandListsCb = on_submit;
    zex::check(zelTracerSetPrologues(t_, &cb), "zelTracerSetPrologues");
    zex::check(zelTracerSetEnabled(t_, true), "zelTracerSetEnabled");
  }
  ~Tracer() {
    zelTracerSetEnabled(t_, false);
    zelTracerDestroy(t_);
  }
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

 private:
  zel_tracer_handle_t t_ = nullptr;
};

bool tracing_enabled() {
  const char* v = std::getenv("ZE_ENABLE_TRACING_LAYER");
  return v && std::string(v) == "1";
}

}  // namespace

TEST(Tracing, NoThrowSynchronizeAppendsNothingCopiesNothingAndWaitsOnce) {
  if (!tracing_enabled())
    GTEST_SKIP() << "runs in the CTest entry zex_tests_tracing (ZE_ENABLE_TRACING_LAYER=1 at zeInit)";
  auto& e = env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  zex::Stream s(e.dev);
  Usm<uint32_t> count(1);
  s.launch(k, cfg1d(1, 4, 1), count.get(), uint32_t(0));  // builds the module outside the counts
  s.synchronize();

  // On the list path the wait is zeCommandListHostSynchronize, which zex-cpu hands out through
  // zeDriverGetExtensionFunctionAddress: the driver's own function, which the loader's layers do not
  // see (a 1.6 loader's export would be traced). So there the tracer must see no event wait at all;
  // the CTest entry zex_tests_tracing_events counts the event path's one wait per synchronize.
  // On the event path an in-order list signals the first launch after a wait and one in
  // EventRing::kSignalEvery, so a synchronize whose newest launch did not signal appends one barrier
  // that does (and waits on it); a single launch and its synchronize append one command.
  const int wait = s.wait_path() == zex::Stream::WaitPath::kEvents ? 1 : 0;
  Counts c;
  Tracer t(&c);
  s.launch(k, cfg1d(1, 4, 1), count.get(), uint32_t(0));
  EXPECT_EQ(c.appends.load(), 1) << "a launch appends exactly one command";
  EXPECT_EQ(c.launches.load(), 1);
  s.synchronize();
  EXPECT_EQ(c.appends.load(), 1) << "a no-throw synchronize appended a command";
  EXPECT_EQ(c.copies.load(), 0);
  EXPECT_EQ(c.waits.load(), wait) << "a no-throw synchronize waits once";
  EXPECT_EQ(c.allocs.load(), 0);

  // Ten launches, one synchronize: ten appends, one wait.
  for (int i = 0; i < 10; ++i) s.launch(k, cfg1d(1, 4, 1), count.get(), uint32_t(0));
  s.synchronize();
  EXPECT_EQ(c.appends.load() - c.barriers.load(), 11);
  EXPECT_LE(c.barriers.load(), wait) << "a synchronize appends at most one barrier, and only on the event path";
  EXPECT_EQ(c.waits.load(), 2 * wait);

  // 2000 launches, one synchronize: 2000 appends; on the event path the window of events is recycled
  // by waiting for a launch in its newer half, at most 61 times with the first 64 events (fewer once
  // the ring has grown because the device fell behind: EventRing::kQueuedEvents), never for all of
  // them, plus the final wait.
  for (int i = 0; i < 2000; ++i) s.launch(k, cfg1d(1, 4, 1), count.get(), uint32_t(0));
  const int waits_before = c.waits.load();
  s.synchronize();
  EXPECT_EQ(c.waits.load() - waits_before, wait) << "synchronize waits once";
  EXPECT_EQ(c.appends.load() - c.barriers.load(), 2011);
  EXPECT_LE(c.barriers.load(), 2 * wait);
  EXPECT_LE(c.waits.load(), 3 * wait + (wait ? (2000 - 64) / 32 + 1 : 0));
  const int barriers = c.barriers.load();

  // The counters do see the throw path: it appends the reset. Its strings are zex's __zex_str_<n>
  // constants, found at the address the kernel recorded through zeModuleGetGlobalPointer and read from
  // the module's own bytes on the host: no copy (on NEO, and on zex-cpu since its global pointers are
  // the kernels' addresses).
  s.launch(k, cfg1d(1, 4, 1), count.get(), uint32_t(1));
  EXPECT_THROW(s.synchronize(), zex::KernelException);
  EXPECT_GT(c.appends.load() - barriers, 2011);
  // One copy: the thrower count, which lives in device memory next to the claim word (ABI version 2).
  EXPECT_EQ(c.copies.load(), 1) << "the strings should come from the module's string table; the count is the one copy";
  // And the synchronize after it is quiet again, apart from waiting for the reset.
  const int appends = c.appends.load();
  s.synchronize();
  EXPECT_EQ(c.appends.load(), appends);
}

// A graph executed 100 times with one synchronize: one submission per execution (the graph's list and
// its epilogue in one call), nothing appended, copied or allocated, one wait (Graph::kMaxInFlight = 64
// in flight: the 65th execution waits once more); a no-throw synchronize waits once and submits nothing.
TEST(Tracing, GraphExecutionsSubmitOnceAndSynchronizeWaitsOnce) {
  if (!tracing_enabled())
    GTEST_SKIP() << "runs in the CTest entry zex_tests_tracing (ZE_ENABLE_TRACING_LAYER=1 at zeInit)";
  auto& e = env();
  zex::Kernel k = e.mod.kernel("maybe_throw");
  Usm<uint32_t> count(1);
  zex::Graph g(e.dev, "traced");
  for (int i = 0; i < 10; ++i) g.launch(k, cfg1d(1, 4, 1), count.get(), uint32_t(0));
  g.close();
  zex::Queue q(e.dev);
  for (int i = 0; i < 64; ++i) q.execute(g);  // records the epilogues outside the counts
  q.synchronize();
  Counts c;
  Tracer t(&c);
  for (int i = 0; i < 10; ++i) q.execute(g);
  EXPECT_EQ(c.submissions.load(), 10) << "one zeCommandQueueExecuteCommandLists per execution";
  q.synchronize();
  EXPECT_EQ(c.submissions.load(), 10) << "a no-throw synchronize submitted something";
  EXPECT_EQ(c.waits.load(), 1) << "a no-throw synchronize waits once";
  EXPECT_EQ(c.appends.load(), 0);
  EXPECT_EQ(c.allocs.load(), 0);
  for (int i = 0; i < 100; ++i) q.execute(g);
  q.synchronize();
  EXPECT_EQ(c.submissions.load(), 110);
  EXPECT_EQ(c.waits.load(), 3) << "100 executions: one wait at the 65th, one in synchronize";
  EXPECT_EQ(c.appends.load(), 0);
  EXPECT_EQ(count[0], 4u * 10u * 174u);
}

TEST(Tracing, SlabAllocationsCountedByTheLoader) {
  if (!tracing_enabled())
    GTEST_SKIP() << "runs in the CTest entry zex_tests_tracing (ZE_ENABLE_TRACING_LAYER=1 at zeInit)";
  auto& e = env();
  Counts c;
  Tracer t(&c);
  {
    std::vector<zex::Stream> v;
    for (int i = 0; i < 500; ++i) v.emplace_back(e.dev);
    EXPECT_LE(c.allocs.load(), 8);
    EXPECT_GE(c.allocs.load(), 2) << "the first stream of a fresh pool allocates a slab";
  }
  const int after = c.allocs.load();
  {
    std::vector<zex::Stream> v;
    for (int i = 0; i < 500; ++i) v.emplace_back(e.dev);
  }
  EXPECT_EQ(c.allocs.load(), after);
}
