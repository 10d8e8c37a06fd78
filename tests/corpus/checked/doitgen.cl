/* Checked copy of ../polybench/doitgen.cl (PolyBench/GPU 1.0, PolyBench-ACC; licence:
 * ../polybench/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed
 * index into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). */
#include <zex/device.h>

/* Can switch DATA_TYPE between float and double */
typedef float DATA_TYPE;


__kernel void doitgen_kernel1(int nr, int nq, int np, __global DATA_TYPE *A, __global DATA_TYPE *C4, __global DATA_TYPE *sum, int r,
                              uint n_A, uint n_C4, uint n_sum, zex_state_t zex)
{
	int p = get_global_id(0);
	int q = get_global_id(1);

	if ((p < np) && (q < nq))
	{
		ZEX_CHECK_BOUNDS(zex, r * (nq * np) + q * np + p, n_sum);  // SHRINK:doitgen_kernel1
		sum[r * (nq * np) + q * np + p] = (DATA_TYPE)0.0;

		for (int s = 0; s < np; s++)
		{
			ZEX_CHECK_BOUNDS(zex, r * (nq * np) + q * np + p, n_sum);
			ZEX_CHECK_BOUNDS(zex, r * (nq * np) + q * np + s, n_A);
			ZEX_CHECK_BOUNDS(zex, s * np + p, n_C4);
			sum[r * (nq * np) + q * np + p] = sum[r * (nq * np) + q * np + p] + A[r * (nq * np) + q * np + s] * C4[s * np + p];
		}
	}
}
