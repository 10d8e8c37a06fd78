/* The memory checks from C (issue 27, version node ZEX_1.5): zex_module_create_with_options with
 * ZEX_MODULE_CHECK_MEMORY, the counts, the hidden arguments, the report of an access past the end
 * (copy_word writes a uint into an allocation of 1 byte), unknown flags refused. */
#include "c_api_test.h"

void test_memory_checks(Env* e) {
  size_t size = 0;
  void* spv = read_file(g_spv, &size);
  if (!spv) {
    ++g_failures;
    return;
  }
  zex_module_t m = NULL;
  CHECK(zex_module_create_with_options(e->dev, spv, size, 0x2u, &m) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(m == NULL);
  CHECK(contains(zex_last_error_message(), "pass 0 or ZEX_MODULE_CHECK_MEMORY"));
  zex_memory_checks_t counts;
  CHECK(zex_module_memory_checks(NULL, &counts) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(zex_module_memory_checks(e->mod, &counts) == ZEX_SUCCESS && counts.enabled == 0 && counts.checked == 0);
  uint32_t hidden = 7;
  CHECK(zex_kernel_hidden_argument_count(e->vadd, &hidden) == ZEX_SUCCESS && hidden == 0);
  if (zex_module_create_with_options(e->dev, spv, size, ZEX_MODULE_CHECK_MEMORY, &m) != ZEX_SUCCESS) {
    fprintf(stderr, "zex_module_create_with_options: %s\n", zex_last_error_message());
    ++g_failures;
    free(spv);
    return;
  }
  free(spv);
  CHECK(zex_module_memory_checks(m, &counts) == ZEX_SUCCESS && counts.enabled == 1 && counts.checked > 0);
  zex_kernel_t k = NULL;
  zex_stream_t s = NULL;
  uint32_t *dst = NULL, *src = NULL;
  REQUIRE_OK(zex_kernel_create(m, "copy_word", &k));
  CHECK(zex_kernel_hidden_argument_count(k, &hidden) == ZEX_SUCCESS && hidden == 1);
  {
    uint32_t checked[4] = {9, 9, 9, 9}, count = 9;
    CHECK(zex_kernel_checked_arguments(k, NULL, 0, &count) == ZEX_SUCCESS && count == 2);
    CHECK(zex_kernel_checked_arguments(k, checked, 1, &count) == ZEX_SUCCESS && count == 2 && checked[0] == 0 &&
          checked[1] == 9); /* capacity respected */
    CHECK(zex_kernel_checked_arguments(k, checked, 4, &count) == ZEX_SUCCESS && count == 2 && checked[0] == 0 &&
          checked[1] == 1);
    CHECK(zex_kernel_checked_arguments(k, NULL, 1, &count) == ZEX_ERROR_INVALID_ARGUMENT && count == 0);
    CHECK(zex_kernel_checked_arguments(k, checked, 4, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  }
  REQUIRE_OK(zex_stream_create(e->dev, &s));
  REQUIRE_OK(zex_context_alloc_shared(e->ctx, e->dev, 1, 1, (void**)&dst));
  REQUIRE_OK(zex_context_alloc_shared(e->ctx, e->dev, 4, 4, (void**)&src));
  *src = 42;
  zex_arg_t args[2] = {{sizeof dst, &dst}, {sizeof src, &src}};
  zex_launch_config_t cfg = config_1d(1, 1, 1);
  REQUIRE_OK(zex_stream_launch(s, k, &cfg, 2, args));
  zex_exception_t ex = NULL;
  CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
  if (ex) {
    uint64_t v[2] = {9, 9};
    CHECK(strcmp(zex_exception_name(ex), "OutOfBoundsAccess") == 0);
    CHECK(zex_exception_values(ex, v, 2) == 2 && v[0] == 0 && v[1] == 1);
    CHECK(contains(zex_exception_message(ex), "write of argument 'dst' at byte offset 0 of an allocation of 1 bytes"));
    zex_exception_destroy(ex);
  }
  zex_forget_memory_bounds();
  /* In bounds after: the stream is usable and the copy happens. */
  uint32_t* big = NULL;
  REQUIRE_OK(zex_context_alloc_shared(e->ctx, e->dev, 4, 4, (void**)&big));
  args[0].value = &big;
  REQUIRE_OK(zex_stream_launch(s, k, &cfg, 2, args));
  CHECK(zex_stream_synchronize(s, NULL) == ZEX_SUCCESS);
  CHECK(*big == 42);
  zex_context_free(e->ctx, big);
  zex_context_free(e->ctx, dst);
  zex_context_free(e->ctx, src);
  zex_stream_destroy(s);
  zex_kernel_destroy(k);
  zex_module_destroy(m);
}
