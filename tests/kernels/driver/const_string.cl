// A module constant: its address, taken on the device, must lie in a range zeMemGetAddressRange knows. The
// string is wrapped in a struct: a plain char array would go to NEO's strings segment, which it does not find
// (addresses.cl).
constant struct {
  char s[69];
} marker = {"zex-cpu module constant marker 0123456789 abcdefghijklmnopqrstuvwxyz"};

kernel void marker_address(global ulong* out) {
  out[0] = (ulong)marker.s;
  out[1] = sizeof(marker.s);
}

kernel void marker_copy(global char* out) {
  size_t i = get_global_id(0);
  out[i] = marker.s[i];
}
