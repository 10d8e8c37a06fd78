// Module build time. The specialization constant (SpecId 1) is folded into the code, so each distinct value
// gives PoCL a distinct program binary: a value never used before is a cold kernel-cache build, a value
// used before is a warm one.
int __spirv_SpecConstant(int id, int def);

kernel void scaled_sum(global const float* in, global float* out, int n) {
  const int salt = __spirv_SpecConstant(1, 0);
  size_t i = get_global_id(0);
  float acc = 0.0f;
  for (int k = 0; k < n; ++k) acc += in[(i + (size_t)k) % 1024] * (float)(k ^ salt);
  out[i] = acc;
}

kernel void mix(global uint* p) {
  const int salt = __spirv_SpecConstant(1, 0);
  size_t i = get_global_id(0);
  uint x = p[i] ^ (uint)salt;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  p[i] = x;
}
