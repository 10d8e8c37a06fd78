"""zex's objects over the C API: Context, Device, SharedBuffer, Module, Kernel, local (streams and
events: _stream.py).

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
import os
import threading

from . import _library as L
from ._errors import (DeviceRecord, DeviceReport, InvalidArgument, InvalidState, RasCounter,
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
                                   "(call stream.synchronize() first, or close the zex.Graph that recorded it)" % self.what)
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

    def __init__(self, device, spirv, check_memory=False):
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
        if type(check_memory) is not bool:
            raise InvalidArgument("zex.Module: check_memory must be True or False, not %r" % (check_memory,))
        if check_memory:
            fn = getattr(lib, "zex_module_create_with_options", None)
            if fn is None:
                raise L.LibraryVersionError("zex: %s has no zex_module_create_with_options (version node ZEX_1.5): "
                                            "check_memory=True needs the libzex of this Python package's zex"
                                            % L.library_path(), L.C_API_VERSION, L.library_path())
            r = fn(dh, spirv, len(spirv), 1, _byref(out))  # ZEX_MODULE_CHECK_MEMORY
        else:
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
    def memory_checks(self):
        """What the module's memory checks cover (check_memory=True or ZEX_CHECK_MEMORY=1): a dict of
        enabled (bool) and the global accesses checked and left unchecked by reason (loaded,
        from_integer, untraced, local); {"enabled": False, ...zeros} without them or an older libzex."""
        fn = getattr(self._lib, "zex_module_memory_checks", None)
        c = L.MemoryChecks()
        if fn is not None:
            r = fn(self._handle(), _byref(c))
            if r:
                _raise_last(r, self._lib)
        return {"enabled": bool(c.enabled), "checked": c.checked, "loaded": c.loaded,
                "from_integer": c.from_integer, "untraced": c.untraced, "local": c.local}

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
    def checked_arguments(self):
        """The kernel's own arguments (indices, ascending) whose allocation bounds the hidden struct
        carries; [] without checks."""
        fn = getattr(self._lib, "zex_kernel_checked_arguments", None)
        if fn is None:
            raise L.LibraryVersionError("zex: %s has no zex_kernel_checked_arguments (version node ZEX_1.6): "
                                        "Kernel.checked_arguments needs the libzex of this Python package's zex"
                                        % L.library_path(), L.C_API_VERSION, L.library_path())
        n = ctypes.c_uint32()
        r = fn(self._handle(), None, 0, _byref(n))
        if r:
            _raise_last(r, self._lib)
        out = (ctypes.c_uint32 * max(n.value, 1))()
        r = fn(self._handle(), out, n.value, _byref(n))
        if r:
            _raise_last(r, self._lib)
        return list(out[:n.value])

    @property
    def hidden_argument_count(self):
        """The parameters zex's memory checks added before the zex_state_t: 1 (a by-value struct of
        two uint64, allocation base and end, per checked_arguments entry; every launch sets it) when
        any argument is checked, else 0."""
        fn = getattr(self._lib, "zex_kernel_hidden_argument_count", None)
        if fn is None:
            return 0
        n = ctypes.c_uint32()
        r = fn(self._handle(), _byref(n))
        if r:
            _raise_last(r, self._lib)
        return n.value

    @property
    def handle(self):
        """The ze_kernel_handle_t at debug level 1 (an int), owned by this Kernel, for interop."""
        return self._lib.zex_kernel_handle(self._handle())

    def __repr__(self):
        return "<zex.Kernel %r>" % self.name
