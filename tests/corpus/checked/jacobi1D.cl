/* Checked copy of ../polybench/jacobi1D.cl (PolyBench/GPU 1.0, PolyBench-ACC; licence:
 * ../polybench/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed
 * index into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). */
#include <zex/device.h>

typedef float DATA_TYPE;


__kernel void runJacobi1D_kernel1(__global DATA_TYPE* A, __global DATA_TYPE* B, int n,
                                  uint n_A, uint n_B, zex_state_t zex)
{
	int i = get_global_id(0);
	if ((i >= 1) && (i < (n-1)))
	{
		ZEX_CHECK_BOUNDS(zex, i, n_B);
		ZEX_CHECK_BOUNDS(zex, i-1, n_A);
		ZEX_CHECK_BOUNDS(zex, i, n_A);
		ZEX_CHECK_BOUNDS(zex, i + 1, n_A);  // SHRINK:runJacobi1D_kernel1
		B[i] = 0.33333f * (A[i-1] + A[i] + A[i + 1]);
	}
}
