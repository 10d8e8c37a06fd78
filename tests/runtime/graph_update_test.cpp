// Graph::update (include/zex/graph.hpp): a recorded launch's arguments changed between executions
// without recording the graph again by hand: pointers, scalars and zex::local sizes, for the executions
// submitted after the update; a throw of an execution after an update still names its execution,
// kernel, values and launch site. zex_tests runs this on zex-cpu's mutable command lists (the update in
// place); zex_tests_graph_rerecord runs it again with ZEX_GRAPH_UPDATE=rerecord, where zex records the
// list again, as on a driver without them.
#include "zex_fixture.hpp"

#include <zex/graph.hpp>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using zex_test::cfg1d;
using zex_test::env;
using zex_test::Usm;

bool rerecord_mode() {
  const char* v = std::getenv("ZEX_GRAPH_UPDATE");
  return v && std::string(v) == "rerecord";
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Whether the driver lists the mutable command list extension (zex-cpu does, unless hidden).
bool driver_has_mutable_lists() {
  ze_driver_handle_t d = env().ctx.driver();
  uint32_t n = 0;
  if (zeDriverGetExtensionProperties(d, &n, nullptr) != ZE_RESULT_SUCCESS) return false;
  std::vector<ze_driver_extension_properties_t> exts(n);
  if (n && zeDriverGetExtensionProperties(d, &n, exts.data()) != ZE_RESULT_SUCCESS) return false;
  for (const auto& e : exts)
    if (std::string(e.name) == "ZE_experimental_mutable_command_list") return true;
  return false;
}

// count_execution(counter), plan_throw(plan, counter, len), copy_word(dst, counter), as graph_test.cpp's
// step graph; the launches' handles kept.
struct Step {
  zex::Kernel count = env().mod.kernel("count_execution");
  zex::Kernel plan_throw = env().mod.kernel("plan_throw");
  zex::Kernel copy = env().mod.kernel("copy_word");
  Usm<uint32_t> counter{1}, plan{8}, dst{1};
  zex::Graph graph;
  zex::GraphLaunch h_count, h_plan, h_copy;
  uint32_t plan_line = 0;

  explicit Step(const std::string& name, bool expose = false) : graph(env().dev, name) {
    h_count = graph.launch(count, cfg1d(1, 1), counter.get());
    plan_line = __LINE__ + 1;
    h_plan = graph.launch(plan_throw, cfg1d(1, 64), plan.get(), counter.get(), 8u);
    if (expose) (void)graph.handle();
    h_copy = graph.launch(copy, cfg1d(1, 1), dst.get(), counter.get());
    graph.close();
  }
};

void expect_planned_throw(zex::Queue& q, const Step& s, uint64_t execution, uint64_t value) {
  try {
    q.synchronize();
    ADD_FAILURE() << "no exception for execution " << execution;
  } catch (const zex::KernelException& e) {
    EXPECT_EQ(e.execution(), std::optional<uint64_t>(execution));
    EXPECT_EQ(e.info().kernel_name, "plan_throw");
    EXPECT_EQ(e.info().values, (std::vector<uint64_t>{execution, value}));
    EXPECT_EQ(e.info().launch_site ? e.info().launch_site->line : 0u, s.plan_line);
  }
}

}  // namespace

TEST(GraphUpdate, LaunchesAreNumberedInRecordingOrder) {
  Step s("numbers");
  EXPECT_EQ(s.h_count.number, 1u);
  EXPECT_EQ(s.h_plan.number, 2u);
  EXPECT_EQ(s.h_copy.number, 3u);
  EXPECT_EQ(s.graph.launches(), 3u);
  // In place where the driver offers mutable command lists; ZEX_GRAPH_UPDATE=rerecord makes zex ignore them.
  EXPECT_EQ(s.graph.updates_in_place(), !rerecord_mode() && driver_has_mutable_lists());
}

TEST(GraphUpdate, PointersAndScalarsChangeForTheNextExecutions) {
  Step s("update");
  zex::Queue q(env().dev);
  q.execute(s.graph);
  q.execute(s.graph);
  q.synchronize();
  EXPECT_EQ(s.dst[0], 2u);

  // A pointer: copy_word writes to another buffer from the next execution on.
  Usm<uint32_t> other(1);
  s.graph.update(s.h_copy, other.get(), s.counter.get());
  q.execute(s.graph);
  q.synchronize();
  EXPECT_EQ(other[0], 3u);
  EXPECT_EQ(s.dst[0], 2u) << "the old buffer was written after the update";
  EXPECT_EQ(s.counter[0], 3u) << "the launches not updated ran as recorded";

  // Another plan: execution 3 throws, with the values of the new plan and the launch's own site.
  Usm<uint32_t> plan2(8);
  plan2[3] = 55;
  s.graph.update(s.h_plan, plan2.get(), s.counter.get(), 8u);
  q.execute(s.graph);
  expect_planned_throw(q, s, 3, 55);

  // A scalar: len 1 makes every execution read plan2[0].
  plan2[0] = 9;
  s.graph.update(s.h_plan, plan2.get(), s.counter.get(), 1u);
  q.execute(s.graph);
  expect_planned_throw(q, s, 4, 9);

  // Back to what was recorded: nothing throws.
  s.graph.update(s.h_plan, s.plan.get(), s.counter.get(), 8u);
  for (int i = 0; i < 3; ++i) q.execute(s.graph);
  EXPECT_NO_THROW(q.synchronize());
  EXPECT_EQ(s.counter[0], 8u);
  EXPECT_EQ(other[0], 8u);
  EXPECT_EQ(s.graph.executions(), 8u);
}

TEST(GraphUpdate, ConvertsScalarsAsLaunchDoes) {
  Step s("convert");
  zex::Queue q(env().dev);
  Usm<uint32_t> plan2(8);
  plan2[0] = 4;
  // A size_t for the uint parameter `len`: converted (it fits), as launch() converts it.
  s.graph.update(s.h_plan, plan2.get(), s.counter.get(), size_t{1});
  q.execute(s.graph);
  expect_planned_throw(q, s, 0, 4);
  // One that does not fit is refused, and nothing changes.
  EXPECT_THROW(s.graph.update(s.h_plan, plan2.get(), s.counter.get(), size_t{1} << 40), std::invalid_argument);
  q.execute(s.graph);
  expect_planned_throw(q, s, 1, 4);
}

TEST(GraphUpdate, BadUpdatesAreRefusedAndChangeNothing) {
  Step s("refusals");
  zex::Queue q(env().dev);
  Usm<uint32_t> other(1);
  try {
    s.graph.update(zex::GraphLaunch{4}, other.get(), s.counter.get());
    ADD_FAILURE() << "launch 4 of 3 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(has(e.what(), "has no launch 4 (its launches are numbered 1 to 3")) << e.what();
  }
  EXPECT_THROW(s.graph.update(zex::GraphLaunch{0}, other.get(), s.counter.get()), std::invalid_argument);
  EXPECT_THROW(s.graph.update(s.h_copy, other.get()), std::invalid_argument);  // one argument of two
  EXPECT_THROW(s.graph.update(s.h_plan, s.plan.get(), s.counter.get(), 1.5), std::invalid_argument);  // a double for a uint
  EXPECT_FALSE(s.graph.recording_failed());
  q.execute(s.graph);
  q.synchronize();
  EXPECT_EQ(s.dst[0], 1u);
  EXPECT_EQ(other[0], 0u);

  // Before close(): refused (record the launch with the arguments it should have).
  zex::Graph open(env().dev, "open");
  zex::GraphLaunch h = open.launch(s.copy, cfg1d(1, 1), s.dst.get(), s.counter.get());
  try {
    open.update(h, other.get(), s.counter.get());
    ADD_FAILURE() << "an update before close() was accepted";
  } catch (const std::logic_error& e) {
    EXPECT_TRUE(has(e.what(), "graph 'open' is not closed")) << e.what();
  }
}

TEST(GraphUpdate, WaitsForExecutionsInFlightAndKeepsTheirThrows) {
  Step s("in_flight");
  zex::Queue q(env().dev);
  s.plan[0] = 21;  // execution 0 throws
  q.execute(s.graph);
  Usm<uint32_t> other(1);
  s.graph.update(s.h_copy, other.get(), s.counter.get());  // after execution 0 finished
  s.plan[1] = 0;
  q.execute(s.graph);
  expect_planned_throw(q, s, 0, 21);
  EXPECT_EQ(s.dst[0], 1u);
  EXPECT_EQ(other[0], 2u);
}

TEST(GraphUpdate, LocalSizesChangeAndTheLocalsAfterThemMove) {
  zex::Kernel k = env().mod.kernel("two_locals");
  const uint32_t groups = 2, size = 64;
  Usm<uint32_t> out(groups * size);
  zex::Graph g(env().dev, "locals");
  const zex::GraphLaunch h =
      g.launch(k, cfg1d(groups, size), out.get(), zex::local(size * 4), zex::local(size * 4), size);
  g.close();
  zex::Queue q(env().dev);
  auto expect_out = [&](const char* what) {
    for (uint32_t i = 0; i < groups * size; ++i)
      ASSERT_EQ(out[i], 7000u + i % size + 1) << what << ", work-item " << i;
  };
  q.execute(g);
  q.synchronize();
  expect_out("as recorded");
  // `a` grows to 4 KB and fills it all: `b`, after it, must have moved (no LocalOverlap throw).
  for (uint32_t i = 0; i < groups * size; ++i) out[i] = 0;
  g.update(h, out.get(), zex::local(1024 * 4), zex::local(size * 4), 1024u);
  q.execute(g);
  EXPECT_NO_THROW(q.synchronize());
  expect_out("a grown to 4 KB");
  // Only a's size changes (a subset of the launch's locals): still laid out again.
  for (uint32_t i = 0; i < groups * size; ++i) out[i] = 0;
  g.update(h, out.get(), zex::local(2048 * 4), zex::local(size * 4), 1024u);
  q.execute(g);
  EXPECT_NO_THROW(q.synchronize());
  expect_out("a grown to 8 KB, filled to 4 KB");
}

TEST(GraphUpdate, ARecordingAgainNeedsAListNobodyElseAppendedTo) {
  Step s("exposed", /*expose=*/true);
  zex::Queue q(env().dev);
  Usm<uint32_t> other(1);
  if (s.graph.updates_in_place()) {
    s.graph.update(s.h_copy, other.get(), s.counter.get());  // in place: the runtime's appends stay
    q.execute(s.graph);
    q.synchronize();
    EXPECT_EQ(other[0], 1u);
    return;
  }
  try {
    s.graph.update(s.h_copy, other.get(), s.counter.get());
    ADD_FAILURE() << "a graph whose handle() was handed out while recording was recorded again";
  } catch (const std::logic_error& e) {
    EXPECT_TRUE(has(e.what(), "its handle() was handed out while it was recorded")) << e.what();
  }
  EXPECT_FALSE(s.graph.recording_failed());
  q.execute(s.graph);
  q.synchronize();
  EXPECT_EQ(s.dst[0], 1u);
}

TEST(GraphUpdate, RefusedWhileInFlightOnAStream) {
  Step s("on_stream");
  zex::Stream st(env().dev);
  Usm<uint32_t> flag(1), other(1);
  // The stream's first launch waits for the flag, so the graph's execution after it is in flight.
  zex::Kernel wait = env().mod.kernel("wait_for_flag");
  st.launch(wait, cfg1d(1, 1), flag.get());
  st.execute(s.graph);
  try {
    s.graph.update(s.h_copy, other.get(), s.counter.get());
    ADD_FAILURE() << "an update while in flight on a stream was accepted";
  } catch (const std::logic_error& e) {
    EXPECT_TRUE(has(e.what(), "in flight on a zex::Stream")) << e.what();
  }
  __atomic_store_n(flag.get(), 1u, __ATOMIC_RELEASE);
  st.synchronize();
  s.graph.update(s.h_copy, other.get(), s.counter.get());
  st.execute(s.graph);
  st.synchronize();
  EXPECT_EQ(s.dst[0], 1u);
  EXPECT_EQ(other[0], 2u);
}

TEST(GraphUpdate, ThreadsEachUpdateTheirOwnGraph) {
  constexpr int kThreads = 4, kRounds = 10;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      try {
        Step s("thread" + std::to_string(t));
        zex::Queue q(env().dev);
        Usm<uint32_t> a(1), b(1);
        for (int r = 0; r < kRounds; ++r) {
          s.graph.update(s.h_copy, (r % 2 ? a : b).get(), s.counter.get());
          q.execute(s.graph);
          q.synchronize();
          if ((r % 2 ? a : b)[0] != uint32_t(r + 1)) failures[t] = "round " + std::to_string(r) + ": not written";
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  for (auto& th : ts) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], "") << "thread " << t;
}

// In the CTest entry zex_tests_fault_graph_update (zeCommandListClose:2 fails: the close after the
// update, in place or after recording again): the update throws the driver's error and the graph is
// failed, as a failed recording is: executions are refused with that error.
TEST(GraphUpdateFaults, AFailedUpdateFailsTheGraph) {
  if (!zex_test::fault_run("graph_update"))
    GTEST_SKIP() << "runs in the CTest entry zex_tests_fault_graph_update (zeCommandListClose:2 fails)";
  Step s("broken");
  Usm<uint32_t> other(1);
  try {
    s.graph.update(s.h_copy, other.get(), s.counter.get());
    FAIL() << "the second zeCommandListClose did not fail";
  } catch (const zex::ZeError& e) {
    EXPECT_EQ(e.call(), "zeCommandListClose");
    EXPECT_EQ(e.result(), ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY);
  }
  EXPECT_TRUE(s.graph.recording_failed());
  zex::Queue q(env().dev);
  try {
    q.execute(s.graph);
    FAIL() << "a graph whose update failed was executed";
  } catch (const zex::ZeError& e) {
    EXPECT_EQ(e.call(), "zeCommandListClose");
    EXPECT_TRUE(has(e.what(), "updating launch 3 of graph 'broken'")) << e.what();
  }
  // A new graph works.
  Step fresh("fresh");
  q.execute(fresh.graph);
  q.synchronize();
  EXPECT_EQ(fresh.dst[0], 1u);
}
