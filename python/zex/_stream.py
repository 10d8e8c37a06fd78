"""zex's streams over the C API: Stream (launch packing, waits, raising) and Event. The objects they
launch and the lifetimes they keep: _core.py.
"""
import ctypes
import operator
import struct
import sys

from . import _library as L
from ._core import (Device, Kernel, Local, SharedBuffer, _Cell, _Handle, _addressof, _byref, _c_void_p, _closed,
                    _raise_last, _sizeof, _text)
from ._errors import InvalidArgument, InvalidState, KernelException

def _extent(v, what):
    """groups / group_size: an int or a sequence of 1 to 3 ints; omitted extents are 1."""
    if isinstance(v, int):
        v = (v,)
    try:
        if isinstance(v, (str, bytes)):
            raise TypeError
        t = tuple(int(x) for x in v)
    except (TypeError, ValueError):
        raise InvalidArgument("zex: %s must be an int or a sequence of up to 3 ints, not %s"
                              % (what, type(v).__name__)) from None
    if not 1 <= len(t) <= 3:
        raise InvalidArgument("zex: %s has %d extents; give 1 to 3" % (what, len(t)))
    for x in t:
        if not 0 <= x <= 0xFFFFFFFF:
            raise InvalidArgument("zex: %s %r: every extent must fit a uint32" % (what, t))
    return t + (1,) * (3 - len(t))


_CONFIG = struct.Struct("@6Ii")   # zex_launch_config_t
_CONFIGS = {}                      # (groups, group_size, debug_level) as given -> packed config
_ARG_STRUCTS = {}                  # n -> struct of zex_arg_t[n]


def _config(groups, group_size, debug_level):
    # Only what packing a zex_launch_config_t needs (ints, 1 to 3 extents, each a uint32; an int
    # debug level): the launch's rules (no zero extent, a debug level of -1 to 2, the argument count,
    # 2^64 work-items) are checked once, by zex's C++ launch, whose messages speak Python on a Stream.
    g, gs = _extent(groups, "groups"), _extent(group_size, "group_size")
    if type(debug_level) is not int:
        try:
            debug_level = operator.index(debug_level)
        except TypeError:
            raise InvalidArgument("zex: debug_level must be an int (0, 1, 2 or -1), not %s"
                                  % type(debug_level).__name__) from None
    if not -2 ** 31 <= debug_level < 2 ** 31:
        raise InvalidArgument("zex: debug_level %d: use 0, 1, 2 or -1 (the stream's default)" % debug_level)
    cfg = _CONFIG.pack(*g, *gs, debug_level)
    try:
        if len(_CONFIGS) >= 1024:
            _CONFIGS.clear()
        _CONFIGS[(groups, group_size, debug_level)] = cfg
    except TypeError:  # a list: not cached
        pass
    return cfg


def _arg_struct(n):
    t = _ARG_STRUCTS.get(n)
    if t is None:
        t = _ARG_STRUCTS[n] = struct.Struct("@" + "NP" * n)
    return t


_ARG_KIND = {}  # type -> 1 SharedBuffer, 2 ctypes data, 3 zex.local, 4 numpy scalar, 5 Python number, 0 other


def _arg_kind(t):
    if issubclass(t, SharedBuffer):
        k = 1
    elif issubclass(t, _SCALAR_BASES):
        k = 2
    elif issubclass(t, Local):
        k = 3
    elif hasattr(t, "dtype") and hasattr(t, "tobytes"):  # before Python numbers: numpy.float64 is a float
        k = 4
    elif issubclass(t, (int, float)):
        k = 5
    else:
        return 0  # not cached: rare, and types may be created without end
    _ARG_KIND[t] = k
    return k
_SCALAR_BASES = (ctypes._SimpleCData, ctypes.Structure, ctypes.Union, ctypes.Array)


def _python_scalar_hint(i, a, kernel):
    if isinstance(a, float):
        hint = "ctypes.c_float(x) for a float parameter, ctypes.c_double(x) for a double"
    else:
        hint = "ctypes.c_uint32(n) for a uint parameter, ctypes.c_int64(n) for a long, ..."
    return InvalidArgument("zex: argument %d of kernel '%s' is a Python %s, whose width zex cannot know: "
                           "pass a ctypes scalar of the parameter's type (%s)" % (i, kernel.name, type(a).__name__, hint))


def _pack_args(kernel, args):
    """A launch's arguments (Stream.launch, Graph.launch) as zex_arg_t[len(args)] in bytes, the
    SharedBuffers among them (the caller keeps them in use) and what must stay alive until the C call."""
    buffers = keep = None
    vals = []  # zex_arg_t[n] as size, value, size, value, ...
    for i, a in enumerate(args):
        kind = _ARG_KIND.get(type(a))
        if kind is None:
            kind = _arg_kind(type(a))
        if kind == 1:  # SharedBuffer: its pointer
            if a._cell.handle is None:
                raise InvalidState("zex: argument %d of kernel '%s' is a freed SharedBuffer" % (i, kernel.name))
            vals += (8, a._arg_addr)
            if buffers is None:
                buffers = [a]
            else:
                buffers.append(a)
        elif kind == 2:  # a ctypes scalar, structure or array: its bytes
            vals += (_sizeof(a), _addressof(a))
        elif kind == 3:
            vals += (a.nbytes, 0)
        elif kind == 4:  # a numpy scalar: its bytes, its width
            raw = a.tobytes()
            b = ctypes.create_string_buffer(raw, len(raw))
            keep = (keep or []) + [b]  # alive until the call
            vals += (len(raw), _addressof(b))
        elif kind == 5:
            raise _python_scalar_hint(i, a, kernel)
        else:
            raise InvalidArgument("zex: argument %d of kernel '%s' is a %s: pass a ctypes scalar or structure, "
                                  "a zex.SharedBuffer or zex.local(nbytes)" % (i, kernel.name, type(a).__name__))
    arr = _arg_struct(len(args)).pack(*vals)  # bytes: C reads them in place
    return arr, buffers, keep


def _keep_in_use(refs, kernel, buffers):
    """Marks the kernel and buffers of a launch in use (their close() and free() refuse) until the
    owner of `refs` (a stream's synchronize, a graph's close) releases them."""
    if id(kernel) not in refs:
        refs[id(kernel)] = kernel
        kernel._cell.inflight += 1
    if buffers:
        for b in buffers:
            if id(b) not in refs:
                refs[id(b)] = b
                b._cell.inflight += 1


def _launch(owner, what, kernel, groups, group_size, args, debug_level, f, stop_on_throw=False):
    """Stream.launch and Graph.launch: checks, packs and calls owner._launch (zex_stream_launch_at or
    zex_graph_launch_at) with the launch site of frame `f`, then keeps the kernel and buffers in use.
    stop_on_throw: the owner's C setting (zex_*_set_stop_on_throw) is switched only when it changes."""
    h = owner._cell.handle
    if h is None:
        raise _closed(what)
    stop = bool(stop_on_throw)
    if stop is not getattr(owner, "_stop", False):
        setter = getattr(owner._lib, "zex_stream_set_stop_on_throw" if what == "Stream" else "zex_graph_set_stop_on_throw",
                         None)
        if setter is None:
            raise L.LibraryVersionError("zex: %s has no zex_%s_set_stop_on_throw (version node ZEX_1.3): "
                                        "stop_on_throw= needs the libzex of this Python package's zex"
                                        % (L.library_path(), what.lower()), L.C_API_VERSION, L.library_path())
        r = setter(h, 1 if stop else 0)
        if r:
            _raise_last(r, owner._lib)
        owner._stop = stop
    if type(kernel) is not Kernel and not isinstance(kernel, Kernel):
        raise InvalidArgument("zex: %s.launch takes a zex.Kernel first, not %s" % (what, type(kernel).__name__))
    kh = kernel._cell.handle
    if kh is None:
        raise _closed("Kernel")
    try:
        cfg = _CONFIGS[(groups, group_size, debug_level)]  # zex_launch_config_t, packed, per distinct config
    except (KeyError, TypeError):
        cfg = _config(groups, group_size, debug_level)
    n = len(args)
    if n:
        arr, buffers, keep = _pack_args(kernel, args)  # keep: alive until the call returns
    else:
        arr = buffers = keep = None
    file = _FILES.get(f.f_code.co_filename) or _file_bytes(f.f_code.co_filename)
    r = owner._launch(h, kh, cfg, n, arr, file, f.f_lineno)
    del keep
    if r:
        _raise_last(r, owner._lib)
    _keep_in_use(owner._cell.refs, kernel, buffers)


_FILES = {}  # co_filename -> its bytes, kept for the process's life: zex keeps the pointer (launch_at)


def _file_bytes(name):
    b = _FILES[name] = name.encode("utf-8", "surrogateescape")
    return b


class Stream(_Handle):
    """An in-order stream of launches on a device (zex.Stream(dev)); keeps the Device alive.
    One thread at a time (a second thread's call raises InvalidState). close() (or the end of a with
    block) destroys it: zex waits for its launches, and releases what they used."""
    _what = "Stream"
    _close_check = False

    def __init__(self, device):
        if not isinstance(device, Device):
            raise InvalidArgument("zex.Stream(device): device must be a zex.Device, not %s" % type(device).__name__)
        lib = device.context._lib
        out = _c_void_p()
        r = lib.zex_stream_create(device._handle(), _byref(out))
        if r:
            _raise_last(r, lib)
        self.device = device
        self._lib = lib
        self._launch = lib.zex_stream_launch_at
        self._raised = _Raised()
        self._cell = _Cell(out.value, self._raised.destroying(lib.zex_stream_destroy, lib), 0, "Stream",
                           device.context._cell)
        self._cell.refs = {}
        # zex's launch checks (C++, the only copy) then name the fields as a Python caller writes them.
        r = lib.zex_stream_set_language(out.value, L.LANGUAGE_PYTHON)
        if r:
            self._cell.close(check=False)
            _raise_last(r, lib)

    def launch(self, kernel, groups, group_size, *args, debug_level=-1, stop_on_throw=False):
        """Appends `kernel` with `groups` work-groups of `group_size` work-items (ints or sequences of
        up to 3 ints) and the kernel's arguments, without its zex_state_t (zex appends it): ctypes
        scalars or structures (ctypes.c_uint32(n), ...), SharedBuffers (passed as pointers),
        zex.local(nbytes) for __local parameters. debug_level: 0, 1 or 2, -1 for the stream's
        default (ZEX_DEBUG_LEVEL, else 1). Errors raise InvalidArgument etc. and launch nothing.

        The caller's file and line (its frame, sys._getframe(1): one frame, nothing walked) are the
        launch site a KernelException of this launch reports (e.launch_site). A helper that launches
        for its callers reports its own line.

        stop_on_throw=True: early stop (docs/integration.md, "Early stop"): once a work-item threw into
        the stream's report, this launch's later work-groups, and the launch itself if an earlier launch
        threw since the last synchronize, return at once."""
        _launch(self, "Stream", kernel, groups, group_size, args, debug_level, sys._getframe(1), stop_on_throw)

    def execute(self, graph):
        """Appends one execution of a finalized zex.Graph, in order with the stream's launches (the
        driver's immediate append, Level Zero 1.9; a ZeError with result UNSUPPORTED_FEATURE without it:
        use a zex.Queue). synchronize() raises its throws after the stream's own. The graph stays alive
        until then."""
        h = self._cell.handle
        if h is None:
            raise _closed("Stream")
        from ._graph import Graph
        if not isinstance(graph, Graph):
            raise InvalidArgument("zex: Stream.execute takes a zex.Graph, not %s" % type(graph).__name__)
        L.require_graphs(self._lib)
        r = self._lib.zex_stream_execute(h, graph._handle())
        if r:
            _raise_last(r, self._lib)
        refs = self._cell.refs
        if id(graph) not in refs:
            refs[id(graph)] = graph
            graph._cell.inflight += 1

    def _release(self):
        refs = self._cell.refs
        if refs:
            for o in refs.values():
                o._cell.inflight -= 1
            refs.clear()

    def synchronize(self):
        """Waits for every launch; raises zex.KernelException if a work-item threw (the stream stays
        usable), zex.ZeError if Level Zero failed. A KernelException that an earlier wait found but a
        KeyboardInterrupt kept from being raised is raised first, at once (see _Raised)."""
        h = self._cell.handle
        if h is None:
            raise _closed("Stream")
        raised = self._raised
        raised.start(self._lib)
        r = self._lib.zex_stream_synchronize(h, _byref(raised.out))
        if r == 0:
            self._release()
            return
        if r == L.ERROR_KERNEL_EXCEPTION:
            self._release()
            raised.start(self._lib)
        _raise_last(r, self._lib)

    def synchronize_for(self, timeout):
        """Waits at most `timeout` seconds: False if the launches have not finished (nothing changed),
        True once they have, raising KernelException like synchronize() if a work-item threw."""
        h = self._cell.handle
        if h is None:
            raise _closed("Stream")
        ns = max(0, int(timeout * 1e9))
        done = ctypes.c_int()
        raised = self._raised
        raised.start(self._lib)
        r = self._lib.zex_stream_synchronize_for(h, ns, _byref(done), _byref(raised.out))
        if r == 0:
            if done.value:
                self._release()
            return bool(done.value)
        if r == L.ERROR_KERNEL_EXCEPTION:
            self._release()
            raised.start(self._lib)
        _raise_last(r, self._lib)

    def record(self):
        """A zex.Event marking the stream's position: signalled once every launch so far has finished.
        Its synchronize() raises a KernelException of those launches, once (whichever of it and
        Stream.synchronize sees the throw first raises it)."""
        h = self._handle()
        out = _c_void_p()
        r = self._lib.zex_stream_record(h, _byref(out))
        if r:
            _raise_last(r, self._lib)
        return Event._make(self, out.value)

    def wait(self, event):
        """Makes every later launch of this stream wait for `event` (a zex.Event, recorded on any
        stream): ordering only; a throw stays with the stream that recorded the event."""
        h = self._handle()
        if not isinstance(event, Event):
            raise InvalidArgument("zex: Stream.wait takes a zex.Event (from Stream.record()), not %s"
                                  % type(event).__name__)
        r = self._lib.zex_stream_wait_event(h, event._handle())
        if r:
            _raise_last(r, self._lib)

    @property
    def handle(self):
        """The ze_command_list_handle_t (an int), for interop."""
        return self._lib.zex_stream_handle(self._handle())


class Event(_Handle):
    """A mark in a stream's launches, from Stream.record(). synchronize() waits for the launches before
    it and raises a KernelException of theirs that nobody raised yet; ready() polls; Stream.wait(event)
    orders another stream after it. close() (or the end of a with block) frees it, waiting for the mark
    if it is pending; it may outlive its stream (it then only waits). Keeps the Device alive.

    The launches' kernels and buffers stay in use (close() and free() refuse) until their own stream's
    synchronize()."""
    _what = "Event"
    _close_check = False

    def __init__(self):
        raise TypeError("zex.Event: get one from Stream.record()")

    @classmethod
    def _make(cls, stream, handle):
        self = cls.__new__(cls)
        self.device = stream.device
        self._lib = stream._lib
        self._raised = _Raised()
        self._cell = _Cell(handle, self._raised.destroying(self._lib.zex_event_destroy, self._lib), 0, "Event",
                           stream.device.context._cell)
        return self

    def synchronize(self):
        """Waits until every launch before the mark has finished; raises zex.KernelException if one of
        them threw and it was not raised yet (the stream's report is then reset). As Stream.synchronize,
        an exception a KeyboardInterrupt kept from being raised is raised first, at once."""
        h = self._handle()
        raised = self._raised
        raised.start(self._lib)
        r = self._lib.zex_event_synchronize(h, _byref(raised.out))
        if r == 0:
            return
        if r == L.ERROR_KERNEL_EXCEPTION:
            raised.start(self._lib)
        _raise_last(r, self._lib)

    def ready(self):
        """True if every launch before the mark has finished; never waits, never raises a throw."""
        out = ctypes.c_int()
        r = self._lib.zex_event_ready(self._handle(), _byref(out))
        if r:
            _raise_last(r, self._lib)
        return bool(out.value)

    @property
    def handle(self):
        """The ze_event_handle_t the mark signals (an int), owned by this Event, for interop."""
        return self._lib.zex_event_handle(self._handle())

    def __repr__(self):
        return "<zex.Event %s>" % ("closed" if self.closed else hex(self._cell.handle))


class _Raised:
    """Where a wait's zex_exception_t lives until its KernelException is raised (issue 24): a Ctrl-C
    must not lose it.

    Python runs a signal's handler (SIGINT: KeyboardInterrupt) at its next check after a call returns,
    so a SIGINT that arrives while the C wait blocks is raised right after the wait has reset the
    stream's report and returned the exception, before any Python can take it. So the wait writes the
    handle straight into `out`, which the Stream (or Event) owns: wherever the KeyboardInterrupt lands,
    the handle stays there, and the next wait raises it at once (start()), before waiting again. Once
    converted, the handle moves to `spent` by stores alone (a store runs no handler; only calls and
    loops check) and the KernelException is raised; the next wait or close() destroys it. Closing the
    object drops a pending one."""
    __slots__ = ("out", "spent")

    def __init__(self):
        self.out = _c_void_p()     # the wait's out-parameter: a handle not raised yet
        self.spent = _c_void_p()   # a handle converted and raised, to destroy

    def start(self, lib):
        """Destroys the spent handle; raises the pending KernelException, if there is one."""
        e = self.spent.value
        if e:
            self.spent.value = None  # before the call: a KeyboardInterrupt after it cannot free it twice
            lib.zex_exception_destroy(e)
        e = self.out.value
        if e:
            exc = _kernel_exception(lib, e)  # a KeyboardInterrupt in here leaves the handle pending
            self.spent.value = e
            self.out.value = None
            raise exc

    def destroying(self, destroy, lib):
        """The owner's destroy function, which also destroys the handles held here."""
        def destroy_all(h):
            try:
                destroy(h)
            finally:
                for cell in (self.spent, self.out):
                    e = cell.value
                    if e:
                        cell.value = None
                        lib.zex_exception_destroy(e)
        return destroy_all


def _kernel_exception(lib, e):
    """A zex.KernelException from a zex_exception_t, which stays the caller's to destroy (_Raised): its
    attributes are the fields of zex_exception_info_t (L.exception_attributes), its text the Python one."""
    info = L.ExceptionInfo()
    info.size = _sizeof(info)
    r = lib.zex_exception_info(e, _byref(info))
    if r:
        _raise_last(r, lib)
    exc = KernelException(_text(lib.zex_exception_message_for(e, L.LANGUAGE_PYTHON)), **L.exception_attributes(info))
    count = getattr(lib, "zex_exception_other_count", None)
    n = count(e) if count is not None else 0
    if n:  # a graph queue's other throwing executions: each its own handle, converted and destroyed here
        for i in range(n):
            other = _c_void_p()
            r = lib.zex_exception_other(e, i, _byref(other))
            if r:
                _raise_last(r, lib)
            try:
                exc.others.append(_kernel_exception(lib, other.value))
            finally:
                lib.zex_exception_destroy(other.value)
    return exc
