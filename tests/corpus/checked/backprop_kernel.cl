/* Checked copy of ../rodinia/backprop_kernel.cl (Rodinia 3.1 OpenCL; licence: ../rodinia/LICENSE):
 * the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed index into a buffer, each
 * buffer's length (in elements) as an extra argument, and the trailing zex_state_t, as a bounds-
 * checking compiler adds them (see gemm.cl). __local arrays are not checked: the buffers are the
 * __global ones, whose lengths the host passes. Some of the original's comments are left out. */
#include <zex/device.h>

#define THREADS 256
#define WIDTH 16
#define HEIGHT 16
#define ETA 0.3f
#define MOMENTUM 0.3f

#define WM(i, j)   weight_matrix[(j) + (i) * WIDTH]

__kernel void
bpnn_layerforward_ocl(__global float *input_cuda,
	                  __global float *output_hidden_cuda,
					  __global float *input_hidden_cuda,
					  __global float *hidden_partial_sum,
					  __local float *input_node,
					  __local float *weight_matrix,
					  int in,
					  int hid,
					  uint n_input, uint n_output_hidden, uint n_input_hidden, uint n_hidden_partial_sum,
					  zex_state_t zex)
{

   int by = get_group_id(1);
   int tx = get_local_id(0);
   int ty = get_local_id(1);

   int index =  ( hid + 1 ) * HEIGHT * by + ( hid + 1 ) * ty + tx + 1 + ( hid + 1 ) ;

   int index_in = HEIGHT * by + ty + 1;

	if ( tx == 0 ) {
		ZEX_CHECK_BOUNDS(zex, index_in, n_input);  // SHRINK:bpnn_layerforward_ocl
		input_node[ty] = input_cuda[index_in] ;
	}
		barrier(CLK_LOCAL_MEM_FENCE);

		ZEX_CHECK_BOUNDS(zex, index, n_input_hidden);
		weight_matrix[ty * WIDTH + tx] =  input_hidden_cuda[index];
		barrier(CLK_LOCAL_MEM_FENCE);

		weight_matrix[ty * WIDTH + tx]= weight_matrix[ty * WIDTH + tx] * input_node[ty];
		barrier(CLK_LOCAL_MEM_FENCE);

		for ( int i = 1 ; i <= HEIGHT ; i=i*2){
      int power_two = i;

	    if( ty % power_two == 0 )
		  weight_matrix[ty * WIDTH + tx]= weight_matrix[ty * WIDTH + tx] + weight_matrix[(ty + power_two/2)* WIDTH + tx];

		barrier(CLK_LOCAL_MEM_FENCE);

    }

    ZEX_CHECK_BOUNDS(zex, index, n_input_hidden);
    input_hidden_cuda[index] =  weight_matrix[ty * WIDTH + tx];

	barrier(CLK_LOCAL_MEM_FENCE);

    if ( tx == 0 ) {
	  ZEX_CHECK_BOUNDS(zex, by * hid + ty, n_hidden_partial_sum);
	  hidden_partial_sum[by * hid + ty] = weight_matrix[tx* WIDTH + ty];
    }

}


__kernel void  bpnn_adjust_weights_ocl( __global float * delta,
										 int hid,
										__global float * ly,
										 int in,
										__global float * w,
										__global float * oldw,
										uint n_delta, uint n_ly, uint n_w, uint n_oldw,
										zex_state_t zex)
{

   int by = get_group_id(1);
   int tx = get_local_id(0);
   int ty = get_local_id(1);

   int index =  ( hid + 1 ) * HEIGHT * by + ( hid + 1 ) * ty + tx + 1 + ( hid + 1 ) ;
   int index_y = HEIGHT * by + ty + 1;
   int index_x = tx + 1;

   ZEX_CHECK_BOUNDS(zex, index, n_w);  // SHRINK:bpnn_adjust_weights_ocl
   ZEX_CHECK_BOUNDS(zex, index_x, n_delta);
   ZEX_CHECK_BOUNDS(zex, index_y, n_ly);
   ZEX_CHECK_BOUNDS(zex, index, n_oldw);
   w[index] += ((ETA * delta[index_x] * ly[index_y]) + (MOMENTUM * oldw[index]));
   oldw[index] = ((ETA * delta[index_x] * ly[index_y]) + (MOMENTUM * oldw[index]));

   barrier(CLK_LOCAL_MEM_FENCE);

   if (ty == 0 && by ==0){
	ZEX_CHECK_BOUNDS(zex, index_x, n_w);
	ZEX_CHECK_BOUNDS(zex, index_x, n_oldw);
	w[index_x] += ((ETA * delta[index_x]) + (MOMENTUM * oldw[index_x]));
	oldw[index_x] = ((ETA * delta[index_x]) + (MOMENTUM * oldw[index_x]));
   }

}
