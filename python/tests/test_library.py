"""Finding and loading libzex, without a device: discovery order, what the errors say, the version check."""
import ctypes
import os
import re
import subprocess
import sys

import pytest

import zex
from zex import _library as L

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_import_does_not_load_the_library():
    # `import zex` always works; the library is loaded on first use.
    r = subprocess.run([sys.executable, "-c", "import zex, zex._library as L; print(L._loaded is None)"],
                       env=dict(os.environ, ZEX_LIBRARY="/nonexistent/libzex.so.1"), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"


def test_bogus_zex_library_lists_what_was_tried(monkeypatch):
    monkeypatch.setenv("ZEX_LIBRARY", "/nonexistent/dir/libzex.so.1")
    with pytest.raises(zex.LibraryNotFoundError) as ei:
        L.load()
    e = ei.value
    assert isinstance(e, zex.Error) and isinstance(e, OSError)
    msg = str(e)
    assert "ZEX_LIBRARY: /nonexistent/dir/libzex.so.1 (no such file)" in msg
    assert "ZEX_LIBRARY is set, so nowhere else was searched" in msg
    assert e.tried == ["ZEX_LIBRARY: /nonexistent/dir/libzex.so.1 (no such file)"]


def test_zex_library_not_a_library(monkeypatch, tmp_path):
    bad = tmp_path / "libzex.so.1"
    bad.write_bytes(b"not an ELF file")
    monkeypatch.setenv("ZEX_LIBRARY", str(bad))
    with pytest.raises(zex.LibraryNotFoundError) as ei:
        L.load()
    assert str(bad) in str(ei.value) and "ZEX_LIBRARY" in str(ei.value)


def test_bogus_library_from_a_fresh_process():
    # What a user sees: the first use raises, with the places tried; nothing crashes.
    code = "import zex\ntry:\n    zex.Context()\nexcept zex.LibraryNotFoundError as e:\n    print(e)\n"
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, ZEX_LIBRARY="/bogus/libzex.so"),
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "cannot load libzex" in r.stdout and "/bogus/libzex.so" in r.stdout


def test_search_order_without_zex_library(monkeypatch, tmp_path):
    monkeypatch.delenv("ZEX_LIBRARY", raising=False)
    monkeypatch.setattr(L, "package_dir", lambda: str(tmp_path))
    tried = []

    def opener(path):
        tried.append(path)
        raise OSError("refused by the test")

    with pytest.raises(zex.LibraryNotFoundError) as ei:
        L.load(opener)
    where = [w for w, _ in L.candidates()]
    assert where[0] == "next to the package"
    assert "install prefix" in where
    assert where[-1].startswith("the dynamic linker")
    msg = str(ei.value)
    assert "next to the package: %s" % os.path.join(str(tmp_path), "libzex.so.1") in msg
    for d in L.prefix_dirs():
        assert os.path.join(d, "libzex.so.1") in msg
    assert "the dynamic linker's search path" in msg and "refused by the test" in msg
    assert tried[-1] == "libzex.so.1"


def test_library_next_to_the_package(monkeypatch, tmp_path):
    real = os.environ.get("ZEX_LIBRARY")
    if not real:
        pytest.skip("ZEX_LIBRARY is not set")
    os.symlink(real, tmp_path / "libzex.so.1")
    monkeypatch.delenv("ZEX_LIBRARY")
    monkeypatch.setattr(L, "package_dir", lambda: str(tmp_path))
    lib, path = L.load()
    assert path == os.path.join(str(tmp_path), "libzex.so.1")
    assert lib.zex_c_api_version() == zex.C_API_VERSION


class FakeFn:
    def __init__(self, value=0):
        self.value = value

    def __call__(self, *a):
        return self.value


class FakeLib:
    """Stands in for the CDLL: every name of the contract, or some missing."""

    def __init__(self, version, missing=()):
        for name in L.DECLARATIONS:
            if name not in missing:
                setattr(self, name, FakeFn())
        self.zex_c_api_version = FakeFn(version)


def test_version_mismatch_is_clear():
    with pytest.raises(zex.LibraryVersionError) as ei:
        L.declare(FakeLib(2), "/x/libzex.so.1")
    assert "/x/libzex.so.1 has C API version 2" in str(ei.value)
    assert "needs version %d" % zex.C_API_VERSION in str(ei.value)
    assert ei.value.version == 2 and isinstance(ei.value, zex.Error)


def test_missing_function_is_named():
    with pytest.raises(zex.LibraryVersionError) as ei:
        L.declare(FakeLib(1, missing=["zex_stream_launch"]), "/x/libzex.so.1")
    assert "lacks zex_stream_launch" in str(ei.value)
    L.declare(FakeLib(1, missing=["zex_module_build_log"]), "/x/libzex.so.1")  # optional


def test_not_libzex():
    class Empty:
        pass
    with pytest.raises(zex.LibraryVersionError, match="not libzex"):
        L.declare(Empty(), "/lib/libc.so.6")


def test_declarations_match_the_header():
    """Every function of include/zex/zex.h that the package declares exists there with that name."""
    header = open(os.path.join(SOURCE_DIR, "include", "zex", "zex.h")).read()
    names = set(re.findall(r"\b(zex_\w+)\(", header))
    assert set(L.DECLARATIONS) <= names, set(L.DECLARATIONS) - names
    m = re.search(r"#define ZEX_C_API_VERSION (\d+)", header)
    assert int(m.group(1)) == L.C_API_VERSION


def test_struct_layouts():
    assert ctypes.sizeof(L.LaunchConfig) == 28
    assert ctypes.sizeof(L.Arg) == 16 and L.Arg.value.offset == 8


def test_loaded_library_is_zex_library():
    real = os.environ.get("ZEX_LIBRARY")
    if not real:
        pytest.skip("ZEX_LIBRARY is not set")
    assert zex.library_path() == real


def test_version_matches_the_project():
    cmake = open(os.path.join(SOURCE_DIR, "CMakeLists.txt")).read()
    project = re.search(r"project\(zex VERSION ([0-9.]+)", cmake).group(1)
    pyproject = open(os.path.join(SOURCE_DIR, "python", "pyproject.toml")).read()
    assert re.search(r'^version = "([0-9.]+)"', pyproject, re.M).group(1) == project
    assert zex.__version__ == project


def test_error_hierarchy():
    for cls in (zex.KernelException, zex.ZeError, zex.InvalidArgument, zex.InvalidState, zex.OutOfHostMemory,
                zex.UnknownError, zex.LibraryNotFoundError, zex.LibraryVersionError):
        assert issubclass(cls, zex.Error)
    assert issubclass(zex.InvalidArgument, ValueError)
    e = zex.ZeError("m", 0x70000001, "zeFoo")
    assert e.result == zex.ZeResult.ERROR_DEVICE_LOST and e.result.name == "ERROR_DEVICE_LOST" and e.call == "zeFoo"
    assert zex.ZeError("m", 0x12345, "x").result == 0x12345
