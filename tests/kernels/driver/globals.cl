// A program-scope global variable, for zeModuleGetGlobalPointer.
global int zex_global_value = 42;

kernel void bump_global(global int* out) {
  out[0] = zex_global_value;
  zex_global_value += 1;
}
