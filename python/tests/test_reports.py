"""Issue 8 from Python, end to end on a device (zex-cpu under CTest): operand values, the thrower
count, the launch site of the Python caller, and events (Stream.record, Event.synchronize/ready,
Stream.wait). The launch is the C++ tests' (tests/runtime/stream_test.cpp): vadd over n = 1000 elements on 4
groups of 256 work-items, so work-items 1000..1023 throw."""
import ctypes
import inspect
import pickle

import numpy as np
import pytest

import zex

N = 1000
TOTAL = 1024


@pytest.fixture
def abc(ctx):
    a, b, c = (ctx.alloc_shared(4 * TOTAL) for _ in range(3))
    np.frombuffer(a, np.float32)[:] = np.arange(TOTAL, dtype=np.float32)
    np.frombuffer(b, np.float32)[:] = 1
    yield a, b, c
    for x in (a, b, c):
        x.free()


def vadd_args(abc, n=N):
    a, b, c = abc
    return (c, a, b, ctypes.c_uint32(n))


def test_values_count_and_launch_site(stream, vadd, abc):
    line = inspect.currentframe().f_lineno + 1
    stream.launch(vadd, 4, 256, *vadd_args(abc), debug_level=1)
    with pytest.raises(zex.KernelException) as ei:
        stream.synchronize()
    e = ei.value
    assert isinstance(e.values, tuple) and len(e.values) == 2
    assert all(type(v) is int for v in e.values)
    assert N <= e.values[0] < TOTAL and e.values[1] == N
    assert e.thrower_count == 24
    assert isinstance(e.launch_site, zex.LaunchSite)
    assert e.launch_site.file == __file__ and e.launch_site.line == line
    assert e.launch_site == (__file__, line)
    # str(e) is the C library's message in Python terms: it names the values and the site.
    assert str(e).startswith("KernelException: A BoundsError was thrown in kernel 'vadd'")
    assert "index %d" % e.values[0] in str(e)
    assert "(launched at test_reports.py:%d)" % line in str(e)
    assert "the debug_level= keyword of stream.launch(...)" in str(e)
    # Issue 15: zex numbered the kernel's throw site, so its frame comes at level 1 from the table.
    assert [f[0] for f in e.frames] == ["vadd"] and e.frame_depth == 1
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.values, e2.thrower_count, e2.launch_site, e2.frame_depth) == (
        e.values, e.thrower_count, e.launch_site, e.frame_depth)


def test_level_0_records_only_the_site_on_the_device(stream, vadd, abc):
    line = inspect.currentframe().f_lineno + 1
    stream.launch(vadd, 4, 256, *vadd_args(abc), debug_level=0)
    with pytest.raises(zex.KernelException) as ei:
        stream.synchronize()
    e = ei.value
    assert e.values == () and e.thrower_count == 1
    assert e.launch_site is not None and e.launch_site.line == line  # the host still knows the site
    # The numbered site is stored at every level: level 0 names it too (issue 15).
    assert e.name == "BoundsError" and e.debug_level == 0


def launch_from_helper(stream, vadd, abc):
    stream.launch(vadd, 4, 256, *vadd_args(abc), debug_level=1)  # the site reported: this line
    return inspect.currentframe().f_lineno - 1


def test_launch_site_is_the_direct_caller(stream, vadd, abc):
    line = launch_from_helper(stream, vadd, abc)
    with pytest.raises(zex.KernelException) as ei:
        stream.synchronize()
    assert ei.value.launch_site.line == line and ei.value.launch_site.file == __file__


def test_event_raises_once(stream, vadd, abc):
    stream.launch(vadd, 4, 256, *vadd_args(abc), debug_level=1)
    with stream.record() as ev:
        assert isinstance(ev, zex.Event) and ev.handle
        with pytest.raises(zex.KernelException) as ei:
            ev.synchronize()
        assert ei.value.thrower_count == 24 and ei.value.values[1] == N
        assert ev.ready() is True
        ev.synchronize()  # raised already
        stream.synchronize()  # and not again by the stream
    assert ev.closed
    with pytest.raises(zex.InvalidState):
        ev.synchronize()
    # The stream stays usable.
    stream.launch(vadd, 4, 256, *vadd_args(abc, TOTAL))
    ev = stream.record()
    ev.synchronize()
    assert ev.ready()
    ev.close()
    stream.synchronize()


def test_stream_waits_for_another_streams_event(dev, stream, vadd, abc):
    with zex.Stream(dev) as other:
        stream.launch(vadd, 4, 256, *vadd_args(abc), debug_level=1)
        ev = stream.record()
        other.wait(ev)
        other.launch(vadd, 4, 256, *vadd_args(abc, TOTAL))
        other.synchronize()  # ordering only: the throw stays with `stream`
        assert ev.ready()
        with pytest.raises(zex.KernelException) as ei:
            stream.synchronize()
        assert ei.value.thrower_count == 24
        ev.synchronize()  # raised already
        with pytest.raises(zex.InvalidArgument):
            other.wait("not an event")


def test_event_outlives_its_stream(dev, vadd, abc):
    s = zex.Stream(dev)
    s.launch(vadd, 4, 256, *vadd_args(abc), debug_level=1)
    ev = s.record()
    s.close()
    ev.synchronize()  # the stream is gone: it only waits
    ev.close()


def test_event_is_made_by_record():
    with pytest.raises(TypeError):
        zex.Event()


def test_closing_the_context_closes_events(kernel_spv):
    ctx = zex.Context()
    dev = ctx.device(0)
    s = zex.Stream(dev)
    ev = s.record()
    ctx.close()
    assert ev.closed and s.closed


def test_device_name_launch_id_and_abi_version(stream, vadd, abc):
    """Issue 25: the fields the hand-written projection lacked, from zex_exception_info_t."""
    stream.launch(vadd, 4, 256, *vadd_args(abc, TOTAL))  # launch 1: nothing thrown
    stream.launch(vadd, 4, 256, *vadd_args(abc), debug_level=2)  # launch 2 throws
    with pytest.raises(zex.KernelException) as ei:
        stream.synchronize()
    e = ei.value
    assert isinstance(e.device_name, str) and e.device_name
    assert (" on %s" % e.device_name) in str(e)  # the message names the same device
    assert e.launch_id == 2
    assert e.abi_version == 3  # ZEX_ABI_VERSION of include/zex/abi.h (test_header.py checks the number)
    assert e.value_kind == 1  # ZEX_VALUES_BOUNDS: the message says "index i, length n"
    assert e.global_id is not None and N <= e.global_id[0] < TOTAL
    stream.launch(vadd, 4, 256, *vadd_args(abc), debug_level=1)  # launch 3
    with pytest.raises(zex.KernelException) as ei:
        stream.synchronize()
    assert ei.value.launch_id == 3 and ei.value.device_name == e.device_name and ei.value.global_id is None
    e2 = pickle.loads(pickle.dumps(e))
    assert (e2.device_name, e2.launch_id, e2.abi_version) == (e.device_name, 2, 3)


def test_launch_errors_name_pythons_keywords(stream, vadd, abc):
    """Issue 25: the launch's checks are zex's C++ ones, their messages in Python's terms (the stream's
    language), not the C struct's."""
    with pytest.raises(zex.InvalidArgument) as ei:
        stream.launch(vadd, 0, 256, *vadd_args(abc))
    assert "every component of the groups and group_size of stream.launch(...) must be at least 1" in str(ei.value)
    assert "zex_launch_config_t" not in str(ei.value)
    with pytest.raises(zex.InvalidArgument) as ei:
        stream.launch(vadd, 4, (256, 0), *vadd_args(abc))
    assert "group_size of stream.launch(...)" in str(ei.value)
    with pytest.raises(zex.InvalidArgument) as ei:
        stream.launch(vadd, 4, 256, *vadd_args(abc), debug_level=7)
    assert "the debug_level= keyword of stream.launch(...) is 7; use 0, 1, 2, or -1" in str(ei.value)
    with pytest.raises(zex.InvalidArgument) as ei:
        stream.launch(vadd, 4, 256, *vadd_args(abc)[:3])
    assert "kernel 'vadd' expects 4 argument(s)" in str(ei.value)
    stream.synchronize()  # nothing was launched
