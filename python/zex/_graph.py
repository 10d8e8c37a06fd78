"""zex's graphs over the C API (zex_graph_*, zex_queue_*): launches recorded once into a regular command
list (Graph) and executed many times (Queue), every execution's throw accounted for
(docs/integration.md, 6a). Launch packing and raising are the streams' (_stream.py)."""
import ctypes
import sys

from . import _library as L
from ._core import Device, _Cell, _Handle, _byref, _c_void_p, _raise_last
from ._errors import InvalidArgument
from ._stream import _Raised, _keep_in_use, _launch, _pack_args


def _device(device, what):
    if not isinstance(device, Device):
        raise InvalidArgument("zex.%s: device must be a zex.Device, not %s" % (what, type(device).__name__))
    return device


def _name(name):
    if name is None:
        return None
    if not isinstance(name, str):
        raise InvalidArgument("zex.Graph: name must be a str, not %s" % type(name).__name__)
    if "\0" in name:
        raise InvalidArgument("zex.Graph: name contains a NUL character")
    return name.encode("utf-8", "surrogateescape")


class Graph(_Handle):
    """Launches recorded once into a regular command list (zex.Graph(dev, name="step")), executed any
    number of times by Queue.execute. launch() as Stream.launch; finalize() ends the recording (the C
    API's zex_graph_close; close() here, as on every zex object, destroys the graph). The kernels and
    buffers a graph recorded stay in use (their close() and free() refuse) until the graph is closed:
    every execution uses them. Closing waits for the graph's executions in flight."""
    _what = "Graph"
    _close_check = False

    def __init__(self, device, name=None):
        self._init(_device(device, "Graph"), name, None)

    @classmethod
    def adopt(cls, device, list_handle, name=None):
        """Wraps a runtime's own regular command list (a ze_command_list_handle_t as an int), not yet
        closed: zex appends to it and closes it in finalize(), and never destroys it (the runtime
        does, after this graph is closed)."""
        if not isinstance(list_handle, int) or list_handle <= 0:
            raise InvalidArgument("zex.Graph.adopt: list_handle must be a ze_command_list_handle_t (a non-zero int)")
        self = cls.__new__(cls)
        self._init(_device(device, "Graph.adopt"), name, list_handle)
        return self

    def _init(self, device, name, list_handle):
        lib = device.context._lib
        L.require_graphs(lib)
        n = _name(name)
        out = _c_void_p()
        if list_handle is None:
            r = lib.zex_graph_create(device._handle(), n, _byref(out))
        else:
            r = lib.zex_graph_adopt(device._handle(), list_handle, n, _byref(out))
        if r:
            _raise_last(r, lib)
        self.device = device
        self.name = name or ""
        self._lib = lib
        self._launch = lib.zex_graph_launch_at
        self._cell = _Cell(out.value, lib.zex_graph_destroy, 0, "Graph", device.context._cell)
        self._cell.refs = {}
        self._kernels = {}  # launch number -> its kernel, for update()
        r = lib.zex_graph_set_language(out.value, L.LANGUAGE_PYTHON)
        if r:
            self._cell.close(check=False)
            _raise_last(r, lib)

    def launch(self, kernel, groups, group_size, *args, debug_level=-1, stop_on_throw=False):
        """Records `kernel` as Stream.launch appends it (same arguments, same checks, the caller's line
        as the launch site of a throw in any execution). Arguments are captured now: a SharedBuffer's
        contents are read by each execution, a scalar's value is the one given here. stop_on_throw=True:
        in an execution where an earlier launch threw, this one returns at once. Returns the launch's
        number (1 for the first launch of the graph, 2 for the second, ...), for update()."""
        _launch(self, "Graph", kernel, groups, group_size, args, debug_level, sys._getframe(1), stop_on_throw)
        fn = getattr(self._lib, "zex_graph_launches", None)
        if fn is None:
            return None
        number = fn(self._handle())
        self._kernels[number] = kernel
        return number

    def update(self, launch, *args):
        """Changes the arguments of recorded launch number `launch` (what launch() returned) for the
        executions submitted after this call: all of its arguments again, as launch() takes them; only
        those that differ change (zex::Graph::update: in place on a driver with mutable command lists,
        else the list is recorded again). Executions in flight on a Queue are waited for first (their
        throws are raised by its next synchronize()). The buffers passed stay in use until the graph
        is closed."""
        fn = getattr(self._lib, "zex_graph_update", None)
        if fn is None:
            raise L.LibraryVersionError("zex: %s has no zex_graph_update (version node ZEX_1.4): Graph.update needs "
                                        "the libzex of this Python package's zex" % L.library_path(),
                                        L.C_API_VERSION, L.library_path())
        h = self._handle()
        if type(launch) is not int or launch < 1:
            raise InvalidArgument("zex.Graph.update: launch must be the launch number launch() returned (an int "
                                  "from 1), not %r" % (launch,))
        kernel = self._kernels.get(launch)
        if kernel is None:
            raise InvalidArgument("zex.Graph.update: graph %r has no launch %d (its launches are numbered 1 to %d)"
                                  % (self.name, launch, len(self._kernels)))
        if args:
            arr, buffers, keep = _pack_args(kernel, args)
        else:
            arr = buffers = keep = None
        r = fn(h, launch, len(args), arr)
        del keep
        if r:
            _raise_last(r, self._lib)
        _keep_in_use(self._cell.refs, kernel, buffers)

    @property
    def launches(self):
        """How many launches were recorded (the last one's number)."""
        return self._lib.zex_graph_launches(self._handle())

    def finalize(self):
        """Ends the recording (zex's epilogue, then zeCommandListClose); idempotent. Launching after it
        raises InvalidState; Queue.execute needs it."""
        r = self._lib.zex_graph_close(self._handle())
        if r:
            _raise_last(r, self._lib)

    @property
    def executions(self):
        """How many executions of this graph were submitted so far (the next one's index)."""
        return self._lib.zex_graph_executions(self._handle())

    @property
    def handle(self):
        """The ze_command_list_handle_t (an int), for interop: owned by the graph unless adopted."""
        return self._lib.zex_graph_handle(self._handle())

    def __repr__(self):
        return "<zex.Graph %r %s>" % (self.name, "closed" if self.closed else "%d executions" % self.executions)


class Queue(_Handle):
    """A command queue that executes finalized Graphs (zex.Queue(dev)); keeps the Device alive.
    synchronize() waits for every execution submitted and raises a KernelException of any that threw:
    e.execution is the 0-based index of the one shown (per graph), e.executions_thrown how many of the
    executions synchronized threw, e.others the reports of the others (bounded: docs/design.md,
    "Graphs"). close() waits for the executions in flight; a throw nobody synchronized is dropped."""
    _what = "Queue"
    _close_check = False

    def __init__(self, device):
        self._init(_device(device, "Queue"), None)

    @classmethod
    def adopt(cls, device, queue_handle):
        """Wraps a runtime's ze_command_queue_handle_t (an int) on `device`; zex never destroys it."""
        if not isinstance(queue_handle, int) or queue_handle <= 0:
            raise InvalidArgument("zex.Queue.adopt: queue_handle must be a ze_command_queue_handle_t (a non-zero int)")
        self = cls.__new__(cls)
        self._init(_device(device, "Queue.adopt"), queue_handle)
        return self

    def _init(self, device, queue_handle):
        lib = device.context._lib
        L.require_graphs(lib)
        out = _c_void_p()
        if queue_handle is None:
            r = lib.zex_queue_create(device._handle(), _byref(out))
        else:
            r = lib.zex_queue_adopt(device._handle(), queue_handle, _byref(out))
        if r:
            _raise_last(r, lib)
        self.device = device
        self._lib = lib
        self._raised = _Raised()
        self._cell = _Cell(out.value, self._raised.destroying(lib.zex_queue_destroy, lib), 0, "Queue",
                           device.context._cell)
        # The graphs executed since the last synchronize, alive until it: a graph collected with executions
        # in flight would wait for them and drop their throw.
        self._graphs = {}

    def execute(self, graph):
        """Submits one execution of a finalized `graph` (InvalidState if it is not finalized, or has
        executions in flight on another queue)."""
        h = self._handle()
        if not isinstance(graph, Graph):
            raise InvalidArgument("zex: Queue.execute takes a zex.Graph, not %s" % type(graph).__name__)
        r = self._lib.zex_queue_execute(h, graph._handle())
        if r:
            _raise_last(r, self._lib)
        self._graphs.setdefault(id(graph), graph)

    def synchronize(self):
        """Waits for every execution submitted; raises zex.KernelException if one threw (the queue and
        the graphs stay usable), zex.ZeError if Level Zero failed."""
        h = self._handle()
        raised = self._raised
        raised.start(self._lib)
        r = self._lib.zex_queue_synchronize(h, _byref(raised.out))
        if r == 0 or r == L.ERROR_KERNEL_EXCEPTION:
            self._graphs.clear()
        if r == L.ERROR_KERNEL_EXCEPTION:
            raised.start(self._lib)
        if r:
            _raise_last(r, self._lib)

    def synchronize_for(self, timeout):
        """Waits at most `timeout` seconds: False if the executions have not finished (nothing changed),
        True once they have, raising KernelException like synchronize() if one threw."""
        h = self._handle()
        ns = max(0, int(timeout * 1e9))
        done = ctypes.c_int()
        raised = self._raised
        raised.start(self._lib)
        r = self._lib.zex_queue_synchronize_for(h, ns, _byref(done), _byref(raised.out))
        if r == 0:
            if done.value:
                self._graphs.clear()
            return bool(done.value)
        if r == L.ERROR_KERNEL_EXCEPTION:
            self._graphs.clear()
            raised.start(self._lib)
        _raise_last(r, self._lib)

    @property
    def handle(self):
        """The ze_command_queue_handle_t (an int), for interop."""
        return self._lib.zex_queue_handle(self._handle())
