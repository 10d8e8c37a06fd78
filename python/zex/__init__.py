"""zex: device-side exceptions for Level Zero, from Python.

Pure Python over libzex (the zex C API, include/zex/zex.h) with ctypes. libzex is found through
$ZEX_LIBRARY (its path), else next to this package, else in the install prefix, else on the dynamic
linker's path; it is loaded on first use. See docs/integration.md, "Python".

    import ctypes, zex
    with zex.Context() as ctx:
        dev = ctx.device(0)
        vadd = zex.Module(dev, "vadd.spv").kernel("vadd")
        stream = zex.Stream(dev)
        stream.launch(vadd, groups, 64, c, a, b, ctypes.c_uint32(n), debug_level=2)
        try:
            stream.synchronize()
        except zex.KernelException as e:
            print(e.name, e.reason, e.values, e.thrower_count, e.launch_site, e.global_id, e.frames)
"""
from ._errors import (DeviceRecord, DeviceReport, Error, InvalidArgument, InvalidState, KernelException, LaunchSite,
                      LibraryNotFoundError, LibraryVersionError, OutOfHostMemory, RasCounter, UnknownError, ZeError,
                      ZeResult)
from ._core import Context, Device, Kernel, Local, Module, SharedBuffer, local
from ._stream import Event, Stream
from ._graph import Graph, Queue
from ._library import C_API_VERSION

__version__ = "0.1.0"

__all__ = [
    "Context", "Device", "Module", "Kernel", "Stream", "Event", "Graph", "Queue", "SharedBuffer", "Local", "local",
    "Error", "KernelException", "LaunchSite", "ZeError", "ZeResult", "InvalidArgument", "InvalidState", "OutOfHostMemory",
    "UnknownError", "DeviceReport", "DeviceRecord", "RasCounter", "LibraryNotFoundError", "LibraryVersionError", "C_API_VERSION", "library_path",
    "forget_memory_bounds",
]


def library_path():
    """The libzex this process uses (loads it now if needed; raises LibraryNotFoundError if none)."""
    from . import _library
    return _library.library_path()


def forget_memory_bounds():
    """Forgets the allocation bounds the memory checks (Module(check_memory=True)) cached per kernel
    argument: call it after freeing memory whose address a new allocation of another size may take."""
    from . import _library
    fn = getattr(_library.lib(), "zex_forget_memory_bounds", None)
    if fn is not None:
        fn()
