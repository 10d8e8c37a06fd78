/* The C API test: events, two streams, timed synchronize and the lower-level slot API. */
#include "c_api_test.h"

void test_events(Env* e) {
  zex_stream_t s = NULL, s2 = NULL;
  zex_event_t ev = NULL, ev2 = NULL;
  zex_exception_t ex = NULL;
  int ready = -1;
  CHECK(zex_stream_record(NULL, &ev) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(contains(zex_last_error_message(), "`stream`"));
  CHECK(zex_event_synchronize(NULL, &ex) == ZEX_ERROR_INVALID_ARGUMENT && ex == NULL);
  CHECK(zex_event_ready(NULL, &ready) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(zex_stream_wait_event(NULL, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(zex_event_handle(NULL) == NULL);
  zex_event_destroy(NULL);
  REQUIRE_OK(zex_stream_create(e->dev, &s));
  REQUIRE_OK(zex_stream_create(e->dev, &s2));
  CHECK(zex_stream_record(s, NULL) == ZEX_ERROR_INVALID_ARGUMENT);

  /* An event after a throwing launch raises it once; the stream's synchronize then does not. */
  REQUIRE_OK(launch_vadd(e, s, 1000, 1));
  REQUIRE_OK(zex_stream_record(s, &ev));
  CHECK(zex_event_handle(ev) != NULL);
  CHECK(zex_event_synchronize(ev, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
  CHECK(ex != NULL && strcmp(zex_last_error_message(), zex_exception_message(ex)) == 0);
  CHECK(zex_exception_thrower_count(ex) == 24);
  CHECK(zex_exception_launch_site(ex, NULL, NULL) == 1);
  zex_exception_destroy(ex);
  ex = NULL;
  CHECK(zex_event_ready(ev, &ready) == ZEX_SUCCESS && ready == 1);
  CHECK(zex_event_synchronize(ev, &ex) == ZEX_SUCCESS && ex == NULL);
  CHECK(zex_stream_synchronize(s, &ex) == ZEX_SUCCESS && ex == NULL);
  zex_event_destroy(ev);
  ev = NULL;

  /* Stream to stream: s2 waits for s's mark. Ordering only: s's throw stays with s. */
  REQUIRE_OK(launch_vadd(e, s, 1000, 1));
  REQUIRE_OK(zex_stream_record(s, &ev2));
  REQUIRE_OK(zex_stream_wait_event(s2, ev2));
  REQUIRE_OK(launch_vadd(e, s2, kTotal, 1));
  CHECK(zex_stream_synchronize(s2, &ex) == ZEX_SUCCESS && ex == NULL);
  CHECK(zex_event_ready(ev2, &ready) == ZEX_SUCCESS && ready == 1); /* s2's launch ran after the mark */
  CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
  CHECK(ex != NULL && zex_exception_thrower_count(ex) == 24);
  zex_exception_destroy(ex);
  ex = NULL;
  CHECK(zex_event_synchronize(ev2, &ex) == ZEX_SUCCESS && ex == NULL); /* raised already */

  /* An event outlives its stream: it then only waits. */
  REQUIRE_OK(launch_vadd(e, s, 1000, 1));
  REQUIRE_OK(zex_stream_record(s, &ev));
  zex_stream_destroy(s);
  CHECK(zex_event_synchronize(ev, &ex) == ZEX_SUCCESS && ex == NULL);
  zex_event_destroy(ev);
  zex_event_destroy(ev2);
  zex_stream_destroy(s2);
}

void test_two_streams(Env* e) {
  zex_stream_t s1 = NULL, s2 = NULL;
  zex_kernel_t throw_at = NULL;
  zex_exception_t ex = NULL;
  int32_t* out = NULL;
  uint32_t x = 2, y = 1;
  uint64_t g[3];
  REQUIRE_OK(zex_stream_create(e->dev, &s1));
  REQUIRE_OK(zex_stream_create(e->dev, &s2));
  REQUIRE_OK(zex_kernel_create(e->mod, "throw_at", &throw_at));
  REQUIRE_OK(zex_context_alloc_shared(e->ctx, e->dev, 16 * sizeof(int32_t), 64, (void**)&out));
  REQUIRE_OK(launch_throw_at(s1, throw_at, &out, &x, &y, 2, 2, 2, 2));
  REQUIRE_OK(launch_vadd(e, s2, kTotal, 1));
  CHECK(zex_stream_synchronize(s2, &ex) == ZEX_SUCCESS);
  CHECK(zex_stream_synchronize(s1, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
  CHECK(ex && strcmp(zex_exception_name(ex), "DomainError") == 0);
  CHECK(ex && strcmp(zex_exception_kernel_name(ex), "throw_at") == 0);
  CHECK(zex_exception_global_id(ex, g) == 1 && g[0] == 2 && g[1] == 1);
  zex_exception_destroy(ex);
  /* Both streams go on. */
  REQUIRE_OK(launch_vadd(e, s1, kTotal, 1));
  REQUIRE_OK(launch_vadd(e, s2, kTotal, 1));
  CHECK(zex_stream_synchronize(s1, NULL) == ZEX_SUCCESS);
  CHECK(zex_stream_synchronize(s2, NULL) == ZEX_SUCCESS);
  zex_kernel_destroy(throw_at);
  zex_stream_destroy(s1);
  zex_stream_destroy(s2);
  CHECK(zex_context_free(e->ctx, out) == ZEX_SUCCESS);
}

void test_synchronize_for(Env* e) {
  zex_stream_t s = NULL;
  zex_kernel_t k = NULL;
  volatile uint32_t* flag = NULL;
  zex_launch_config_t cfg = config_1d(1, 1, 1);
  zex_arg_t arg;
  zex_exception_t ex = NULL;
  int done = -1;
  REQUIRE_OK(zex_stream_create(e->dev, &s));
  REQUIRE_OK(zex_kernel_create(e->mod, "wait_for_flag", &k));
  REQUIRE_OK(zex_context_alloc_shared(e->ctx, NULL, sizeof(uint32_t), 0, (void**)&flag));
  *flag = 0;
  arg.size = sizeof flag;
  arg.value = &flag;
  REQUIRE_OK(zex_stream_launch(s, k, &cfg, 1, &arg));
  CHECK(zex_stream_synchronize_for(s, 1000000u, &done, &ex) == ZEX_SUCCESS);
  CHECK(done == 0);
  CHECK(ex == NULL);
  *flag = 1;
  CHECK(zex_stream_synchronize_for(s, UINT64_MAX, &done, &ex) == ZEX_SUCCESS);
  CHECK(done == 1);
  /* A throw is reported by synchronize_for too. */
  REQUIRE_OK(launch_vadd(e, s, 10, 1));
  CHECK(zex_stream_synchronize_for(s, UINT64_MAX, &done, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
  CHECK(done == 1 && ex != NULL);
  zex_exception_destroy(ex);
  zex_stream_destroy(s);
  zex_kernel_destroy(k);
  CHECK(zex_context_free(e->ctx, (void*)flag) == ZEX_SUCCESS);
  CHECK(zex_context_free(e->ctx, NULL) == ZEX_SUCCESS);
}

static const char* name_of_launch(void* user, uint64_t launch_id) {
  (void)user;
  return launch_id == 42 ? "throw_at (launch 42)" : NULL;
}

/* The lower-level API: the runtime's own command list, event and kernel; zex provides the slot. */
void test_slots(Env* e) {
  zex_slot_t slot = NULL;
  zex_kernel_t kk = NULL;
  ze_kernel_handle_t k;
  ze_command_list_handle_t list = NULL;
  ze_event_pool_handle_t pool = NULL;
  ze_event_handle_t ev = NULL;
  ze_device_handle_t dev = zex_device_handle(e->dev);
  ze_context_handle_t ctx = zex_context_handle(e->ctx);
  ze_command_queue_desc_t qd = {ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC, NULL, 0, 0, 0,
                                ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS, ZE_COMMAND_QUEUE_PRIORITY_NORMAL};
  ze_event_pool_desc_t pd = {ZE_STRUCTURE_TYPE_EVENT_POOL_DESC, NULL, ZE_EVENT_POOL_FLAG_HOST_VISIBLE, 1};
  ze_event_desc_t ed = {ZE_STRUCTURE_TYPE_EVENT_DESC, NULL, 0, ZE_EVENT_SCOPE_FLAG_HOST, ZE_EVENT_SCOPE_FLAG_HOST};
  ze_group_count_t groups = {2, 2, 1};
  int32_t* out = NULL;
  uint32_t x = 1, y = 3;
  int round;
  zex_state_t st;
  REQUIRE_OK(zex_slot_acquire(e->dev, &slot));
  /* A kernel of its own: the runtime sets its group size and arguments itself. */
  REQUIRE_OK(zex_kernel_create(e->mod, "throw_at", &kk));
  k = zex_kernel_handle(kk);
  CHECK(k != NULL);
  REQUIRE_OK(zex_context_alloc_shared(e->ctx, e->dev, 16 * sizeof(int32_t), 64, (void**)&out));
  CHECK(zeCommandListCreateImmediate(ctx, dev, &qd, &list) == ZE_RESULT_SUCCESS);
  CHECK(zeEventPoolCreate(ctx, &pd, 1, &dev, &pool) == ZE_RESULT_SUCCESS);
  CHECK(zeEventCreate(pool, &ed, &ev) == ZE_RESULT_SUCCESS);
  CHECK(zeKernelSetGroupSize(k, 2, 2, 1) == ZE_RESULT_SUCCESS);
  CHECK(zeKernelSetIndirectAccess(k, ZE_KERNEL_INDIRECT_ACCESS_FLAG_HOST | ZE_KERNEL_INDIRECT_ACCESS_FLAG_DEVICE) ==
        ZE_RESULT_SUCCESS);
  CHECK(zeKernelSetArgumentValue(k, 0, sizeof out, &out) == ZE_RESULT_SUCCESS);
  CHECK(zeKernelSetArgumentValue(k, 1, sizeof x, &x) == ZE_RESULT_SUCCESS);
  CHECK(zeKernelSetArgumentValue(k, 2, sizeof y, &y) == ZE_RESULT_SUCCESS);
  CHECK(zex_slot_state(slot, 0, &st) == ZEX_ERROR_INVALID_ARGUMENT);
  for (round = 0; round < 2; ++round) {
    zex_exception_t ex = NULL;
    uint64_t g[3] = {0, 0, 0};
    REQUIRE_OK(zex_slot_state(slot, 42, &st));
    CHECK(st.launch_id == 42);
    CHECK(zeKernelSetArgumentValue(k, 3, sizeof st, &st) == ZE_RESULT_SUCCESS);
    CHECK(zeCommandListAppendLaunchKernel(list, k, &groups, ev, 0, NULL) == ZE_RESULT_SUCCESS);
    CHECK(zeEventHostSynchronize(ev, UINT64_MAX) == ZE_RESULT_SUCCESS);
    CHECK(zeEventHostReset(ev) == ZE_RESULT_SUCCESS);
    CHECK(zex_slot_thrown(slot) == 1);
    if (round == 0) {
      /* The reset done at once, on zex's own list. */
      CHECK(zex_slot_check(slot, "throw_at", NULL, 1, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
      CHECK(ex && strcmp(zex_exception_kernel_name(ex), "throw_at") == 0);
    } else {
      /* The reset appended to the runtime's list, then waited for with a barrier of its own. */
      CHECK(zex_slot_check_with(slot, name_of_launch, NULL, list, 1, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
      CHECK(ex && strcmp(zex_exception_kernel_name(ex), "throw_at (launch 42)") == 0);
      CHECK(zeCommandListAppendBarrier(list, ev, 0, NULL) == ZE_RESULT_SUCCESS);
      CHECK(zeEventHostSynchronize(ev, UINT64_MAX) == ZE_RESULT_SUCCESS);
      CHECK(zeEventHostReset(ev) == ZE_RESULT_SUCCESS);
    }
    CHECK(ex && strcmp(zex_exception_name(ex), "DomainError") == 0);
    CHECK(ex && strcmp(zex_exception_reason(ex), "sqrt of a negative number") == 0);
    {
      /* A slot's launch id is the caller's. */
      zex_exception_info_t info;
      memset(&info, 0, sizeof info);
      info.size = sizeof info;
      CHECK(ex && zex_exception_info(ex, &info) == ZEX_SUCCESS && info.launch_id == 42);
      CHECK(info.device_name && info.device_name[0]);
      CHECK(info.abi_version == ZEX_ABI_VERSION && info.launch_site_file == NULL);
    }
    CHECK(zex_exception_global_id(ex, g) == 0); /* launched at level 1 */
    zex_exception_destroy(ex);
    CHECK(zex_slot_thrown(slot) == 0);
    CHECK(zex_slot_check(slot, "throw_at", NULL, 1, &ex) == ZEX_SUCCESS);
    CHECK(ex == NULL);
  }
  /* An explicit reset appended by the runtime (e.g. before reusing the slot elsewhere). */
  CHECK(zex_slot_append_reset(slot, list, ev, NULL) == ZEX_SUCCESS);
  CHECK(zeEventHostSynchronize(ev, UINT64_MAX) == ZE_RESULT_SUCCESS);
  CHECK(zex_slot_append_reset(slot, NULL, NULL, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(zex_slot_check(slot, "throw_at", NULL, 5, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  zex_slot_release(slot);
  zeEventDestroy(ev);
  zeEventPoolDestroy(pool);
  zeCommandListDestroy(list);
  zex_kernel_destroy(kk);
  CHECK(zex_context_free(e->ctx, out) == ZEX_SUCCESS);
}
