// Early stop (LaunchConfig::stop_on_throw, Graph::stop_on_throw; docs/integration.md, "Early stop"):
// once a work-item threw into the slot, the work-groups of a stop_on_throw launch that start after it
// return at once, and so do later stop_on_throw launches on the stream until synchronize, or in the
// graph's execution; each launch still completes, the throw is raised as ever (name, values, launch
// site, level), and a kernel with barriers stops only for an earlier launch's throw, without a hang.
#include "zex_fixture.hpp"

#include <zex/graph.hpp>

#include <cstdint>
#include <string>

namespace {

using zex_test::cfg1d;
using zex_test::env;
using zex_test::line_of;
using zex_test::Usm;

constexpr uint32_t kNone = UINT32_MAX;
constexpr uint32_t kGroups = 2048, kItems = 64, kTotal = kGroups * kItems;

zex::LaunchConfig stop_cfg(uint32_t groups, uint32_t items, int level = -1, bool stop = true) {
  zex::LaunchConfig c = cfg1d(groups, items, level);
  c.stop_on_throw = stop;
  return c;
}

// The exception of `s`'s synchronize (an empty name if none).
zex::KernelExceptionInfo sync_info(zex::Stream& s) {
  try {
    s.synchronize();
  } catch (const zex::KernelException& e) {
    return e.info();
  }
  return {};
}

TEST(Stop, NothingThrownRunsEveryWorkItem) {
  zex::Kernel k = env().mod.kernel("stop_mark");
  zex::Stream s(env().dev);
  Usm<uint32_t> done(1 + kTotal);
  s.launch(k, stop_cfg(kGroups, kItems), done.get(), kNone);
  s.synchronize();
  EXPECT_EQ(done[0], kTotal);
  for (uint32_t i = 0; i < kTotal; ++i) ASSERT_EQ(done[1 + i], 1u) << "work-item " << i;
}

// A throw in the first work-group: without stop every other work-item runs; with it, the groups that
// start after the claim skip their work (on zex-cpu's two threads nearly all of them).
TEST(Stop, ThrowInTheFirstGroupSkipsTheRest) {
  zex::Kernel k = env().mod.kernel("stop_mark");
  zex::Stream s(env().dev);
  for (bool stop : {false, true}) {
    Usm<uint32_t> done(1 + kTotal);
    const uint32_t line = __LINE__ + 1;
    s.launch(k, stop_cfg(kGroups, kItems, 1, stop), done.get(), 0u);
    zex::KernelExceptionInfo e = sync_info(s);
    EXPECT_EQ(e.name, "StopError") << "stop " << stop;
    EXPECT_EQ(e.kernel_name, "stop_mark");
    ASSERT_EQ(e.values.size(), 2u);
    EXPECT_EQ(e.values[0], 0u);
    ASSERT_TRUE(e.launch_site.has_value());
    EXPECT_EQ(e.launch_site->line, line);
    ASSERT_FALSE(e.frames.empty());
    EXPECT_EQ(e.frames[0].line, line_of("stop_mark"));
    if (!stop) {
      EXPECT_EQ(done[0], kTotal - 1) << "every work-item but the thrower";
    } else {
      EXPECT_LT(done[0], kTotal / 2) << "most work-groups start after the throw and skip";
      uint32_t marked = 0;
      for (uint32_t i = 0; i < kTotal; ++i) marked += done[1 + i];
      EXPECT_EQ(marked, done[0]) << "a skipped work-item does nothing at all";
      // Whole groups skip: a group checks when its work-items start (on zex-cpu once per group, before
      // PoCL's loop over them; on a GPU as its hardware threads start), so the thrower's own group may
      // finish and a group is not asked to stop part-way.
      uint32_t skipped_groups = 0;
      for (uint32_t g = 1; g < kGroups; ++g) {
        uint32_t in_group = 0;
        for (uint32_t i = 0; i < kItems; ++i) in_group += done[1 + g * kItems + i];
        skipped_groups += in_group == 0;
      }
      EXPECT_GE(skipped_groups, kGroups / 2) << "most groups skip entirely";
    }
  }
  // The stream is usable, and a stop_on_throw launch runs fully again after the synchronize.
  Usm<uint32_t> again(1 + kTotal);
  s.launch(k, stop_cfg(kGroups, kItems), again.get(), kNone);
  s.synchronize();
  EXPECT_EQ(again[0], kTotal);
}

// Later launches on the stream: a stop_on_throw launch after a throw returns at once, a plain one runs.
TEST(Stop, LaterLaunchesOnTheStreamSkipUntilSynchronize) {
  zex::Kernel k = env().mod.kernel("stop_mark");
  zex::Stream s(env().dev);
  for (int level : {0, 1, 2}) {
    Usm<uint32_t> first(1 + kItems), stopped(1 + kItems), plain(1 + kItems);
    s.launch(k, cfg1d(1, kItems, level), first.get(), 0u);
    s.launch(k, stop_cfg(1, kItems, level), stopped.get(), kNone);
    s.launch(k, cfg1d(1, kItems, level), plain.get(), kNone);
    zex::KernelExceptionInfo e = sync_info(s);
    EXPECT_EQ(e.name, "StopError") << "level " << level;
    EXPECT_EQ(e.debug_level, level);
    EXPECT_EQ(e.kernel_name, "stop_mark");
    EXPECT_EQ(first[0], kItems - 1) << "level " << level;
    EXPECT_EQ(stopped[0], 0u) << "level " << level;
    EXPECT_EQ(plain[0], kItems) << "level " << level;
  }
}

// A kernel with a barrier and __local memory: within the throwing launch every group completes (no
// work-group splits at the barrier); a later stop_on_throw launch skips entirely.
TEST(Stop, BarrierKernelStopsOnlyForEarlierLaunches) {
  zex::Kernel k = env().mod.kernel("stop_barrier");
  zex::Stream s(env().dev);
  const uint32_t groups = 256, group_sum = kItems * (kItems - 1) / 2;
  Usm<uint32_t> first(1), later(1), clean(1);
  s.launch(k, stop_cfg(groups, kItems), first.get(), 0u, zex::local(kItems * sizeof(uint32_t)));
  s.launch(k, stop_cfg(groups, kItems), later.get(), kNone, zex::local(kItems * sizeof(uint32_t)));
  zex::KernelExceptionInfo e = sync_info(s);
  EXPECT_EQ(e.name, "StopError");
  ASSERT_EQ(e.values.size(), 2u);
  EXPECT_EQ(e.values[1], 1u);
  EXPECT_EQ(first[0], (groups - 1) * group_sum) << "every group but the thrower's adds its sum";
  EXPECT_EQ(later[0], 0u) << "the launch after the throw skips";
  s.launch(k, stop_cfg(groups, kItems), clean.get(), kNone, zex::local(kItems * sizeof(uint32_t)));
  s.synchronize();
  EXPECT_EQ(clean[0], groups * group_sum);
}

// In a graph: the launches after the throwing one in the same execution skip; the next execution
// (the epilogue reset the slot) runs in full. Graph-wide (stop_on_throw(true)) and per launch.
TEST(Stop, GraphLaunchesAfterAThrowSkipInThatExecutionOnly) {
  zex::Kernel count = env().mod.kernel("count_execution");
  zex::Kernel plan_throw = env().mod.kernel("plan_throw");
  for (bool graph_wide : {true, false}) {
    Usm<uint32_t> counter(1), plan(4), after(1);
    plan[1] = 5;  // execution 1 throws
    zex::Graph g(env().dev, "stop");
    if (graph_wide) g.stop_on_throw(true);
    EXPECT_EQ(g.stop_on_throw(), graph_wide);
    const zex::LaunchConfig one = graph_wide ? cfg1d(1, 1) : stop_cfg(1, 1);
    g.launch(count, one, counter.get());
    g.launch(plan_throw, graph_wide ? cfg1d(1, 64) : stop_cfg(1, 64), plan.get(), counter.get(), 4u);
    g.launch(count, one, after.get());
    g.close();
    zex::Queue q(env().dev);
    for (int e = 0; e < 4; ++e) q.execute(g);
    try {
      q.synchronize();
      ADD_FAILURE() << "execution 1 threw";
    } catch (const zex::KernelException& ex) {
      EXPECT_EQ(ex.execution(), 1u);
      EXPECT_EQ(ex.executions_thrown(), 1u);
      EXPECT_EQ(ex.name(), "PlanError");
    }
    EXPECT_EQ(counter[0], 4u) << "every execution's first launch ran";
    EXPECT_EQ(after[0], 3u) << "the launch after the throw skipped in execution 1 only";
  }
}

// The variants are separate driver modules: launching one kernel with and without stop, at every level,
// on one stream, mixes without confusing the records (names, lines, levels).
TEST(Stop, VariantsMixOnOneStream) {
  zex::Kernel k = env().mod.kernel("stop_mark");
  zex::Stream s(env().dev);
  for (int round = 0; round < 2; ++round)
    for (int level : {2, 0, 1})
      for (bool stop : {true, false}) {
        Usm<uint32_t> done(1 + kItems);
        s.launch(k, stop_cfg(2, kItems / 2, level, stop), done.get(), 1u);
        zex::KernelExceptionInfo e = sync_info(s);
        EXPECT_EQ(e.name, "StopError");
        EXPECT_EQ(e.debug_level, level);
        if (level == 2) {
          ASSERT_TRUE(e.global_id.has_value());
          EXPECT_EQ((*e.global_id)[0], kItems / 2);
        }
      }
}

}  // namespace
