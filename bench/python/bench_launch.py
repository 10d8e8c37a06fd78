"""What a launch costs from Python, and where its time goes (docs/benchmarks.md, "Python").

    ZEX_LIBRARY=build/src/libzex.so.1 ZE_ENABLE_ALT_DRIVERS=$PWD/build/driver/libze_zex_cpu.so \
    POCL_CACHE_DIR=build/pocl-cache PYTHONPATH=python \
    python3 bench/python/bench_launch.py build/tests/kernels/zex_test_kernels.spv [--iterations 2000]

The kernel is maybe_throw(count, do_throw, zex_state_t) of tests/kernels (one buffer, one uint; it
never throws here), one work-group of one work-item, so the device work is negligible and the figures
are the host's. Each figure is per launch, the median and the fastest of --repeats timed loops of
--iterations. "zex.Stream" is the Python package; "C API via ctypes" calls zex_stream_launch and
zex_stream_synchronize directly through the same CDLL, with the config and the argument array built
once, i.e. the floor a Python binding over ctypes can reach; the difference is the package's own work.
"""
import argparse
import cProfile
import ctypes
import io
import pstats
import statistics
import sys
import time

import zex
from zex import _library as L


def timed(fn, iterations, repeats):
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn(iterations)
        out.append((time.perf_counter() - t0) / iterations * 1e6)
    return statistics.median(out), min(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("spirv")
    ap.add_argument("--iterations", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    n, reps = a.iterations, a.repeats

    ctx = zex.Context()
    dev = ctx.device(0)
    mod = zex.Module(dev, a.spirv)
    k = mod.kernel("maybe_throw")
    s = zex.Stream(dev)
    count = ctx.alloc_shared(4)
    zero = ctypes.c_uint32(0)
    s.launch(k, 1, 1, count, zero)  # builds the module and the kernel's code at level 1
    s.synchronize()

    lib = L.lib()
    sh, kh = s._cell.handle, k._cell.handle
    cfg = L.LaunchConfig((1, 1, 1), (1, 1, 1), -1)
    ptr = ctypes.c_void_p(count.ptr)
    args = (L.Arg * 2)((8, ctypes.addressof(ptr)), (4, ctypes.addressof(zero)))
    launch_c, sync_c, cfg_ref = lib.zex_stream_launch, lib.zex_stream_synchronize, ctypes.byref(cfg)

    def py_launch_sync(m):
        for _ in range(m):
            s.launch(k, 1, 1, count, zero)
            s.synchronize()

    def c_launch_sync(m):
        for _ in range(m):
            launch_c(sh, kh, cfg_ref, 2, args)
            sync_c(sh, None)

    def py_launch32(m):  # 32 launches timed, then one synchronize (in the loop, so timed too: see below)
        for _ in range(m // 32):
            for _ in range(32):
                s.launch(k, 1, 1, count, zero)
            s.synchronize()

    def c_launch32(m):
        for _ in range(m // 32):
            for _ in range(32):
                launch_c(sh, kh, cfg_ref, 2, args)
            sync_c(sh, None)

    def py_sync(m):
        for _ in range(m):
            s.synchronize()

    def c_sync(m):
        for _ in range(m):
            sync_c(sh, None)

    rows = []
    rows.append(("launch + synchronize", timed(py_launch_sync, n, reps), timed(c_launch_sync, n, reps)))
    rows.append(("32 launches + 1 synchronize, per launch", timed(py_launch32, n, reps), timed(c_launch32, n, reps)))
    rows.append(("synchronize(), nothing pending", timed(py_sync, n, reps), timed(c_sync, n, reps)))

    # Where a Python launch's time goes.
    real = s._launch
    s._launch = lambda *x: 0  # the package's work alone: checks, config, argument array, bookkeeping

    def py_marshal(m):
        for _ in range(m):
            s.launch(k, 1, 1, count, zero)
    marshal = timed(py_marshal, n, reps)
    s._launch = real
    s._cell.refs.clear()
    k._cell.inflight = count._cell.inflight = 0
    vfn, hfn = lib.zex_c_api_version, lib.zex_stream_handle

    def ctypes0(m):
        for _ in range(m):
            vfn()

    def ctypes1(m):
        for _ in range(m):
            hfn(sh)
    call0, call1 = timed(ctypes0, n, reps), timed(ctypes1, n, reps)

    prof = cProfile.Profile()
    prof.enable()
    py_launch_sync(n)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("tottime").print_stats(8)

    print("zex Python launch: %d iterations x %d repeats, Python %s, kernel maybe_throw (1 buffer, 1 uint)"
          % (n, reps, sys.version.split()[0]))
    print()
    print("| per launch (µs) | zex.Stream median / fastest | C API via ctypes median / fastest | ratio (medians) |")
    print("|---|---:|---:|---:|")
    for name, p, c in rows:
        print("| %s | %.2f / %.2f | %.2f / %.2f | %.2f× |" % (name, p[0], p[1], c[0], c[1], p[0] / c[0]))
    print()
    print("| part of a Python launch | median / fastest (µs) |")
    print("|---|---:|")
    print("| the package's work without the C call (argument checks, zex_launch_config_t, zex_arg_t array, in-flight bookkeeping) | %.2f / %.2f |" % marshal)
    print("| one ctypes call, no argument (zex_c_api_version) | %.2f / %.2f |" % call0)
    print("| one ctypes call, one handle argument (zex_stream_handle) | %.2f / %.2f |" % call1)
    print()
    print("cProfile of %d Python launch + synchronize (profiling inflates every Python call):" % n)
    print("\n".join(buf.getvalue().strip().splitlines()[:20]))

    count.free()
    ctx.close()


if __name__ == "__main__":
    main()
