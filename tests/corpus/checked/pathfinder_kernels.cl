/* Checked copy of ../rodinia/pathfinder_kernels.cl (Rodinia 3.1 OpenCL; licence:
 * ../rodinia/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed index
 * into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). __local arrays are not
 * checked: the buffers are the __global ones, whose lengths the host passes. */
#include <zex/device.h>

#define IN_RANGE(x, min, max) ((x)>=(min) && (x)<=(max))
#define CLAMP_RANGE(x, min, max) x = (x<(min)) ? min : ((x>(max)) ? max : x )
#define MIN(a, b) ((a)<=(b) ? (a) : (b))

__kernel void dynproc_kernel (int iteration,
                              __global int* gpuWall,
                              __global int* gpuSrc,
                              __global int* gpuResults,
                              int cols,
                              int rows,
                              int startStep,
                              int border,
                              int HALO,
                              __local int* prev,
                              __local int* result,
                              __global int* outputBuffer,
                              uint n_gpuWall, uint n_gpuSrc, uint n_gpuResults, uint n_outputBuffer,
                              zex_state_t zex)
{
	int BLOCK_SIZE = get_local_size(0);
	int bx = get_group_id(0);
	int tx = get_local_id(0);

	int small_block_cols = BLOCK_SIZE - (iteration*HALO*2);

	int blkX = (small_block_cols*bx) - border;
	int blkXmax = blkX+BLOCK_SIZE-1;

	int xidx = blkX+tx;

	int validXmin = (blkX < 0) ? -blkX : 0;
	int validXmax = (blkXmax > cols-1) ? BLOCK_SIZE-1-(blkXmax-cols+1) : BLOCK_SIZE-1;

	int W = tx-1;
	int E = tx+1;

	W = (W < validXmin) ? validXmin : W;
	E = (E > validXmax) ? validXmax : E;

	bool isValid = IN_RANGE(tx, validXmin, validXmax);

	if(IN_RANGE(xidx, 0, cols-1))
	{
		ZEX_CHECK_BOUNDS(zex, xidx, n_gpuSrc);  // SHRINK:dynproc_kernel
		prev[tx] = gpuSrc[xidx];
	}

	barrier(CLK_LOCAL_MEM_FENCE);

	bool computed;
	for (int i = 0; i < iteration; i++)
	{
		computed = false;

		if( IN_RANGE(tx, i+1, BLOCK_SIZE-i-2) && isValid )
		{
			computed = true;
			int left = prev[W];
			int up = prev[tx];
			int right = prev[E];
			int shortest = MIN(left, up);
			shortest = MIN(shortest, right);

			int index = cols*(startStep+i)+xidx;
			ZEX_CHECK_BOUNDS(zex, index, n_gpuWall);
			result[tx] = shortest + gpuWall[index];

			if (tx==11 && i==0)
			{
				ZEX_CHECK_BOUNDS(zex, xidx, n_gpuSrc);
				int bufIndex = gpuSrc[xidx];
				ZEX_CHECK_BOUNDS(zex, bufIndex, n_outputBuffer);
				outputBuffer[bufIndex] = 1;
			}
		}

		barrier(CLK_LOCAL_MEM_FENCE);

		if(i==iteration-1)
		{
			break;
		}

		if(computed)
		{
			prev[tx] = result[tx];
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}

	if (computed)
	{
		ZEX_CHECK_BOUNDS(zex, xidx, n_gpuResults);
		gpuResults[xidx] = result[tx];
	}
}
