// A module constant: its address, taken on the device, must lie in a range zeMemGetAddressRange knows.
constant char marker[] = "zex-cpu module constant marker 0123456789 abcdefghijklmnopqrstuvwxyz";

kernel void marker_address(global ulong* out) {
  out[0] = (ulong)marker;
  out[1] = sizeof(marker);
}

kernel void marker_copy(global char* out) {
  size_t i = get_global_id(0);
  out[i] = marker[i];
}
