// Stream::execute (include/zex/stream.hpp; issue 26 item 1): a zex::Graph executed on a zex::Stream through
// the driver's immediate append (spec 1.9; zex-cpu offers it as an extension function), in order with
// the stream's own launches, every execution's throw accounted for as on a Queue; without the entry
// point, a ZeError saying to use a Queue.
#include "zex_fixture.hpp"

#include <zex/graph.hpp>

#include <string>
#include <vector>

namespace {

using zex_test::cfg1d;
using zex_test::env;
using zex_test::Usm;

// count_execution then plan_throw (work-item 3 throws in execution e when plan[e] != 0).
struct Planned {
  zex::Kernel count = env().mod.kernel("count_execution");
  zex::Kernel plan_throw = env().mod.kernel("plan_throw");
  Usm<uint32_t> counter{1}, plan;
  uint32_t len;
  zex::Graph graph;
  explicit Planned(uint32_t n, const std::string& name = "on-stream") : plan(n), len(n), graph(env().dev, name) {
    counter[0] = 0;
    for (uint32_t i = 0; i < n; ++i) plan[i] = 0;
    graph.launch(count, cfg1d(1, 1), counter.get());
    graph.launch(plan_throw, cfg1d(1, 8), plan.get(), counter.get(), len);
    graph.close();
  }
};

std::vector<uint64_t> executions_of(const zex::KernelException& e) {
  std::vector<uint64_t> v{e.execution().value_or(UINT64_MAX)};
  for (const auto& o : e.others()) v.push_back(o.execution.value_or(UINT64_MAX));
  return v;
}

}  // namespace

TEST(GraphOnStream, ExecutionsRunInOrderWithTheStreamsLaunchesAndEachThrowIsKept) {
  Planned p(100);
  p.plan[3] = p.plan[7] = p.plan[70] = 1;  // 70: past the ring of 64, harvested early
  zex::Stream s(env().dev);
  zex::Kernel copy = env().mod.kernel("copy_word");
  Usm<uint32_t> seen(1);
  for (uint32_t e = 0; e < 100; ++e) {
    s.execute(p.graph);
    if (e == 49) s.launch(copy, cfg1d(1, 1), seen.get(), p.counter.get());  // between executions 49 and 50
  }
  try {
    s.synchronize();
    FAIL() << "no exception for executions 3, 7 and 70";
  } catch (const zex::KernelException& e) {
    EXPECT_EQ(executions_of(e), (std::vector<uint64_t>{3, 7, 70})) << e.what();
    EXPECT_EQ(e.executions_thrown(), 3u);
    EXPECT_EQ(e.info().executions_synchronized, 100u);
    EXPECT_EQ(e.kernel_name(), "plan_throw");
    EXPECT_NE(std::string(e.what()).find("in execution 3 of graph 'on-stream' (3 of 100 executions threw"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(p.counter[0], 100u);
  EXPECT_EQ(seen[0], 50u) << "the stream's launch ran after execution 49 and before 50";
  EXPECT_EQ(p.graph.executions(), 100u);
  // The stream and the graph stay usable, on the stream and then on a queue.
  s.execute(p.graph);
  s.synchronize();
  zex::Queue q(env().dev);
  q.execute(p.graph);
  q.synchronize();
  EXPECT_EQ(p.counter[0], 102u);
}

TEST(GraphOnStream, TheStreamsOwnThrowComesFirstThenTheGraphs) {
  Planned p(4);
  p.plan[1] = 1;
  zex::Stream s(env().dev);
  zex::Kernel maybe = env().mod.kernel("maybe_throw");
  Usm<uint32_t> count(1);
  s.execute(p.graph);
  s.execute(p.graph);
  s.launch(maybe, cfg1d(1, 1), count.get(), uint32_t(1));
  try {
    s.synchronize();
    FAIL() << "the stream's own launch threw";
  } catch (const zex::KernelException& e) {
    EXPECT_EQ(e.kernel_name(), "maybe_throw");
    EXPECT_FALSE(e.execution().has_value());
  }
  try {
    s.synchronize();
    FAIL() << "the graph's execution 1 threw";
  } catch (const zex::KernelException& e) {
    EXPECT_EQ(e.execution(), std::optional<uint64_t>(1));
    EXPECT_EQ(e.executions_thrown(), 1u);
  }
  EXPECT_NO_THROW(s.synchronize());
}

TEST(GraphOnStream, OneQueueOrStreamAtATimeAndMisuse) {
  Planned p(4);
  zex::Stream s(env().dev), other(env().dev);
  zex::Queue q(env().dev);
  s.execute(p.graph);
  EXPECT_THROW(q.execute(p.graph), std::logic_error);
  EXPECT_THROW(other.execute(p.graph), std::logic_error);
  s.synchronize();
  q.execute(p.graph);
  EXPECT_THROW(s.execute(p.graph), std::logic_error);
  q.synchronize();
  zex::Graph open(env().dev);
  EXPECT_THROW(s.execute(open), std::logic_error);  // not closed
  EXPECT_EQ(p.counter[0], 2u);
}

TEST(GraphOnStream, DestroyedStreamForgetsAndDestroyedGraphWaits) {
  Planned p(4);
  p.plan[0] = 1;
  {
    zex::Stream s(env().dev);
    s.execute(p.graph);
  }  // waits; the throw is nobody's
  zex::Queue q(env().dev);
  p.plan[0] = 0;
  q.execute(p.graph);
  EXPECT_NO_THROW(q.synchronize()) << "the throw of the destroyed stream's execution is not raised later";
  zex::Stream s(env().dev);
  {
    Planned gone(2);
    s.execute(gone.graph);
    s.execute(gone.graph);
  }  // ~Graph waits for the stream before the buffers go
  s.synchronize();
}

TEST(GraphOnStream, WithoutImmediateAppendStreamExecuteSaysToUseAQueue) {
  // A context made while zex-cpu hides the entry point, as a driver without it.
  zex_test::ScopedEnv hide("ZEX_CPU_NO_IMMEDIATE_APPEND", "1");
  zex::Context ctx;
  zex::Device dev = ctx.device(0);
  zex::Graph g(dev, "plain");
  g.close();
  zex::Stream s(dev);
  try {
    s.execute(g);
    FAIL() << "Stream::execute without immediate append did not throw";
  } catch (const zex::ZeError& e) {
    EXPECT_EQ(e.result(), ZE_RESULT_ERROR_UNSUPPORTED_FEATURE);
    EXPECT_EQ(e.call(), "zeCommandListImmediateAppendCommandListsExp");
    EXPECT_NE(std::string(e.what()).find("execute the graph on a zex::Queue"), std::string::npos) << e.what();
  }
  EXPECT_EQ(g.executions(), 0u);
  zex::Queue q(dev);
  q.execute(g);
  q.synchronize();
  s.synchronize();
}
