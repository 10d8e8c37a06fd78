/* The C API test: devices, sub-devices and adopting a runtime's own Level Zero handles. */
#include "c_api_test.h"

void test_devices(Env* e) {
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
void test_sub_devices(Env* e) {
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

void test_adopt(Env* e) {
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
