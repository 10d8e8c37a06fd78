// Half-precision storage without half arithmetic (SPIR-V Float16Buffer, required by the Level Zero SPIR-V
// environment): vload_half / vstore_half.
kernel void halves(global const half* in, global half* out, global float* as_float) {
  size_t g = get_global_id(0);
  float f = vload_half(g, in);
  as_float[g] = f;
  vstore_half(f * 2.0f, g, out);
}
