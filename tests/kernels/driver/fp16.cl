// Half precision storage and arithmetic, for devices that advertise ZE_DEVICE_MODULE_FLAG_FP16.
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
kernel void hadd(global half* a, global float* out) {
  size_t i = get_global_id(0);
  half h = a[i] + (half)1.0f;
  out[i] = (float)h;
}
