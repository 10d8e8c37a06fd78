/* The C API test: graphs and queues (zex_graph_*, zex_queue_*): a graph of two kernels executed ten
 * times without a synchronize, executions 2 and 7 throwing (plan_throw reads plan[execution]); the
 * exception names the first, counts both, and the graph stays usable. */
#include "c_api_test.h"

void test_graphs(Env* e) {
  zex_graph_t g = NULL;
  zex_queue_t q = NULL;
  zex_kernel_t count = NULL, plan_throw = NULL;
  zex_exception_t ex = NULL;
  zex_launch_config_t one = config_1d(1, 1, 1), four = config_1d(1, 4, 1);
  uint32_t* counter = NULL;
  uint32_t* plan = NULL;
  uint32_t len = 10, i;
  uint64_t index = 99;
  zex_arg_t count_args[1], throw_args[3];
  CHECK(zex_graph_create(NULL, "g", &g) == ZEX_ERROR_INVALID_ARGUMENT && g == NULL);
  CHECK(zex_queue_execute(NULL, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(zex_exception_execution(NULL, &index) == 0 && index == 99);
  REQUIRE_OK(zex_kernel_create(e->mod, "count_execution", &count));
  REQUIRE_OK(zex_kernel_create(e->mod, "plan_throw", &plan_throw));
  REQUIRE_OK(zex_context_alloc_shared(e->ctx, e->dev, 64, 64, (void**)&counter));
  REQUIRE_OK(zex_context_alloc_shared(e->ctx, e->dev, 64, 64, (void**)&plan));
  counter[0] = 0;
  for (i = 0; i < len; ++i) plan[i] = (i == 2 || i == 7) ? 1u : 0u;
  count_args[0].size = sizeof counter;
  count_args[0].value = &counter;
  throw_args[0].size = sizeof plan;
  throw_args[0].value = &plan;
  throw_args[1].size = sizeof counter;
  throw_args[1].value = &counter;
  throw_args[2].size = sizeof len;
  throw_args[2].value = &len;
  REQUIRE_OK(zex_graph_create(e->dev, "cstep", &g));
  CHECK(zex_graph_handle(g) != NULL);
  CHECK(zex_graph_set_language(g, (zex_language_t)9) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(contains(zex_last_error_message(), "zex_graph_set_language: 9 is not a zex_language_t"));
  CHECK(zex_graph_set_language(NULL, ZEX_LANGUAGE_C) == ZEX_ERROR_INVALID_ARGUMENT);
  REQUIRE_OK(zex_graph_launch(g, count, &one, 1, count_args));
  REQUIRE_OK(zex_graph_launch(g, plan_throw, &four, 3, throw_args));
  {  /* A failed recording is kept: the wrong count, then close and execute refuse with that error. */
    zex_graph_t bad = NULL;
    zex_queue_t bq = NULL;
    REQUIRE_OK(zex_graph_create(e->dev, "bad", &bad));
    CHECK(zex_graph_launch(bad, plan_throw, &four, 2, throw_args) == ZEX_ERROR_INVALID_ARGUMENT);
    CHECK(zex_graph_close(bad) == ZEX_ERROR_INVALID_ARGUMENT);
    CHECK(contains(zex_last_error_message(), "recording launch 1 (kernel 'plan_throw') of graph 'bad' failed"));
    REQUIRE_OK(zex_queue_create(e->dev, &bq));
    CHECK(zex_queue_execute(bq, bad) == ZEX_ERROR_INVALID_ARGUMENT);
    CHECK(contains(zex_last_error_message(), "record a new zex::Graph"));
    zex_queue_destroy(bq);
    zex_graph_destroy(bad);
  }
  REQUIRE_OK(zex_queue_create(e->dev, &q));
  CHECK(zex_queue_execute(q, g) == ZEX_ERROR_INVALID_STATE); /* not closed */
  CHECK(contains(zex_last_error_message(), "not closed"));
  REQUIRE_OK(zex_graph_close(g));
  CHECK(zex_graph_launch(g, count, &one, 1, count_args) == ZEX_ERROR_INVALID_STATE); /* closed */
  for (i = 0; i < len; ++i) REQUIRE_OK(zex_queue_execute(q, g));
  CHECK(zex_graph_executions(g) == len);
  CHECK(zex_queue_synchronize(q, &ex) == ZEX_ERROR_KERNEL_EXCEPTION && ex != NULL);
  if (ex) {
    zex_exception_info_t info;
    CHECK(zex_exception_execution(ex, &index) == 1 && index == 2);
    CHECK(zex_exception_executions_thrown(ex) == 2);
    CHECK(strcmp(zex_exception_kernel_name(ex), "plan_throw") == 0);
    CHECK(contains(zex_exception_message(ex), "in execution 2 of graph 'cstep' (2 of 10 executions threw"));
    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    CHECK(zex_exception_info(ex, &info) == ZEX_SUCCESS);
    CHECK(info.execution_known == 1 && info.execution_index == 2 && info.executions_thrown == 2 &&
          info.executions_synchronized == 10 && strcmp(info.graph_name, "cstep") == 0);
    {
      uint32_t file_line = 0;
      CHECK(zex_exception_launch_site(ex, NULL, &file_line) == 1 && file_line > 0);
    }
    /* The other throwing execution, 7, as its own handle; nothing beyond it. */
    CHECK(zex_exception_other_count(ex) == 1);
    {
      zex_exception_t other = NULL, none = (zex_exception_t)1;
      CHECK(zex_exception_other(ex, 0, &other) == ZEX_SUCCESS && other != NULL);
      CHECK(zex_exception_execution(other, &index) == 1 && index == 7);
      CHECK(contains(zex_exception_message(other), "in execution 7 of graph 'cstep'"));
      zex_exception_destroy(other);
      CHECK(zex_exception_other(ex, 1, &none) == ZEX_ERROR_INVALID_ARGUMENT && none == NULL);
      CHECK(contains(zex_last_error_message(), "index 1, but the exception keeps 1 other report"));
      CHECK(zex_exception_other(ex, 0, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
    }
    zex_exception_destroy(ex);
    ex = NULL;
  }
  CHECK(zex_exception_other_count(NULL) == 0);
  CHECK(counter[0] == len);
  /* Reusable, and a stream's exception has no execution. */
  for (i = 0; i < len; ++i) plan[i] = 0;
  REQUIRE_OK(zex_queue_execute(q, g));
  CHECK(zex_queue_synchronize(q, &ex) == ZEX_SUCCESS && ex == NULL);
  {
    int done = 0;
    CHECK(zex_queue_synchronize_for(q, 0, &done, &ex) == ZEX_SUCCESS && done == 1);
  }
  CHECK(counter[0] == len + 1);
  zex_queue_destroy(q);
  zex_graph_destroy(g);
  zex_graph_destroy(NULL);
  zex_queue_destroy(NULL);
  zex_kernel_destroy(count);
  zex_kernel_destroy(plan_throw);
  CHECK(zex_context_free(e->ctx, counter) == ZEX_SUCCESS);
  CHECK(zex_context_free(e->ctx, plan) == ZEX_SUCCESS);
}

/* zex_stream_execute: the graph on a stream (zex-cpu offers immediate append). */
void test_stream_execute(Env* e) {
  zex_graph_t g = NULL;
  zex_stream_t s = NULL;
  zex_kernel_t count = NULL;
  zex_launch_config_t one = config_1d(1, 1, 1);
  uint32_t* counter = NULL;
  zex_arg_t args[1];
  CHECK(zex_stream_execute(NULL, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  REQUIRE_OK(zex_kernel_create(e->mod, "count_execution", &count));
  REQUIRE_OK(zex_context_alloc_shared(e->ctx, e->dev, 64, 64, (void**)&counter));
  counter[0] = 0;
  args[0].size = sizeof counter;
  args[0].value = &counter;
  REQUIRE_OK(zex_graph_create(e->dev, "s", &g));
  REQUIRE_OK(zex_graph_launch(g, count, &one, 1, args));
  REQUIRE_OK(zex_stream_create(e->dev, &s));
  CHECK(zex_stream_execute(s, g) == ZEX_ERROR_INVALID_STATE); /* not closed */
  REQUIRE_OK(zex_graph_close(g));
  REQUIRE_OK(zex_stream_execute(s, g));
  REQUIRE_OK(zex_stream_execute(s, g));
  REQUIRE_OK(zex_stream_synchronize(s, NULL));
  CHECK(counter[0] == 2);
  zex_stream_destroy(s);
  zex_graph_destroy(g);
  zex_kernel_destroy(count);
  CHECK(zex_context_free(e->ctx, counter) == ZEX_SUCCESS);
}

/* Early stop (ZEX_1.3): a stream's launches after zex_stream_set_stop_on_throw skip once a launch threw,
 * until the synchronize; a graph's launches after zex_graph_set_stop_on_throw skip in an execution where
 * an earlier one threw. */
void test_stop_on_throw(Env* e) {
  zex_stream_t s = NULL;
  zex_graph_t g = NULL;
  zex_queue_t q = NULL;
  zex_kernel_t maybe = NULL, count = NULL, plan_throw = NULL;
  zex_exception_t ex = NULL;
  zex_launch_config_t wide = config_1d(1, 16, 1), one = config_1d(1, 1, 1), four = config_1d(1, 4, 1);
  uint32_t* words = NULL;
  uint32_t yes = 1, no = 0, len = 1;
  uint32_t *first, *second, *plan, *after, *counter;
  zex_arg_t a[3];
  CHECK(zex_stream_set_stop_on_throw(NULL, 1) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(zex_graph_set_stop_on_throw(NULL, 1) == ZEX_ERROR_INVALID_ARGUMENT);
  REQUIRE_OK(zex_kernel_create(e->mod, "maybe_throw", &maybe));
  REQUIRE_OK(zex_kernel_create(e->mod, "count_execution", &count));
  REQUIRE_OK(zex_kernel_create(e->mod, "plan_throw", &plan_throw));
  REQUIRE_OK(zex_context_alloc_shared(e->ctx, e->dev, 64, 64, (void**)&words));
  memset(words, 0, 64);
  first = words, second = words + 1, plan = words + 2, after = words + 3, counter = words + 4;
  REQUIRE_OK(zex_stream_create(e->dev, &s));
  a[0].size = sizeof first;
  a[0].value = &first;
  a[1].size = sizeof yes;
  a[1].value = &yes;
  REQUIRE_OK(zex_stream_launch(s, maybe, &wide, 2, a));
  REQUIRE_OK(zex_stream_set_stop_on_throw(s, 1));
  a[0].value = &second;
  a[1].value = &no;
  REQUIRE_OK(zex_stream_launch(s, maybe, &wide, 2, a));
  CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION && ex != NULL);
  zex_exception_destroy(ex);
  CHECK(*first == 15 && *second == 0);
  REQUIRE_OK(zex_stream_launch(s, maybe, &wide, 2, a)); /* nothing pending: runs */
  REQUIRE_OK(zex_stream_synchronize(s, NULL));
  CHECK(*second == 16);
  zex_stream_destroy(s);

  *plan = 1; /* execution 0 throws */
  REQUIRE_OK(zex_graph_create(e->dev, "cstop", &g));
  REQUIRE_OK(zex_graph_set_stop_on_throw(g, 1));
  a[0].value = &plan;
  a[1].size = sizeof counter;
  a[1].value = &counter;
  a[2].size = sizeof len;
  a[2].value = &len;
  REQUIRE_OK(zex_graph_launch(g, count, &one, 1, &a[1])); /* counter */
  REQUIRE_OK(zex_graph_launch(g, plan_throw, &four, 3, a));
  a[0].value = &after;
  REQUIRE_OK(zex_graph_launch(g, count, &one, 1, a));
  REQUIRE_OK(zex_graph_close(g));
  REQUIRE_OK(zex_queue_create(e->dev, &q));
  REQUIRE_OK(zex_queue_execute(q, g));
  CHECK(zex_queue_synchronize(q, &ex) == ZEX_ERROR_KERNEL_EXCEPTION && ex != NULL);
  zex_exception_destroy(ex);
  CHECK(*counter == 1 && *after == 0);
  *plan = 0;
  REQUIRE_OK(zex_queue_execute(q, g));
  REQUIRE_OK(zex_queue_synchronize(q, NULL));
  CHECK(*counter == 2 && *after == 1);
  zex_queue_destroy(q);
  zex_graph_destroy(g);
  zex_kernel_destroy(maybe);
  zex_kernel_destroy(count);
  zex_kernel_destroy(plan_throw);
  CHECK(zex_context_free(e->ctx, words) == ZEX_SUCCESS);
}

/* Updating a recorded launch (ZEX_1.4): zex_graph_launches numbers the launches; zex_graph_update gives
 * one new arguments for the executions after it (copy_word writes to another word); bad updates are
 * refused and change nothing. */
void test_graph_update(Env* e) {
  zex_graph_t g = NULL;
  zex_queue_t q = NULL;
  zex_kernel_t count = NULL, copy = NULL;
  zex_launch_config_t one = config_1d(1, 1, 1);
  uint32_t* words = NULL;
  uint32_t *counter, *dst, *other;
  zex_arg_t a[2];
  CHECK(zex_graph_launches(NULL) == 0);
  CHECK(zex_graph_update(NULL, 1, 0, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  REQUIRE_OK(zex_kernel_create(e->mod, "count_execution", &count));
  REQUIRE_OK(zex_kernel_create(e->mod, "copy_word", &copy));
  REQUIRE_OK(zex_context_alloc_shared(e->ctx, e->dev, 64, 64, (void**)&words));
  memset(words, 0, 64);
  counter = words, dst = words + 1, other = words + 2;
  REQUIRE_OK(zex_graph_create(e->dev, "cupdate", &g));
  CHECK(zex_graph_launches(g) == 0);
  a[0].size = sizeof counter;
  a[0].value = &counter;
  REQUIRE_OK(zex_graph_launch(g, count, &one, 1, a));
  CHECK(zex_graph_launches(g) == 1);
  a[0].size = sizeof dst;
  a[0].value = &dst;
  a[1].size = sizeof counter;
  a[1].value = &counter;
  REQUIRE_OK(zex_graph_launch(g, copy, &one, 2, a));
  CHECK(zex_graph_launches(g) == 2);
  a[0].value = &other;
  CHECK(zex_graph_update(g, 2, 2, a) == ZEX_ERROR_INVALID_STATE); /* not closed */
  CHECK(contains(zex_last_error_message(), "is not closed"));
  REQUIRE_OK(zex_graph_close(g));
  REQUIRE_OK(zex_queue_create(e->dev, &q));
  REQUIRE_OK(zex_queue_execute(q, g));
  REQUIRE_OK(zex_queue_synchronize(q, NULL));
  CHECK(*dst == 1 && *other == 0);
  CHECK(zex_graph_update(g, 3, 2, a) == ZEX_ERROR_INVALID_ARGUMENT); /* no launch 3 */
  CHECK(contains(zex_last_error_message(), "has no launch 3"));
  CHECK(zex_graph_update(g, 2, 1, a) == ZEX_ERROR_INVALID_ARGUMENT); /* one argument of two */
  CHECK(zex_graph_update(g, 2, 2, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  REQUIRE_OK(zex_queue_execute(q, g)); /* nothing changed */
  REQUIRE_OK(zex_queue_synchronize(q, NULL));
  CHECK(*dst == 2 && *other == 0);
  REQUIRE_OK(zex_graph_update(g, 2, 2, a));
  REQUIRE_OK(zex_queue_execute(q, g));
  REQUIRE_OK(zex_queue_synchronize(q, NULL));
  CHECK(*dst == 2 && *other == 3);
  zex_queue_destroy(q);
  zex_graph_destroy(g);
  zex_kernel_destroy(count);
  zex_kernel_destroy(copy);
  zex_context_free(e->ctx, words);
}
