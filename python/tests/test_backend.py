"""python/build_backend/zex_backend.py, the package's own PEP 517 backend (issue 25, item 6), without
pip: the wheel and sdist it writes, their metadata, and its TOML reader against tomllib. The real
install with pip, for each interpreter, is install_check.py (zex_python_install*)."""
import base64
import csv
import hashlib
import io
import os
import sys
import tarfile
import zipfile

import pytest

SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(SOURCE_DIR, "python", "build_backend"))
import zex_backend as B  # noqa: E402

import zex  # noqa: E402


def test_pyproject_names_the_in_tree_backend_and_requires_nothing():
    data = B.load_pyproject()
    assert data["build-system"] == {"requires": [], "build-backend": "zex_backend", "backend-path": ["build_backend"]}
    assert data["project"]["version"] == zex.__version__


@pytest.mark.skipif(sys.version_info < (3, 11), reason="tomllib is Python 3.11+")
def test_subset_parser_reads_pyproject_as_tomllib_does():
    import tomllib
    text = open(os.path.join(SOURCE_DIR, "python", "pyproject.toml")).read()
    assert B._parse_toml_subset(text) == tomllib.loads(text)


def test_subset_parser_refuses_what_it_does_not_know():
    with pytest.raises(ValueError, match="pyproject.toml:2"):
        B._parse_toml_subset("[project]\nversion = 1.5\n")
    with pytest.raises(ValueError, match="only arrays of strings"):
        B._parse_toml_subset("[project]\nx = [1, 2]\n")
    assert B._parse_toml_subset('[a.b]\nk = "v # not a comment" # a comment\nl = [\n "x",\n "y",\n]\n') == {
        "a": {"b": {"k": "v # not a comment", "l": ["x", "y"]}}}


def test_wheel(tmp_path):
    name = B.build_wheel(str(tmp_path))
    assert name == "zex-%s-py3-none-any.whl" % zex.__version__
    with zipfile.ZipFile(str(tmp_path / name)) as z:
        names = z.namelist()
        di = "zex-%s.dist-info/" % zex.__version__
        assert {"zex/__init__.py", "zex/_core.py", "zex/_stream.py", "zex/_errors.py", "zex/_library.py"} <= set(names)
        assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
        assert names[-1] == di + "RECORD"
        meta = z.read(di + "METADATA").decode()
        assert "Name: zex\n" in meta and "Version: %s\n" % zex.__version__ in meta
        assert "Requires-Python: >=3.8\n" in meta and "# zex for Python" in meta
        assert "Root-Is-Purelib: true" in z.read(di + "WHEEL").decode()
        rows = list(csv.reader(io.StringIO(z.read(di + "RECORD").decode())))
        assert sorted(r[0] for r in rows) == sorted(names)
        for path, digest, size in rows:
            if path == di + "RECORD":
                assert digest == size == ""
                continue
            data = z.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == "sha256=" + want and int(size) == len(data), path
    # Reproducible: the same bytes again.
    again = tmp_path / "again"
    B.build_wheel(str(again))
    assert (again / name).read_bytes() == (tmp_path / name).read_bytes()


def test_sdist_and_editable(tmp_path):
    name = B.build_sdist(str(tmp_path))
    base = "zex-%s" % zex.__version__
    with tarfile.open(str(tmp_path / name)) as t:
        names = set(t.getnames())
    assert {base + "/PKG-INFO", base + "/pyproject.toml", base + "/build_backend/zex_backend.py",
            base + "/zex/_core.py", base + "/README.md"} <= names
    editable = B.build_editable(str(tmp_path / "e"))
    with zipfile.ZipFile(str(tmp_path / "e" / editable)) as z:
        pth = [n for n in z.namelist() if n.endswith(".pth")]
        assert z.read(pth[0]).decode().strip() == os.path.join(SOURCE_DIR, "python")
    assert B.get_requires_for_build_wheel() == [] and B.get_requires_for_build_editable() == []


def test_unknown_project_keys_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(B, "load_pyproject", lambda: {"project": {"name": "zex", "version": "1", "scripts": {}}})
    with pytest.raises(ValueError, match="scripts"):
        B.build_wheel(str(tmp_path))
