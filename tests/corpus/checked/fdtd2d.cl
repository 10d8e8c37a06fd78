/* Checked copy of ../polybench/fdtd2d.cl (PolyBench/GPU 1.0, PolyBench-ACC; licence:
 * ../polybench/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed
 * index into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). */
#include <zex/device.h>

#if defined(cl_khr_fp64)  // Khronos extension available?
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#elif defined(cl_amd_fp64)  // AMD extension available?
#pragma OPENCL EXTENSION cl_amd_fp64 : enable
#endif

typedef float DATA_TYPE;



__kernel void fdtd_kernel1(__global DATA_TYPE *_fict_, __global DATA_TYPE *ex, __global DATA_TYPE *ey, __global DATA_TYPE *hz, int t, int nx, int ny,
                           uint n__fict_, uint n_ex, uint n_ey, uint n_hz, zex_state_t zex)
{
	int j = get_global_id(0);
	int i = get_global_id(1);

	if ((i < nx) && (j < ny))
	{
		int tid = i * ny + j;

		if (i == 0)
		{
			ZEX_CHECK_BOUNDS(zex, i * ny + j, n_ey);
			ZEX_CHECK_BOUNDS(zex, t, n__fict_);
			ey[i * ny + j] = _fict_[t];
		}
		else
		{
			ZEX_CHECK_BOUNDS(zex, i * ny + j, n_ey);
			ZEX_CHECK_BOUNDS(zex, i * ny + j, n_hz);  // SHRINK:fdtd_kernel1
			ZEX_CHECK_BOUNDS(zex, (i-1) * ny + j, n_hz);
			ey[i * ny + j] = ey[i * ny + j] - 0.5*(hz[i * ny + j] - hz[(i-1) * ny + j]);
		}
	}
}
