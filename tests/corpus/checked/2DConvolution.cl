/* Checked copy of ../polybench/2DConvolution.cl (PolyBench/GPU 1.0, PolyBench-ACC; licence:
 * ../polybench/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed
 * index into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). */
#include <zex/device.h>

typedef float DATA_TYPE;

__kernel void Convolution2D_kernel(__global DATA_TYPE *A, __global DATA_TYPE *B, int ni, int nj,
                                   uint n_A, uint n_B, zex_state_t zex)
{
	int j = get_global_id(0);
	int i = get_global_id(1);

	DATA_TYPE c11, c12, c13, c21, c22, c23, c31, c32, c33;
	c11 = +0.2;  c21 = +0.5;  c31 = -0.8;
	c12 = -0.3;  c22 = +0.6;  c32 = -0.9;
	c13 = +0.4;  c23 = +0.7;  c33 = +0.10;
	if ((i < (ni-1)) && (j < (nj - 1)) && (i > 0) && (j > 0))
	{
		ZEX_CHECK_BOUNDS(zex, i*nj + j, n_B);
		ZEX_CHECK_BOUNDS(zex, (i - 1) * nj + (j - 1), n_A);
		ZEX_CHECK_BOUNDS(zex, (i - 1) * nj + (j + 0), n_A);
		ZEX_CHECK_BOUNDS(zex, (i - 1) * nj + (j + 1), n_A);
		ZEX_CHECK_BOUNDS(zex, (i + 0) * nj + (j - 1), n_A);
		ZEX_CHECK_BOUNDS(zex, (i + 0) * nj + (j + 0), n_A);
		ZEX_CHECK_BOUNDS(zex, (i + 0) * nj + (j + 1), n_A);
		ZEX_CHECK_BOUNDS(zex, (i + 1) * nj + (j - 1), n_A);
		ZEX_CHECK_BOUNDS(zex, (i + 1) * nj + (j + 0), n_A);
		ZEX_CHECK_BOUNDS(zex, (i + 1) * nj + (j + 1), n_A);  // SHRINK:Convolution2D_kernel
		B[i*nj + j] =  c11 * A[(i - 1) * nj + (j - 1)]  + c21 * A[(i - 1) * nj + (j + 0)] + c31 * A[(i - 1) * nj + (j + 1)]
		      + c12 * A[(i + 0) * nj + (j - 1)]  + c22 * A[(i + 0) * nj + (j + 0)] + c32 * A[(i + 0) * nj + (j + 1)]
		      + c13 * A[(i + 1) * nj + (j - 1)]  + c23 * A[(i + 1) * nj + (j + 0)] + c33 * A[(i + 1) * nj + (j + 1)];
	}
}
