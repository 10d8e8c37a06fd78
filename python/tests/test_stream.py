"""End to end on a device (zex-cpu under CTest): throws at each debug level, recovery, two streams,
argument errors, bad modules, buffers, lifetimes."""
import ctypes
import gc
import pickle
import sys
import threading
import time

import numpy as np
import pytest

import zex

u32 = ctypes.c_uint32
N = 1000
GROUP = 64
GROUPS = (N + GROUP - 1) // GROUP + 1  # one group too many: work-items >= N throw BoundsError


@pytest.fixture
def abc(ctx):
    a, b, c = (ctx.alloc_shared(4 * N) for _ in range(3))
    np.frombuffer(a, np.float32)[:] = np.arange(N, dtype=np.float32)
    np.frombuffer(b, np.float32)[:] = 2 * np.arange(N, dtype=np.float32)
    yield a, b, c
    for x in (a, b, c):
        x.free()


def launch_vadd(stream, vadd, abc, groups=GROUPS, **kw):
    a, b, c = abc
    stream.launch(vadd, groups, GROUP, c, a, b, u32(N), **kw)


def test_level_0(stream, vadd, abc):
    launch_vadd(stream, vadd, abc, debug_level=0)
    with pytest.raises(zex.KernelException) as ei:
        stream.synchronize()
    e = ei.value
    assert e.debug_level == 0 and e.kernel_name == "vadd"
    # zex numbered vadd's check (issue 15): the site, its name and frame, at every level.
    assert e.name == "BoundsError" and e.reason == "Out-of-bounds array access"
    assert e.global_id is None and [f[0] for f in e.frames] == ["vadd"] and e.values == ()
    assert str(e).startswith("KernelException: A BoundsError was thrown in kernel 'vadd'")
    assert "the debug_level= keyword of stream.launch(...)" in str(e)


def test_level_1(stream, vadd, abc):
    launch_vadd(stream, vadd, abc, debug_level=1)
    with pytest.raises(zex.KernelException) as ei:
        stream.synchronize()
    e = ei.value
    assert (e.name, e.reason, e.debug_level) == ("BoundsError", "Out-of-bounds array access", 1)
    assert e.global_id is None
    assert "debug_level=2 (the debug_level= keyword of stream.launch(...)" in str(e)
    assert "LaunchConfig" not in str(e)


def test_level_2(stream, vadd, abc, kernel_lines):
    launch_vadd(stream, vadd, abc, debug_level=2)
    with pytest.raises(zex.KernelException) as ei:
        stream.synchronize()
    e = ei.value
    assert e.debug_level == 2 and e.name == "BoundsError"
    assert N <= e.global_id[0] < GROUPS * GROUP and e.global_id[1:] == (0, 0)
    assert e.group_id[0] == e.global_id[0] // GROUP
    assert e.local_id[0] == e.global_id[0] % GROUP
    assert e.frames, str(e)
    function, file, line = e.frames[0]
    assert function == "vadd" and file.endswith("zex_test_kernels.cl") and line == kernel_lines["vadd"]
    assert "Stacktrace:" in str(e) and "Hint" not in str(e)


def test_default_level_is_1(stream, vadd, abc):
    launch_vadd(stream, vadd, abc)
    with pytest.raises(zex.KernelException) as ei:
        stream.synchronize()
    assert ei.value.debug_level == 1


def test_recovery_over_three_rounds(stream, vadd, abc):
    a, b, c = abc
    out = np.frombuffer(c, np.float32)
    for level in (0, 1, 2):
        out[:] = -1
        launch_vadd(stream, vadd, abc, debug_level=level)
        with pytest.raises(zex.KernelException) as ei:
            stream.synchronize()
        assert ei.value.debug_level == level
        out[:] = -1
        stream.launch(vadd, (N + 7) // 8, 8, c, a, b, u32(N), debug_level=level)
        stream.synchronize()  # the same stream, clean
        assert np.array_equal(out, 3 * np.arange(N, dtype=np.float32))


def test_two_streams(dev, mod, ctx):
    k1, k2 = mod.kernel("maybe_throw"), mod.kernel("maybe_throw")
    count = ctx.alloc_shared(4)
    cnt = np.frombuffer(count, np.uint32)
    cnt[0] = 0
    with zex.Stream(dev) as s1, zex.Stream(dev) as s2:
        s1.launch(k1, 1, 32, count, u32(1))
        s2.launch(k2, 1, 32, count, u32(0))
        s2.synchronize()
        with pytest.raises(zex.KernelException) as ei:
            s1.synchronize()
        assert ei.value.name == "StreamError" and ei.value.reason == "asked to throw"
        s1.launch(k1, 1, 32, count, u32(0))
        s1.synchronize()
    assert cnt[0] == 32 + 31 + 32  # the work-item that threw returned without counting
    count.free()


def test_streams_in_threads(dev, mod, ctx):
    errors = []

    def run(do_throw):
        try:
            k = mod.kernel("maybe_throw")
            with ctx.alloc_shared(4) as count, zex.Stream(dev) as s:
                for _ in range(3):
                    s.launch(k, 1, 16, count, u32(do_throw))
                    try:
                        s.synchronize()
                        assert not do_throw
                    except zex.KernelException as e:
                        assert do_throw and e.name == "StreamError"
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=run, args=(i % 2,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert errors == []


def test_wrong_argument_count(stream, vadd, abc):
    a, b, c = abc
    with pytest.raises(zex.InvalidArgument) as ei:
        stream.launch(vadd, 1, 8, c, a, b)
    msg = str(ei.value)
    assert "vadd" in msg and "4" in msg and "3" in msg
    launch_vadd(stream, vadd, abc, groups=1)  # the stream is unchanged and usable
    stream.synchronize()


def test_python_int_argument_says_what_to_pass(stream, vadd, abc):
    a, b, c = abc
    with pytest.raises(zex.InvalidArgument, match=r"argument 3 of kernel 'vadd' is a Python int.*ctypes.c_uint32"):
        stream.launch(vadd, 1, 8, c, a, b, N)
    with pytest.raises(zex.InvalidArgument, match=r"argument 0 .* is a str"):
        stream.launch(vadd, 1, 8, "c", a, b, u32(N))


def test_bad_extents(stream, vadd, abc):
    a, b, c = abc
    for groups in (-1, (1, 2, 3, 4), 2 ** 32, "x"):
        with pytest.raises(zex.InvalidArgument):
            stream.launch(vadd, groups, 8, c, a, b, u32(N))
    with pytest.raises(zex.InvalidArgument):
        stream.launch(vadd, 0, 8, c, a, b, u32(N))  # zex rejects a zero extent
    with pytest.raises(zex.InvalidArgument):
        stream.launch(vadd, 1, 8, c, a, b, u32(N), debug_level=7)
    stream.synchronize()


def test_bad_module(dev):
    with pytest.raises(zex.InvalidArgument) as ei:
        zex.Module(dev, b"\x03\x02\x23\x07" + b"\0" * 64)
    assert str(ei.value)
    with pytest.raises(zex.InvalidArgument):
        zex.Module(dev, b"not SPIR-V at all")
    with pytest.raises(zex.InvalidArgument):
        zex.Module(dev, 12345)


def test_unknown_kernel_lists_the_kernels(mod):
    with pytest.raises(zex.InvalidArgument) as ei:
        mod.kernel("no_such_kernel")
    assert "no_such_kernel" in str(ei.value) and "vadd" in str(ei.value)


def test_module_from_bytes_and_path(dev, kernel_spv):
    data = open(kernel_spv, "rb").read()
    for spirv in (data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint32)):
        m = zex.Module(dev, spirv)
        assert m.kernel("noop").name == "noop"
        m.close()


def test_numpy_frombuffer_on_alloc_shared(ctx, stream, vadd):
    with ctx.alloc_shared(4 * N) as a, ctx.alloc_shared(4 * N) as b, ctx.alloc_shared(4 * N) as c:
        assert isinstance(a, zex.SharedBuffer) and a.nbytes == 4 * N and a.ptr
        x = np.frombuffer(a, dtype=np.float32)
        assert x.shape == (N,) and x.flags.writeable
        assert x.ctypes.data == a.ptr
        x[:] = np.linspace(0, 1, N, dtype=np.float32)
        np.frombuffer(b, np.float32)[:] = 1
        stream.launch(vadd, (N + 7) // 8, 8, c, a, b, u32(N))
        stream.synchronize()
        assert np.allclose(np.frombuffer(c, np.float32), x + 1)
        m = memoryview(a).cast("B")
        assert m.nbytes == 4 * N and not m.readonly
        m[0:4] = np.float32(42).tobytes()
        assert x[0] == 42
        del x, m


def test_shared_buffer_casts_to_any_format(ctx, stream, vadd):
    """memoryview(buf) is a native byte buffer ("B"), so it casts to floats, ints, ... on every Python (a
    c_ubyte array's "<B" refused any cast before Python 3.12); indexing still gives the bytes as ints."""
    with ctx.alloc_shared(4 * N) as a, ctx.alloc_shared(4 * N) as b, ctx.alloc_shared(4 * N) as c:
        m = memoryview(a)
        assert (m.format, m.itemsize, m.nbytes, m.readonly) == ("B", 1, 4 * N, False)
        f = memoryview(a).cast("f")
        assert (f.format, len(f)) == ("f", N)
        f[:] = memoryview(np.arange(N, dtype=np.float32).tobytes()).cast("f")
        memoryview(b).cast("f")[:] = memoryview(np.ones(N, dtype=np.float32).tobytes()).cast("f")
        stream.launch(vadd, (N + 7) // 8, 8, c, a, b, u32(N))
        stream.synchronize()
        out = memoryview(c).cast("f")
        assert out[0] == 1.0 and out[N - 1] == N and out.tolist() == [i + 1.0 for i in range(N)]
        for fmt, itemsize in (("I", 4), ("i", 4), ("d", 8), ("Q", 8), ("H", 2), ("b", 1), ("c", 1)):
            v = memoryview(a).cast(fmt)
            assert (v.itemsize, len(v)) == (itemsize, 4 * N // itemsize)
        memoryview(a).cast("I")[0] = 0x01020304
        assert (a[0], a[3], a[0:2]) == (4, 1, [4, 3])  # ints, little-endian bytes
        a[1] = 0xff
        assert memoryview(a).cast("I")[0] == 0x0102ff04 and bytes(a)[:4] == b"\x04\xff\x02\x01"
        assert np.frombuffer(a, np.uint32)[0] == 0x0102ff04
        del m, f, out, v


def test_local_argument(ctx, mod, stream):
    k = mod.kernel("group_sum")
    with ctx.alloc_shared(4 * 64) as inp, ctx.alloc_shared(4 * 4) as out:
        np.frombuffer(inp, np.float32)[:] = np.arange(64, dtype=np.float32)
        stream.launch(k, 4, 16, inp, out, zex.local(16 * 4))
        stream.synchronize()
        expect = np.arange(64, dtype=np.float32).reshape(4, 16).sum(axis=1)
        assert np.array_equal(np.frombuffer(out, np.float32), expect)
    with pytest.raises(zex.InvalidArgument):
        zex.local(0)


def test_scalars_round_trip(ctx, mod, stream):
    k = mod.kernel("scalars")
    with ctx.alloc_shared(4) as f, ctx.alloc_shared(24) as u:
        stream.launch(k, 1, 1, f, u, ctypes.c_float(1.5), u32(7), ctypes.c_uint64(2 ** 40), ctypes.c_uint8(200))
        stream.synchronize()
        assert np.frombuffer(f, np.float32)[0] == 1.5
        assert list(np.frombuffer(u, np.uint64)) == [7, 2 ** 40, 200]
        stream.launch(k, 1, 1, f, u, np.float32(2.5), np.uint32(8), np.uint64(9), np.uint8(10))  # numpy scalars
        stream.synchronize()
        assert np.frombuffer(f, np.float32)[0] == 2.5
        assert list(np.frombuffer(u, np.uint64)) == [8, 9, 10]


def test_throw_at_2d(ctx, mod, stream):
    k = mod.kernel("throw_at")
    with ctx.alloc_shared(4 * 16 * 8) as out:
        stream.launch(k, (2, 2), (8, 4), out, u32(11), u32(6), debug_level=2)
        with pytest.raises(zex.KernelException) as ei:
            stream.synchronize()
        e = ei.value
        assert e.global_id == (11, 6, 0) and e.group_id == (1, 1, 0) and e.local_id == (3, 2, 0)
        assert (e.name, e.reason) == ("DomainError", "sqrt of a negative number")


def test_kernel_exception_pickles(stream, vadd, abc):
    launch_vadd(stream, vadd, abc, debug_level=2)
    with pytest.raises(zex.KernelException) as ei:
        stream.synchronize()
    e2 = pickle.loads(pickle.dumps(ei.value))
    assert str(e2) == str(ei.value) and e2.frames == ei.value.frames and e2.global_id == ei.value.global_id


def test_synchronize_for(ctx, mod, stream):
    k = mod.kernel("wait_for_flag")
    with ctx.alloc_shared(4) as flag:
        f = np.frombuffer(flag, np.uint32)
        f[0] = 0
        stream.launch(k, 1, 1, flag)
        assert stream.synchronize_for(0.01) is False
        f[0] = 1
        deadline = time.time() + 60
        while not stream.synchronize_for(0.1):
            assert time.time() < deadline
        del f


def test_free_guards(ctx, mod, stream):
    k = mod.kernel("wait_for_flag")
    flag = ctx.alloc_shared(4)
    np.frombuffer(flag, np.uint32)[0] = 0
    stream.launch(k, 1, 1, flag)
    with pytest.raises(zex.InvalidState, match="not been synchronized"):
        flag.free()  # a launch still uses it
    with pytest.raises(zex.InvalidState):
        k.close()
    memoryview(flag).cast("B")[0] = 1
    stream.synchronize()
    if sys.version_info >= (3, 12):
        m = memoryview(flag)
        with pytest.raises(BufferError):
            flag.free()
        m.release()
    flag.free()
    flag.free()  # idempotent
    assert flag.freed
    with pytest.raises(zex.InvalidState):
        flag.ptr
    with pytest.raises(zex.InvalidState, match="freed"):
        stream.launch(k, 1, 1, flag)
    k.close()
    with pytest.raises(zex.InvalidState, match="closed"):
        stream.launch(k, 1, 1, ctypes.c_void_p(0))


def test_objects_keep_their_parents_alive(kernel_spv):
    # Only the kernel and the stream are kept: Python's order of collection must not matter.
    def make():
        ctx = zex.Context()
        dev = ctx.device(0)
        k = zex.Module(dev, kernel_spv).kernel("noop")
        return k, zex.Stream(dev)

    k, s = make()
    gc.collect()
    s.launch(k, 1, 1)
    s.synchronize()
    del k
    gc.collect()
    del s
    gc.collect()


def test_reference_cycles_collect_in_any_order(kernel_spv):
    for _ in range(3):
        ctx = zex.Context()
        dev = ctx.device(0)
        m = zex.Module(dev, kernel_spv)
        k = m.kernel("noop")
        s = zex.Stream(dev)
        buf = ctx.alloc_shared(64)
        s.launch(k, 1, 1)
        ctx.cycle = [s, k, m, buf, ctx]  # a cycle through every object
        s.keep = ctx
        del ctx, dev, m, k, s, buf
        gc.collect()


def test_context_close_closes_what_it_owns(kernel_spv):
    with zex.Context() as ctx:
        dev = ctx.device(0)
        m = zex.Module(dev, kernel_spv)
        k = m.kernel("noop")
        s = zex.Stream(dev)
        buf = ctx.alloc_shared(64)
        s.launch(k, 1, 1)  # closed while in flight: the stream is destroyed first (it waits)
    assert ctx.closed and s.closed and k.closed and m.closed and buf.freed
    for f in (lambda: ctx.device(0), lambda: s.synchronize(), lambda: s.launch(k, 1, 1), lambda: m.kernel("noop"),
              lambda: zex.Stream(dev), lambda: ctx.alloc_shared(8)):
        with pytest.raises(zex.InvalidState):
            f()
    ctx.close()  # idempotent


def test_module_close_closes_its_kernels(dev, kernel_spv):
    with zex.Module(dev, kernel_spv) as m:
        k = m.kernel("noop")
    assert k.closed


def test_interop_handles(ctx, dev, stream, vadd):
    assert ctx.handle and ctx.driver_handle and dev.handle and stream.handle
    assert ctx.device_count >= 1 and ctx.devices()[0] is dev
    assert vadd.handle


def test_alloc_shared_arguments(ctx, dev):
    with pytest.raises(zex.InvalidArgument):
        ctx.alloc_shared(0)
    with ctx.alloc_shared(100, alignment=256, device=dev) as b:
        assert b.ptr % 256 == 0 and len(b) == 100


def test_wrong_scalar_size_is_a_ze_error(stream, vadd, abc):
    # The C API passes arguments by size; the driver refuses a ulong for a uint.
    a, b, c = abc
    with pytest.raises(zex.ZeError) as ei:
        stream.launch(vadd, 1, 8, c, a, b, ctypes.c_uint64(N))
    e = ei.value
    assert e.result == zex.ZeResult.ERROR_INVALID_KERNEL_ARGUMENT_SIZE, (e.result, str(e))
    assert e.call == "zeKernelSetArgumentValue" and str(e)
    launch_vadd(stream, vadd, abc, groups=1)
    stream.synchronize()


EXIT_CODE = r"""
import ctypes, sys, zex
ctx = zex.Context()
dev = ctx.device(0)
mod = zex.Module(dev, sys.argv[1])
k = mod.kernel("maybe_throw")
s = zex.Stream(dev)
buf = ctx.alloc_shared(4)
s.launch(k, 1, 4, buf, ctypes.c_uint32(1))  # throws; nobody synchronizes
k2 = zex.Module(dev, sys.argv[1]).kernel("noop")
cycle = [ctx, s, k, buf]
cycle.append(cycle)
print("exiting")
"""


def test_exit_without_closing(kernel_spv):
    # Everything left open at interpreter exit, a launch in flight, a reference cycle: no crash.
    import subprocess
    r = subprocess.run([sys.executable, "-c", EXIT_CODE, kernel_spv], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    assert r.stdout.strip() == "exiting" and "Exception ignored" not in r.stderr, r.stderr


def test_stream_from_two_threads_at_once(ctx, mod, stream):
    # Thread A blocks in synchronize() (the GIL is released in the C call); a call from this thread
    # meanwhile raises InvalidState and changes nothing. Then the flag lets A finish.
    k = mod.kernel("wait_for_flag")
    with ctx.alloc_shared(4) as flag:
        f = np.frombuffer(flag, np.uint32)
        f[0] = 0
        stream.launch(k, 1, 1, flag)
        done = []
        t = threading.Thread(target=lambda: done.append(stream.synchronize()))
        t.start()
        seen = None
        deadline = time.time() + 30
        while seen is None and time.time() < deadline:
            try:
                stream.synchronize_for(0)  # before A is inside: nothing finished, returns False
                time.sleep(0.01)
            except zex.InvalidState as e:
                seen = e
        f[0] = 1
        t.join(60)
        assert done == [None]
        assert seen is not None and "thread" in str(seen), seen
        del f
