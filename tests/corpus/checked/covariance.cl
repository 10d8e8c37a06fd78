/* Checked copy of ../polybench/covariance.cl (PolyBench/GPU 1.0, PolyBench-ACC; licence:
 * ../polybench/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed
 * index into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). */
#include <zex/device.h>

typedef float DATA_TYPE;


__kernel void mean_kernel(__global DATA_TYPE *mean, __global DATA_TYPE *data, DATA_TYPE float_n, int m, int n,
                          uint n_mean, uint n_data, zex_state_t zex)
{
	int j = get_global_id(0);

	if (j < m)
	{
		ZEX_CHECK_BOUNDS(zex, j, n_mean);
		mean[j] = 0.0;

		int i;
		for(i = 0; i < n; i++)
		{
			ZEX_CHECK_BOUNDS(zex, j, n_mean);
			ZEX_CHECK_BOUNDS(zex, i * m + j, n_data);  // SHRINK:mean_kernel
			mean[j] += data[i * m + j];
		}
		ZEX_CHECK_BOUNDS(zex, j, n_mean);
		mean[j] /= (DATA_TYPE)float_n;
	}
}
