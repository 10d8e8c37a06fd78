/* Checked copy of ../rodinia/gaussianElim_kernels.cl (Rodinia 3.1 OpenCL; licence:
 * ../rodinia/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed index
 * into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). Some of the original's
 * comments are left out. */
#include <zex/device.h>

__kernel void Fan1(__global float *m_dev,
                  __global float *a_dev,
                  __global float *b_dev,
                  const int size,
                  const int t,
                  uint n_m, uint n_a, uint n_b, zex_state_t zex) {
    int globalId = get_global_id(0);

    if (globalId < size-1-t) {
         ZEX_CHECK_BOUNDS(zex, size * (globalId + t + 1)+t, n_m);  // SHRINK:Fan1
         ZEX_CHECK_BOUNDS(zex, size * (globalId + t + 1) + t, n_a);
         ZEX_CHECK_BOUNDS(zex, size * t + t, n_a);
         *(m_dev + size * (globalId + t + 1)+t) = *(a_dev + size * (globalId + t + 1) + t) / *(a_dev + size * t + t);
    }
}


__kernel void Fan2(__global float *m_dev,
                  __global float *a_dev,
                  __global float *b_dev,
                  const int size,
                  const int t,
                  uint n_m, uint n_a, uint n_b, zex_state_t zex) {
	 int globalId = get_global_id(0);

	 int globalIdx = get_global_id(0);
	 int globalIdy = get_global_id(1);
      if (globalIdx < size-1-t && globalIdy < size-t) {
         ZEX_CHECK_BOUNDS(zex, size*(globalIdx+1+t)+(globalIdy+t), n_a);  // SHRINK:Fan2
         ZEX_CHECK_BOUNDS(zex, size*(globalIdx+1+t)+t, n_m);
         ZEX_CHECK_BOUNDS(zex, size*t+(globalIdy+t), n_a);
         a_dev[size*(globalIdx+1+t)+(globalIdy+t)] -= m_dev[size*(globalIdx+1+t)+t] * a_dev[size*t+(globalIdy+t)];

 	    if(globalIdy == 0){
 		   ZEX_CHECK_BOUNDS(zex, globalIdx+1+t, n_b);
 		   ZEX_CHECK_BOUNDS(zex, size*(globalIdx+1+t)+(globalIdy+t), n_m);
 		   ZEX_CHECK_BOUNDS(zex, t, n_b);
 		   b_dev[globalIdx+1+t] -= m_dev[size*(globalIdx+1+t)+(globalIdy+t)] * b_dev[t];
 	    }
 	 }
}
