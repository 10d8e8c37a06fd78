/* The C API test: what an exception reports (operand values, thrower count, launch site,
 * zex_exception_info), per debug level, and the stream's recovery after a throw. */
#include "c_api_test.h"

/* Issue 8 in the C API: operand values, the thrower count and the launch site (the same launch as the
 * C++ tests/runtime/stream_test.cpp: n = 1000 over 4 groups of 256, so work-items 1000..1023 throw). */
void test_values_count_and_site(Env* e) {
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
void test_exception_info(Env* e) {
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

void test_levels(Env* e) {
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

void test_recovery(Env* e) {
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
