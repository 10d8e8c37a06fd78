// A library module for zeModuleDynamicLink (strict_addresses_test): exports a constant table, a string, a
// mutable variable and a function.
constant uint dyn_table[4] = {10u, 20u, 30u, 40u};
constant char dyn_name[] = "dyn lib";
global int dyn_counter = 5;

int dyn_scale(int x) { return x * (int)dyn_table[1]; }
