"""zex's objects over the C API: Context, Device, SharedBuffer, Module, Kernel, Stream, Event, local.

Lifetimes. Every C handle lives in a _Cell. A parent keeps the cells of what was made from it (a
Context its streams, modules and buffers, a Module its kernels), and every Python object keeps its
parent object alive (Kernel -> Module -> Device -> Context, Stream -> Device, SharedBuffer ->
Context). So the garbage collector cannot destroy a parent before its children, and closing a parent
(close(), a with block, or its collection in a reference cycle, where Python finalizes in any order)
first destroys what it owns, streams first, and leaves the children's Python objects closed.

A stream keeps every kernel and buffer it launched with until synchronize(): they cannot be
collected, and close()/free() on them raises InvalidState, while a launch may still use them.
"""
import ctypes
import operator
import os
import struct
import sys
import threading

from . import _library as L
from ._errors import (DeviceRecord, DeviceReport, InvalidArgument, InvalidState, KernelException, RasCounter,
                      UnknownError, ZeError, error_class)

_lock = threading.RLock()   # closing is rare: one lock for all of it
_c_void_p = ctypes.c_void_p
_byref = ctypes.byref
_addressof = ctypes.addressof
_sizeof = ctypes.sizeof


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


def _raise_last(result, lib=None):
    """Raises the exception for a failed zex_result_t, from the thread's last error."""
    lib = lib or L.lib()
    message = _text(lib.zex_last_error_message()) or "zex: the C API returned zex_result_t %d" % result
    cls = error_class(result)
    if cls is ZeError:
        raise ZeError(message, lib.zex_last_ze_result(), _text(lib.zex_last_error_call()), _device_report(lib))
    raise cls(message)


def _device_report(lib):
    """The thread's last device report (zex_last_device_report and friends), or None."""
    if not hasattr(lib, "zex_last_device_report"):
        return None
    device, state = ctypes.c_char_p(), ctypes.c_char_p()
    nc, nr = ctypes.c_uint32(), ctypes.c_uint32()
    if not lib.zex_last_device_report(_byref(device), _byref(state), _byref(nc), _byref(nr)):
        return None
    counters = []
    for i in range(nc.value):
        s, c = ctypes.c_char_p(), ctypes.c_char_p()
        before, now = ctypes.c_uint64(), ctypes.c_uint64()
        if lib.zex_last_device_counter(i, _byref(s), _byref(c), _byref(before), _byref(now)):
            counters.append(RasCounter(_text(s.value), _text(c.value), before.value, now.value))
    records = []
    for i in range(nr.value):
        fmt, summary = ctypes.c_char_p(), ctypes.c_char_p()
        data, size = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_size_t()
        if lib.zex_last_device_record(i, _byref(fmt), _byref(data), _byref(size), _byref(summary)):
            raw = ctypes.string_at(data, size.value) if size.value else b""
            records.append(DeviceRecord(_text(fmt.value), raw, _text(summary.value)))
    notes = []
    while True:
        note = lib.zex_last_device_note(len(notes)) if hasattr(lib, "zex_last_device_note") else None
        if note is None:
            break
        notes.append(_text(note))
    info_log = _text(lib.zex_last_device_info_log()) if hasattr(lib, "zex_last_device_info_log") else ""
    return DeviceReport(_text(device.value), _text(state.value), tuple(counters), tuple(records), info_log,
                        tuple(notes))


class _Cell:
    """One C handle, its destroy function and what it owns."""
    __slots__ = ("handle", "destroy", "rank", "children", "inflight", "refs", "parent", "what")

    def __init__(self, handle, destroy, rank, what, parent=None):
        self.handle = handle
        self.destroy = destroy      # called with the handle
        self.rank = rank            # close order among siblings: streams, kernels, modules, buffers
        self.children = set()
        self.inflight = 0           # unsynchronized launches that use it
        self.refs = None            # a stream's: {id: object} launched with since the last synchronize
        self.parent = parent
        self.what = what
        if parent is not None:
            parent.children.add(self)

    def busy(self):
        return self.inflight > 0 or any(c.busy() for c in self.children)

    def close(self, check=True):
        with _lock:
            if self.handle is None:
                return
            if check and self.busy():
                raise InvalidState("zex: cannot close this %s: a launch that uses it has not been synchronized "
                                   "(call stream.synchronize() first)" % self.what)
            for c in sorted(self.children, key=lambda c: c.rank):
                c.close(check=False)
            h, self.handle = self.handle, None
            if self.parent is not None:
                self.parent.children.discard(self)
            try:
                self.destroy(h)
            finally:
                if self.refs:
                    for o in self.refs.values():
                        o._cell.inflight -= 1
                    self.refs = None


def _closed(what):
    return InvalidState("zex: this %s is closed" % what)


def _finalize(obj):
    """__del__: close unless a launch still uses it (then its parent closes it later)."""
    try:
        cell = obj.__dict__.get("_cell")
        if cell is not None and cell.handle is not None and not cell.busy():
            cell.close(check=False)
    except Exception:  # interpreter shutdown: never raise from __del__
        pass


class _Handle:
    """What Module, Kernel, Stream and Event share: one _Cell (self._cell), its handle or InvalidState
    once closed, ``closed``, close() (destroys the C object; a Module or Kernel raises InvalidState
    while an unsynchronized launch uses it), a with block that closes, and closing when collected."""
    __slots__ = ()
    _what = "object"        # names the class in messages
    _close_check = True     # close() refuses while a launch uses it

    def _handle(self):
        h = self._cell.handle
        if h is None:
            raise _closed(self._what)
        return h

    @property
    def closed(self):
        return self._cell.handle is None

    def close(self):
        self._cell.close(check=self._close_check)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        _finalize(self)


class Context:
    """A Level Zero context on the first driver (zex_context_create), or adopted (Context.adopt).
    Closing it (close() or the end of a with block) closes every stream, module, kernel and buffer
    made from it."""

    def __init__(self):
        lib = L.lib()
        h = _c_void_p()
        r = lib.zex_context_create(_byref(h))
        if r:
            _raise_last(r, lib)
        self._init(lib, h.value)

    @classmethod
    def adopt(cls, driver_handle, context_handle):
        """Uses a runtime's ze_driver_handle_t and ze_context_handle_t (ints): zex never destroys them;
        keep them alive while this Context is open."""
        lib = L.lib()
        h = _c_void_p()
        r = lib.zex_context_adopt(driver_handle, context_handle, _byref(h))
        if r:
            _raise_last(r, lib)
        self = cls.__new__(cls)
        self._init(lib, h.value)
        return self

    def _init(self, lib, handle):
        self._lib = lib
        self._cell = _Cell(handle, lib.zex_context_destroy, 9, "Context")
        self._devices = {}

    def _handle(self):
        h = self._cell.handle
        if h is None:
            raise _closed("Context")
        return h

    @property
    def device_count(self):
        n = ctypes.c_uint32()
        r = self._lib.zex_device_count(self._handle(), _byref(n))
        if r:
            _raise_last(r, self._lib)
        return n.value

    def device(self, index=0):
        """The context's device `index` (0-based)."""
        index = int(index)
        if index < 0:
            raise InvalidArgument("zex: device index %d is negative" % index)
        h = self._handle()
        d = self._devices.get(index)
        if d is None:
            out = _c_void_p()
            r = self._lib.zex_device_get(h, index, _byref(out))
            if r:
                _raise_last(r, self._lib)
            d = self._devices[index] = Device(self, out.value, index)
        return d

    def devices(self):
        return [self.device(i) for i in range(self.device_count)]

    def device_for(self, handle):
        """The Device for a raw ze_device_handle_t (an int) of this context's driver: a device or a
        sub-device (for runtimes that hold their own handles). Raises InvalidArgument for any other."""
        out = _c_void_p()
        r = self._lib.zex_device_for_handle(self._handle(), handle, _byref(out))
        if r:
            _raise_last(r, self._lib)
        for d in self.devices():
            if d._h == out.value:
                return d
            for s in d.sub_devices():
                if s._h == out.value:
                    return s
        raise UnknownError("zex: device_for: the C API found a device this Context does not list")

    def alloc_shared(self, nbytes, alignment=64, device=None):
        """Shared USM of `nbytes` bytes (the host and the device's kernels both use it), as a
        SharedBuffer: .ptr, the buffer protocol (memoryview, numpy.frombuffer), free()."""
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise InvalidArgument("zex: alloc_shared(%d): the size must be positive" % nbytes)
        h = self._handle()
        dev = None
        if device is not None:
            if not isinstance(device, Device):
                raise InvalidArgument("zex: alloc_shared(device=...) takes a zex.Device, not %s" % type(device).__name__)
            dev = device._handle()
        out = _c_void_p()
        r = self._lib.zex_context_alloc_shared(h, dev, nbytes, int(alignment), _byref(out))
        if r:
            _raise_last(r, self._lib)
        return SharedBuffer._make(self, out.value, nbytes)

    @property
    def handle(self):
        """The ze_context_handle_t (an int), for interop."""
        return self._lib.zex_context_handle(self._handle())

    @property
    def driver_handle(self):
        """The ze_driver_handle_t (an int), for interop."""
        return self._lib.zex_driver_handle(self._handle())

    @property
    def closed(self):
        return self._cell.handle is None

    def close(self):
        """Closes every stream (waiting for their launches), kernel, module and buffer made from this
        context, then the context. Memoryviews and numpy arrays of its buffers must not be used after."""
        self._cell.close(check=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self._cell.close(check=False)
        except Exception:
            pass

    def __repr__(self):
        return "<zex.Context %s>" % ("closed" if self.closed else hex(self._cell.handle))


class Device:
    """A device of a Context (ctx.device(i)), or a sub-device (tile) of one (dev.sub_devices()[i], with
    .parent set); keeps the Context alive. Two Devices are equal when they are the same device of the
    same Context."""

    def __init__(self, context, handle, index, parent=None):
        self.context = context
        self.index = index
        self.parent = parent
        self._h = handle
        self._subs = None

    def sub_devices(self):
        """The device's sub-devices (tiles) as Devices; [] for a sub-device or a device without any.
        Streams, modules and buffers on a sub-device work as on a device."""
        if self._subs is None:
            lib = self.context._lib
            h = self._handle()
            n = ctypes.c_uint32()
            r = lib.zex_device_sub_device_count(h, _byref(n))
            if r:
                _raise_last(r, lib)
            subs = []
            for i in range(n.value):
                out = _c_void_p()
                r = lib.zex_device_sub_device_get(h, i, _byref(out))
                if r:
                    _raise_last(r, lib)
                subs.append(Device(self.context, out.value, i, parent=self))
            self._subs = subs
        return list(self._subs)

    def __eq__(self, other):
        return isinstance(other, Device) and other._h == self._h

    def __hash__(self):
        return hash(self._h)

    def _handle(self):
        if self.context._cell.handle is None:
            raise _closed("Device's Context")
        return self._h

    @property
    def handle(self):
        """The ze_device_handle_t (an int), for interop."""
        return self.context._lib.zex_device_handle(self._handle())

    def __repr__(self):
        if self.parent is not None:
            return "<zex.Device %d.%d of %r>" % (self.parent.index, self.index, self.context)
        return "<zex.Device %d of %r>" % (self.index, self.context)


class Local:
    """A __local kernel parameter of `nbytes` bytes (zex.local(nbytes))."""
    __slots__ = ("nbytes",)

    def __init__(self, nbytes):
        nbytes = int(nbytes)
        if nbytes <= 0:
            raise InvalidArgument("zex.local(%d): the size must be positive" % nbytes)
        self.nbytes = nbytes

    def __repr__(self):
        return "zex.local(%d)" % self.nbytes


def local(nbytes):
    """A __local kernel parameter of `nbytes` bytes, for Stream.launch."""
    return Local(nbytes)


class _Byte(ctypes.Union):
    """One byte whose ctypes buffer format is "B". ctypes exports an array of c_ubyte with the format
    "<B", which memoryview.cast() refuses to cast from ("cannot cast between two non-byte formats":
    only native single-character formats cast); a union's format is always plain "B" (ctypes describes
    unions as bytes, PEP 3118 has no unions), so an array of this one-byte union is a native byte
    buffer on every Python 3."""
    _fields_ = [("value", ctypes.c_ubyte)]


class SharedBuffer:
    """Shared USM from Context.alloc_shared. ``ptr`` is its address (an int); it exports the buffer
    protocol (memoryview(buf), numpy.frombuffer(buf, dtype)), writable, over its bytes; launch
    arguments pass it as a pointer. free() (or the end of a with block, or closing the Context)
    returns the memory at once.

    Views: a memoryview or numpy array of the buffer points into the USM. On Python 3.12+ zex counts
    them and free() raises BufferError while one is alive (release the memoryview, drop the array);
    on Python 3.11 it cannot see them, so a view used after free() reads freed memory: drop your
    views first. Every Python version: free() while an unsynchronized launch uses the buffer raises
    InvalidState, and after free() .ptr, launching with it and new views raise InvalidState.

    The view's format is "B" (unsigned bytes, native), so memoryview(buf).cast("f") (or "I", "d", ...)
    views it as another type, as for a bytearray. buf[i] and buf[i:j] read bytes as ints, as before.

    Each size has its own class (a subclass of _Byte * n, which gives the buffer protocol on Python
    3.11 and older without a compiled extension); isinstance(x, zex.SharedBuffer) holds for all."""
    __slots__ = ()
    _classes = {}

    @classmethod
    def _make(cls, context, ptr, nbytes):
        sub = cls._classes.get(nbytes)
        if sub is None:
            sub = type("SharedBuffer", (SharedBuffer, _Byte * nbytes), {"__module__": __name__})
            if len(cls._classes) < 256:  # the usual few sizes; any other size gets a class of its own
                cls._classes[nbytes] = sub
        self = sub.from_address(ptr)
        self.context = context
        self.nbytes = nbytes
        self._exports = 0
        self._arg = _c_void_p(ptr)          # the launch argument's value: the pointer
        self._arg_addr = _addressof(self._arg)
        lib = context._lib
        ch = context._cell.handle
        self._cell = _Cell(ptr, lambda p: lib.zex_context_free(ch, p), 3, "SharedBuffer", context._cell)
        return self

    @property
    def ptr(self):
        p = self._cell.handle
        if p is None:
            raise InvalidState("zex: this SharedBuffer was freed")
        return p

    @property
    def freed(self):
        return self._cell.handle is None

    def free(self):
        """Returns the memory now (idempotent). Raises InvalidState while an unsynchronized launch
        uses it, and on Python 3.12+ BufferError while a memoryview or numpy array of it is alive."""
        with _lock:
            if self._cell.handle is None:
                return
            if self._exports:
                raise BufferError("zex: cannot free this SharedBuffer: %d memoryview(s) or numpy array(s) of it "
                                  "are still alive (release or delete them first)" % self._exports)
            self._cell.close(check=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __del__(self):
        _finalize(self)

    # Python 3.12+ (PEP 688): exports go through here, so they are counted and a freed buffer exports nothing.
    def __buffer__(self, flags):
        p = self._cell.handle
        if p is None:
            raise InvalidState("zex: this SharedBuffer was freed")
        with _lock:
            self._exports += 1
        return memoryview((ctypes.c_ubyte * self.nbytes).from_address(p)).cast("B")

    def __release_buffer__(self, view):
        with _lock:
            self._exports -= 1
        view.release()

    # Indexing gives ints (the bytes), not _Byte unions: through a c_ubyte array at the same address.
    def _bytes(self):
        return (ctypes.c_ubyte * self.nbytes).from_address(self.ptr)

    def __getitem__(self, index):
        return self._bytes()[index]

    def __setitem__(self, index, value):
        self._bytes()[index] = value

    def __repr__(self):
        return "<zex.SharedBuffer %d bytes %s>" % (self.nbytes, "freed" if self.freed else "at " + hex(self._cell.handle))


class Module(_Handle):
    """A SPIR-V module on a device: zex.Module(dev, spirv), spirv being bytes-like or a path (str or
    os.PathLike) of a .spv file. zex validates it, links its device library in and builds it per
    debug level on first use. Keeps the Device (and Context) alive; closing it closes its kernels
    (InvalidState if an unsynchronized launch uses one)."""
    _what = "Module"

    def __init__(self, device, spirv):
        if not isinstance(device, Device):
            raise InvalidArgument("zex.Module(device, spirv): device must be a zex.Device, not %s" % type(device).__name__)
        if isinstance(spirv, (str, os.PathLike)):
            with open(spirv, "rb") as f:
                spirv = f.read()
        else:
            try:
                spirv = bytes(memoryview(spirv).cast("B"))
            except TypeError:
                raise InvalidArgument("zex.Module: spirv must be bytes-like or a path, not %s"
                                      % type(spirv).__name__) from None
        lib = device.context._lib
        dh = device._handle()
        out = _c_void_p()
        r = lib.zex_module_create(dh, spirv, len(spirv), _byref(out))
        if r:
            _raise_last(r, lib)
        self.device = device
        self._lib = lib
        self._cell = _Cell(out.value, lib.zex_module_destroy, 2, "Module", device.context._cell)

    def kernel(self, name):
        """The kernel `name` (a new zex.Kernel each call: give each thread its own to launch in parallel)."""
        return Kernel(self, name)

    @property
    def build_log(self):
        """The driver's build log of the last build ("" if none, or if the library lacks it)."""
        fn = getattr(self._lib, "zex_module_build_log", None)
        if fn is None:
            return ""
        out = ctypes.c_char_p()
        r = fn(self._handle(), _byref(out))
        if r:
            _raise_last(r, self._lib)
        return _text(out.value)


class Kernel(_Handle):
    """A kernel of a Module (mod.kernel(name)); keeps the Module alive."""
    _what = "Kernel"

    def __init__(self, module, name):
        if not isinstance(module, Module):
            raise InvalidArgument("zex.Kernel(module, name): module must be a zex.Module")
        lib = module._lib
        out = _c_void_p()
        r = lib.zex_kernel_create(module._handle(), str(name).encode("utf-8"), _byref(out))
        if r:
            _raise_last(r, lib)
        self.module = module
        self.name = str(name)
        self._lib = lib
        self._cell = _Cell(out.value, lib.zex_kernel_destroy, 1, "Kernel", module._cell)

    @property
    def handle(self):
        """The ze_kernel_handle_t at debug level 1 (an int), owned by this Kernel, for interop."""
        return self._lib.zex_kernel_handle(self._handle())

    def __repr__(self):
        return "<zex.Kernel %r>" % self.name


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


_FILES = {}  # co_filename -> its bytes, kept for the process's life: zex keeps the pointer (launch_at)


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

    def launch(self, kernel, groups, group_size, *args, debug_level=-1):
        """Appends `kernel` with `groups` work-groups of `group_size` work-items (ints or sequences of
        up to 3 ints) and the kernel's arguments, without its zex_state_t (zex appends it): ctypes
        scalars or structures (ctypes.c_uint32(n), ...), SharedBuffers (passed as pointers),
        zex.local(nbytes) for __local parameters. debug_level: 0, 1 or 2, -1 for the stream's
        default (ZEX_DEBUG_LEVEL, else 1). Errors raise InvalidArgument etc. and launch nothing.

        The caller's file and line (its frame, sys._getframe(1): one frame, nothing walked) are the
        launch site a KernelException of this launch reports (e.launch_site). A helper that launches
        for its callers reports its own line."""
        h = self._cell.handle
        if h is None:
            raise _closed("Stream")
        if type(kernel) is not Kernel and not isinstance(kernel, Kernel):
            raise InvalidArgument("zex: Stream.launch takes a zex.Kernel first, not %s" % type(kernel).__name__)
        kh = kernel._cell.handle
        if kh is None:
            raise _closed("Kernel")
        try:
            cfg = _CONFIGS[(groups, group_size, debug_level)]  # zex_launch_config_t, packed, per distinct config
        except (KeyError, TypeError):
            cfg = _config(groups, group_size, debug_level)
        n = len(args)
        buffers = keep = None
        if n:
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
            arr = _arg_struct(n).pack(*vals)  # bytes: C reads them in place
        else:
            arr = None
        f = sys._getframe(1)
        fn = f.f_code.co_filename
        file = _FILES.get(fn)
        if file is None:
            file = _FILES[fn] = fn.encode("utf-8", "surrogateescape")
        r = self._launch(h, kh, cfg, n, arr, file, f.f_lineno)
        if r:
            _raise_last(r, self._lib)
        refs = self._cell.refs
        if id(kernel) not in refs:
            refs[id(kernel)] = kernel
            kernel._cell.inflight += 1
        if buffers:
            for b in buffers:
                if id(b) not in refs:
                    refs[id(b)] = b
                    b._cell.inflight += 1

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
    return KernelException(_text(lib.zex_exception_message_for(e, L.LANGUAGE_PYTHON)), **L.exception_attributes(info))
