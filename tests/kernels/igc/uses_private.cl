/* Negative control for the shape test: a dynamically indexed private array, which IGC must place in
 * scratch memory. If the checker does not flag this kernel, the checker is broken, not the library. */
__kernel void uses_private(__global float* c, uint n) {
  float t[64];
  size_t i = get_global_id(0);
  for (int k = 0; k < 64; ++k)
    t[k] = c[i + k];
  c[i] = t[n & 63u];
}
