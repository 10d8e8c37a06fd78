// Program-scope data in each of the places NEO (22.43, IGC 1.0.12504) puts it: what a kernel records as an
// address there and what zeMemGetAddressRange and zeModuleGetGlobalPointer say about it (strict_addresses_test).
typedef struct {
  char s[8];
} wrapped_t;

constant char named_str[] = "named string";          // [N x i8]: .data.const.string, not found
constant wrapped_t wrapped = {"wrapped"};              // { [8 x i8] }: .data.const, found
constant uint table[4] = {0x11223344u, 2u, 3u, 4u};    // [4 x i32]: .data.const, found
constant uchar lut[8] = {3, 1, 4, 1, 5, 9, 2, 6};      // [8 x i8] without text: a "string" all the same
global int counter = 41;                               // .data.global, found

kernel void addresses(global ulong* out, global uint* values) {
  out[0] = (ulong) "a string literal";
  out[1] = (ulong)named_str;
  out[2] = (ulong)&wrapped;
  out[3] = (ulong)table;
  out[4] = (ulong)&counter;
  out[5] = (ulong)lut;
  // The kernel reads through the same addresses.
  values[0] = table[get_global_id(0)];
  values[1] = (uint)wrapped.s[get_global_id(0)];
  values[2] = (uint)named_str[get_global_id(0)];
  values[3] = (uint)lut[get_global_id(0) + 5];
  values[4] = (uint)counter;
  counter += 1;
}
