"""The CTest entries zex_python_install (the python3 on PATH) and zex_python_install_debian
(/usr/bin/python3): the documented offline install, for real, with the interpreter given by --python.

    <python> -m venv --system-site-packages <work>/venv
    <work>/venv/bin/pip install --no-build-isolation --no-index <copy of python/>
    ZEX_LIBRARY=<libzex.so.1> <work>/venv/bin/python <smoke test>       # no numpy needed
    ZEX_LIBRARY=<libzex.so.1> <work>/venv/bin/python examples/python/example.py <vadd.spv>  # if numpy

then, with ZEX_LIBRARY unset and libzex.so.1 copied into the installed package, the library is found
"next to the package" (where a packager may put it). The build backend is the package's own
(python/build_backend), so this works with any python3 >= 3.8 that has venv and pip, Debian's or
pyenv's, without setuptools or wheel. pip builds in the directory it installs from, so python/ is
copied first; the copy must stay as clean as the source tree (the backend writes nothing there).

--python is a path or a name looked up on PATH. Exits 77 (CTest: skipped) with the reason when that
interpreter is absent, older than 3.8, has no venv/pip, or is the interpreter another entry already
tests (--skip-same-as). Not collected by pytest (no test_ prefix)."""
import argparse
import os
import shutil
import subprocess
import sys

SKIP = 77

# Without numpy: shared buffers through memoryview casts, a throw, its attributes, a clean launch.
SMOKE = r"""
import ctypes, sys, zex
spirv, n = sys.argv[1], 1000
with zex.Context() as ctx:
    dev = ctx.device(0)
    vadd = zex.Module(dev, spirv).kernel("vadd")
    stream = zex.Stream(dev)
    a, b, c = (ctx.alloc_shared(4 * n) for _ in range(3))
    fa, fb, fc = (memoryview(x).cast("f") for x in (a, b, c))
    for i in range(n):
        fa[i], fb[i] = float(i), 1.0
    stream.launch(vadd, n // 64 + 1, 64, c, a, b, ctypes.c_uint32(n), debug_level=2)
    try:
        stream.synchronize()
        sys.exit("smoke: no KernelException")
    except zex.KernelException as e:
        assert e.name == "BoundsError" and e.device_name and e.launch_id == 1 and e.abi_version >= 1, vars(e)
    stream.launch(vadd, n // 8, 8, c, a, b, ctypes.c_uint32(n))
    stream.synchronize()
    assert fc.tolist() == [i + 1.0 for i in range(n)]
    del fa, fb, fc
    print("smoke: ok", sys.version.split()[0])
"""


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    sys.stdout.write(r.stdout)
    sys.stdout.write(r.stderr)
    if r.returncode != 0:
        sys.exit("install_check: %s exited with %d" % (cmd[0], r.returncode))
    return r.stdout


def skip(reason):
    print("install_check: skipped: " + reason, flush=True)
    sys.exit(SKIP)


def interpreter(name):
    """(path given, sys.executable's real path, version tuple) of --python, or skip."""
    path = name if os.sep in name else shutil.which(name)
    if not path or not os.path.exists(path):
        skip("no %s%s" % (name, "" if os.sep in name else " on PATH (%s)" % os.environ.get("PATH", "")))
    r = subprocess.run([path, "-c", "import sys; print(sys.executable); print('%d.%d' % sys.version_info[:2])"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        skip("%s does not run: %s" % (path, r.stderr.strip()))
    exe, version = r.stdout.split()
    return path, os.path.realpath(exe), tuple(int(x) for x in version.split("."))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="python3", help="the interpreter to install with (path or name on PATH)")
    ap.add_argument("--skip-same-as", default=None, help="skip if --python is this interpreter (tested elsewhere)")
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--library", required=True)
    ap.add_argument("--spirv", required=True)
    a = ap.parse_args()
    a.library, a.spirv, a.source = (os.path.abspath(p) for p in (a.library, a.spirv, a.source))

    py_given, py_real, version = interpreter(a.python)
    print("install_check: %s is %s (Python %d.%d)" % (a.python, py_real, version[0], version[1]), flush=True)
    if version < (3, 8):
        skip("%s is Python %d.%d; the package needs 3.8 or later" % (py_given, version[0], version[1]))
    if a.skip_same_as and os.path.exists(a.skip_same_as) and interpreter(a.skip_same_as)[1] == py_real:
        skip("%s is %s, which another test installs with already" % (a.python, a.skip_same_as))

    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    src = os.path.join(a.work, "python")
    shutil.copytree(os.path.join(a.source, "python"), src,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info", ".pytest_cache"))
    before = sorted(os.listdir(src))
    venv = os.path.join(a.work, "venv")
    r = subprocess.run([py_given, "-m", "venv", "--system-site-packages", venv], capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(os.path.join(venv, "bin", "pip")):
        skip("%s cannot make a venv with pip (Debian: apt install python3-venv): %s"
             % (py_given, (r.stderr or r.stdout).strip()))
    py = os.path.join(venv, "bin", "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ZEX_LIBRARY", "PYTHONHOME")}
    env["PIP_NO_INPUT"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    run([os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation", "--no-index", src], env=env, cwd=a.work)
    assert sorted(os.listdir(src)) == before, "the build wrote into the source: %s" % (set(os.listdir(src)) - set(before))

    # The installed package, not the source tree's.
    pkg = run([py, "-c", "import os, zex; print(os.path.dirname(zex.__file__)); print(zex.__version__)"],
              env=env, cwd=a.work).split()[0]
    assert os.path.realpath(pkg).startswith(os.path.realpath(venv)), pkg

    smoke = os.path.join(a.work, "smoke.py")
    with open(smoke, "w") as f:
        f.write(SMOKE)
    out = run([py, smoke, a.spirv], env=dict(env, ZEX_LIBRARY=a.library), cwd=a.work)
    assert "smoke: ok" in out, out

    has_numpy = subprocess.run([py, "-c", "import numpy"], env=env, capture_output=True).returncode == 0
    if has_numpy:
        example = os.path.join(a.source, "examples", "python", "example.py")
        out = run([py, example, a.spirv], env=dict(env, ZEX_LIBRARY=a.library), cwd=a.work)
        assert "A BoundsError was thrown in kernel 'vadd'" in out and out.rstrip().endswith("ok"), out
    else:
        print("install_check: examples/python/example.py not run: %s has no numpy (the smoke test ran instead)"
              % py_given, flush=True)

    # Next to the package: no ZEX_LIBRARY.
    shutil.copy(a.library, os.path.join(pkg, "libzex.so.1"))
    found = run([py, "-c", "import zex; print(zex.library_path()); zex.Context().close()"], env=env, cwd=a.work)
    assert found.strip().splitlines()[0] == os.path.join(pkg, "libzex.so.1"), found
    print("install_check: ok with %s (Python %d.%d): install, smoke test%s, library next to the package"
          % (py_real, version[0], version[1], ", example" if has_numpy else ""))


if __name__ == "__main__":
    main()
