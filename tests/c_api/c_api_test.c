/* The C API (<zex/zex.h>), from C99, end to end on zex-cpu through the system loader.
 *
 *   c_api_test <zex_test_kernels.spv> <zex_test_kernels.cl>
 *
 * The source is read only for the line numbers of the throws (its LINE: markers). Built in the tree
 * (ctest -R c_api) and again from an installed tree with nothing but `pkg-config --cflags --libs zex`
 * (tests/package). Exit status 0 when every check passed; each failed check prints its line. */
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

static int g_failures = 0;
static const char* g_source = NULL;
static const char* g_spv = NULL;

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

static int contains(const char* s, const char* part) { return s && part && strstr(s, part) != NULL; }

static void* read_file(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  long n;
  void* p;
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  p = malloc(n > 0 ? (size_t)n : 1);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  fclose(f);
  *size = (size_t)n;
  return p;
}

/* The line of the kernel source holding "LINE:<marker>", or 0. */
static uint32_t line_of(const char* marker) {
  char want[64], buf[512];
  uint32_t n = 0;
  FILE* f = fopen(g_source, "r");
  if (!f) return 0;
  snprintf(want, sizeof want, "LINE:%s", marker);
  while (fgets(buf, sizeof buf, f)) {
    ++n;
    if (strstr(buf, want)) {
      fclose(f);
      return n;
    }
  }
  fclose(f);
  return 0;
}

static zex_launch_config_t config_1d(uint32_t groups, uint32_t size, int level) {
  zex_launch_config_t c;
  c.groups[0] = groups;
  c.groups[1] = 1;
  c.groups[2] = 1;
  c.group_size[0] = size;
  c.group_size[1] = 1;
  c.group_size[2] = 1;
  c.debug_level = level;
  return c;
}

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

/* vadd's arguments: c, a, b and *n. */
static void vadd_args(Env* e, const uint32_t* n, zex_arg_t args[4]) {
  args[0].size = sizeof e->c;
  args[0].value = &e->c;
  args[1].size = sizeof e->a;
  args[1].value = &e->a;
  args[2].size = sizeof e->b;
  args[2].value = &e->b;
  args[3].size = sizeof *n;
  args[3].value = n;
}

/* vadd over n elements with 4 groups of 256 work-items: throws when n < 1024. */
static zex_result_t launch_vadd(Env* e, zex_stream_t s, uint32_t n, int level) {
  zex_launch_config_t cfg = config_1d(4, 256, level);
  zex_arg_t args[4];
  vadd_args(e, &n, args);
  return zex_stream_launch(s, e->vadd, &cfg, 4, args);
}

/* throw_at(out, x, y) on `s` over groups (gx, gy) of (lx, ly) work-items at debug level 2: the work-item
 * at (x, y) throws a DomainError. */
static zex_result_t launch_throw_at(zex_stream_t s, zex_kernel_t k, int32_t** out, uint32_t* x, uint32_t* y,
                                    uint32_t gx, uint32_t gy, uint32_t lx, uint32_t ly) {
  zex_launch_config_t cfg;
  zex_arg_t args[3];
  cfg.groups[0] = gx;
  cfg.groups[1] = gy;
  cfg.groups[2] = 1;
  cfg.group_size[0] = lx;
  cfg.group_size[1] = ly;
  cfg.group_size[2] = 1;
  cfg.debug_level = 2;
  args[0].size = sizeof *out;
  args[0].value = out;
  args[1].size = sizeof *x;
  args[1].value = x;
  args[2].size = sizeof *y;
  args[2].value = y;
  return zex_stream_launch(s, k, &cfg, 3, args);
}

static void test_version_and_null_arguments(void) {
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

static void test_last_error_is_per_thread(Env* e) {
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

static void test_devices(Env* e) {
  uint32_t n = 0;
  zex_device_t d = NULL;
  REQUIRE_OK(zex_device_count(e->ctx, &n));
  CHECK(n >= 1);
  CHECK(zex_device_get(e->ctx, n, &d) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(d == NULL);
  CHECK(contains(zex_last_error_message(), "device(s)"));
  CHECK(zex_device_handle(e->dev) != NULL);
  CHECK(zex_context_handle(e->ctx) != NULL);
  CHECK(zex_driver_handle(e->ctx) != NULL);
  CHECK(strcmp(zex_last_error_message(), "") == 0);
}

/* Sub-devices and lookup by handle. On zex-cpu with ZEX_CPU_SUBDEVICES=2 (CTest c_api_test_2x2), device 0
 * has two tiles, and a throw on a tile's stream is caught there; elsewhere the count is whatever the
 * driver has, and the lookups still hold. */
static void test_sub_devices(Env* e) {
  const char* want = getenv("ZEX_CPU_SUBDEVICES");
  uint32_t n = 99, m = 99, i;
  zex_device_t found = NULL, sub = NULL;
  ze_device_handle_t bogus = (ze_device_handle_t)(uintptr_t)0x1000;
  REQUIRE_OK(zex_device_sub_device_count(e->dev, &n));
  if (want && strcmp(want, "2") == 0) CHECK(n == 2);
  if (want && strcmp(want, "0") == 0) CHECK(n == 0);
  CHECK(zex_device_sub_device_get(e->dev, n, &sub) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(sub == NULL);
  CHECK(contains(zex_last_error_message(), "sub-device(s)"));
  REQUIRE_OK(zex_device_for_handle(e->ctx, zex_device_handle(e->dev), &found));
  CHECK(found == e->dev);
  CHECK(zex_device_for_handle(e->ctx, bogus, &found) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(found == NULL);
  for (i = 0; i < n; ++i) {
    zex_device_t again = NULL;
    zex_module_t mod = NULL;
    zex_kernel_t k = NULL;
    zex_stream_t s = NULL;
    zex_exception_t ex = NULL;
    int32_t* out = NULL;
    uint32_t x = 1, y = 0;
    size_t size = 0;
    void* spv;
    REQUIRE_OK(zex_device_sub_device_get(e->dev, i, &sub));
    REQUIRE_OK(zex_device_sub_device_get(e->dev, i, &again));
    CHECK(again == sub); /* the same handle each time, owned by the context */
    CHECK(zex_device_handle(sub) != zex_device_handle(e->dev));
    REQUIRE_OK(zex_device_for_handle(e->ctx, zex_device_handle(sub), &found));
    CHECK(found == sub);
    REQUIRE_OK(zex_device_sub_device_count(sub, &m));
    CHECK(m == 0); /* a tile has none */
    spv = read_file(g_spv, &size);
    CHECK(spv != NULL);
    if (!spv) return;
    if (zex_module_create(sub, spv, size, &mod) != ZEX_SUCCESS) {
      free(spv);
      CHECK(!"zex_module_create on a sub-device");
      return;
    }
    free(spv);
    REQUIRE_OK(zex_kernel_create(mod, "throw_at", &k));
    REQUIRE_OK(zex_stream_create(sub, &s));
    REQUIRE_OK(zex_context_alloc_shared(e->ctx, sub, 16 * sizeof(int32_t), 64, (void**)&out));
    REQUIRE_OK(launch_throw_at(s, k, &out, &x, &y, 1, 1, 4, 1));
    CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
    CHECK(ex && strcmp(zex_exception_kernel_name(ex), "throw_at") == 0);
    if (want && strcmp(want, "2") == 0) {
      char name[32];
      snprintf(name, sizeof name, " on zex-cpu 0.%u ", i); /* the message names the tile that threw */
      CHECK(contains(zex_last_error_message(), name));
    }
    if (ex) zex_exception_destroy(ex);
    zex_stream_destroy(s);
    zex_kernel_destroy(k);
    zex_module_destroy(mod);
    CHECK(zex_context_free(e->ctx, out) == ZEX_SUCCESS);
  }
}

/* Issue 8 in the C API: operand values, the thrower count and the launch site (the same launch as the
 * C++ tests/runtime/stream_test.cpp: n = 1000 over 4 groups of 256, so work-items 1000..1023 throw). */
static void test_values_count_and_site(Env* e) {
  zex_stream_t s = NULL;
  zex_exception_t ex = NULL;
  zex_launch_config_t cfg = config_1d(4, 256, 1);
  zex_arg_t args[4];
  const uint32_t n = 1000;
  uint32_t site = 0, line = 0;
  uint64_t v[2] = {0, 0};
  const char* file = NULL;
  REQUIRE_OK(zex_stream_create(e->dev, &s));
  vadd_args(e, &n, args);
  /* Level 1: {index, length}, 24 throwers, and this line as the launch site (the macro's __LINE__). */
  site = __LINE__; REQUIRE_OK(zex_stream_launch(s, e->vadd, &cfg, 4, args));
  CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
  if (!ex) {
    ++g_failures;
    zex_stream_destroy(s);
    return;
  }
  CHECK(zex_exception_values(ex, NULL, 0) == 2);
  CHECK(zex_exception_values(ex, v, 1) == 2); /* copies min(count, capacity) */
  CHECK(v[0] >= 1000 && v[0] < 1024);
  CHECK(v[1] == 0);
  CHECK(zex_exception_values(ex, v, 2) == 2);
  CHECK(v[0] >= 1000 && v[0] < 1024);
  CHECK(v[1] == 1000);
  CHECK(zex_exception_thrower_count(ex) == 24);
  CHECK(zex_exception_launch_site(ex, &file, &line) == 1);
  CHECK(file != NULL && strcmp(file, __FILE__) == 0);
  CHECK(line == site);
  CHECK(zex_exception_launch_site(ex, NULL, NULL) == 1);
  CHECK(contains(zex_exception_message(ex), "index "));
  zex_exception_destroy(ex);
  ex = NULL;

  /* Level 0: nothing recorded on the device, but the host still knows the site. */
  cfg.debug_level = 0;
  site = __LINE__; REQUIRE_OK(zex_stream_launch(s, e->vadd, &cfg, 4, args));
  CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
  CHECK(zex_exception_values(ex, v, 2) == 0);
  CHECK(zex_exception_thrower_count(ex) == 1);
  line = 0;
  CHECK(zex_exception_launch_site(ex, &file, &line) == 1 && line == site);
  zex_exception_destroy(ex);
  ex = NULL;

  /* The function itself (parenthesized: not the macro) records no site; nor does a NULL file. */
  cfg.debug_level = 1;
  REQUIRE_OK((zex_stream_launch)(s, e->vadd, &cfg, 4, args));
  CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
  CHECK(zex_exception_launch_site(ex, &file, &line) == 0);
  CHECK(zex_exception_thrower_count(ex) == 24);
  zex_exception_destroy(ex);
  REQUIRE_OK(zex_stream_launch_at(s, e->vadd, &cfg, 4, args, NULL, 7));
  CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
  CHECK(zex_exception_launch_site(ex, &file, &line) == 0);
  zex_exception_destroy(ex);
  REQUIRE_OK(zex_stream_launch_at(s, e->vadd, &cfg, 4, args, "elsewhere.c", 42));
  CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
  CHECK(zex_exception_launch_site(ex, &file, &line) == 1 && strcmp(file, "elsewhere.c") == 0 && line == 42);
  zex_exception_destroy(ex);

  /* NULL exception: neutral answers. */
  CHECK(zex_exception_values(NULL, v, 2) == 0);
  CHECK(zex_exception_thrower_count(NULL) == 0);
  CHECK(zex_exception_launch_site(NULL, &file, &line) == 0);
  zex_stream_destroy(s);
}

/* zex_exception_info: the whole exception in one struct, the accessors' values, and the fields only it
 * has (device name, launch id, ABI version, value kind); sized by the caller (issue 25). */
static void test_exception_info(Env* e) {
  zex_stream_t s = NULL;
  zex_exception_t ex = NULL;
  zex_exception_info_t info;
  ze_device_properties_t props;
  uint32_t site = 0, i;
  uint64_t g[3];
  zex_launch_config_t cfg = config_1d(4, 256, 2);
  zex_arg_t args[4];
  const uint32_t n = 1000, all = kTotal;
  const char* function = NULL;
  struct {
    zex_exception_info_t info;
    uint64_t newer_field; /* what a newer zex.h's struct would have past ours */
  } newer;
  memset(&props, 0, sizeof props);
  props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
  CHECK(zeDeviceGetProperties(zex_device_handle(e->dev), &props) == ZE_RESULT_SUCCESS);
  REQUIRE_OK(zex_stream_create(e->dev, &s));
  vadd_args(e, &all, args);
  REQUIRE_OK(zex_stream_launch(s, e->vadd, &cfg, 4, args)); /* launch 1: no throw */
  vadd_args(e, &n, args);
  site = __LINE__; REQUIRE_OK(zex_stream_launch(s, e->vadd, &cfg, 4, args)); /* launch 2 throws */
  CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
  if (!ex) {
    ++g_failures;
    zex_stream_destroy(s);
    return;
  }
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  CHECK(zex_exception_info(ex, &info) == ZEX_SUCCESS);
  CHECK(info.size == sizeof info);
  CHECK(info.debug_level == 2);
  CHECK(info.abi_version == ZEX_ABI_VERSION);
  CHECK(info.device_name && info.device_name[0] && strcmp(info.device_name, props.name) == 0);
  CHECK(contains(zex_exception_message(ex), info.device_name));
  CHECK(info.launch_id == 2);
  /* The accessors read the same projection: the same strings, not copies. */
  CHECK(info.name == zex_exception_name(ex) && strcmp(info.name, "BoundsError") == 0);
  CHECK(info.reason == zex_exception_reason(ex));
  CHECK(info.kernel_name == zex_exception_kernel_name(ex) && strcmp(info.kernel_name, "vadd") == 0);
  CHECK(info.global_id && info.group_id && info.local_id);
  CHECK(zex_exception_global_id(ex, g) == 1 && info.global_id && memcmp(g, info.global_id, sizeof g) == 0);
  CHECK(info.global_id && info.global_id[0] >= 1000 && info.global_id[0] < kTotal);
  CHECK(info.frame_count == zex_exception_frame_count(ex) && info.frame_count >= 1 && info.frames);
  CHECK(info.frame_depth == zex_exception_frame_depth(ex));
  for (i = 0; info.frames && i < info.frame_count; ++i) {
    CHECK(zex_exception_frame(ex, i, &function, NULL, NULL) == 1 && function == info.frames[i].function);
  }
  CHECK(info.frames && strcmp(info.frames[0].function, "vadd") == 0 && info.frames[0].line == line_of("vadd"));
  CHECK(info.value_count == 2 && info.values && info.values[1] == 1000);
  CHECK(info.value_kind == ZEX_VALUES_BOUNDS);
  CHECK(info.thrower_count == 24);
  CHECK(info.launch_site_file && strcmp(info.launch_site_file, __FILE__) == 0 && info.launch_site_line == site);

  /* A caller built against an older zex.h (its struct ended after kernel_name): only those fields. */
  memset(&info, 0xab, sizeof info);
  info.size = offsetof(zex_exception_info_t, device_name);
  CHECK(zex_exception_info(ex, &info) == ZEX_SUCCESS);
  CHECK(info.size == offsetof(zex_exception_info_t, device_name));
  CHECK(info.kernel_name && strcmp(info.kernel_name, "vadd") == 0);
  CHECK(info.launch_id == 0xababababababababull); /* not written */
  /* One built against a newer zex.h: what this library has, and `size` says how much. */
  memset(&newer, 0xcd, sizeof newer);
  newer.info.size = sizeof newer;
  CHECK(zex_exception_info(ex, &newer.info) == ZEX_SUCCESS);
  CHECK(newer.info.size == sizeof(zex_exception_info_t));
  CHECK(newer.info.launch_id == 2 && newer.newer_field == 0xcdcdcdcdcdcdcdcdull);
  /* Misuse. */
  info.size = 0;
  CHECK(zex_exception_info(ex, &info) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(contains(zex_last_error_message(), "sizeof(zex_exception_info_t)"));
  CHECK(zex_exception_info(NULL, &info) == ZEX_ERROR_INVALID_ARGUMENT);
  CHECK(zex_exception_info(ex, NULL) == ZEX_ERROR_INVALID_ARGUMENT);
  zex_exception_destroy(ex);
  ex = NULL;

  /* Level 1 of a stream's third launch: no work-item, the launch id counts on; no site via the function. */
  cfg.debug_level = 1;
  REQUIRE_OK((zex_stream_launch)(s, e->vadd, &cfg, 4, args));
  CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
  memset(&info, 0, sizeof info);
  info.size = sizeof info;
  CHECK(ex && zex_exception_info(ex, &info) == ZEX_SUCCESS);
  CHECK(info.launch_id == 3 && info.debug_level == 1);
  CHECK(!info.global_id && !info.group_id && !info.local_id);
  CHECK(!info.launch_site_file && info.launch_site_line == 0);
  CHECK(info.device_name && strcmp(info.device_name, props.name) == 0);
  zex_exception_destroy(ex);
  zex_stream_destroy(s);
}

static void test_events(Env* e) {
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

static void test_levels(Env* e) {
  zex_stream_t s = NULL;
  int level;
  const uint32_t line = line_of("vadd");
  REQUIRE_OK(zex_stream_create(e->dev, &s));
  for (level = 0; level <= 2; ++level) {
    zex_exception_t ex = NULL;
    uint64_t g[3] = {0, 0, 0}, grp[3] = {0, 0, 0}, l[3] = {0, 0, 0};
    const char *function = NULL, *file = NULL;
    uint32_t frame_line = 0;
    REQUIRE_OK(launch_vadd(e, s, 1000, level));
    CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
    if (!ex) {
      ++g_failures;
      fprintf(stderr, "level %d: no exception\n", level);
      continue;
    }
    CHECK(strcmp(zex_last_error_message(), zex_exception_message(ex)) == 0);
    CHECK(zex_exception_debug_level(ex) == level);
    CHECK(strcmp(zex_exception_kernel_name(ex), "vadd") == 0);
    CHECK(contains(zex_exception_message(ex), "in kernel 'vadd'"));
    /* zex numbered vadd's check (issue 15): name, reason and its frame at every level. */
    CHECK(strcmp(zex_exception_name(ex), "BoundsError") == 0);
    CHECK(strcmp(zex_exception_reason(ex), "Out-of-bounds array access") == 0);
    CHECK(contains(zex_exception_message(ex), "A BoundsError was thrown"));
    CHECK(zex_exception_frame_count(ex) == 1);
    CHECK(zex_exception_frame_depth(ex) == 1);
    if (level < 2) {
      /* The fix-it hint speaks each caller's language. */
      CHECK(contains(zex_exception_message(ex), "(zex_launch_config_t.debug_level or ZEX_DEBUG_LEVEL="));
      CHECK(contains(zex_exception_message_for(ex, ZEX_LANGUAGE_C), "zex_launch_config_t.debug_level"));
      CHECK(contains(zex_exception_message_for(ex, ZEX_LANGUAGE_CPP), "(LaunchConfig::debug_level or"));
      CHECK(contains(zex_exception_message_for(ex, ZEX_LANGUAGE_PYTHON),
                     "(the debug_level= keyword of stream.launch(...) or"));
      CHECK(contains(zex_exception_message_for(ex, ZEX_LANGUAGE_JULIA), "(the debug_level= keyword of the launch or"));
      CHECK(!contains(zex_exception_message(ex), "LaunchConfig"));
      CHECK(zex_exception_global_id(ex, g) == 0);
      CHECK(zex_exception_frame(ex, 1, &function, &file, &frame_line) == 0);
    } else {
      CHECK(zex_exception_global_id(ex, g) == 1);
      CHECK(zex_exception_group_id(ex, grp) == 1);
      CHECK(zex_exception_local_id(ex, l) == 1);
      CHECK(g[0] >= 1000 && g[0] < kTotal && g[1] == 0 && g[2] == 0);
      CHECK(grp[0] == g[0] / 256 && l[0] == g[0] % 256);
      CHECK(zex_exception_frame_count(ex) >= 1);
      CHECK(zex_exception_frame_depth(ex) >= zex_exception_frame_count(ex));
      CHECK(zex_exception_frame(ex, 0, &function, &file, &frame_line) == 1);
      CHECK(function && strcmp(function, "vadd") == 0);
      CHECK(file && strcmp(file, g_source) == 0);
      CHECK(line != 0 && frame_line == line);
      CHECK(contains(zex_exception_message(ex), "Stacktrace:"));
      CHECK(contains(zex_exception_message(ex), "Thrown by work-item ("));
    }
    zex_exception_destroy(ex);
  }
  zex_stream_destroy(s);
}

static void test_recovery(Env* e) {
  zex_stream_t s = NULL;
  int round, i;
  REQUIRE_OK(zex_stream_create(e->dev, &s));
  for (round = 0; round < 3; ++round) {
    zex_exception_t ex = NULL;
    REQUIRE_OK(launch_vadd(e, s, 1000, 1));
    CHECK(zex_stream_synchronize(s, &ex) == ZEX_ERROR_KERNEL_EXCEPTION);
    CHECK(ex != NULL && strcmp(zex_exception_name(ex), "BoundsError") == 0);
    zex_exception_destroy(ex);
    for (i = 0; i < kTotal; ++i) e->c[i] = 0.0f;
    REQUIRE_OK(launch_vadd(e, s, kTotal, 1));
    CHECK(zex_stream_synchronize(s, &ex) == ZEX_SUCCESS);
    CHECK(ex == NULL);
    CHECK(strcmp(zex_last_error_message(), "") == 0);
    for (i = 0; i < kTotal; ++i)
      if (e->c[i] != e->a[i] + e->b[i]) {
        CHECK(e->c[i] == e->a[i] + e->b[i]);
        break;
      }
  }
  /* Without an exception handle the message is still the last error. */
  REQUIRE_OK(launch_vadd(e, s, 10, 1));
  CHECK(zex_stream_synchronize(s, NULL) == ZEX_ERROR_KERNEL_EXCEPTION);
  CHECK(contains(zex_last_error_message(), "A BoundsError was thrown in kernel 'vadd'"));
  zex_stream_destroy(s);
}

static void test_two_streams(Env* e) {
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

static void test_misuse(Env* e) {
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
static void test_argument_count_checked_first(Env* e) {
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

static void test_bad_module(Env* e) {
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
static void test_level_zero_errors(Env* e) {
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

static void test_build_log(Env* e) {
  const char* log = "unset";
  CHECK(zex_module_build_log(e->mod, &log) == ZEX_SUCCESS);
  CHECK(log && strcmp(log, "") == 0);
}

static void test_adopt(Env* e) {
  zex_context_t adopted = NULL;
  zex_device_t dev = NULL;
  zex_stream_t s = NULL;
  zex_module_t mod = NULL;
  zex_kernel_t k = NULL;
  zex_kernel_t saved = e->vadd;
  size_t size = 0;
  void* spv = NULL;
  REQUIRE_OK(zex_context_adopt(zex_driver_handle(e->ctx), zex_context_handle(e->ctx), &adopted));
  CHECK(zex_context_handle(adopted) == zex_context_handle(e->ctx));
  REQUIRE_OK(zex_device_get(adopted, 0, &dev));
  CHECK(zex_device_handle(dev) == zex_device_handle(e->dev));
  REQUIRE_OK(zex_stream_create(dev, &s));
  spv = read_file(g_spv, &size);
  if (!spv) {
    ++g_failures;
    zex_stream_destroy(s);
    zex_context_destroy(adopted);
    return;
  }
  CHECK(zex_module_create(dev, spv, size, &mod) == ZEX_SUCCESS);
  free(spv);
  CHECK(zex_kernel_create(mod, "vadd", &k) == ZEX_SUCCESS);
  /* The kernel keeps its module's state: the module handle may go first. */
  zex_module_destroy(mod);
  e->vadd = k;
  CHECK(launch_vadd(e, s, 100, 1) == ZEX_SUCCESS);
  CHECK(zex_stream_synchronize(s, NULL) == ZEX_ERROR_KERNEL_EXCEPTION);
  CHECK(launch_vadd(e, s, kTotal, 1) == ZEX_SUCCESS);
  e->vadd = saved;
  /* Destroying the adopted context first: the stream and kernel keep its state, and the Level Zero
   * context (not owned) stays. */
  zex_context_destroy(adopted);
  CHECK(zex_stream_synchronize(s, NULL) == ZEX_SUCCESS);
  zex_stream_destroy(s);
  zex_kernel_destroy(k);
  CHECK(zex_context_handle(e->ctx) != NULL);
}

static void test_synchronize_for(Env* e) {
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
static void test_slots(Env* e) {
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

int main(int argc, char** argv) {
  Env e;
  size_t size = 0;
  void* spv;
  int i;
  if (argc < 3) {
    fprintf(stderr, "usage: c_api_test <zex_test_kernels.spv> <zex_test_kernels.cl>\n");
    return 2;
  }
  g_spv = argv[1];
  g_source = argv[2];
  memset(&e, 0, sizeof e);
  test_version_and_null_arguments();
  spv = read_file(argv[1], &size);
  if (!spv) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 1;
  }
  if (zex_context_create(&e.ctx) != ZEX_SUCCESS || zex_device_get(e.ctx, 0, &e.dev) != ZEX_SUCCESS ||
      zex_module_create(e.dev, spv, size, &e.mod) != ZEX_SUCCESS || zex_kernel_create(e.mod, "vadd", &e.vadd) != ZEX_SUCCESS ||
      zex_context_alloc_shared(e.ctx, e.dev, kTotal * sizeof(float), 64, (void**)&e.a) != ZEX_SUCCESS ||
      zex_context_alloc_shared(e.ctx, e.dev, kTotal * sizeof(float), 64, (void**)&e.b) != ZEX_SUCCESS ||
      zex_context_alloc_shared(e.ctx, e.dev, kTotal * sizeof(float), 64, (void**)&e.c) != ZEX_SUCCESS) {
    fprintf(stderr, "setup failed: %s\n", zex_last_error_message());
    return 1;
  }
  free(spv);
  for (i = 0; i < kTotal; ++i) {
    e.a[i] = (float)i;
    e.b[i] = 1.0f;
  }
  test_last_error_is_per_thread(&e);
  test_devices(&e);
  test_sub_devices(&e);
  test_levels(&e);
  test_recovery(&e);
  test_two_streams(&e);
  test_misuse(&e);
  test_argument_count_checked_first(&e);
  test_bad_module(&e);
  test_build_log(&e);
  test_level_zero_errors(&e);
  test_adopt(&e);
  test_synchronize_for(&e);
  test_slots(&e);
  test_values_count_and_site(&e);
  test_exception_info(&e);
  test_events(&e);
  zex_context_free(e.ctx, e.a);
  zex_context_free(e.ctx, e.b);
  zex_context_free(e.ctx, e.c);
  zex_kernel_destroy(e.vadd);
  zex_module_destroy(e.mod);
  zex_context_destroy(e.ctx);
  if (g_failures) {
    fprintf(stderr, "c_api_test: %d check(s) failed\n", g_failures);
    return 1;
  }
  printf("c_api_test: all checks passed\n");
  return 0;
}
