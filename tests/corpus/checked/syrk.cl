/* Checked copy of ../polybench/syrk.cl (PolyBench/GPU 1.0, PolyBench-ACC; licence:
 * ../polybench/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed
 * index into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). */
#include <zex/device.h>

typedef float DATA_TYPE;


/*  C := alpha*A*A' + beta*C */
__kernel void syrk_kernel(__global DATA_TYPE *a, __global DATA_TYPE *c, DATA_TYPE alpha, DATA_TYPE beta, int ni, int nj,
                          uint n_a, uint n_c, zex_state_t zex)
{
	int j = get_global_id(0);
	int i = get_global_id(1);

	if ((i < nj) && (j < nj))
	{
		ZEX_CHECK_BOUNDS(zex, i * nj + j, n_c);  // SHRINK:syrk_kernel
		c[i * nj + j] *= beta;
		int k;
		for(k=0; k< ni; k++)
		{
			ZEX_CHECK_BOUNDS(zex, i * nj + j, n_c);
			ZEX_CHECK_BOUNDS(zex, i * ni + k, n_a);
			ZEX_CHECK_BOUNDS(zex, j * ni + k, n_a);
			c[i * nj + j] += alpha * a[i * ni + k] * a[j * ni + k];
		}
	}
}
