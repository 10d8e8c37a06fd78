; Kernels with several `ret`s, as SPIR-V producers other than clang (and zex's throw paths) write them.
target datalayout = "e-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024"
target triple = "spir64-unknown-unknown"

@mixed_rets.tile = internal addrspace(3) global [256 x i32] undef, align 4

declare spir_func i64 @_Z13get_global_idj(i32)
declare spir_func i64 @_Z12get_local_idj(i32)
declare spir_func i64 @_Z14get_local_sizej(i32)
declare spir_func void @_Z7barrierj(i32)

; mixed_after_last of early_return.cl (early_return_test.cpp) with a return of its own at each exit.
define spir_kernel void @mixed_rets(i32 addrspace(1)* %out, i32 addrspace(1)* %out2, i32 addrspace(1)* %in) {
entry:
  %g = call spir_func i64 @_Z13get_global_idj(i32 0)
  %t = call spir_func i64 @_Z12get_local_idj(i32 0)
  %size = call spir_func i64 @_Z14get_local_sizej(i32 0)
  %pin = getelementptr inbounds i32, i32 addrspace(1)* %in, i64 %g
  %x = load i32, i32 addrspace(1)* %pin, align 4
  %pt = getelementptr inbounds [256 x i32], [256 x i32] addrspace(3)* @mixed_rets.tile, i64 0, i64 %t
  store i32 %x, i32 addrspace(3)* %pt, align 4
  call spir_func void @_Z7barrierj(i32 1)
  %s1 = sub i64 %size, 1
  %m = sub i64 %s1, %t
  %pm = getelementptr inbounds [256 x i32], [256 x i32] addrspace(3)* @mixed_rets.tile, i64 0, i64 %m
  %v = load i32, i32 addrspace(3)* %pm, align 4
  %odd = and i64 %t, 1
  %isodd = icmp ne i64 %odd, 0
  br i1 %isodd, label %r1, label %store1
r1:
  ret void
store1:
  %v3 = mul i32 %v, 3
  %po = getelementptr inbounds i32, i32 addrspace(1)* %out, i64 %g
  store i32 %v3, i32 addrspace(1)* %po, align 4
  %b2 = and i64 %t, 2
  %has2 = icmp ne i64 %b2, 0
  br i1 %has2, label %r2, label %store2
r2:
  ret void
store2:
  %v5 = sub i32 %v, 5
  %po2 = getelementptr inbounds i32, i32 addrspace(1)* %out2, i64 %g
  store i32 %v5, i32 addrspace(1)* %po2, align 4
  ret void
}
