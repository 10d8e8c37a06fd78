// zex_bench: a 10-launch graph (the empty kernel, 1-item or 64-item groups) recorded once and executed
// 1000 times per synchronize (issue 26): zex::Graph on a zex::Queue against the same regular list
// executed through raw Level Zero (zeCommandQueueExecuteCommandLists per execution, one
// zeCommandQueueSynchronize). zex's list has a barrier between launches (recording order) and each
// execution carries its epilogue list; the raw list is the cheapest correct one: barriers too, since a
// runtime that needs its launches in order records them (as SYCL graphs' in-order edges do).
#include "bench_env.hpp"

#include <zex/graph.hpp>

namespace zex_bench {

namespace {
constexpr int kGraphLaunches = 10;
}  // namespace

// BM_Graph_Raw's list, and with `floor` one more launch after a barrier: another kernel handle (one
// work-item, arguments set once), as zex's epilogue is. That is the floor of any design that accounts
// for each execution on the device with a command of its own (docs/decisions.md, "The graph bench's
// floor"): on zex-cpu a launch of a second kernel costs PoCL about two launches of the first.
void graph_raw(benchmark::State& state, bool floor) {
  const uint32_t items = uint32_t(state.range(0));
  RawParts p("empty", 1);
  RawParts second("empty", 1);
  zex::check(zeKernelSetGroupSize(second.k, 1, 1, 1), "zeKernelSetGroupSize");
  {
    zex_state_t st = zex::SlabPool::state(second.slot, ++second.id);
    zex::check(zeKernelSetArgumentValue(second.k, 0, sizeof st, &st), "zeKernelSetArgumentValue");
  }
  zex::check(zeKernelSetGroupSize(p.k, items, 1, 1), "zeKernelSetGroupSize");
  auto& e = *g_env;
  ze_command_list_desc_t ld{ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC, nullptr, e.dev.compute_ordinal(), 0};
  ze_command_list_handle_t list = nullptr;
  zex::check(zeCommandListCreate(e.ctx.handle(), e.dev.handle(), &ld, &list), "zeCommandListCreate");
  const ze_group_count_t g{1, 1, 1};
  for (int i = 0; i < kGraphLaunches; ++i) {
    zex_state_t st = zex::SlabPool::state(p.slot, ++p.id);
    zex::check(zeKernelSetArgumentValue(p.k, 0, sizeof st, &st), "zeKernelSetArgumentValue");
    if (i) zex::check(zeCommandListAppendBarrier(list, nullptr, 0, nullptr), "zeCommandListAppendBarrier");
    zex::check(zeCommandListAppendLaunchKernel(list, p.k, &g, nullptr, 0, nullptr), "zeCommandListAppendLaunchKernel");
  }
  if (floor) {
    zex::check(zeCommandListAppendBarrier(list, nullptr, 0, nullptr), "zeCommandListAppendBarrier");
    zex::check(zeCommandListAppendLaunchKernel(list, second.k, &g, nullptr, 0, nullptr), "zeCommandListAppendLaunchKernel");
  }
  zex::check(zeCommandListAppendBarrier(list, nullptr, 0, nullptr), "zeCommandListAppendBarrier");
  zex::check(zeCommandListClose(list), "zeCommandListClose");
  ze_command_queue_desc_t qd{ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, nullptr, e.dev.compute_ordinal(), 0, 0,
                             ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_command_queue_handle_t q = nullptr;
  zex::check(zeCommandQueueCreate(e.ctx.handle(), e.dev.handle(), &qd, &q), "zeCommandQueueCreate");
  for (auto _ : state) {
    for (int i = 0; i < kGraphExecutions; ++i)
      zex::check(zeCommandQueueExecuteCommandLists(q, 1, &list, nullptr), "zeCommandQueueExecuteCommandLists");
    zex::check(zeCommandQueueSynchronize(q, UINT64_MAX), "zeCommandQueueSynchronize");
  }
  zeCommandQueueDestroy(q);
  zeCommandListDestroy(list);
  state.SetItemsProcessed(state.iterations() * kGraphExecutions);
}

void BM_Graph_Raw(benchmark::State& state) { graph_raw(state, false); }
void BM_Graph_RawFloor(benchmark::State& state) { graph_raw(state, true); }

namespace {
void graph_zex(benchmark::State& state, const zex::Module& mod) {
  const uint32_t items = uint32_t(state.range(0));
  zex::Kernel k = mod.kernel("empty");
  zex::Graph graph(g_env->dev, "bench");
  zex::LaunchConfig cfg = one_item();
  cfg.group_size = {items, 1, 1};
  for (int i = 0; i < kGraphLaunches; ++i) graph.launch(k, cfg);
  graph.close();
  zex::Queue q(g_env->dev);
  for (auto _ : state) {
    for (int i = 0; i < kGraphExecutions; ++i) q.execute(graph);
    q.synchronize();
  }
  state.SetItemsProcessed(state.iterations() * kGraphExecutions);
}
}  // namespace

void BM_Graph_Zex(benchmark::State& state) { graph_zex(state, g_env->mod); }

// The same graph from the module built with -g (bench_kernels_g.spv beside the first): debug
// information must cost the executions nothing (it changes the build, not the code that runs).
void BM_Graph_ZexDebugInfo(benchmark::State& state) {
  static zex::Module* mod = [] {
    std::string path = g_spv_path;
    const size_t dot = path.rfind(".spv");
    path = dot == std::string::npos ? path : path.substr(0, dot) + "_g.spv";
    return new zex::Module(g_env->dev, read_file(path.c_str()));  // never destroyed, as g_env
  }();
  graph_zex(state, *mod);
}

// Graph::update's cost (issue 26 item 6): a 10-launch graph of `touch` executed once per iteration and
// synchronized, with (range 1) or without (range 0) an update of launch 5's token before the execution.
// The path is the context's (in place through mutable command lists where the driver offers them, which
// zex-cpu does; recorded again with ZEX_GRAPH_UPDATE=rerecord): run the bench once each way.
void BM_GraphUpdate(benchmark::State& state) {
  const bool update = state.range(0) != 0;
  zex::Kernel k = g_env->mod.kernel("touch");
  zex::Graph graph(g_env->dev, "updated");
  uint32_t* flag = g_env->flag;
  zex::GraphLaunch h{};
  for (uint32_t i = 0; i < kGraphLaunches; ++i) {
    zex::GraphLaunch l = graph.launch(k, one_item(), flag, i);
    if (i == 5) h = l;
  }
  graph.close();
  zex::Queue q(g_env->dev);
  uint32_t token = 100;
  for (auto _ : state) {
    if (update) graph.update(h, flag, ++token);
    q.execute(graph);
    q.synchronize();
  }
  state.SetLabel(graph.updates_in_place() ? "in place" : "recorded again");
}

}  // namespace zex_bench
