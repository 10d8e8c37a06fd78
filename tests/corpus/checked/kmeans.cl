/* Checked copy of ../rodinia/kmeans.cl (Rodinia 3.1 OpenCL; licence: ../rodinia/LICENSE): the
 * kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed index into a buffer, each
 * buffer's length (in elements) as an extra argument, and the trailing zex_state_t, as a bounds-
 * checking compiler adds them (see gemm.cl). Some of the original's comments are left out. */
#include <zex/device.h>

#ifndef FLT_MAX
#define FLT_MAX 3.40282347e+38
#endif

__kernel void
kmeans_kernel_c(__global float  *feature,
			  __global float  *clusters,
			  __global int    *membership,
			    int     npoints,
				int     nclusters,
				int     nfeatures,
				int		offset,
				int		size,
			  uint n_feature, uint n_clusters, uint n_membership, zex_state_t zex
			  )
{
	unsigned int point_id = get_global_id(0);
    int index = 0;
		if (point_id < npoints)
		{
			float min_dist=FLT_MAX;
			for (int i=0; i < nclusters; i++) {

				float dist = 0;
				float ans  = 0;
				for (int l=0; l<nfeatures; l++){
						ZEX_CHECK_BOUNDS(zex, l * npoints + point_id, n_feature);
						ZEX_CHECK_BOUNDS(zex, i*nfeatures+l, n_clusters);
						ans += (feature[l * npoints + point_id]-clusters[i*nfeatures+l])*
							   (feature[l * npoints + point_id]-clusters[i*nfeatures+l]);
				}

				dist = ans;
				if (dist < min_dist) {
					min_dist = dist;
					index    = i;

				}
			}
		  ZEX_CHECK_BOUNDS(zex, point_id, n_membership);  // SHRINK:kmeans_kernel_c
		  membership[point_id] = index;
		}

	return;
}
