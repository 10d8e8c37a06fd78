/* Checked copy of ../rodinia/nearestNeighbor_kernel.cl (Rodinia 3.1 OpenCL; licence:
 * ../rodinia/LICENSE): the kernel unchanged but for a ZEX_CHECK_BOUNDS before each computed index
 * into a buffer, each buffer's length (in elements) as an extra argument, and the trailing
 * zex_state_t, as a bounds-checking compiler adds them (see gemm.cl). */
#include <zex/device.h>

typedef struct latLong
    {
        float lat;
        float lng;
    } LatLong;

__kernel void NearestNeighbor(__global LatLong *d_locations,
							  __global float *d_distances,
							  const int numRecords,
							  const float lat,
							  const float lng,
							  uint n_locations, uint n_distances, zex_state_t zex) {
	 int globalId = get_global_id(0);

     if (globalId < numRecords) {
         ZEX_CHECK_BOUNDS(zex, globalId, n_locations);
         __global LatLong *latLong = d_locations+globalId;

         ZEX_CHECK_BOUNDS(zex, globalId, n_distances);  // SHRINK:NearestNeighbor
         __global float *dist=d_distances+globalId;
         *dist = (float)sqrt((lat-latLong->lat)*(lat-latLong->lat)+(lng-latLong->lng)*(lng-latLong->lng));
	 }
}
