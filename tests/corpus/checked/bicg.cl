/* Checked copy of ../polybench/bicg.cl (PolyBench/GPU 1.0, PolyBench-ACC; licence:
 * ../polybench/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed
 * index into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). */
#include <zex/device.h>

typedef float DATA_TYPE;

__kernel void bicgKernel1(__global DATA_TYPE *A, __global DATA_TYPE *p, __global DATA_TYPE *q, int nx, int ny,
                          uint n_A, uint n_p, uint n_q, zex_state_t zex)
{
	int i = get_global_id(0);

	if (i < nx)
	{
		ZEX_CHECK_BOUNDS(zex, i, n_q);  // SHRINK:bicgKernel1
		q[i] = 0.0;

		int j;
		for(j=0; j < ny; j++)
		{
			ZEX_CHECK_BOUNDS(zex, i, n_q);
			ZEX_CHECK_BOUNDS(zex, i * ny + j, n_A);
			ZEX_CHECK_BOUNDS(zex, j, n_p);
			q[i] += A[i * ny + j] * p[j];
		}
	}

}
