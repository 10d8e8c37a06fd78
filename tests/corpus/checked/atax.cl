/* Checked copy of ../polybench/atax.cl (PolyBench/GPU 1.0, PolyBench-ACC; licence:
 * ../polybench/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed
 * index into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). */
#include <zex/device.h>

typedef float DATA_TYPE;

__kernel void atax_kernel1(__global DATA_TYPE *A, __global DATA_TYPE *x, __global DATA_TYPE *tmp, int nx, int ny,
                           uint n_A, uint n_x, uint n_tmp, zex_state_t zex) {

	int i = get_global_id(0);

	if (i < nx)
	{
		int j;
		for(j=0; j < ny; j++)
		{
			ZEX_CHECK_BOUNDS(zex, i, n_tmp);  // SHRINK:atax_kernel1
			ZEX_CHECK_BOUNDS(zex, i * ny + j, n_A);
			ZEX_CHECK_BOUNDS(zex, j, n_x);
			tmp[i] += A[i * ny + j] * x[j];
		}
	}
}
