/* What the C API test's files share (c_api_test.c runs them): the check macros, the objects most
 * cases share, the helpers and the cases. Every file of the test includes this first (it sets
 * _POSIX_C_SOURCE). */
#ifndef ZEX_TESTS_C_API_TEST_H
#define ZEX_TESTS_C_API_TEST_H

/* pthreads, for the last error's thread check, and mmap for a guard page; everything else is C99. */
#define _POSIX_C_SOURCE 200112L

#include <zex/zex.h>

#include <level_zero/ze_api.h>

#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern int g_failures;
/* The kernels' SPIR-V and their OpenCL C source (for the LINE: markers), from the command line. */
extern const char* g_source;
extern const char* g_spv;

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      fprintf(stderr, "%s:%d: CHECK failed: %s (last error: %s)\n", __FILE__, __LINE__, \
              #cond, zex_last_error_message());                                         \
      ++g_failures;                                                                     \
    }                                                                                   \
  } while (0)

/* A call that must succeed; the case cannot go on otherwise. */
#define REQUIRE_OK(call)                                                                 \
  do {                                                                                   \
    zex_result_t r_ = (call);                                                            \
    if (r_ != ZEX_SUCCESS) {                                                             \
      fprintf(stderr, "%s:%d: %s returned %d: %s\n", __FILE__, __LINE__, #call, (int)r_, \
              zex_last_error_message());                                                 \
      ++g_failures;                                                                      \
      return;                                                                            \
    }                                                                                    \
  } while (0)

/* The objects most cases share. */
typedef struct Env {
  zex_context_t ctx;
  zex_device_t dev;
  zex_module_t mod;
  zex_kernel_t vadd;
  float* a;
  float* b;
  float* c;
} Env;

enum { kTotal = 1024 };

/* Helpers (c_api_test.c). */
int contains(const char* s, const char* part);
void* read_file(const char* path, size_t* size);
uint32_t line_of(const char* marker);
zex_launch_config_t config_1d(uint32_t groups, uint32_t size, int level);
void vadd_args(Env* e, const uint32_t* n, zex_arg_t args[4]);
zex_result_t launch_vadd(Env* e, zex_stream_t s, uint32_t n, int level);
zex_result_t launch_throw_at(zex_stream_t s, zex_kernel_t k, int32_t** out, uint32_t* x, uint32_t* y,
                             uint32_t gx, uint32_t gy, uint32_t lx, uint32_t ly);

/* c_api_errors.c */
void test_version_and_null_arguments(void);
void test_last_error_is_per_thread(Env* e);
void test_misuse(Env* e);
void test_argument_count_checked_first(Env* e);
void test_bad_module(Env* e);
void test_level_zero_errors(Env* e);
void test_build_log(Env* e);

/* c_api_devices.c */
void test_devices(Env* e);
void test_sub_devices(Env* e);
void test_adopt(Env* e);

/* c_api_reports.c */
void test_values_count_and_site(Env* e);
void test_exception_info(Env* e);
void test_levels(Env* e);
void test_recovery(Env* e);

/* c_api_streams.c */
void test_events(Env* e);
void test_two_streams(Env* e);
void test_synchronize_for(Env* e);
void test_slots(Env* e);

/* c_api_graphs.c */
void test_graphs(Env* e);
void test_stream_execute(Env* e);
void test_stop_on_throw(Env* e);
void test_graph_update(Env* e);

/* c_api_memory.c */
void test_memory_checks(Env* e);

#endif
