// Imports everything dyn_lib.cl exports; built alone it needs zeModuleDynamicLink (strict_addresses_test).
extern constant uint dyn_table[4];
extern constant char dyn_name[8];
extern global int dyn_counter;
int dyn_scale(int x);

kernel void use_dyn(global ulong* out) {
  out[0] = (ulong)dyn_table;
  out[1] = (ulong)dyn_name;
  out[2] = (ulong)&dyn_counter;
  out[3] = (ulong)dyn_scale(3);
  dyn_counter += 1;
}
