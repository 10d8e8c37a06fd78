import ctypes, sys
import numpy as np
import zex

spirv = sys.argv[1] if len(sys.argv) > 1 else "build/examples/vadd.spv"  # built from examples/kernels/vadd.cl
n = 1000
with zex.Context() as ctx:
    dev = ctx.device(0)
    vadd = zex.Module(dev, spirv).kernel("vadd")
    stream = zex.Stream(dev)
    a, b, c = (ctx.alloc_shared(4 * n) for _ in range(3))  # shared USM; numpy views it
    np.frombuffer(a, np.float32)[:] = np.arange(n)
    np.frombuffer(b, np.float32)[:] = 1
    stream.launch(vadd, n // 64 + 1, 64, c, a, b, ctypes.c_uint32(n), debug_level=2)  # 24 work-items too many
    try:
        stream.synchronize()
    except zex.KernelException as e:
        print(e)  # KernelException: A BoundsError was thrown in kernel 'vadd' ..., the work-item, a stacktrace
        print(e.name, e.global_id, e.frames[0])
    stream.launch(vadd, n // 8, 8, c, a, b, ctypes.c_uint32(n))  # the same stream still works
    stream.synchronize()
    assert (np.frombuffer(c, np.float32) == np.arange(n) + 1).all()
    print("ok")
