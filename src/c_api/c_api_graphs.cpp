// The C API's graphs and queues (zex::Graph, zex::Queue; <zex/zex.h>, "graphs"), and the exception's
// execution fields. Every entry point checks its handles, then runs the C++ call under guard().
#include "boundary.hpp"

using namespace zex_c;

zex_result_t zex_graph_create(zex_device_t device, const char* name, zex_graph_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(device);
  return guard([&] {
    *out = new zex_graph_s{zex::Graph(device->dev, name ? name : "")};
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_graph_adopt(zex_device_t device, ze_command_list_handle_t list, const char* name, zex_graph_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(device);
  ZEX_REQUIRE(list);
  return guard([&] {
    *out = new zex_graph_s{zex::Graph::adopt(device->dev, list, name ? name : "")};
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_graph_set_language(zex_graph_t graph, zex_language_t language) {
  ZEX_REQUIRE(graph);
  return set_language(__func__, graph->lang, language);
}

zex_result_t zex_graph_set_stop_on_throw(zex_graph_t graph, int on) {
  ZEX_REQUIRE(graph);
  return guard([&] {
    graph->g.stop_on_throw(on != 0);
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_graph_launch_at(zex_graph_t graph, zex_kernel_t kernel, const zex_launch_config_t* config,
                                 uint32_t num_args, const zex_arg_t* args, const char* file, uint32_t line) {
  ZEX_REQUIRE(graph);
  ZEX_REQUIRE(kernel);
  ZEX_REQUIRE(config);
  if (num_args != 0 && args == nullptr) return null_argument(__func__, "args");
  return guard([&] {
    graph->g.launch_args(kernel->k, launch_config(*config), args, num_args, file, line, graph->lang);
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_graph_launch(zex_graph_t graph, zex_kernel_t kernel, const zex_launch_config_t* config,
                              uint32_t num_args, const zex_arg_t* args) {
  return zex_graph_launch_at(graph, kernel, config, num_args, args, nullptr, 0);
}

uint64_t zex_graph_launches(zex_graph_t graph) { return graph ? graph->g.launches() : 0; }

zex_result_t zex_graph_update(zex_graph_t graph, uint64_t launch, uint32_t num_args, const zex_arg_t* args) {
  ZEX_REQUIRE(graph);
  if (num_args != 0 && args == nullptr) return null_argument(__func__, "args");
  return guard([&] {
    graph->g.update_args(zex::GraphLaunch{launch}, args, num_args, graph->lang);
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_graph_close(zex_graph_t graph) {
  ZEX_REQUIRE(graph);
  return guard([&] {
    graph->g.close();
    return ZEX_SUCCESS;
  });
}

uint64_t zex_graph_executions(zex_graph_t graph) { return graph ? graph->g.executions() : 0; }

ze_command_list_handle_t zex_graph_handle(zex_graph_t graph) { return graph ? graph->g.handle() : nullptr; }

void zex_graph_destroy(zex_graph_t graph) { delete graph; }  // ~Graph never throws

zex_result_t zex_queue_create(zex_device_t device, zex_queue_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(device);
  return guard([&] {
    *out = new zex_queue_s{zex::Queue(device->dev)};
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_queue_adopt(zex_device_t device, ze_command_queue_handle_t queue, zex_queue_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(device);
  ZEX_REQUIRE(queue);
  return guard([&] {
    *out = new zex_queue_s{zex::Queue::adopt(device->dev, queue)};
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_queue_execute(zex_queue_t queue, zex_graph_t graph) {
  ZEX_REQUIRE(queue);
  ZEX_REQUIRE(graph);
  return guard([&] {
    queue->q.execute(graph->g);
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_stream_execute(zex_stream_t stream, zex_graph_t graph) {
  ZEX_REQUIRE(stream);
  ZEX_REQUIRE(graph);
  return guard([&] {
    stream->s.execute(graph->g);
    return ZEX_SUCCESS;
  });
}

zex_result_t zex_queue_synchronize(zex_queue_t queue, zex_exception_t* exception_out) {
  if (exception_out) *exception_out = nullptr;
  ZEX_REQUIRE(queue);
  return guard_raising(exception_out, [&] { queue->q.synchronize(); });
}

zex_result_t zex_queue_synchronize_for(zex_queue_t queue, uint64_t timeout_ns, int* done_out,
                                       zex_exception_t* exception_out) {
  if (exception_out) *exception_out = nullptr;
  if (done_out) *done_out = 0;
  ZEX_REQUIRE(queue);
  const zex_result_t r = guard_raising(exception_out, [&] {
    const bool done = queue->q.synchronize_for_ns(timeout_ns);
    if (done_out) *done_out = done ? 1 : 0;
  });
  if (r == ZEX_ERROR_KERNEL_EXCEPTION && done_out) *done_out = 1;
  return r;
}

ze_command_queue_handle_t zex_queue_handle(zex_queue_t queue) { return queue ? queue->q.handle() : nullptr; }

void zex_queue_destroy(zex_queue_t queue) { delete queue; }  // ~Queue never throws

int zex_exception_execution(zex_exception_t e, uint64_t* index_out) {
  if (!e || !e->view.execution_known) return 0;
  if (index_out) *index_out = e->view.execution_index;
  return 1;
}

uint64_t zex_exception_executions_thrown(zex_exception_t e) { return e ? e->view.executions_thrown : 0; }

uint32_t zex_exception_other_count(zex_exception_t e) { return e ? static_cast<uint32_t>(e->others.size()) : 0; }

zex_result_t zex_exception_other(zex_exception_t e, uint32_t i, zex_exception_t* out) {
  ZEX_REQUIRE(out);
  *out = nullptr;
  ZEX_REQUIRE(e);
  if (i >= e->others.size()) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "zex: zex_exception_other: index %u, but the exception keeps %zu other report(s)", i,
                  e->others.size());
    return fail(ZEX_ERROR_INVALID_ARGUMENT, buf);
  }
  return guard([&] {
    *out = make_exception(e->others[i]);
    return ZEX_SUCCESS;
  });
}
