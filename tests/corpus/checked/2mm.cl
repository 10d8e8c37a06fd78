/* Checked copy of ../polybench/2mm.cl (PolyBench/GPU 1.0, PolyBench-ACC; licence:
 * ../polybench/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed
 * index into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). */
#include <zex/device.h>

typedef float DATA_TYPE;

__kernel void mm2_kernel1(__global DATA_TYPE *tmp, __global DATA_TYPE *A, __global DATA_TYPE *B, int ni, int nj, int nk, int nl, DATA_TYPE alpha, DATA_TYPE beta,
                          uint n_tmp, uint n_A, uint n_B, zex_state_t zex)
{
	int j = get_global_id(0);
	int i = get_global_id(1);

	if ((i < ni) && (j < nj))
	{
		ZEX_CHECK_BOUNDS(zex, i * nj + j, n_tmp);  // SHRINK:mm2_kernel1
		tmp[i * nj + j] = 0;
		int k;
		for (k = 0; k < nk; k++)
		{
			ZEX_CHECK_BOUNDS(zex, i * nj + j, n_tmp);
			ZEX_CHECK_BOUNDS(zex, i * nk + k, n_A);
			ZEX_CHECK_BOUNDS(zex, k * nj + j, n_B);
			tmp[i * nj + j] += alpha * A[i * nk + k] * B[k * nj + j];
		}
	}
}
