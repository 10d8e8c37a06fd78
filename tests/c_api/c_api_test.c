/* The C API (<zex/zex.h>), from C99, end to end on zex-cpu through the system loader.
 *
 *   c_api_test <zex_test_kernels.spv> <zex_test_kernels.cl>
 *
 * The source is read only for the line numbers of the throws (its LINE: markers). Built in the tree
 * (ctest -R c_api) and again from an installed tree with nothing but `pkg-config --cflags --libs zex`
 * (tests/package). Exit status 0 when every check passed; each failed check prints its line.
 *
 * This file holds main() and the helpers; the cases are in c_api_errors.c, c_api_devices.c,
 * c_api_reports.c, c_api_streams.c and c_api_graphs.c (sources.cmake lists them for every build of the
 * test). */
#include "c_api_test.h"

int g_failures = 0;
const char* g_source = NULL;
const char* g_spv = NULL;

int contains(const char* s, const char* part) { return s && part && strstr(s, part) != NULL; }

void* read_file(const char* path, size_t* size) {
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
uint32_t line_of(const char* marker) {
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

zex_launch_config_t config_1d(uint32_t groups, uint32_t size, int level) {
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

/* vadd's arguments: c, a, b and *n. */
void vadd_args(Env* e, const uint32_t* n, zex_arg_t args[4]) {
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
zex_result_t launch_vadd(Env* e, zex_stream_t s, uint32_t n, int level) {
  zex_launch_config_t cfg = config_1d(4, 256, level);
  zex_arg_t args[4];
  vadd_args(e, &n, args);
  return zex_stream_launch(s, e->vadd, &cfg, 4, args);
}

/* throw_at(out, x, y) on `s` over groups (gx, gy) of (lx, ly) work-items at debug level 2: the work-item
 * at (x, y) throws a DomainError. */
zex_result_t launch_throw_at(zex_stream_t s, zex_kernel_t k, int32_t** out, uint32_t* x, uint32_t* y,
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
  test_graphs(&e);
  test_stream_execute(&e);
  test_stop_on_throw(&e);
  test_graph_update(&e);
  test_memory_checks(&e);
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
