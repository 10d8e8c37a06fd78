/* Checked copy of ../polybench/gemm.cl (PolyBench/GPU 1.0, PolyBench-ACC; licence:
 * ../polybench/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed
 * index into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them. "SHRINK:<kernel>" marks the check the
 * shrunk-buffer test hits. */
#include <zex/device.h>

typedef float DATA_TYPE;

__kernel void gemm(__global DATA_TYPE *a, __global DATA_TYPE *b, __global DATA_TYPE *c, DATA_TYPE alpha, DATA_TYPE beta, int ni, int nj, int nk,
                   uint n_a, uint n_b, uint n_c, zex_state_t zex)
{
	int j = get_global_id(0);
	int i = get_global_id(1);

	if ((i < ni) && (j < nj))
	{
		ZEX_CHECK_BOUNDS(zex, i * nj + j, n_c);  // SHRINK:gemm
		c[i * nj + j] *= beta;
		int k;
		for(k=0; k < nk; k++)
		{
			ZEX_CHECK_BOUNDS(zex, i * nj + j, n_c);
			ZEX_CHECK_BOUNDS(zex, i * nk + k, n_a);
			ZEX_CHECK_BOUNDS(zex, k * nj + j, n_b);
			c[i * nj + j] += alpha * a[i * nk + k] * b[k * nj +j];
		}
	}
}
