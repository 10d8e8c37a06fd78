"""The package's ctypes declarations against include/zex/zex.h, and zex.h's exception struct against the
C++ zex::KernelExceptionInfo (include/zex/exception.hpp), without a library or a device (issue 25).

zex.h is parsed (comments and preprocessor lines dropped; prototypes, typedef'd structs and enums) and
every C type mapped to the ctypes type the package must use for it. Then:

  - every function in _library.DECLARATIONS has zex.h's return and parameter types;
  - _library's structs (LaunchConfig, Arg, ExceptionFrame, ExceptionInfo) have zex.h's fields, in order;
  - zex_result_t, zex_language_t, ZEX_C_API_VERSION and the ABI constants match _library's numbers;
  - every member of zex::KernelExceptionInfo is projected in zex_exception_info_t (as a field of its
    name, or fields `<member>_<part>`), and nothing else is there but `size` and the counts of arrays;
  - project() in src/c_api/c_api.cpp sets every field of that struct;
  - every member is an attribute of zex.KernelException made from that struct.

The comparison functions are tested on deliberately drifted copies too, so that a checker that finds
nothing cannot pass unnoticed. CTest runs this file as zex_python_header (and within zex_python)."""
import ctypes
import glob
import os
import re

import pytest

import zex
from zex import _library as L

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(*path):
    with open(os.path.join(SOURCE_DIR, *path)) as f:
        return f.read()


def strip_c(text):
    """C source without comments and preprocessor lines (with their continuations)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)
    return text


class Header:
    """What zex.h declares: functions {name: (ret, [param types])}, structs {name: [(type, field)]},
    enums {name: {constant: value}}, opaque handles, defines {name: value}."""

    def __init__(self, text):
        self.defines = dict(re.findall(r"^#define (ZEX_\w+) ([0-9]+)u?\b", text, re.M))
        code = strip_c(text)
        self.handles = set(re.findall(r"typedef struct \w+_s\s*\*\s*(\w+)\s*;", code))
        self.enums = {}
        for body, name in re.findall(r"typedef enum \w+ \{(.*?)\}\s*(\w+)\s*;", code, re.S):
            self.enums[name] = {k: int(v, 0) for k, v in re.findall(r"(\w+)\s*=\s*(\w+)", body)}
        self.structs = {}
        for body, name in re.findall(r"typedef struct \w+ \{(.*?)\}\s*(\w+)\s*;", code, re.S):
            fields = []
            for decl in body.split(";"):
                decl = " ".join(decl.split())
                if decl:
                    m = re.match(r"(.*?)\s*\b(\w+)\s*(\[\d+\])?$", decl)
                    fields.append((m.group(1) + (m.group(3) or ""), m.group(2)))
            self.structs[name] = fields
        self.functions = {}
        flat = " ".join(code.split())
        for statement in re.split(r"[;{}]", flat):
            m = re.match(r"\s*([\w\s\*]+?)\s*\b(zex_\w+)\s*\(([^()]*)\)\s*$", statement)
            if not m or m.group(1).startswith("typedef"):
                continue
            ret, name, params = m.groups()
            ps = [] if params.strip() in ("", "void") else [p.strip() for p in params.split(",")]
            self.functions[name] = (ret.strip(), [param_type(p) for p in ps])


def param_type(p):
    """A parameter's type without its name: "uint64_t out[3]" -> "uint64_t*" (arrays decay)."""
    m = re.match(r"(.*?)\s*\b(\w+)\s*(\[\d*\])?$", p)
    t, array = m.group(1), m.group(3)
    if not t or t.endswith(("struct", "const")):  # a nameless parameter: the whole is the type
        return p
    return t + ("*" if array else "")


SCALARS = {"void": None, "int": ctypes.c_int, "uint8_t": ctypes.c_uint8, "uint32_t": ctypes.c_uint32,
           "uint64_t": ctypes.c_uint64, "size_t": ctypes.c_size_t, "char": ctypes.c_char,
           # enums: zex's own are ints; ze_result_t's values are read unsigned (0x7...: never negative)
           "zex_result_t": ctypes.c_int, "zex_language_t": ctypes.c_int, "ze_result_t": ctypes.c_uint32}
# zex.h's structs and the ctypes classes that mirror them.
STRUCTS = {"zex_launch_config_t": L.LaunchConfig, "zex_arg_t": L.Arg,
           "zex_exception_frame_t": L.ExceptionFrame, "zex_exception_info_t": L.ExceptionInfo,
           "zex_memory_checks_t": L.MemoryChecks}
# Struct pointers the package passes as c_void_p, because it packs them itself with `struct` (the
# launch's fast path); their layout is checked through the struct comparison above and test_library.
PACKED = {"zex_launch_config_t", "zex_arg_t"}


def ctype_of(header, c):
    """The ctypes type the package must declare for C type `c` (a string), as a normalized tuple."""
    c = " ".join(c.replace("*", " * ").split())
    stars = c.count("*")
    base = c.replace("*", "").replace("const", "").strip()
    base = " ".join(base.split())
    arr = re.match(r"(\w+)\[(\d+)\]$", base)
    if arr:  # a struct field that is an array
        return ("array", ctype_of(header, arr.group(1)), int(arr.group(2)))
    if base in header.handles or re.match(r"ze_\w+_handle_t$", base):
        t = ctypes.c_void_p
    elif base == "char" and stars:
        t, stars = ctypes.c_char_p, stars - 1
    elif base == "void" and stars:
        t, stars = ctypes.c_void_p, stars - 1
    elif base in SCALARS:
        t = SCALARS[base]
    elif base in STRUCTS:
        t = STRUCTS[base]
    elif base in header.structs:
        raise AssertionError("zex.h's struct %s has no ctypes class in STRUCTS" % base)
    else:
        raise AssertionError("test_header.py does not know the C type %r" % c)
    n = norm(t)
    for _ in range(stars):
        n = ("ptr", n)
    return n


def norm(t):
    """A ctypes type as a comparable tuple: pointers and (decayed) arrays as ("ptr", element)."""
    if t is None:
        return None
    if isinstance(t, type) and issubclass(t, ctypes._Pointer):
        return ("ptr", norm(t._type_))
    if isinstance(t, type) and issubclass(t, ctypes.Array):
        return ("array", norm(t._type_), t._length_)
    if isinstance(t, type) and issubclass(t, (ctypes.Structure, ctypes.Union)):
        return ("struct", t.__name__)
    # ctypes aliases (c_size_t is c_ulong): compare the type object itself, which the alias is
    return t


def as_param(n):
    return ("ptr", n[1]) if isinstance(n, tuple) and n[0] == "array" else n


def function_drift(header, declarations):
    """[message] for every declared function whose types differ from zex.h's (empty: none)."""
    errors = []
    for name, (restype, argtypes) in sorted(declarations.items()):
        if name not in header.functions:
            errors.append("%s is declared in _library.py but not in zex.h" % name)
            continue
        ret, params = header.functions[name]
        if norm(restype) != ctype_of(header, ret):
            errors.append("%s returns %s in zex.h, but _library.py says %r" % (name, ret, restype))
        if len(params) != len(argtypes):
            errors.append("%s takes %d parameters in zex.h, but _library.py declares %d" % (name, len(params), len(argtypes)))
            continue
        for i, (c, t) in enumerate(zip(params, argtypes)):
            want, have = ctype_of(header, c), as_param(norm(t))
            if want == have:
                continue
            packed = " ".join(c.replace("*", " ").replace("const", "").split())
            if have is ctypes.c_void_p and packed in PACKED and c.count("*") == 1:
                continue
            errors.append("%s parameter %d is %s in zex.h, but _library.py says %r" % (name, i, c, t))
    return errors


def struct_drift(header, structs):
    """[message] for every ctypes struct whose fields differ from zex.h's struct of the same C name."""
    errors = []
    for cname, cls in sorted(structs.items()):
        if cname not in header.structs:
            errors.append("zex.h has no struct %s" % cname)
            continue
        want = [(f, ctype_of(header, t)) for t, f in header.structs[cname]]
        have = [(f, norm(t)) for f, t in cls._fields_]
        if want != have:
            errors.append("%s: zex.h has %s, _library.%s has %s" % (cname, want, cls.__name__, have))
    return errors


@pytest.fixture(scope="module")
def header():
    return Header(read("include", "zex", "zex.h"))


def test_the_parser_sees_the_header(header):
    assert len(header.functions) >= 60 and "zex_stream_launch_at" in header.functions
    assert header.functions["zex_exception_info"] == ("zex_result_t", ["zex_exception_t", "zex_exception_info_t*"])
    assert header.functions["zex_exception_global_id"] == ("int", ["zex_exception_t", "uint64_t*"])
    assert "zex_kernel_name_fn" not in header.functions  # a typedef, not a function
    assert set(STRUCTS) <= set(header.structs)
    assert {"zex_context_t", "zex_exception_t", "zex_stream_t"} <= header.handles


def test_declarations_match_zex_h(header):
    assert function_drift(header, L.DECLARATIONS) == []


def test_structs_match_zex_h(header):
    assert struct_drift(header, STRUCTS) == []


def test_every_function_the_package_calls_is_declared():
    """A function used as lib.zex_* in the package is in DECLARATIONS (so it is checked above)."""
    used = set()
    for f in ("_core.py", "_stream.py", "_library.py", "__init__.py"):
        used |= set(re.findall(r"\b(zex_\w+)\(", read("python", "zex", f)))
        used |= set(re.findall(r"lib\.(zex_\w+)", read("python", "zex", f)))
    assert used - set(L.DECLARATIONS) == set()


def test_drift_is_found(header):
    """The checks fail when a declaration or a struct drifts (each kind of drift once)."""
    d = dict(L.DECLARATIONS)
    d["zex_exception_info"] = (ctypes.c_int, (ctypes.c_void_p, ctypes.c_void_p))  # a struct pointer as void*
    d["zex_stream_synchronize_for"] = (ctypes.c_int, (ctypes.c_void_p, ctypes.c_uint32,  # uint64_t narrowed
                                                      ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_void_p)))
    d["zex_exception_message_for"] = (ctypes.c_void_p, (ctypes.c_void_p, ctypes.c_int))  # return type
    d["zex_context_free"] = (ctypes.c_int, (ctypes.c_void_p,))  # a parameter missing
    d["zex_no_such_function"] = (None, ())
    errors = function_drift(header, d)
    for name in ("zex_exception_info", "zex_stream_synchronize_for", "zex_exception_message_for", "zex_context_free",
                 "zex_no_such_function"):
        assert any(e.startswith(name) for e in errors), (name, errors)

    class Reordered(ctypes.Structure):
        _fields_ = [(n, t) for n, t in reversed(L.ExceptionInfo._fields_)]

    class Narrowed(ctypes.Structure):
        _fields_ = [(n, ctypes.c_uint32 if n == "launch_id" else t) for n, t in L.ExceptionInfo._fields_]

    class Short(ctypes.Structure):
        _fields_ = L.ExceptionInfo._fields_[:-1]

    for cls in (Reordered, Narrowed, Short):
        assert struct_drift(header, {"zex_exception_info_t": cls}), cls.__name__
    # A field zex.h gains that the package lacks.
    grown = Header(read("include", "zex", "zex.h").replace(
        "  uint32_t launch_site_line;", "  uint32_t launch_site_line;\n  uint64_t newer;"))
    assert struct_drift(grown, STRUCTS)


def test_constants_match_zex_h(header):
    assert int(header.defines["ZEX_C_API_VERSION"]) == L.C_API_VERSION
    results = header.enums["zex_result_t"]
    for name, value in results.items():
        assert getattr(L, name[len("ZEX_"):]) == value, name
    for name, value in header.enums["zex_language_t"].items():
        assert getattr(L, name[len("ZEX_"):]) == value, name
    abi = read("include", "zex", "abi.h")
    assert re.search(r"#define ZEX_ABI_VERSION (\d+)u", abi).group(1) == "3"  # test_reports.py expects 3
    assert re.search(r"#define ZEX_VALUES_BOUNDS (\d+)u", abi).group(1) == "1"
    assert re.search(r"#define ZEX_VALUES_MEMORY (\d+)u", abi).group(1) == "2"


def kernel_exception_info_members(text):
    """The data members of zex::KernelExceptionInfo, in order, from exception.hpp."""
    body = re.search(r"struct KernelExceptionInfo \{(.*?)\n\};", text, re.S).group(1)
    members = []
    for decl in strip_c(body).split(";"):
        decl = decl.split("=")[0]
        while re.search(r"<[^<>]*>", decl):
            decl = re.sub(r"<[^<>]*>", "", decl)
        parts = [p.strip() for p in decl.split(",")]
        if not parts[0]:
            continue
        members.append(parts[0].split()[-1])
        members += parts[1:]
    return members


def projection_drift(members, fields):
    """[message] where zex_exception_info_t's fields do not project the C++ members: each member is a
    field of its name or fields `<member>_<part>`; each field is one of those, `size`, or the
    `<x>_count` of an array field `<x>s`."""
    errors = []
    for m in members:
        if m not in fields and not any(f.startswith(m + "_") for f in fields):
            errors.append("zex::KernelExceptionInfo::%s is not in zex_exception_info_t" % m)
    for f in fields:
        if f == "size" or f in members or any(f.startswith(m + "_") for m in members):
            continue
        if f.endswith("_count") and f[:-len("_count")] + "s" in fields:
            continue
        errors.append("zex_exception_info_t.%s projects no member of zex::KernelExceptionInfo" % f)
    return errors


def test_exception_info_projects_every_member_of_kernel_exception_info(header):
    members = kernel_exception_info_members(read("include", "zex", "exception.hpp"))
    assert members[:4] == ["debug_level", "name", "reason", "kernel_name"]
    assert {"device_name", "launch_id", "abi_version", "global_id", "local_id", "frames", "values", "value_kind",
            "launch_site"} <= set(members)
    fields = [f for _, f in header.structs["zex_exception_info_t"]]
    assert projection_drift(members, fields) == []
    # ... and the check finds a member added in C++ only, or a field with no member.
    assert projection_drift(members + ["compile_flags"], fields)
    assert projection_drift(members, fields + ["stray"])


def test_project_sets_every_field(header):
    """src/c_api/c_api.cpp's project(), the one place that fills zex_exception_info_t, sets each of its fields."""
    # src/c_api/c_api.cpp (found anywhere under src/, so a later move does not silently skip the check)
    path = sorted(glob.glob(os.path.join(SOURCE_DIR, "src", "**", "c_api.cpp"), recursive=True))[0]
    with open(path) as f:
        body = re.search(r"\nvoid project\(zex_exception_s& e\) \{(.*?)\n\}", f.read(), re.S).group(1)
    assigned = set(re.findall(r"\bv\.(\w+)\s*=", strip_c(body)))
    fields = [f for _, f in header.structs["zex_exception_info_t"]]
    assert [f for f in fields if f not in assigned] == []


def test_every_member_is_a_kernel_exception_attribute():
    """Python's attributes come from the struct: one per C++ member, with values converted."""
    members = kernel_exception_info_members(read("include", "zex", "exception.hpp"))
    ids = (ctypes.c_uint64 * 3)(4, 5, 6)
    frames = (L.ExceptionFrame * 2)((b"inner", b"k.cl", 7), (b"vadd", b"", 0))
    values = (ctypes.c_uint64 * 2)(1003, 1000)
    info = L.ExceptionInfo(size=ctypes.sizeof(L.ExceptionInfo), debug_level=2, abi_version=3, name=b"BoundsError",
                           reason=b"r", kernel_name=b"vadd", device_name=b"dev", launch_id=9, global_id=ids,
                           frames=frames, frame_count=2, frame_depth=5, values=values, value_count=2, value_kind=1,
                           thrower_count=24, launch_site_file=b"t.py", launch_site_line=12)
    attrs = L.exception_attributes(info)
    assert sorted(attrs) == sorted(members)
    assert attrs["global_id"] == (4, 5, 6) and attrs["group_id"] is None
    assert attrs["frames"] == [("inner", "k.cl", 7), ("vadd", "", 0)]
    assert attrs["values"] == (1003, 1000) and attrs["value_kind"] == 1
    assert attrs["launch_site"] == zex.LaunchSite("t.py", 12)
    assert (attrs["device_name"], attrs["launch_id"], attrs["abi_version"]) == ("dev", 9, 3)
    e = zex.KernelException("m", **attrs)
    for m in members:
        assert getattr(e, m) == attrs[m]
    # Defaults: every member, also for an exception built by hand.
    assert sorted(L.exception_defaults()) == sorted(members)
    assert zex.KernelException("m").launch_site is None and zex.KernelException("m").frames == []
    # A library older than the package fills less: the fields past its size keep their defaults.
    info.size = L.ExceptionInfo.device_name.offset
    older = L.exception_attributes(info)
    assert older["kernel_name"] == "vadd" and "device_name" not in older and "launch_site" not in older
