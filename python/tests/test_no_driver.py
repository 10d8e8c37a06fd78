"""No Level Zero driver at all: the loader is pointed at a file that does not exist (as the C++
NoDriver test does). zex.Context() raises zex.ZeError from zeInit saying how to get a driver, and a
second attempt raises again instead of crashing in the loader's zeDriverGet (Debian's 1.8.12 does
after a failed zeInit). In a subprocess: once zeInit has failed, a process cannot get a driver."""
import os
import subprocess
import sys

CODE = r"""
import zex
for attempt in range(2):
    try:
        zex.Context()
        print("found a driver")
    except zex.ZeError as e:
        print("ZeError", e.call, e.result.name if hasattr(e.result, "name") else e.result)
        print(str(e).replace("\n", " | "))
"""


def test_no_driver(tmp_path):
    env = dict(os.environ, ZE_ENABLE_ALT_DRIVERS=str(tmp_path / "no-such-driver" / "libze_none.so"))
    env.pop("ZE_ENABLE_VALIDATION_LAYER", None)
    env.pop("ZE_ENABLE_PARAMETER_VALIDATION", None)
    r = subprocess.run([sys.executable, "-c", CODE], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    lines = r.stdout.splitlines()
    assert len(lines) == 4, r.stdout
    assert lines[0].startswith("ZeError zeInit ") and lines[2].startswith("ZeError zeInit "), r.stdout
    assert "ERROR_UNINITIALIZED" in lines[0] or "ERROR" in lines[0]
    msg = lines[1]
    assert "ZE_ENABLE_ALT_DRIVERS=" in msg and "libze_zex_cpu.so" in msg and "compute-runtime" in msg
