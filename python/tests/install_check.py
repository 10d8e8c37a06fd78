"""The CTest entry zex_python_install: the documented offline install, for real.

    python3 -m venv --system-site-packages <work>/venv
    <work>/venv/bin/pip install --no-build-isolation --no-index <copy of python/>
    ZEX_LIBRARY=<libzex.so.1> <work>/venv/bin/python examples/python/example.py <vadd.spv>

then, with ZEX_LIBRARY unset and libzex.so.1 copied into the installed package, the library is found
"next to the package" (where a packager may put it). pip builds in the directory it installs from, so
python/ is copied first: the source tree stays clean. Not collected by pytest (no test_ prefix)."""
import argparse
import os
import shutil
import subprocess
import sys


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    sys.stdout.write(r.stdout)
    sys.stdout.write(r.stderr)
    if r.returncode != 0:
        sys.exit("install_check: %s exited with %d" % (cmd[0], r.returncode))
    return r.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--library", required=True)
    ap.add_argument("--spirv", required=True)
    a = ap.parse_args()

    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    src = os.path.join(a.work, "python")
    shutil.copytree(os.path.join(a.source, "python"), src,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info", ".pytest_cache"))
    venv = os.path.join(a.work, "venv")
    run([sys.executable, "-m", "venv", "--system-site-packages", venv])
    py = os.path.join(venv, "bin", "python")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "ZEX_LIBRARY")}
    env["PIP_NO_INPUT"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    run([os.path.join(venv, "bin", "pip"), "install", "--no-build-isolation", "--no-index", src], env=env, cwd=a.work)

    # The installed package, not the source tree's.
    pkg = run([py, "-c", "import os, zex; print(os.path.dirname(zex.__file__)); print(zex.__version__)"],
              env=env, cwd=a.work).split()[0]
    assert os.path.realpath(pkg).startswith(os.path.realpath(venv)), pkg

    example = os.path.join(a.source, "examples", "python", "example.py")
    out = run([py, example, a.spirv], env=dict(env, ZEX_LIBRARY=a.library), cwd=a.work)
    assert "A BoundsError was thrown in kernel 'vadd'" in out and out.rstrip().endswith("ok"), out

    # Next to the package: no ZEX_LIBRARY.
    shutil.copy(a.library, os.path.join(pkg, "libzex.so.1"))
    found = run([py, "-c", "import zex; print(zex.library_path()); zex.Context().close()"], env=env, cwd=a.work)
    assert found.strip().splitlines()[0] == os.path.join(pkg, "libzex.so.1"), found
    print("install_check: ok (install, example, library next to the package)")


if __name__ == "__main__":
    main()
