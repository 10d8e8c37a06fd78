"""zex's Python exceptions. Every one derives from zex.Error; the C API's zex_result_t codes map to
one class each (see _from_result)."""
import collections
import enum


class ZeResult(enum.IntEnum):
    """ze_result_t values (level_zero/ze_api.h). ZeError.result is one of these when known, else an int."""
    SUCCESS = 0
    NOT_READY = 1
    ERROR_DEVICE_LOST = 0x70000001
    ERROR_OUT_OF_HOST_MEMORY = 0x70000002
    ERROR_OUT_OF_DEVICE_MEMORY = 0x70000003
    ERROR_MODULE_BUILD_FAILURE = 0x70000004
    ERROR_MODULE_LINK_FAILURE = 0x70000005
    ERROR_DEVICE_REQUIRES_RESET = 0x70000006
    ERROR_DEVICE_IN_LOW_POWER_STATE = 0x70000007
    ERROR_INSUFFICIENT_PERMISSIONS = 0x70010000
    ERROR_NOT_AVAILABLE = 0x70010001
    ERROR_DEPENDENCY_UNAVAILABLE = 0x70020000
    WARNING_DROPPED_DATA = 0x70020001
    ERROR_UNINITIALIZED = 0x78000001
    ERROR_UNSUPPORTED_VERSION = 0x78000002
    ERROR_UNSUPPORTED_FEATURE = 0x78000003
    ERROR_INVALID_ARGUMENT = 0x78000004
    ERROR_INVALID_NULL_HANDLE = 0x78000005
    ERROR_HANDLE_OBJECT_IN_USE = 0x78000006
    ERROR_INVALID_NULL_POINTER = 0x78000007
    ERROR_INVALID_SIZE = 0x78000008
    ERROR_UNSUPPORTED_SIZE = 0x78000009
    ERROR_UNSUPPORTED_ALIGNMENT = 0x7800000A
    ERROR_INVALID_SYNCHRONIZATION_OBJECT = 0x7800000B
    ERROR_INVALID_ENUMERATION = 0x7800000C
    ERROR_UNSUPPORTED_ENUMERATION = 0x7800000D
    ERROR_UNSUPPORTED_IMAGE_FORMAT = 0x7800000E
    ERROR_INVALID_NATIVE_BINARY = 0x7800000F
    ERROR_INVALID_GLOBAL_NAME = 0x78000010
    ERROR_INVALID_KERNEL_NAME = 0x78000011
    ERROR_INVALID_FUNCTION_NAME = 0x78000012
    ERROR_INVALID_GROUP_SIZE_DIMENSION = 0x78000013
    ERROR_INVALID_GLOBAL_WIDTH_DIMENSION = 0x78000014
    ERROR_INVALID_KERNEL_ARGUMENT_INDEX = 0x78000015
    ERROR_INVALID_KERNEL_ARGUMENT_SIZE = 0x78000016
    ERROR_INVALID_KERNEL_ATTRIBUTE_VALUE = 0x78000017
    ERROR_INVALID_MODULE_UNLINKED = 0x78000018
    ERROR_INVALID_COMMAND_LIST_TYPE = 0x78000019
    ERROR_OVERLAPPING_REGIONS = 0x7800001A
    WARNING_ACTION_REQUIRED = 0x7800001B
    ERROR_UNKNOWN = 0x7FFFFFFE


class Error(Exception):
    """Base class of every exception zex raises."""


RasCounter = collections.namedtuple("RasCounter", "set category at_creation now")
RasCounter.__doc__ = "A RAS error counter that changed since the context was created (zex::RasCounter)."
DeviceRecord = collections.namedtuple("DeviceRecord", "format bytes summary")
DeviceRecord.__doc__ = "An Info Log record: its format ('CPER'), its bytes, and zex's one-line decoding."
DeviceReport = collections.namedtuple("DeviceReport", "device state counters records info_log notes")
DeviceReport.__doc__ = ("What zex collected about a lost device (zex::DeviceReport): its name, its state in "
                        "words, the RAS counters that changed (RasCounter), the Info Log records (DeviceRecord), "
                        "why there are no records ('' if the Info Log was read), and what could not be read.")


class ZeError(Error):
    """A Level Zero call failed. ``result`` is the ze_result_t (a ZeResult when known), ``call`` the
    Level Zero function's name; str(e) names both, says what zex was doing and what to do. After a device
    loss, ``device_report`` is a DeviceReport (else None) and str(e) ends with its summary."""

    def __init__(self, message, result=None, call="", device_report=None):
        super().__init__(message)
        try:
            self.result = ZeResult(result) if result is not None else None
        except ValueError:
            self.result = result
        self.call = call
        self.device_report = device_report

    def __reduce__(self):
        return (type(self), (self.args[0], None if self.result is None else int(self.result), self.call,
                             self.device_report))


class InvalidArgument(Error, ValueError):
    """An argument zex rejected (ZEX_ERROR_INVALID_ARGUMENT, or found in Python before the C call):
    invalid SPIR-V, an unknown kernel, a wrong argument count or type, a bad debug level... Nothing
    was launched; the stream is unchanged."""


class OutOfHostMemory(Error, MemoryError):
    """ZEX_ERROR_OUT_OF_HOST_MEMORY."""


class InvalidState(Error, RuntimeError):
    """Use of an object in a state that forbids it: closed, freed, still in use by a launch, or a
    stream used from two threads at once (ZEX_ERROR_INVALID_STATE)."""


class UnknownError(Error, RuntimeError):
    """ZEX_ERROR_UNKNOWN: anything else the C API caught."""


class LibraryNotFoundError(Error, OSError):
    """libzex could not be loaded. ``tried`` lists every place zex looked and why it failed."""

    def __init__(self, message, tried=()):
        super().__init__(message)
        self.tried = list(tried)

    def __str__(self):
        return self.args[0]


class LibraryVersionError(Error, ImportError):
    """The libzex found is not the C API version this package needs (or not libzex at all)."""

    def __init__(self, message, version=None, path=None):
        super().__init__(message)
        self.version = version
        self.library = path


#: Where a kernel was launched: the file and line of the Stream.launch call (KernelException.launch_site).
LaunchSite = collections.namedtuple("LaunchSite", "file line")


class KernelException(Error):
    """A work-item threw in a kernel launched on a zex.Stream; raised by Stream.synchronize() or
    Event.synchronize(). The stream stays usable. str(e) is zex's message, whose fix-it hint names the
    ``debug_level=`` keyword of Stream.launch.

    Its attributes are the fields of zex::KernelExceptionInfo, as the C API's zex_exception_info_t
    gives them (one projection; a field zex adds there appears here): ``name`` and ``reason`` ("" at
    debug level 0 unless zex numbered the throw site), ``kernel_name``, ``device_name`` (the Level Zero
    device's name), ``debug_level``, ``launch_id`` (the id zex gave the launch: a stream counts from 1),
    ``abi_version`` (the report's device ABI version, ZEX_ABI_VERSION; another value means only the
    kernel and device names were read), ``global_id``, ``group_id``, ``local_id`` (3-tuples at debug
    level 2, else None), ``frames``, a list of (function, file, line), innermost first (line 0: not
    known; every level for a site zex numbered, else level 2), ``frame_depth`` (frames in the whole
    chain: more than len(frames) when it was cut at 16; 0 when not known), ``values`` (a tuple of ints: the
    operands the throw recorded from level 1, e.g. (index, length) for a BoundsError; () when none),
    ``value_kind`` (how the message labels them: 0 plain values, 1 index and length, 2 byte offset and
    allocation size), ``thrower_count``
    (how many work-items threw, at least 1; 1 at level 0, which counts nothing) and ``launch_site`` (a
    LaunchSite(file, line) of the Python line that called Stream.launch or Graph.launch, or None). From a
    zex.Graph's execution (raised by Queue.synchronize()): ``execution`` (its 0-based index per graph,
    else None), ``executions_thrown`` and ``executions_synchronized`` (how many of the executions the
    synchronize waited for threw, of how many; 0 for a stream), ``graph_name`` and ``others`` (a list of
    KernelException, one per other throwing execution kept, oldest first, at most 16; [] for a stream)."""

    def __init__(self, message, **attributes):
        super().__init__(message)
        from ._library import exception_defaults  # pure Python: loads no library
        self.__dict__.update(exception_defaults())
        self.others = []
        self.__dict__.update(attributes)

    def __str__(self):
        return self.args[0]

    def __reduce__(self):  # picklable (multiprocessing) with its attributes
        return (_rebuild_kernel_exception, (self.args[0], dict(self.__dict__)))


def _rebuild_kernel_exception(message, attrs):
    e = KernelException(message)
    e.__dict__.update(attrs)
    return e


_BY_RESULT = {2: ZeError, 3: InvalidArgument, 4: OutOfHostMemory, 5: InvalidState, 6: UnknownError}


def error_class(result):
    return _BY_RESULT.get(result, Error)
