/* A lost device through the C API (<zex/zex.h>, "a lost device"), C99, end to end on zex-cpu:
   ZEX_CPU_LOSE_DEVICE=2 (tests/c_api/CMakeLists.txt) makes the second launch lose the device, and the wait's
   ZEX_ERROR_LEVEL_ZERO comes with the device report. A process of its own: the loss lasts for the
   process. usage: c_api_device_lost <zex_test_kernels.spv> */
#include <zex/zex.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_failures = 0;
#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
      ++g_failures;                                                   \
    }                                                                 \
  } while (0)
#define REQUIRE_OK(call)                                                                   \
  do {                                                                                     \
    if ((call) != ZEX_SUCCESS) {                                                           \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, zex_last_error_message()); \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

static int contains(const char* s, const char* part) { return s && strstr(s, part) != NULL; }

int main(int argc, char** argv) {
  FILE* f;
  long n;
  void* spv;
  zex_context_t ctx = NULL;
  zex_device_t dev = NULL;
  zex_module_t mod = NULL;
  zex_kernel_t vadd = NULL;
  zex_stream_t s = NULL;
  float *a = NULL, *b = NULL, *c = NULL;
  uint32_t count = 256, i, counters = 0, records = 0;
  zex_launch_config_t cfg = {{4, 1, 1}, {64, 1, 1}, -1};
  zex_arg_t args[4];
  const char *device = NULL, *state = NULL, *set = NULL, *category = NULL, *format = NULL, *summary = NULL;
  const uint8_t* bytes = NULL;
  size_t size = 0;
  uint64_t before = 9, now = 9;
  int pass;
  if (argc < 2) {
    fprintf(stderr, "usage: c_api_device_lost <zex_test_kernels.spv>\n");
    return 2;
  }
  f = fopen(argv[1], "rb");
  if (!f) return 2;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  spv = malloc((size_t)n);
  if (!spv || fread(spv, 1, (size_t)n, f) != (size_t)n) return 2;
  fclose(f);
  REQUIRE_OK(zex_context_create(&ctx));
  REQUIRE_OK(zex_device_get(ctx, 0, &dev));
  REQUIRE_OK(zex_module_create(dev, spv, (size_t)n, &mod));
  REQUIRE_OK(zex_kernel_create(mod, "vadd", &vadd));
  REQUIRE_OK(zex_stream_create(dev, &s));
  REQUIRE_OK(zex_context_alloc_shared(ctx, dev, count * sizeof(float), 64, (void**)&a));
  REQUIRE_OK(zex_context_alloc_shared(ctx, dev, count * sizeof(float), 64, (void**)&b));
  REQUIRE_OK(zex_context_alloc_shared(ctx, dev, count * sizeof(float), 64, (void**)&c));
  for (i = 0; i < count; ++i) a[i] = (float)i, b[i] = 1;
  args[0].size = sizeof c, args[0].value = &c;
  args[1].size = sizeof a, args[1].value = &a;
  args[2].size = sizeof b, args[2].value = &b;
  args[3].size = sizeof count, args[3].value = &count;
  CHECK(zex_last_device_report(&device, &state, &counters, &records) == 0); /* nothing yet */
  for (pass = 1; pass <= 2; ++pass) {
    REQUIRE_OK(zex_stream_launch(s, vadd, &cfg, 4, args));
    if (pass == 1) {
      REQUIRE_OK(zex_stream_synchronize(s, NULL));
      CHECK(c[10] == 11.0f);
      continue;
    }
    CHECK(zex_stream_synchronize(s, NULL) == ZEX_ERROR_LEVEL_ZERO);
    CHECK(zex_last_ze_result() == ZE_RESULT_ERROR_DEVICE_LOST);
    CHECK(contains(zex_last_error_message(), "Device report for"));
    printf("--- the message ---\n%s\n---\n", zex_last_error_message());
    CHECK(zex_last_device_report(&device, &state, &counters, &records) == 1);
    CHECK(contains(device, "zex-cpu"));
    CHECK(contains(state, "wedged"));
    CHECK(counters == 1 && records == 1);
    CHECK(zex_last_device_counter(0, &set, &category, &before, &now) == 1);
    CHECK(set && strcmp(set, "uncorrectable") == 0 && category && strcmp(category, "reset") == 0);
    CHECK(before == 0 && now == 1);
    CHECK(zex_last_device_counter(1, NULL, NULL, NULL, NULL) == 0);
    CHECK(zex_last_device_record(0, &format, &bytes, &size, &summary) == 1);
    CHECK(format && strcmp(format, "CPER") == 0);
    CHECK(size == 128 + 72 + 192 && bytes && memcmp(bytes, "CPER", 4) == 0);
    CHECK(contains(summary, "processor generic (fatal): micro-architectural error"));
    CHECK(zex_last_device_record(1, NULL, NULL, NULL, NULL) == 0);
    CHECK(zex_last_device_info_log() && strcmp(zex_last_device_info_log(), "") == 0);
    CHECK(zex_last_device_note(0) == NULL); /* a complete report */
  }
  /* A successful call clears the last error, report included. */
  CHECK(zex_device_get(ctx, 0, &dev) == ZEX_SUCCESS);
  CHECK(zex_last_device_report(NULL, NULL, NULL, NULL) == 0);
  CHECK(zex_last_device_info_log() == NULL);
  zex_stream_destroy(s);
  zex_context_free(ctx, a);
  zex_context_free(ctx, b);
  zex_context_free(ctx, c);
  zex_kernel_destroy(vadd);
  zex_module_destroy(mod);
  zex_context_destroy(ctx);
  free(spv);
  if (g_failures) fprintf(stderr, "%d check(s) failed\n", g_failures);
  return g_failures ? 1 : 0;
}
