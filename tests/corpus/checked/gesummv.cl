/* Checked copy of ../polybench/gesummv.cl (PolyBench/GPU 1.0, PolyBench-ACC; licence:
 * ../polybench/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed
 * index into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). */
#include <zex/device.h>

typedef float DATA_TYPE;

__kernel void gesummv_kernel(__global DATA_TYPE *a, __global DATA_TYPE *b, __global DATA_TYPE *x, __global DATA_TYPE *y, __global DATA_TYPE *tmp, DATA_TYPE alpha, DATA_TYPE beta, int n,
                             uint n_a, uint n_b, uint n_x, uint n_y, uint n_tmp, zex_state_t zex)
{
	int i = get_global_id(0);

	if (i < n)
	{
		int j;
		for(j = 0; j < n; j++)
		{
			ZEX_CHECK_BOUNDS(zex, i, n_tmp);
			ZEX_CHECK_BOUNDS(zex, i * n + j, n_a);
			ZEX_CHECK_BOUNDS(zex, j, n_x);
			tmp[i] += a[i * n + j] * x[j];
			ZEX_CHECK_BOUNDS(zex, i, n_y);
			ZEX_CHECK_BOUNDS(zex, i * n + j, n_b);  // SHRINK:gesummv_kernel
			y[i] += b[i * n + j] * x[j];
		}
		ZEX_CHECK_BOUNDS(zex, i, n_y);
		ZEX_CHECK_BOUNDS(zex, i, n_tmp);
		y[i] = alpha * tmp[i] + beta * y[i];
	}
}
