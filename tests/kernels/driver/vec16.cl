// 16-wide vectors (SPIR-V Vector16, required by the Level Zero SPIR-V environment).
kernel void vec16(global float16* a, global float* sums) {
  size_t g = get_global_id(0);
  float16 v = a[g] * 2.0f;
  a[g] = v;
  sums[g] = v.s0 + v.s1 + v.s2 + v.s3 + v.s4 + v.s5 + v.s6 + v.s7 + v.s8 + v.s9 + v.sa + v.sb + v.sc + v.sd +
            v.se + v.sf;
}
