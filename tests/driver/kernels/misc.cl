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
