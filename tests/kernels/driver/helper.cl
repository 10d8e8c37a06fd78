// Work-item builtins called from functions that are not inlined by the front end (PoCL 3.1 cannot resolve
// them there; the driver must inline before handing the code to PoCL).

__attribute__((noinline)) size_t helper_gid(void) { return get_global_id(0); }

__attribute__((noinline)) void helper_store(global int* p, int scale) {
  size_t g = get_global_id(0);
  p[g] = (int)g * scale + (int)get_local_id(0) * 0 + (int)get_group_id(0) * 0;
}

kernel void through_helpers(global int* a, global int* b) {
  a[helper_gid()] = (int)helper_gid() + 1;
  helper_store(b, 3);
}
