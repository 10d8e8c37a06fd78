"""Finding, loading and declaring libzex, the C API of zex (include/zex/zex.h), with ctypes.

The library is loaded on first use, not at import, so that ``import zex`` always works and a missing
library is a catchable ``zex.LibraryNotFoundError`` that says where zex looked.
"""
import ctypes
import glob
import os
import sys
import sysconfig
import threading

from ._errors import LibraryNotFoundError, LibraryVersionError

#: The C API version this package is written against (ZEX_C_API_VERSION of include/zex/zex.h).
C_API_VERSION = 1
#: The library's file name: its SONAME carries the C API version.
SONAME = "libzex.so.%d" % C_API_VERSION

# zex_result_t
SUCCESS = 0
ERROR_KERNEL_EXCEPTION = 1
ERROR_LEVEL_ZERO = 2
ERROR_INVALID_ARGUMENT = 3
ERROR_OUT_OF_HOST_MEMORY = 4
ERROR_INVALID_STATE = 5
ERROR_UNKNOWN = 6

# zex_language_t
LANGUAGE_CPP = 0
LANGUAGE_C = 1
LANGUAGE_PYTHON = 2
LANGUAGE_JULIA = 3


class LaunchConfig(ctypes.Structure):
    """zex_launch_config_t"""
    _fields_ = [("groups", ctypes.c_uint32 * 3),
                ("group_size", ctypes.c_uint32 * 3),
                ("debug_level", ctypes.c_int)]


class Arg(ctypes.Structure):
    """zex_arg_t: value NULL means a __local parameter of `size` bytes."""
    _fields_ = [("size", ctypes.c_size_t), ("value", ctypes.c_void_p)]


class ExceptionFrame(ctypes.Structure):
    """zex_exception_frame_t: one frame of a kernel exception's stacktrace."""
    _fields_ = [("function", ctypes.c_char_p),
                ("file", ctypes.c_char_p),
                ("line", ctypes.c_uint32)]


class MemoryChecks(ctypes.Structure):
    """zex_memory_checks_t (zex_module_memory_checks)."""
    _fields_ = [("enabled", ctypes.c_int), ("checked", ctypes.c_size_t), ("loaded", ctypes.c_size_t),
                ("from_integer", ctypes.c_size_t), ("untraced", ctypes.c_size_t), ("local", ctypes.c_size_t)]


class ExceptionInfo(ctypes.Structure):
    """zex_exception_info_t: the one projection of zex::KernelExceptionInfo, filled by zex_exception_info.
    KernelException's attributes are made from these fields by exception_attributes(), so a field
    appended here (as in zex.h) is an attribute without more code; python/tests/test_header.py checks
    this against zex.h, and zex.h's struct against include/zex/exception.hpp."""
    _fields_ = [("size", ctypes.c_size_t),
                ("debug_level", ctypes.c_int),
                ("abi_version", ctypes.c_uint32),
                ("name", ctypes.c_char_p),
                ("reason", ctypes.c_char_p),
                ("kernel_name", ctypes.c_char_p),
                ("device_name", ctypes.c_char_p),
                ("launch_id", ctypes.c_uint64),
                ("global_id", ctypes.POINTER(ctypes.c_uint64)),
                ("group_id", ctypes.POINTER(ctypes.c_uint64)),
                ("local_id", ctypes.POINTER(ctypes.c_uint64)),
                ("frames", ctypes.POINTER(ExceptionFrame)),
                ("frame_count", ctypes.c_uint32),
                ("frame_depth", ctypes.c_uint32),
                ("values", ctypes.POINTER(ctypes.c_uint64)),
                ("value_count", ctypes.c_uint32),
                ("value_kind", ctypes.c_uint32),
                ("thrower_count", ctypes.c_uint64),
                ("launch_site_file", ctypes.c_char_p),
                ("launch_site_line", ctypes.c_uint32),
                ("execution_known", ctypes.c_uint32),
                ("execution_index", ctypes.c_uint64),
                ("executions_thrown", ctypes.c_uint64),
                ("executions_synchronized", ctypes.c_uint64),
                ("graph_name", ctypes.c_char_p)]


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


def _launch_site(file, line):
    from ._errors import LaunchSite
    return LaunchSite(_text(file), line) if file is not None else None


# Fields that make one attribute together (<attribute>_<part>): the attribute from the parts' values.
_GROUPS = {"launch_site": _launch_site, "execution": lambda known, index: index if known else None}
# Integer defaults other than 0, as zex::KernelExceptionInfo has them.
_INT_DEFAULTS = {"debug_level": 1, "thrower_count": 1}


def _plan():
    """[(attribute, field names, convert(*values), default)] for exception_attributes, from ExceptionInfo's
    fields by their C types: a `T* xs` with a `uint32_t x_count` is a sequence (frames: a list of
    (function, file, line); others: a tuple), a `uint64_t*` alone is a 3-tuple or None, a string is a
    str ("" for NULL), an integer an int; `size` is the struct's own. The default is what the
    conversion makes of a NULL or 0 (an exception built by hand, or a field an older library lacks)."""
    fields = dict(ExceptionInfo._fields_)
    plan, grouped = [], {}
    for name, t in ExceptionInfo._fields_:
        if name == "size" or (name.endswith("_count") and name[:-len("_count")] + "s" in fields):
            continue
        group = next((g for g in _GROUPS if name.startswith(g + "_")), None)
        if group is not None:
            if group not in grouped:
                grouped[group] = [n for n, _ in ExceptionInfo._fields_ if n.startswith(group + "_")]
                plan.append((group, grouped[group], _GROUPS[group], None))
            continue
        count = name[:-1] + "_count" if name.endswith("s") else None
        if count in fields:
            if getattr(t, "_type_", None) is ExceptionFrame:
                conv = (lambda p, n: [(_text(f.function), _text(f.file), f.line) for f in p[:n]] if p else [])
            else:
                conv = (lambda p, n: tuple(p[:n]) if p else ())
            plan.append((name, [name, count], conv, conv(None, 0)))
        elif t is ctypes.c_char_p:
            plan.append((name, [name], _text, ""))
        elif issubclass(t, ctypes._Pointer):
            plan.append((name, [name], lambda p: tuple(p[:3]) if p else None, None))
        elif issubclass(t, ctypes._SimpleCData) and isinstance(t(0).value, int):
            plan.append((name, [name], int, _INT_DEFAULTS.get(name, 0)))
        else:
            raise TypeError("zex: ExceptionInfo.%s has a type exception_attributes cannot convert" % name)
    return plan


_PLAN = _plan()


def exception_attributes(info):
    """KernelException's attributes from a filled ExceptionInfo: one per field of zex::KernelExceptionInfo.
    Fields past info.size (a library older than this package) are left out: they keep their defaults."""
    offsets = {name: (getattr(ExceptionInfo, name).offset + getattr(ExceptionInfo, name).size)
               for name, _ in ExceptionInfo._fields_}
    attrs = {}
    for attr, names, convert, _ in _PLAN:
        if all(offsets[n] <= info.size for n in names):
            attrs[attr] = convert(*(getattr(info, n) for n in names))
    return attrs


def exception_defaults():
    """{attribute: default} of every KernelException attribute (fresh lists: the caller may keep them)."""
    return {attr: (list(d) if isinstance(d, list) else d) for attr, _, _, d in _PLAN}


_h = ctypes.c_void_p          # every opaque handle: zex_*_t and ze_*_handle_t
_hp = ctypes.POINTER(ctypes.c_void_p)
_res = ctypes.c_int           # zex_result_t
_str = ctypes.c_char_p

# name: (restype, argtypes). Every name here must be in the library; OPTIONAL ones may be missing.
DECLARATIONS = {
    "zex_c_api_version": (ctypes.c_uint32, ()),
    "zex_last_error_message": (_str, ()),
    "zex_last_ze_result": (ctypes.c_uint32, ()),
    "zex_last_error_call": (_str, ()),
    "zex_context_create": (_res, (_hp,)),
    "zex_context_adopt": (_res, (_h, _h, _hp)),
    "zex_context_destroy": (None, (_h,)),
    "zex_device_count": (_res, (_h, ctypes.POINTER(ctypes.c_uint32))),
    "zex_device_get": (_res, (_h, ctypes.c_uint32, _hp)),
    "zex_device_sub_device_count": (_res, (_h, ctypes.POINTER(ctypes.c_uint32))),
    "zex_device_sub_device_get": (_res, (_h, ctypes.c_uint32, _hp)),
    "zex_device_for_handle": (_res, (_h, _h, _hp)),
    "zex_context_alloc_shared": (_res, (_h, _h, ctypes.c_size_t, ctypes.c_size_t, _hp)),
    "zex_context_free": (_res, (_h, _h)),
    "zex_module_create": (_res, (_h, ctypes.c_void_p, ctypes.c_size_t, _hp)),
    "zex_module_destroy": (None, (_h,)),
    "zex_module_create_with_options": (_res, (_h, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint32, _hp)),
    "zex_module_memory_checks": (_res, (_h, ctypes.POINTER(MemoryChecks))),
    "zex_forget_memory_bounds": (None, ()),
    "zex_kernel_hidden_argument_count": (_res, (_h, ctypes.POINTER(ctypes.c_uint32))),
    "zex_kernel_checked_arguments": (_res, (_h, ctypes.POINTER(ctypes.c_uint32), ctypes.c_uint32,
                                             ctypes.POINTER(ctypes.c_uint32))),
    "zex_kernel_create": (_res, (_h, _str, _hp)),
    "zex_kernel_destroy": (None, (_h,)),
    "zex_stream_create": (_res, (_h, _hp)),
    "zex_stream_destroy": (None, (_h,)),
    "zex_stream_set_language": (_res, (_h, ctypes.c_int)),
    # config and args as c_void_p: the package passes them packed in bytes (struct), the fastest way in
    "zex_stream_launch": (_res, (_h, _h, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p)),
    # file as c_char_p: the package passes bytes it keeps for the process's life (zex keeps the pointer)
    "zex_stream_launch_at": (_res, (_h, _h, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, _str,
                                    ctypes.c_uint32)),
    "zex_stream_synchronize": (_res, (_h, _hp)),
    "zex_stream_synchronize_for": (_res, (_h, ctypes.c_uint64, ctypes.POINTER(ctypes.c_int), _hp)),
    "zex_exception_message": (_str, (_h,)),
    "zex_exception_message_for": (_str, (_h, ctypes.c_int)),
    # Everything else of an exception comes in one struct (the zex_exception_* accessors are not used).
    "zex_exception_info": (_res, (_h, ctypes.POINTER(ExceptionInfo))),
    "zex_exception_destroy": (None, (_h,)),
    "zex_stream_record": (_res, (_h, _hp)),
    "zex_event_synchronize": (_res, (_h, _hp)),
    "zex_event_ready": (_res, (_h, ctypes.POINTER(ctypes.c_int))),
    "zex_stream_wait_event": (_res, (_h, _h)),
    "zex_event_handle": (_h, (_h,)),
    "zex_event_destroy": (None, (_h,)),
    "zex_graph_create": (_res, (_h, _str, _hp)),
    "zex_graph_adopt": (_res, (_h, _h, _str, _hp)),
    "zex_graph_set_language": (_res, (_h, ctypes.c_int)),
    "zex_graph_set_stop_on_throw": (_res, (_h, ctypes.c_int)),
    "zex_stream_set_stop_on_throw": (_res, (_h, ctypes.c_int)),
    "zex_graph_launch_at": (_res, (_h, _h, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p, _str,
                                   ctypes.c_uint32)),
    "zex_graph_launches": (ctypes.c_uint64, (_h,)),
    "zex_graph_update": (_res, (_h, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_void_p)),
    "zex_graph_close": (_res, (_h,)),
    "zex_graph_executions": (ctypes.c_uint64, (_h,)),
    "zex_graph_handle": (_h, (_h,)),
    "zex_graph_destroy": (None, (_h,)),
    "zex_queue_create": (_res, (_h, _hp)),
    "zex_queue_adopt": (_res, (_h, _h, _hp)),
    "zex_queue_execute": (_res, (_h, _h)),
    "zex_stream_execute": (_res, (_h, _h)),
    "zex_queue_synchronize": (_res, (_h, _hp)),
    "zex_queue_synchronize_for": (_res, (_h, ctypes.c_uint64, ctypes.POINTER(ctypes.c_int), _hp)),
    "zex_queue_handle": (_h, (_h,)),
    "zex_queue_destroy": (None, (_h,)),
    "zex_exception_other_count": (ctypes.c_uint32, (_h,)),
    "zex_exception_other": (_res, (_h, ctypes.c_uint32, _hp)),
    "zex_module_build_log": (_res, (_h, ctypes.POINTER(_str))),
    "zex_context_handle": (_h, (_h,)),
    "zex_driver_handle": (_h, (_h,)),
    "zex_device_handle": (_h, (_h,)),
    "zex_stream_handle": (_h, (_h,)),
    "zex_kernel_handle": (_h, (_h,)),
    "zex_last_device_report": (ctypes.c_int, (ctypes.POINTER(_str), ctypes.POINTER(_str),
                                              ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32))),
    "zex_last_device_counter": (ctypes.c_int, (ctypes.c_uint32, ctypes.POINTER(_str), ctypes.POINTER(_str),
                                               ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64))),
    "zex_last_device_record": (ctypes.c_int, (ctypes.c_uint32, ctypes.POINTER(_str),
                                              ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)),
                                              ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(_str))),
    "zex_last_device_info_log": (_str, ()),
    "zex_last_device_note": (_str, (ctypes.c_uint32,)),
}
# Newer than the first libzex.so.1: a library without them still loads (no device reports then).
OPTIONAL = {"zex_module_build_log", "zex_last_device_report", "zex_last_device_counter", "zex_last_device_record",
            "zex_last_device_info_log", "zex_last_device_note"}
# Version node ZEX_1.2 (graphs and queues): a library without them loads; zex.Graph and zex.Queue then
# raise LibraryVersionError (require()).
GRAPHS = {name for name in DECLARATIONS if name.startswith(("zex_graph_", "zex_queue_", "zex_exception_other"))} | {
    "zex_stream_execute"}
OPTIONAL |= GRAPHS
# Version node ZEX_1.3 (early stop): without them, launch(stop_on_throw=True) raises LibraryVersionError.
OPTIONAL |= {"zex_stream_set_stop_on_throw", "zex_graph_set_stop_on_throw"}
# Version node ZEX_1.4 (updating a recorded launch): without them, Graph.update raises LibraryVersionError.
OPTIONAL |= {"zex_graph_launches", "zex_graph_update"}
# Version node ZEX_1.5 (memory checks): without them, Module(check_memory=True) raises LibraryVersionError.
OPTIONAL |= {"zex_module_create_with_options", "zex_module_memory_checks", "zex_forget_memory_bounds",
             "zex_kernel_hidden_argument_count"}
# Version node ZEX_1.6: without it, Kernel.checked_arguments raises LibraryVersionError.
OPTIONAL |= {"zex_kernel_checked_arguments"}


def package_dir():
    return os.path.dirname(os.path.abspath(__file__))


def prefix_dirs():
    """The library directories of the install prefixes this Python installs into (a venv's, or
    /usr/local and /usr on Debian), where `cmake --install build --prefix <prefix>` puts libzex."""
    dirs = []
    multiarch = sysconfig.get_config_var("MULTIARCH")
    for prefix in (sysconfig.get_paths().get("data"), sys.prefix):
        if not prefix:
            continue
        for d in (os.path.join(prefix, "lib"), os.path.join(prefix, "lib", multiarch) if multiarch else None):
            if d and d not in dirs:
                dirs.append(d)
    return dirs


def candidates():
    """Where zex looks, in order: [(description, path or soname), ...]. $ZEX_LIBRARY, when set, is
    the only candidate: a library you name is never silently replaced by another one."""
    env = os.environ.get("ZEX_LIBRARY")
    if env:
        return [("ZEX_LIBRARY", env)]
    found = []
    here = package_dir()
    names = sorted(glob.glob(os.path.join(here, "libzex.so*")), key=lambda p: (p != os.path.join(here, SONAME), p))
    found += [("next to the package", p) for p in names] or [("next to the package", os.path.join(here, SONAME))]
    found += [("install prefix", os.path.join(d, SONAME)) for d in prefix_dirs()]
    found.append(("the dynamic linker's search path (LD_LIBRARY_PATH, ldconfig)", SONAME))
    return found


def _open(path):
    # RTLD_GLOBAL is not needed: libzex links the Level Zero loader itself.
    return ctypes.CDLL(path)


def load(opener=_open):
    """Loads the first candidate that opens; returns (CDLL, path). Raises LibraryNotFoundError with
    every place tried and why each failed, or LibraryVersionError."""
    tried = []
    for where, path in candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s: %s (no such file)" % (where, path))
            continue
        try:
            lib = opener(path)
        except OSError as e:
            tried.append("%s: %s (%s)" % (where, path, e))
            continue
        declare(lib, path)
        return lib, path
    env_set = bool(os.environ.get("ZEX_LIBRARY"))
    msg = "zex: cannot load libzex (the zex C API, %s). Tried:\n  %s" % (SONAME, "\n  ".join(tried))
    if env_set:
        msg += ("\nZEX_LIBRARY is set, so nowhere else was searched; unset it to search next to the "
                "package (%s), the install prefix (%s) and the dynamic linker's path."
                % (package_dir(), ", ".join(prefix_dirs())))
    else:
        msg += ("\nBuild zex (make, or cmake --build build) and set ZEX_LIBRARY=<build>/src/%s, or install it "
                "(cmake --install build --prefix <prefix>)." % SONAME)
    raise LibraryNotFoundError(msg, tried)


def declare(lib, path):
    """Sets restype/argtypes of every function of the contract on `lib` and checks the C API version."""
    try:
        version_fn = lib.zex_c_api_version
    except AttributeError:
        raise LibraryVersionError("zex: %s is not libzex: it has no zex_c_api_version" % path, None, path) from None
    version_fn.restype, version_fn.argtypes = ctypes.c_uint32, ()
    version = version_fn()
    if version != C_API_VERSION:
        raise LibraryVersionError(
            "zex: %s has C API version %d, but this zex Python package (%s) needs version %d: install the "
            "Python package and the library from the same zex" % (path, version, package_dir(), C_API_VERSION),
            version, path)
    missing = []
    for name, (restype, argtypes) in DECLARATIONS.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            if name not in OPTIONAL:
                missing.append(name)
            continue
        fn.restype = restype
        fn.argtypes = argtypes
    if missing:
        raise LibraryVersionError("zex: %s (C API version %d) lacks %s" % (path, version, ", ".join(missing)),
                                  version, path)


def require_graphs(lib):
    """LibraryVersionError unless `lib` has the graph and queue functions (zex.Graph, zex.Queue)."""
    if not hasattr(lib, "zex_graph_create"):
        raise LibraryVersionError("zex: %s has no zex_graph_create (version node ZEX_1.2): zex.Graph and zex.Queue "
                                  "need the libzex of this Python package's zex" % library_path(), C_API_VERSION,
                                  library_path())


_lock = threading.Lock()
_loaded = None  # (CDLL, path)


def lib():
    """The loaded library (loads it on the first call)."""
    global _loaded
    if _loaded is None:
        with _lock:
            if _loaded is None:
                _loaded = load()
    return _loaded[0]


def library_path():
    """The path (or soname) of the loaded libzex; loads it if needed."""
    lib()
    return _loaded[1]
