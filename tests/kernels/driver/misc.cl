// printf, null pointer arguments and vector by-value arguments.

kernel void say(int v) {
  if (get_global_id(0) == 0) printf("zex-cpu printf %d\n", v);
}

kernel void null_check(global int* maybe_null, global int* out) {
  out[0] = maybe_null == 0 ? 1 : 2;
}

kernel void vectors(global float* out, float4 f, int2 i, uchar c, ulong big) {
  out[0] = f.x + f.y + f.z + f.w;
  out[1] = (float)(i.x * i.y);
  out[2] = (float)c;
  out[3] = (float)(big >> 40);
}

// A __constant pointer argument (read-only data passed by the host).
kernel void poly(constant float* coeffs, int n, global float* out) {
  float x = (float)get_global_id(0);
  float acc = 0.0f;
  for (int k = n - 1; k >= 0; --k) acc = acc * x + coeffs[k];
  out[get_global_id(0)] = acc;
}

// Writes at the two ends of a large buffer.
kernel void touch_ends(global char* p, ulong size) {
  p[0] = 11;
  p[size - 1] = 22;
}
