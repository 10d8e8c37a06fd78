// Calls functions that only the library module defines (imports resolved by spirv-link).
int lib_scale(int x);
ulong lib_version_address(void);

kernel void use_lib(global int* out, global ulong* addr) {
  size_t g = get_global_id(0);
  out[g] = lib_scale((int)g);
  if (g == 0) addr[0] = lib_version_address();
}
