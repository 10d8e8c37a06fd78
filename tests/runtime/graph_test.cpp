// zex::Graph and zex::Queue (include/zex/graph.hpp): a graph of three kernels recorded once and
// executed 100 times, the executions that throw decided by data the host writes (plan_throw reads
// plan[execution]); every throwing execution must be reported once, with its index, kernel, values and
// launch site, however many executions were queued between synchronizes (1, 10, 100: more than the
// ring of Graph::kMaxInFlight, so the oldest half is harvested early).
#include "zex_fixture.hpp"

#include <zex/graph.hpp>

#include <algorithm>
#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace {

using zex_test::cfg1d;
using zex_test::env;
using zex_test::Usm;

constexpr uint32_t kExecutions = 100;

// The graph: count_execution, plan_throw (64 work-items, work-item 3 throws when planned),
// copy_word (last[0] = counter[0]).
struct StepGraph {
  zex::Kernel count = env().mod.kernel("count_execution");
  zex::Kernel plan_throw = env().mod.kernel("plan_throw");
  zex::Kernel copy = env().mod.kernel("copy_word");
  Usm<uint32_t> counter{1}, plan{kExecutions}, last{1};
  zex::Graph graph;
  uint32_t launch_line = 0;

  explicit StepGraph(const std::string& name, int level = 1) : graph(env().dev, name) {
    record(graph, level);
    graph.close();
  }
  StepGraph(zex::Graph g, int level) : graph(std::move(g)) {
    record(graph, level);
    graph.close();
  }
  void record(zex::Graph& g, int level) {
    g.launch(count, cfg1d(1, 1, level), counter.get());
    launch_line = __LINE__ + 1;
    g.launch(plan_throw, cfg1d(1, 64, level), plan.get(), counter.get(), kExecutions);
    g.launch(copy, cfg1d(1, 1, level), last.get(), counter.get());
  }
};

// Executes `s`'s graph kExecutions times on `q`, synchronizing after every `batch`; executions in
// `throwing` throw. Returns the execution indices reported, in order, and checks each exception.
std::vector<uint64_t> run(StepGraph& s, zex::Queue& q, uint32_t batch, const std::set<uint32_t>& throwing,
                          bool plan_between = false) {
  std::vector<uint64_t> seen;
  if (!plan_between)
    for (uint32_t e = 0; e < kExecutions; ++e) s.plan[e] = throwing.count(e) ? 7u + e : 0u;
  std::vector<uint32_t> expected_batch;
  for (uint32_t e = 0; e < kExecutions; ++e) {
    if (plan_between) {  // the host decides right before the submission (batch 1: the previous one is done)
      for (uint32_t i = 0; i < kExecutions; ++i) s.plan[i] = 0;
      if (throwing.count(e)) s.plan[e] = 7u + e;
    }
    q.execute(s.graph);
    if (throwing.count(e)) expected_batch.push_back(e);
    if ((e + 1) % batch != 0 && e + 1 != kExecutions) continue;
    const uint32_t in_batch = (e % batch) + 1;
    try {
      q.synchronize();
      EXPECT_TRUE(expected_batch.empty()) << "no exception for executions up to " << e;
    } catch (const zex::KernelException& ex) {
      EXPECT_FALSE(expected_batch.empty()) << ex.what();
      EXPECT_EQ(ex.executions_thrown(), expected_batch.size());
      std::vector<zex::KernelExceptionInfo> all{ex.info()};
      all.insert(all.end(), ex.others().begin(), ex.others().end());
      EXPECT_EQ(all.size(), std::min<size_t>(expected_batch.size(), zex::Graph::kMaxKept + 1));
      for (const auto& i : all) {
        EXPECT_TRUE(i.execution.has_value());
        if (!i.execution) continue;
        seen.push_back(*i.execution);
        EXPECT_EQ(i.kernel_name, "plan_throw");
        EXPECT_EQ(i.name, "PlanError");
        EXPECT_EQ(i.values, (std::vector<uint64_t>{*i.execution, 7u + *i.execution}));
        EXPECT_EQ(i.thrower_count, 1u);
        EXPECT_EQ(i.launch_site ? i.launch_site->line : 0u, s.launch_line);
        EXPECT_EQ(i.executions_synchronized, in_batch);
        EXPECT_EQ(i.graph_name, s.graph.name());
      }
      const std::string m = ex.what();
      EXPECT_NE(m.find("in execution " + std::to_string(expected_batch.front()) + " of graph '" + s.graph.name() + "'"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("(" + std::to_string(expected_batch.size()) + " of " + std::to_string(in_batch)), std::string::npos)
          << m;
    }
    expected_batch.clear();
  }
  return seen;
}

class GraphBatches : public ::testing::TestWithParam<uint32_t> {};

TEST_P(GraphBatches, EveryThrowingExecutionIsReportedOnce) {
  StepGraph s("step");
  zex::Queue q(env().dev);
  const std::set<uint32_t> throwing{3, 7, 42, 63, 64, 99};
  const auto seen = run(s, q, GetParam(), throwing);
  EXPECT_EQ(std::vector<uint64_t>(throwing.begin(), throwing.end()), seen);
  EXPECT_EQ(s.counter[0], kExecutions);  // every execution ran every launch, the throwing ones too
  EXPECT_EQ(s.last[0], kExecutions);
  EXPECT_EQ(s.graph.executions(), kExecutions);
  // Reusable: another round on the same graph, nothing thrown, nothing left over.
  for (uint32_t e = 0; e < kExecutions; ++e) s.plan[e] = 0;
  for (int i = 0; i < 5; ++i) q.execute(s.graph);
  EXPECT_NO_THROW(q.synchronize());
  EXPECT_EQ(s.counter[0], kExecutions + 5);
}

INSTANTIATE_TEST_SUITE_P(Graph, GraphBatches, ::testing::Values(1u, 10u, 100u));

TEST(Graph, DataChangedBetweenSubmissionsDecidesTheThrow) {
  StepGraph s("step");
  zex::Queue q(env().dev);
  const std::set<uint32_t> throwing{0, 5, 98};
  EXPECT_EQ(std::vector<uint64_t>(throwing.begin(), throwing.end()), run(s, q, 1, throwing, true));
}

TEST(Graph, EveryExecutionThrowsAndTheKeptReportsAreBounded) {
  StepGraph s("all");
  zex::Queue q(env().dev);
  for (uint32_t e = 0; e < kExecutions; ++e) s.plan[e] = 7u + e;
  for (uint32_t e = 0; e < kExecutions; ++e) q.execute(s.graph);
  try {
    q.synchronize();
    ADD_FAILURE() << "no exception";
  } catch (const zex::KernelException& ex) {
    EXPECT_EQ(ex.execution(), std::optional<uint64_t>(0));
    EXPECT_EQ(ex.executions_thrown(), kExecutions);
    ASSERT_EQ(ex.others().size(), zex::Graph::kMaxKept);
    for (uint32_t i = 0; i < zex::Graph::kMaxKept; ++i) EXPECT_EQ(ex.others()[i].execution, std::optional<uint64_t>(i + 1));
    EXPECT_NE(std::string(ex.what()).find("(100 of 100 executions threw; the first is shown)"), std::string::npos)
        << ex.what();
  }
  // Nothing of it is raised again.
  for (uint32_t e = 0; e < kExecutions; ++e) s.plan[e] = 0;
  q.execute(s.graph);
  EXPECT_NO_THROW(q.synchronize());
}

TEST(Graph, LevelZeroAndTwoReportWhatTheirLevelsHold) {
  for (int level : {0, 2}) {
    StepGraph s("lvl", level);
    zex::Queue q(env().dev);
    s.plan[1] = 1;
    q.execute(s.graph);
    q.execute(s.graph);
    try {
      q.synchronize();
      ADD_FAILURE() << "no exception at level " << level;
    } catch (const zex::KernelException& ex) {
      EXPECT_EQ(ex.execution(), std::optional<uint64_t>(1));
      EXPECT_EQ(ex.debug_level(), level);
      EXPECT_EQ(ex.kernel_name(), "plan_throw");
      if (level == 2) {
        ASSERT_TRUE(ex.global_id().has_value());
        EXPECT_EQ((*ex.global_id())[0], 3u);
      }
    }
  }
}

TEST(Graph, EightThreadsEachReplayTheirOwnGraph) {
  constexpr int kThreads = 8;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      try {
        StepGraph s("thread" + std::to_string(t));
        zex::Queue q(env().dev);
        const std::set<uint32_t> throwing{static_cast<uint32_t>(t), static_cast<uint32_t>(50 + t)};
        const auto seen = run(s, q, 10, throwing);
        if (seen != std::vector<uint64_t>(throwing.begin(), throwing.end()) || s.counter[0] != kExecutions) ++failures;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what();
        ++failures;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(Graph, AdoptedListAndQueueOfARuntime) {
  const zex::Device& dev = env().dev;
  ze_command_list_desc_t ld{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, dev.compute_ordinal(), 0};
  ze_command_list_handle_t list = nullptr;
  ASSERT_EQ(zeCommandListCreate(dev.context_handle(), dev.handle(), &ld, &list), ZE_RESULT_SUCCESS);
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, dev.compute_ordinal(), 0, 0,
                             ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_queue_handle_t raw_q = nullptr;
  ASSERT_EQ(zeCommandQueueCreate(dev.context_handle(), dev.handle(), &qd, &raw_q), ZE_RESULT_SUCCESS);
  {
    StepGraph s(zex::Graph::adopt(dev, list, "adopted"), 1);
    EXPECT_EQ(s.graph.handle(), list);
    zex::Queue q = zex::Queue::adopt(dev, raw_q);
    EXPECT_EQ(q.handle(), raw_q);
    s.plan[2] = 1;
    for (int i = 0; i < 4; ++i) q.execute(s.graph);
    try {
      q.synchronize();
      ADD_FAILURE() << "no exception";
    } catch (const zex::KernelException& ex) {
      EXPECT_EQ(ex.execution(), std::optional<uint64_t>(2));
      EXPECT_EQ(ex.executions_thrown(), 1u);
    }
  }
  // zex did not destroy the runtime's objects.
  EXPECT_EQ(zeCommandQueueSynchronize(raw_q, UINT64_MAX), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeCommandQueueDestroy(raw_q), ZE_RESULT_SUCCESS);
  EXPECT_EQ(zeCommandListDestroy(list), ZE_RESULT_SUCCESS);
}

TEST(Graph, MisuseIsRefusedAndChangesNothing) {
  zex::Kernel count = env().mod.kernel("count_execution");
  Usm<uint32_t> counter(1);
  zex::Graph g(env().dev, "misuse");
  g.launch(count, cfg1d(1, 1), counter.get());
  zex::Queue q(env().dev), other(env().dev);
  EXPECT_THROW(q.execute(g), std::logic_error);  // not closed
  g.close();
  g.close();  // idempotent
  EXPECT_THROW(g.launch(count, cfg1d(1, 1), counter.get()), std::logic_error);  // closed
  EXPECT_THROW(zex::Graph::adopt(env().dev, nullptr), std::invalid_argument);
  EXPECT_THROW(zex::Queue::adopt(env().dev, nullptr), std::invalid_argument);
  q.execute(g);
  EXPECT_THROW(other.execute(g), std::logic_error);  // in flight on q
  q.synchronize();
  other.execute(g);  // fine once q has synchronized
  other.synchronize();
  EXPECT_EQ(counter[0], 2u);
  zex::Graph moved = std::move(g);
  EXPECT_THROW(q.execute(g), std::logic_error);  // NOLINT: moved from
  q.execute(moved);
  q.synchronize();
  EXPECT_EQ(counter[0], 3u);
  EXPECT_TRUE(q.synchronize_for(std::chrono::milliseconds(0)));
}

TEST(Graph, DestroyedWithExecutionsInFlight) {
  zex::Queue q(env().dev);
  {
    StepGraph s("dropped");
    s.plan[0] = 1;
    for (int i = 0; i < 10; ++i) q.execute(s.graph);
  }  // the graph's state waits for its executions; the throw is nobody's
  EXPECT_NO_THROW(q.synchronize());
}

}  // namespace

namespace {

TEST(Graph, OutlivesItsQueue) {
  StepGraph s("outlives");
  s.plan[0] = 1;
  {
    zex::Queue q(env().dev);
    q.execute(s.graph);
  }  // the queue waits for the execution; its throw is dropped with the queue
  zex::Queue q2(env().dev);
  q2.execute(s.graph);  // execution 1: plan[1] is 0
  EXPECT_NO_THROW(q2.synchronize());
  EXPECT_EQ(s.counter[0], 2u);
  s.plan[2] = 1;
  q2.execute(s.graph);
  EXPECT_THROW(q2.synchronize(), zex::KernelException);
}

}  // namespace

namespace {

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// After a recording failure: every later launch, close() and execute() throws `E` naming the failure;
// nothing was executed. Returns the message close() gave.
template <class E>
std::string expect_failed_recording(zex::Graph& g, zex::Kernel& count, uint32_t* counter) {
  EXPECT_TRUE(g.recording_failed());
  std::string m;
  try {
    g.close();
    ADD_FAILURE() << "close() after a failed recording did not throw";
  } catch (const E& e) {
    m = e.what();
  }
  EXPECT_THROW(g.launch(count, cfg1d(1, 1), counter), E);
  EXPECT_THROW(g.close(), E);  // every time: a retry would append a second epilogue
  zex::Queue q(env().dev);
  try {
    q.execute(g);
    ADD_FAILURE() << "execute() of a failed recording did not throw";
  } catch (const E& e) {
    EXPECT_EQ(std::string(e.what()), m);
  }
  EXPECT_FALSE(g.closed());
  EXPECT_EQ(g.executions(), 0u);
  q.synchronize();
  return m;
}

// zex still records and runs a new graph.
void expect_a_new_graph_runs(zex::Kernel& count, Usm<uint32_t>& counter) {
  counter[0] = 0;
  zex::Graph g(env().dev, "after");
  g.launch(count, cfg1d(1, 1), counter.get());
  g.close();
  zex::Queue q(env().dev);
  q.execute(g);
  q.execute(g);
  q.synchronize();
  EXPECT_EQ(counter[0], 2u);
}

}  // namespace

TEST(Graph, RecordingErrorsAreKeptAndRefuseCloseAndExecute) {
  zex::Kernel count = env().mod.kernel("count_execution");
  Usm<uint32_t> counter(1);
  counter[0] = 0;
  {  // a bad argument (debug level) in the second launch
    zex::Graph g(env().dev, "rec");
    g.launch(count, cfg1d(1, 1), counter.get());
    EXPECT_FALSE(g.recording_failed());
    EXPECT_THROW(g.launch(count, cfg1d(1, 1, 7), counter.get()), std::invalid_argument);
    const std::string m = expect_failed_recording<zex::InvalidArgument>(g, count, counter.get());
    EXPECT_TRUE(has(m, "zex::Graph: recording launch 2 (kernel 'count_execution') of graph 'rec' failed")) << m;
    EXPECT_TRUE(has(m, "record a new zex::Graph")) << m;
    EXPECT_TRUE(has(m, "debug_level 7")) << m;  // the first error itself
  }
  {  // the wrong argument count, first launch, unnamed graph
    zex::Graph g(env().dev);
    EXPECT_THROW(g.launch(count, cfg1d(1, 1)), std::invalid_argument);
    const std::string m = expect_failed_recording<zex::InvalidArgument>(g, count, counter.get());
    EXPECT_TRUE(has(m, "recording launch 1 (kernel 'count_execution') of a zex::Graph failed")) << m;
  }
  {  // a kernel of a moved-from handle
    zex::Graph g(env().dev, "moved");
    zex::Kernel k = env().mod.kernel("count_execution");
    zex::Kernel k2 = std::move(k);
    EXPECT_THROW(g.launch(k, cfg1d(1, 1), counter.get()), std::logic_error);  // NOLINT: moved from
    expect_failed_recording<zex::LogicError>(g, k2, counter.get());
  }
  {  // launching after a successful close is refused but fails nothing
    zex::Graph g(env().dev, "closed");
    g.launch(count, cfg1d(1, 1), counter.get());
    g.close();
    EXPECT_THROW(g.launch(count, cfg1d(1, 1), counter.get()), std::logic_error);
    EXPECT_FALSE(g.recording_failed());
    zex::Queue q(env().dev);
    q.execute(g);
    q.synchronize();
  }
  EXPECT_EQ(counter[0], 1u);  // only the last graph ran
  expect_a_new_graph_runs(count, counter);
}

// Injected failures (ZEX_CPU_FAIL, tests/runtime/CMakeLists.txt): the graph's second append, or its
// close, fails; the ZeError is kept with its call and result.
TEST(GraphFaults, AFailedAppendIsKept) {
  if (!zex_test::fault_run("graph_append"))
    GTEST_SKIP() << "runs in the CTest entry zex_tests_fault_graph_append (zeCommandListAppendLaunchKernel:2 fails)";
  zex::Kernel count = env().mod.kernel("count_execution");
  Usm<uint32_t> counter(1);
  zex::Graph g(env().dev, "oom");
  g.launch(count, cfg1d(1, 1), counter.get());
  try {
    g.launch(count, cfg1d(1, 1), counter.get());
    FAIL() << "the second zeCommandListAppendLaunchKernel did not fail";
  } catch (const zex::ZeError& e) {
    EXPECT_EQ(e.call(), "zeCommandListAppendLaunchKernel");
  }
  const std::string m = expect_failed_recording<zex::ZeError>(g, count, counter.get());
  EXPECT_TRUE(has(m, "zeCommandListAppendLaunchKernel failed with ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY")) << m;
  EXPECT_TRUE(has(m, "recording launch 2 (kernel 'count_execution') of graph 'oom'")) << m;
  try {
    g.close();
  } catch (const zex::ZeError& e) {
    EXPECT_EQ(e.call(), "zeCommandListAppendLaunchKernel");
    EXPECT_EQ(e.result(), ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY);
  }
  expect_a_new_graph_runs(count, counter);
}

TEST(GraphFaults, AFailedCloseIsKept) {
  if (!zex_test::fault_run("graph_close"))
    GTEST_SKIP() << "runs in the CTest entry zex_tests_fault_graph_close (zeCommandListClose:1 fails)";
  zex::Kernel count = env().mod.kernel("count_execution");
  Usm<uint32_t> counter(1);
  zex::Graph g(env().dev, "shut");
  g.launch(count, cfg1d(1, 1), counter.get());
  try {
    g.close();
    FAIL() << "the first zeCommandListClose did not fail";
  } catch (const zex::ZeError& e) {
    EXPECT_EQ(e.call(), "zeCommandListClose");
  }
  EXPECT_TRUE(g.recording_failed());
  zex::Queue q(env().dev);
  try {
    q.execute(g);
    FAIL() << "execute() of a graph whose close failed did not throw";
  } catch (const zex::ZeError& e) {
    EXPECT_EQ(e.call(), "zeCommandListClose");
    EXPECT_TRUE(has(e.what(), "closing the recording of graph 'shut'")) << e.what();
  }
  EXPECT_THROW(g.close(), zex::ZeError);
  expect_a_new_graph_runs(count, counter);
}
