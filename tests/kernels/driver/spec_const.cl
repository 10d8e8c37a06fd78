// SPIR-V specialization constants: llvm-spirv-15 turns this call into OpSpecConstant with the SpecId.
int __spirv_SpecConstant(int id, int def);

kernel void spec(global int* out) {
  out[0] = __spirv_SpecConstant(7, 11);
  out[1] = __spirv_SpecConstant(9, -3);
}
