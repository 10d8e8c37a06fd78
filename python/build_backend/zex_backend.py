"""zex's own PEP 517 build backend: the package is pure Python, so building it needs only the standard
library (zipfile, tarfile, hashlib) and no setuptools or wheel. pyproject.toml names this file through
``backend-path``, so ``pip install --no-build-isolation --no-index ./python`` works offline with any
python3 >= 3.8 that has pip, Debian's or not (issue 25, item 6; docs/decisions.md).

What goes in: the [project] table of pyproject.toml (the keys below; any other is an error, never
silently dropped) and the files [tool.zex-backend] lists: ``packages`` (directories of .py files) and
``package-data`` (globs relative to python/, e.g. a libzex.so.1 a packager put next to the package).

Hooks: build_wheel, build_sdist, build_editable (PEP 660: a .pth file pointing at python/),
prepare_metadata_for_build_wheel/_editable and the get_requires_for_build_* (nothing is required).
Archives are reproducible: sorted entries, a fixed timestamp (SOURCE_DATE_EPOCH if set), fixed modes.
"""
import base64
import glob
import gzip
import hashlib
import io
import json
import os
import re
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/

_PROJECT_KEYS = {"name", "version", "description", "readme", "requires-python", "license", "classifiers",
                 "dependencies", "urls"}


# ---- pyproject.toml ----------------------------------------------------------------------------------

def _parse_toml_subset(text):
    """The TOML pyproject.toml uses, for Pythons without tomllib (< 3.11): [table] headers, key = value
    with a basic string, an integer, a boolean, an array of strings (over several lines too) or an inline
    table of strings. Anything else raises ValueError naming the line (tests compare this with tomllib)."""
    data, table = {}, None
    lines = text.splitlines()
    i = 0

    def value_of(v, lineno):
        v = v.strip()
        if v.startswith('"'):
            m = re.match(r'"((?:[^"\\]|\\.)*)"$', v)
            if not m:
                raise ValueError("pyproject.toml:%d: unsupported string %s" % (lineno, v))
            return json.loads(v)  # TOML's basic-string escapes are JSON's
        if v.startswith("["):
            inner = v[1:-1].strip()
            items = re.findall(r'"((?:[^"\\]|\\.)*)"\s*(?:,|$)', inner)
            if re.sub(r'"((?:[^"\\]|\\.)*)"\s*(?:,|$)', "", inner).strip():
                raise ValueError("pyproject.toml:%d: only arrays of strings are supported" % lineno)
            return items
        if v.startswith("{"):
            out = {}
            for part in filter(None, (p.strip() for p in v[1:-1].split(","))):
                k, _, pv = part.partition("=")
                out[k.strip().strip('"')] = value_of(pv, lineno)
            return out
        if v in ("true", "false"):
            return v == "true"
        if re.match(r"[+-]?\d+$", v):
            return int(v)
        raise ValueError("pyproject.toml:%d: unsupported value %s" % (lineno, v))

    def strip_comment(line):
        out, quoted = [], False
        for ch in line:
            if ch == '"':
                quoted = not quoted
            if ch == "#" and not quoted:
                break
            out.append(ch)
        return "".join(out).strip()

    while i < len(lines):
        lineno, line = i + 1, strip_comment(lines[i])
        i += 1
        if not line:
            continue
        m = re.match(r"\[([^\[\]]+)\]$", line)
        if m:
            table = data
            for part in m.group(1).split("."):
                table = table.setdefault(part.strip().strip('"'), {})
            continue
        key, eq, v = line.partition("=")
        if not eq or table is None:
            raise ValueError("pyproject.toml:%d: unsupported line %s" % (lineno, line))
        v = v.strip()
        if v.startswith("[") and not v.endswith("]"):  # an array over several lines
            while i < len(lines) and not v.endswith("]"):
                v += " " + strip_comment(lines[i])
                i += 1
        table[key.strip().strip('"')] = value_of(v, lineno)
    return data


def load_pyproject(path=None):
    with open(path or os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        raw = f.read()
    try:
        import tomllib
    except ImportError:
        return _parse_toml_subset(raw.decode("utf-8"))
    return tomllib.loads(raw.decode("utf-8"))


def _project():
    data = load_pyproject()
    project = data.get("project", {})
    unknown = set(project) - _PROJECT_KEYS
    if unknown:
        raise ValueError("zex_backend: pyproject.toml [project] has %s, which this backend does not write; "
                         "add it to python/build_backend/zex_backend.py" % ", ".join(sorted(unknown)))
    for key in ("name", "version"):
        if key not in project:
            raise ValueError("zex_backend: pyproject.toml [project] needs %s" % key)
    return project, data.get("tool", {}).get("zex-backend", {})


def _dist_name(project):
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def metadata_text(project):
    """The core metadata (METADATA, PKG-INFO), version 2.1."""
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"], "Version: " + project["version"]]
    if "description" in project:
        lines.append("Summary: " + project["description"])
    if "requires-python" in project:
        lines.append("Requires-Python: " + project["requires-python"])
    lic = project.get("license")
    if isinstance(lic, dict) and "text" in lic:
        lines.append("License: " + lic["text"])
    for c in project.get("classifiers", []):
        lines.append("Classifier: " + c)
    for d in project.get("dependencies", []):
        lines.append("Requires-Dist: " + d)
    for label, url in sorted(project.get("urls", {}).items()):
        lines.append("Project-URL: %s, %s" % (label, url))
    body = ""
    readme = project.get("readme")
    if readme:
        with open(os.path.join(ROOT, readme), encoding="utf-8") as f:
            body = f.read()
        lines.append("Description-Content-Type: " + ("text/markdown" if readme.endswith(".md") else "text/plain"))
    return "\n".join(lines) + "\n\n" + body


# ---- files --------------------------------------------------------------------------------------------

def package_files(tool):
    """[(path relative to python/, absolute path)] of the packages' .py files and the package data."""
    out = {}
    for pkg in tool.get("packages", []):
        base = os.path.join(ROOT, pkg)
        if not os.path.isdir(base):
            raise ValueError("zex_backend: package %s: no directory %s" % (pkg, base))
        for d, dirs, files in os.walk(base):
            dirs[:] = sorted(x for x in dirs if x != "__pycache__")
            for f in files:
                if f.endswith(".py"):
                    p = os.path.join(d, f)
                    out[os.path.relpath(p, ROOT)] = p
    for pattern in tool.get("package-data", []):
        for p in glob.glob(os.path.join(ROOT, pattern)):
            if os.path.isfile(p):
                out[os.path.relpath(p, ROOT)] = p
    return sorted(out.items())


def _timestamp():
    t = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01, zip's earliest
    return max(t, 315532800)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def _dist_info(project, tool, tag):
    """{arcname: bytes} of the .dist-info directory, without RECORD."""
    di = "%s-%s.dist-info" % (_dist_name(project), project["version"])
    top = sorted({p.split(os.sep)[0] for p in tool.get("packages", [])})
    return di, {
        di + "/METADATA": metadata_text(project).encode("utf-8"),
        di + "/WHEEL": ("Wheel-Version: 1.0\nGenerator: zex_backend\nRoot-Is-Purelib: true\nTag: %s\n" % tag).encode(),
        di + "/top_level.txt": "".join(t + "\n" for t in top).encode(),
    }


def _write_wheel(wheel_directory, entries, project, tool):
    tag = "py3-none-any"
    di, meta = _dist_info(project, tool, tag)
    entries = dict(entries)
    entries.update(meta)
    record = [_record_line(a, entries[a]) for a in sorted(entries)] + [di + "/RECORD,,"]
    entries[di + "/RECORD"] = ("\n".join(record) + "\n").encode()
    name = "%s-%s-%s.whl" % (_dist_name(project), project["version"], tag)
    date = time.gmtime(_timestamp())[:6]
    os.makedirs(wheel_directory, exist_ok=True)
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        # dist-info last, RECORD at the very end (as wheel tools write them)
        for arcname in sorted(entries, key=lambda a: (a.startswith(di), a == di + "/RECORD", a)):
            info = zipfile.ZipInfo(arcname, date)
            info.external_attr = (0o100755 if arcname.endswith(".so") or ".so." in arcname else 0o100644) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, entries[arcname])
    return name


# ---- PEP 517 / PEP 660 hooks --------------------------------------------------------------------------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project, tool = _project()
    di, meta = _dist_info(project, tool, "py3-none-any")
    for arcname, data in meta.items():
        path = os.path.join(metadata_directory, *arcname.split("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    return di


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project, tool = _project()
    entries = {}
    for rel, path in package_files(tool):
        with open(path, "rb") as f:
            entries[rel.replace(os.sep, "/")] = f.read()
    return _write_wheel(wheel_directory, entries, project, tool)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """A wheel whose only content is a .pth file adding python/ to sys.path: edits take effect at once."""
    project, tool = _project()
    pth = "__editable__.%s-%s.pth" % (_dist_name(project), project["version"])
    return _write_wheel(wheel_directory, {pth: (ROOT + "\n").encode()}, project, tool)


def build_sdist(sdist_directory, config_settings=None):
    project, tool = _project()
    base = "%s-%s" % (_dist_name(project), project["version"])
    files = {"pyproject.toml": os.path.join(ROOT, "pyproject.toml"),
             "build_backend/zex_backend.py": os.path.abspath(__file__)}
    if project.get("readme"):
        files[project["readme"]] = os.path.join(ROOT, project["readme"])
    files.update((rel.replace(os.sep, "/"), p) for rel, p in package_files(tool))
    name = base + ".tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        def add(arcname, data):
            info = tarfile.TarInfo(base + "/" + arcname)
            info.size, info.mtime, info.mode = len(data), _timestamp(), 0o644
            tar.addfile(info, io.BytesIO(data))
        add("PKG-INFO", metadata_text(project).encode("utf-8"))
        for arcname in sorted(files):
            with open(files[arcname], "rb") as f:
                add(arcname, f.read())
    with open(os.path.join(sdist_directory, name), "wb") as out:
        with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=_timestamp()) as gz:
            gz.write(raw.getvalue())
    return name
