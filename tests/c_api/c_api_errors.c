/* The C API test: errors. NULL arguments, the per-thread last error, misuse, the argument count checked
 * before `args` is read, bad modules, failing Level Zero calls and the build log. */
#include "c_api_test.h"

void test_version_and_null_arguments(void) {
  zex_context_t ctx = NULL;
  zex_device_t dev = (zex_device_t)1;
  zex_stream_t s = NULL;
  uint32_t n = 0;
  uint64_t id[3];
  zex_launch_config_t cfg = config_1d(1, 1, -1);
  CHECK(zex_c_api_version() == ZEX_C_API_VERSION);
  CHECK(zex_context_create(NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(contains(zex_last_error_message(), "zex_context_create"));
  CHECK(contains(zex_last_error_message(), "`out`"));
  CHECK(zex_last_ze_result() == ZE_RESULT_SUCCESS);
  CHECK(zex_device_get(NULL, 0, &dev) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(dev == NULL);
  CHECK(contains(zex_last_error_message(), "`context`"));
  CHECK(zex_device_count(NULL, &n) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(zex_context_adopt(NULL, NULL, &ctx) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(contains(zex_last_error_message(), "`driver`"));
  CHECK(zex_module_create(NULL, "", 0, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(zex_stream_create(NULL, &s) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(zex_stream_launch(NULL, NULL, &cfg, 0, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(contains(zex_last_error_message(), "`stream`"));
  CHECK(zex_stream_synchronize(NULL, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(zex_slot_acquire(NULL, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(zex_context_handle(NULL) == NULL);
  CHECK(contains(zex_last_error_message(), "zex_context_handle"));
  CHECK(zex_kernel_handle(NULL) == NULL);
  /* Destroying NULL is fine; a NULL exception reads as empty. */
  zex_context_destroy(NULL);
  zex_module_destroy(NULL);
  zex_kernel_destroy(NULL);
  zex_stream_destroy(NULL);
  zex_exception_destroy(NULL);
  zex_slot_release(NULL);
  CHECK(strcmp(zex_exception_message(NULL), "") == 0);
  CHECK(strcmp(zex_exception_name(NULL), "") == 0);
  CHECK(zex_exception_global_id(NULL, id) == 0);
  CHECK(zex_exception_frame_count(NULL) == 0);
  CHECK(zex_exception_frame_depth(NULL) == 0);
  CHECK(zex_slot_thrown(NULL) == 0);
}

static void* other_thread_error(void* arg) {
  /* An error on this thread ... */
  int* ok = (int*)arg;
  *ok = zex_context_create(NULL) == ZEX_ERROR_INVALID_ARGUMENT && contains(zex_last_error_message(), "`out`");
  return NULL;
}

void test_last_error_is_per_thread(Env* e) {
  uint32_t n = 0;
  pthread_t t;
  int ok = 0;
  REQUIRE_OK(zex_device_count(e->ctx, &n));
  CHECK(strcmp(zex_last_error_message(), "") == 0);
  CHECK(pthread_create(&t, NULL, other_thread_error, &ok) == 0);
  pthread_join(t, NULL);
  CHECK(ok);
  /* ... is not this thread's. */
  CHECK(strcmp(zex_last_error_message(), "") == 0);
}

void test_misuse(Env* e) {
  zex_stream_t s = NULL;
  zex_kernel_t k = NULL;
  zex_launch_config_t cfg = config_1d(4, 256, 1);
  zex_arg_t args[3];
  REQUIRE_OK(zex_stream_create(e->dev, &s));
  args[0].size = sizeof e->c;
  args[0].value = &e->c;
  args[1].size = sizeof e->a;
  args[1].value = &e->a;
  args[2].size = sizeof e->b;
  args[2].value = &e->b;
  /* A wrong argument count names the kernel and both counts, and appends nothing. */
  CHECK(zex_stream_launch(s, e->vadd, &cfg, 3, args) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(contains(zex_last_error_message(), "kernel 'vadd' expects 4 argument(s)"));
  CHECK(contains(zex_last_error_message(), "passed 3 argument(s)"));
  CHECK(zex_stream_launch(s, e->vadd, &cfg, 2, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(contains(zex_last_error_message(), "`args`"));
  cfg.debug_level = 7;
  CHECK(launch_vadd(e, s, kTotal, 7) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(contains(zex_last_error_message(), "zex_launch_config_t.debug_level is 7"));
  {
    /* The C++ launch's checks (the one copy), in the stream's language: C's names unless set. */
    const uint32_t n = kTotal;
    zex_arg_t all[4];
    vadd_args(e, &n, all);
    cfg = config_1d(0, 256, 1);
    CHECK(zex_stream_launch(s, e->vadd, &cfg, 4, all) == ZEX_ERROR_INVALID_ARGUMENT);
    CHECK(contains(zex_last_error_message(), "launch of kernel 'vadd': every component of "
                                             "zex_launch_config_t.groups and group_size must be at least 1"));
    CHECK(zex_stream_set_language(s, ZEX_LANGUAGE_PYTHON) == ZEX_SUCCESS);
    CHECK(zex_stream_launch(s, e->vadd, &cfg, 4, all) == ZEX_ERROR_INVALID_ARGUMENT);
    CHECK(contains(zex_last_error_message(), "the groups and group_size of stream.launch(...) must be at least 1"));
    CHECK(!contains(zex_last_error_message(), "zex_launch_config_t"));
    CHECK(launch_vadd(e, s, kTotal, 7) == ZEX_ERROR_INVALID_ARGUMENT);
    CHECK(contains(zex_last_error_message(), "the debug_level= keyword of stream.launch(...) is 7"));
    CHECK(zex_stream_set_language(s, ZEX_LANGUAGE_CPP) == ZEX_SUCCESS);
    CHECK(launch_vadd(e, s, kTotal, 3) == ZEX_ERROR_INVALID_ARGUMENT);
    CHECK(contains(zex_last_error_message(), "LaunchConfig::debug_level is 3"));
    CHECK(zex_stream_set_language(s, (zex_language_t)9) == ZEX_ERROR_INVALID_ARGUMENT);
    CHECK(contains(zex_last_error_message(), "9 is not a zex_language_t"));
    CHECK(zex_stream_set_language(NULL, ZEX_LANGUAGE_C) == ZEX_ERROR_INVALID_ARGUMENT);
    CHECK(zex_stream_set_language(s, ZEX_LANGUAGE_C) == ZEX_SUCCESS);
    CHECK(launch_vadd(e, s, kTotal, 7) == ZEX_ERROR_INVALID_ARGUMENT);
    CHECK(contains(zex_last_error_message(), "zex_launch_config_t.debug_level is 7"));
  }
  /* An unknown kernel lists the module's kernels. */
  CHECK(zex_kernel_create(e->mod, "no_such_kernel", &k) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(k == NULL);
  CHECK(contains(zex_last_error_message(), "no_such_kernel") && contains(zex_last_error_message(), "vadd"));
  /* The stream is untouched. */
  REQUIRE_OK(launch_vadd(e, s, kTotal, 1));
  CHECK(zex_stream_synchronize(s, NULL) == ZEX_SUCCESS);
  zex_stream_destroy(s);
}

/* A count beyond the kernel's (issue 24) is refused before `args` is read: vadd's four arguments end
 * where the readable memory does (a PROT_NONE page follows), so reading a fifth faults, and 0xffffffff
 * was once a copy into a 64 GiB vector ("out of host memory"). */
void test_argument_count_checked_first(Env* e) {
  const size_t page = (size_t)sysconf(_SC_PAGESIZE);
  zex_launch_config_t cfg = config_1d(4, 256, 1);
  zex_stream_t s = NULL;
  zex_arg_t* args;
  uint32_t n = kTotal;
  unsigned char* map;
  int fd = open("/dev/zero", O_RDWR);
  CHECK(fd >= 0);
  if (fd < 0) return;
  map = (unsigned char*)mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  close(fd);
  CHECK(map != (unsigned char*)MAP_FAILED);
  if (map == (unsigned char*)MAP_FAILED) return;
  CHECK(mprotect(map + page, page, PROT_NONE) == 0);
  args = (zex_arg_t*)(void*)(map + page) - 4;
  vadd_args(e, &n, args);
  REQUIRE_OK(zex_stream_create(e->dev, &s));
  CHECK(zex_stream_launch(s, e->vadd, &cfg, 5, args) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(contains(zex_last_error_message(), "kernel 'vadd' expects 4 argument(s)"));
  CHECK(contains(zex_last_error_message(), "passed 5 argument(s)"));
  CHECK(zex_stream_launch(s, e->vadd, &cfg, 0xffffffffu, args) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(contains(zex_last_error_message(), "kernel 'vadd' expects 4 argument(s)"));
  CHECK(contains(zex_last_error_message(), "passed 4294967295 argument(s)"));
  /* Nothing was appended; the right count launches. */
  CHECK(zex_stream_launch(s, e->vadd, &cfg, 4, args) == ZEX_SUCCESS);
  CHECK(zex_stream_synchronize(s, NULL) == ZEX_SUCCESS);
  zex_stream_destroy(s);
  munmap(map, 2 * page);
}

void test_bad_module(Env* e) {
  static const uint32_t not_spirv[8] = {0x07230203u, 0x00010400u, 0, 64, 0, 0xdeadbeefu, 0x12345678u, 7};
  zex_module_t m = (zex_module_t)1;
  zex_result_t r = zex_module_create(e->dev, not_spirv, sizeof not_spirv, &m);
  CHECK(r == ZEX_ERROR_INVALID_ARGUMENT || r == ZEX_ERROR_LEVEL_ZERO);
  CHECK(m == NULL);
  CHECK(contains(zex_last_error_message(), "SPIR-V"));
  r = zex_module_create(e->dev, "abc", 3, &m);
  CHECK(r == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(contains(zex_last_error_message(), "3 bytes") || contains(zex_last_error_message(), "multiple of 4"));
}

/* A failing Level Zero call: which call, which result, and the message says both. */
void test_level_zero_errors(Env* e) {
  int not_usm = 0;
  void* p = (void*)1;
  CHECK(zex_context_free(e->ctx, &not_usm) == ZEX_ERROR_LEVEL_ZERO);
  CHECK(zex_last_ze_result() != ZE_RESULT_SUCCESS);
  CHECK(strcmp(zex_last_error_call(), "zeMemFree") == 0);
  CHECK(contains(zex_last_error_message(), "zeMemFree failed with ZE_RESULT_"));
  CHECK(zex_context_alloc_shared(e->ctx, e->dev, (size_t)1 << 62, 64, &p) == ZEX_ERROR_LEVEL_ZERO);
  CHECK(p == NULL);
  CHECK(strcmp(zex_last_error_call(), "zeMemAllocShared") == 0);
  /* A success clears all three. */
  CHECK(zex_device_count(e->ctx, &(uint32_t){0}) == ZEX_SUCCESS);
  CHECK(zex_last_ze_result() == ZE_RESULT_SUCCESS);
  CHECK(strcmp(zex_last_error_call(), "") == 0);
  CHECK(strcmp(zex_last_error_message(), "") == 0);
}

void test_build_log(Env* e) {
  const char* log = "unset";
  CHECK(zex_module_build_log(e->mod, &log) == ZEX_SUCCESS);
  CHECK(log && strcmp(log, "") == 0);
}
