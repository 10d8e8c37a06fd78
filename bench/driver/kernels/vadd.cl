// The kernels the driver benchmark runs through zex-cpu (as SPIR-V) and through PoCL directly (as source).

kernel void empty(void) {}

kernel void vadd(global const float* a, global const float* b, global float* c) {
  size_t i = get_global_id(0);
  c[i] = a[i] + b[i];
}
