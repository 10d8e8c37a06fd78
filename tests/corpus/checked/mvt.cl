/* Checked copy of ../polybench/mvt.cl (PolyBench/GPU 1.0, PolyBench-ACC; licence:
 * ../polybench/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed
 * index into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). */
#include <zex/device.h>

typedef float DATA_TYPE;



__kernel void mvt_kernel1(__global DATA_TYPE *a, __global DATA_TYPE *x1, __global DATA_TYPE *y1, int n,
                          uint n_a, uint n_x1, uint n_y1, zex_state_t zex)
{
	int i = get_global_id(0);

	if (i < n)
	{
		int j;
		for (j=0; j < n; j++)
		{
			ZEX_CHECK_BOUNDS(zex, i, n_x1);  // SHRINK:mvt_kernel1
			ZEX_CHECK_BOUNDS(zex, i * n + j, n_a);
			ZEX_CHECK_BOUNDS(zex, j, n_y1);
			x1[i] += a[i * n + j] * y1[j];
		}
	}
}
