"""zex.Graph and zex.Queue end to end (zex-cpu under CTest): a graph of three launches executed many
times without a synchronize between, the host deciding by data which executions throw (plan_throw
reads plan[execution]); every throwing execution accounted for (e.execution, e.executions_thrown,
e.others), the graph reusable; threads; an adopted list and queue; misuse."""
import ctypes
import threading

import numpy as np
import pytest

import zex

u32 = ctypes.c_uint32
N = 1000
GROUP = 64


class Step:
    """count_execution, vadd (no throw: exact groups), plan_throw, recorded into one graph."""

    def __init__(self, ctx, dev, mod, executions, name="step"):
        self.len = executions
        self.counter = ctx.alloc_shared(64)
        self.plan = ctx.alloc_shared(4 * executions)
        self.a, self.b, self.c = (ctx.alloc_shared(4 * N) for _ in range(3))
        np.frombuffer(self.a, np.float32)[:] = 1.0
        np.frombuffer(self.b, np.float32)[:] = 2.0
        self.counter_view = np.frombuffer(self.counter, np.uint32)
        self.plan_view = np.frombuffer(self.plan, np.uint32)
        self.counter_view[:] = 0
        self.plan_view[:] = 0
        self.graph = zex.Graph(dev, name)
        self.graph.launch(mod.kernel("count_execution"), 1, 1, self.counter)
        # Exactly N work-items: vadd's bounds check never throws.
        self.graph.launch(mod.kernel("vadd"), N // 8, 8, self.c, self.a, self.b, u32(N))
        self.graph.launch(mod.kernel("plan_throw"), 1, 4, self.plan, self.counter, u32(executions))
        self.graph.finalize()

    def close(self):
        self.graph.close()
        for b in (self.counter, self.plan, self.a, self.b, self.c):
            b.free()


@pytest.fixture
def step(ctx, dev, mod):
    s = Step(ctx, dev, mod, 100)
    yield s
    s.close()


@pytest.fixture
def queue(dev):
    with zex.Queue(dev) as q:
        yield q


@pytest.mark.parametrize("batch", [1, 10, 100])
def test_every_throwing_execution_accounted_for(step, queue, batch, kernel_lines):
    throwing = {3, 7, 42, 99}
    for e in throwing:
        step.plan_view[e] = 1
    seen = []
    for start in range(0, 100, batch):
        for _ in range(batch):
            queue.execute(step.graph)
        try:
            queue.synchronize()
        except zex.KernelException as e:
            got = [e] + e.others
            assert e.executions_thrown == len(got)
            assert e.executions_synchronized == batch
            for x in got:
                assert x.kernel_name == "plan_throw" and x.name == "PlanError" and x.graph_name == "step"
                assert x.values == (x.execution, 1)
                assert x.launch_site.file == __file__ and x.launch_site.line > 0
                assert x.frames[0][2] == kernel_lines["plan_throw"]
                assert start <= x.execution < start + batch
            assert [x.execution for x in got] == sorted(x.execution for x in got)
            tail = "; the first is shown)" if len(got) > 1 else ")"
            assert ("in execution %d of graph 'step' (%d of %d execution%s threw%s"
                    % (e.execution, len(got), batch, "s" if batch > 1 else "", tail)) in str(e)
            seen += [x.execution for x in got]
    assert seen == sorted(throwing)
    assert step.counter_view[0] == 100 and step.graph.executions == 100
    assert np.all(np.frombuffer(step.c, np.float32) == 3.0)
    # Reusable: nothing planned, nothing raised.
    step.plan_view[:] = 0
    queue.execute(step.graph)
    queue.synchronize()
    assert queue.synchronize_for(0) is True


def test_others_are_bounded(ctx, dev, mod, queue):
    s = Step(ctx, dev, mod, 40, "all")
    try:
        s.plan_view[:] = 1
        for _ in range(40):
            queue.execute(s.graph)
        with pytest.raises(zex.KernelException) as ei:
            queue.synchronize()
        e = ei.value
        assert e.execution == 0 and e.executions_thrown == 40 and e.executions_synchronized == 40
        assert [x.execution for x in e.others] == list(range(1, 17))  # 16 kept besides the first
        assert all(x.others == [] for x in e.others)
    finally:
        s.close()


def test_graphs_in_threads(ctx, dev, mod):
    failures = []

    def run(t):
        try:
            s = Step(ctx, dev, mod, 20, "thread%d" % t)
            s.plan_view[t % 20] = 1
            with zex.Queue(dev) as q:
                for _ in range(20):
                    q.execute(s.graph)
                with pytest.raises(zex.KernelException) as ei:
                    q.synchronize()
                assert ei.value.execution == t % 20 and ei.value.graph_name == "thread%d" % t
                assert ei.value.executions_thrown == 1
            s.close()
        except BaseException as x:  # reported below: a thread's assertion must fail the test
            failures.append((t, x))

    threads = [threading.Thread(target=run, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert failures == []


def test_level_0_and_2(ctx, dev, mod, queue):
    plan_throw = mod.kernel("plan_throw")
    counter, plan = ctx.alloc_shared(64), ctx.alloc_shared(64)
    np.frombuffer(counter, np.uint32)[:] = 0
    np.frombuffer(plan, np.uint32)[:] = 1
    with zex.Graph(dev, "levels") as g:
        g.launch(mod.kernel("count_execution"), 1, 1, counter)
        g.launch(plan_throw, 1, 4, plan, counter, u32(4), debug_level=2)
        g.finalize()
        queue.execute(g)
        with pytest.raises(zex.KernelException) as ei:
            queue.synchronize()
        assert ei.value.debug_level == 2 and ei.value.global_id == (3, 0, 0) and ei.value.execution == 0
    with zex.Graph(dev) as g:
        g.launch(mod.kernel("count_execution"), 1, 1, counter)
        g.launch(plan_throw, 1, 4, plan, counter, u32(4), debug_level=0)
        g.finalize()
        queue.execute(g)
        with pytest.raises(zex.KernelException) as ei:
            queue.synchronize()
        assert ei.value.debug_level == 0 and ei.value.global_id is None and ei.value.execution == 0
        assert "in execution 0 of a zex::Graph (1 of 1 execution threw)" in str(ei.value)
    counter.free()
    plan.free()


def test_misuse(ctx, dev, mod, queue):
    vadd = mod.kernel("vadd")
    with pytest.raises(zex.InvalidArgument, match="device must be a zex.Device"):
        zex.Graph(None)
    with pytest.raises(zex.InvalidArgument, match="name must be a str"):
        zex.Graph(dev, 3)
    g = zex.Graph(dev, "misuse")
    with pytest.raises(zex.InvalidArgument, match="takes a zex.Kernel"):
        g.launch("vadd", 1, 1)  # refused by Python before zex sees it: the recording goes on
    with pytest.raises(zex.InvalidState, match="not closed"):
        queue.execute(g)
    # A recording error is kept (the launch's own checks, in Python's words): the graph refuses
    # everything after it with that error.
    bad = zex.Graph(dev, "bad")
    with pytest.raises(zex.InvalidArgument, match="debug_level"):
        bad.launch(vadd, 1, 1, ctx.alloc_shared(4), ctx.alloc_shared(4), ctx.alloc_shared(4), u32(1), debug_level=7)
    for call in (lambda: bad.launch(vadd, 1, 1, u32(1)), bad.finalize, lambda: queue.execute(bad)):
        with pytest.raises(zex.InvalidArgument, match="recording launch 1 \\(kernel 'vadd'\\) of graph 'bad' failed"):
            call()
    bad.close()
    g.launch(mod.kernel("count_execution"), 1, 1, ctx.alloc_shared(64))
    g.finalize()
    g.finalize()  # idempotent
    with pytest.raises(zex.InvalidState, match="closed"):
        g.launch(mod.kernel("count_execution"), 1, 1, ctx.alloc_shared(64))
    with pytest.raises(zex.InvalidArgument, match="takes a zex.Graph"):
        queue.execute(object())
    queue.execute(g)
    queue.synchronize()
    g.close()
    with pytest.raises(zex.InvalidState, match="Graph is closed"):
        queue.execute(g)
    with pytest.raises(zex.InvalidArgument, match="list_handle"):
        zex.Graph.adopt(dev, 0)
    with pytest.raises(zex.InvalidArgument, match="queue_handle"):
        zex.Queue.adopt(dev, None)


def test_recorded_kernels_and_buffers_stay_in_use(ctx, dev, mod, queue):
    counter = ctx.alloc_shared(64)
    k = mod.kernel("count_execution")
    g = zex.Graph(dev)
    g.launch(k, 1, 1, counter)
    g.finalize()
    queue.execute(g)
    queue.synchronize()
    with pytest.raises(zex.InvalidState, match="close the zex.Graph that recorded it"):
        counter.free()
    with pytest.raises(zex.InvalidState):
        k.close()
    g.close()
    counter.free()
    k.close()


def test_a_graph_collected_in_flight_keeps_its_throw(ctx, dev, mod, queue):
    # The queue keeps what it executed until its synchronize: dropping the last reference to a
    # graph in flight must not drop its throw.
    counter, plan = ctx.alloc_shared(64), ctx.alloc_shared(64)
    np.frombuffer(counter, np.uint32)[:] = 0
    np.frombuffer(plan, np.uint32)[:] = 1
    g = zex.Graph(dev, "dropped")
    g.launch(mod.kernel("count_execution"), 1, 1, counter)
    g.launch(mod.kernel("plan_throw"), 1, 4, plan, counter, u32(1))
    g.finalize()
    queue.execute(g)
    del g
    with pytest.raises(zex.KernelException, match="graph 'dropped'"):
        queue.synchronize()


def _ze():
    ze = ctypes.CDLL("libze_loader.so.1")
    for name in ("zeCommandListCreate", "zeCommandQueueCreate", "zeCommandListDestroy", "zeCommandQueueDestroy"):
        getattr(ze, name).restype = ctypes.c_uint32
    return ze


class _Desc(ctypes.Structure):  # ze_command_list_desc_t
    _fields_ = [("stype", ctypes.c_uint32), ("pNext", ctypes.c_void_p), ("ordinal", ctypes.c_uint32),
                ("flags", ctypes.c_uint32)]


class _QueueDesc(ctypes.Structure):  # ze_command_queue_desc_t
    _fields_ = [("stype", ctypes.c_uint32), ("pNext", ctypes.c_void_p), ("ordinal", ctypes.c_uint32),
                ("index", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("mode", ctypes.c_uint32),
                ("priority", ctypes.c_uint32)]


def test_adopted_list_and_queue(ctx, dev, mod):
    # A runtime's own regular list and queue, made through the loader (ordinal 0: zex-cpu's one
    # compute group); zex appends to them and never destroys them.
    ze = _ze()
    lst, raw_q = ctypes.c_void_p(), ctypes.c_void_p()
    assert ze.zeCommandListCreate(ctypes.c_void_p(ctx.handle), ctypes.c_void_p(dev.handle),
                                  ctypes.byref(_Desc(0xF, None, 0, 0)), ctypes.byref(lst)) == 0
    assert ze.zeCommandQueueCreate(ctypes.c_void_p(ctx.handle), ctypes.c_void_p(dev.handle),
                                   ctypes.byref(_QueueDesc(0xE, None, 0, 0, 0, 2, 0)), ctypes.byref(raw_q)) == 0
    counter, plan = ctx.alloc_shared(64), ctx.alloc_shared(64)
    np.frombuffer(counter, np.uint32)[:] = 0
    np.frombuffer(plan, np.uint32)[:] = [0, 1] + [0] * 14
    try:
        g = zex.Graph.adopt(dev, lst.value, "adopted")
        assert g.handle == lst.value
        g.launch(mod.kernel("count_execution"), 1, 1, counter)
        g.launch(mod.kernel("plan_throw"), 1, 4, plan, counter, u32(4))
        g.finalize()
        q = zex.Queue.adopt(dev, raw_q.value)
        assert q.handle == raw_q.value
        for _ in range(4):
            q.execute(g)
        with pytest.raises(zex.KernelException) as ei:
            q.synchronize()
        assert ei.value.execution == 1 and ei.value.graph_name == "adopted" and ei.value.others == []
        assert np.frombuffer(counter, np.uint32)[0] == 4
        q.close()
        g.close()
    finally:
        assert ze.zeCommandListDestroy(lst) == 0
        assert ze.zeCommandQueueDestroy(raw_q) == 0
        counter.free()
        plan.free()


def test_stream_exceptions_have_no_execution(stream, vadd, ctx):
    a, b, c = (ctx.alloc_shared(4 * 8) for _ in range(3))
    stream.launch(vadd, 2, 8, c, a, b, u32(8))
    with pytest.raises(zex.KernelException) as ei:
        stream.synchronize()
    assert ei.value.execution is None and ei.value.executions_thrown == 0 and ei.value.others == []


def test_stream_execute(ctx, dev, mod, stream):
    s = Step(ctx, dev, mod, 10, "on-stream")
    try:
        s.plan_view[4] = 1
        for _ in range(10):
            stream.execute(s.graph)
        with pytest.raises(zex.KernelException) as ei:
            stream.synchronize()
        assert ei.value.execution == 4 and ei.value.graph_name == "on-stream" and ei.value.executions_thrown == 1
        assert s.counter_view[0] == 10
        with pytest.raises(zex.InvalidArgument, match="takes a zex.Graph"):
            stream.execute(object())
        stream.synchronize()
    finally:
        s.close()


def test_stop_on_throw(ctx, dev, mod, stream, queue):
    """stop_on_throw=True: on a stream, a launch after a throw skips until synchronize; in a graph, the
    launches after the throwing one skip in that execution only."""
    maybe = mod.kernel("maybe_throw")
    words = ctx.alloc_shared(64)
    w = np.frombuffer(words, np.uint32)
    w[:] = 0
    first, second = ctx.alloc_shared(64), ctx.alloc_shared(64)
    fv, sv = np.frombuffer(first, np.uint32), np.frombuffer(second, np.uint32)
    fv[:] = 0
    sv[:] = 0
    stream.launch(maybe, 1, 16, first, u32(1))
    stream.launch(maybe, 1, 16, second, u32(0), stop_on_throw=True)
    with pytest.raises(zex.KernelException) as ei:
        stream.synchronize()
    assert ei.value.name == "StreamError"
    assert fv[0] == 15 and sv[0] == 0
    stream.launch(maybe, 1, 16, second, u32(0), stop_on_throw=True)
    stream.launch(maybe, 1, 16, second, u32(0))
    stream.synchronize()
    assert sv[0] == 32
    counter, plan, after = ctx.alloc_shared(64), ctx.alloc_shared(64), ctx.alloc_shared(64)
    cv, pv, av = (np.frombuffer(b, np.uint32) for b in (counter, plan, after))
    cv[:] = 0
    pv[:] = 0
    av[:] = 0
    pv[1] = 1  # execution 1 throws
    with zex.Graph(dev, "stop") as g:
        g.launch(mod.kernel("count_execution"), 1, 1, counter)
        g.launch(mod.kernel("plan_throw"), 1, 4, plan, counter, u32(16))
        g.launch(mod.kernel("count_execution"), 1, 1, after, stop_on_throw=True)
        g.finalize()
        for _ in range(3):
            queue.execute(g)
        with pytest.raises(zex.KernelException) as ei:
            queue.synchronize()
        assert ei.value.execution == 1 and ei.value.executions_thrown == 1
    assert cv[0] == 3 and av[0] == 2
    for b in (words, first, second, counter, plan, after):
        b.free()


def test_update(ctx, dev, mod, queue):
    """Graph.update: launch() returns the launch's number; update(number, *args) gives it new arguments
    for the executions after it (a pointer, a scalar, a zex.local size); bad updates raise and change
    nothing; executions in flight are waited for and their throws kept."""
    counter, plan, plan2, dst, other, out = (ctx.alloc_shared(256) for _ in range(6))
    cv, pv, p2, dv, ov, outv = (np.frombuffer(b, np.uint32) for b in (counter, plan, plan2, dst, other, out))
    for v in (cv, pv, p2, dv, ov, outv):
        v[:] = 0
    count, plan_throw, copy = mod.kernel("count_execution"), mod.kernel("plan_throw"), mod.kernel("copy_word")
    with zex.Graph(dev, "pyupdate") as g:
        assert g.launch(count, 1, 1, counter) == 1
        h_plan = g.launch(plan_throw, 1, 4, plan, counter, u32(8))
        h_copy = g.launch(copy, 1, 1, dst, counter)
        assert (h_plan, h_copy, g.launches) == (2, 3, 3)
        with pytest.raises(zex.InvalidState, match="is not closed"):
            g.update(h_copy, other, counter)
        g.finalize()
        queue.execute(g)
        queue.synchronize()
        assert dv[0] == 1
        g.update(h_copy, other, counter)  # a pointer
        queue.execute(g)
        queue.synchronize()
        assert (dv[0], ov[0]) == (1, 2)
        p2[2] = 33
        g.update(h_plan, plan2, counter, u32(8))  # execution 2 throws with the new plan's value
        queue.execute(g)
        with pytest.raises(zex.KernelException) as ei:
            queue.synchronize()
        assert ei.value.execution == 2 and ei.value.kernel_name == "plan_throw" and ei.value.values == (2, 33)
        with pytest.raises(zex.InvalidArgument, match="has no launch 4"):
            g.update(4, other, counter)
        with pytest.raises(zex.InvalidArgument):
            g.update(h_copy, other)  # one argument of two
        g.update(h_plan, plan2, counter, u32(1))  # a scalar: every execution reads plan2[0] (0)
        pv[0] = 1
        p2[0] = 5
        queue.execute(g)  # execution 3 throws (plan2[0])
        g.update(h_plan, plan, counter, u32(8))  # waits for it; its throw is kept
        pv[:] = 0
        queue.execute(g)
        with pytest.raises(zex.KernelException) as ei:
            queue.synchronize()
        assert ei.value.execution == 3 and ei.value.values == (3, 5) and ei.value.executions_thrown == 1
        assert cv[0] == 5 and ov[0] == 5
    two = mod.kernel("two_locals")
    with zex.Graph(dev, "pylocals") as g:
        h = g.launch(two, 1, 64, out, zex.local(256), zex.local(256), u32(64))
        g.finalize()
        queue.execute(g)
        queue.synchronize()
        assert list(outv[:64]) == [7000 + i + 1 for i in range(64)]
        outv[:] = 0
        g.update(h, out, zex.local(4096), zex.local(256), u32(1024))  # a grows; b must move
        queue.execute(g)
        queue.synchronize()
        assert list(outv[:64]) == [7000 + i + 1 for i in range(64)]
    for b in (counter, plan, plan2, dst, other, out):
        b.free()
