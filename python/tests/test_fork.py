"""os.fork() after zex-cpu has run a launch (issue 24): the child's calls on what it inherited fail at
once with zex.ZeError naming the fork, and its normal exit, which finalizes every inherited zex object,
returns; the parent's objects work on (docs/integration.md, "fork()"). Before, the child hung at exit
(or in its first wait). Each case runs in a fresh interpreter, so that the fork does not copy pytest."""
import subprocess
import sys

import pytest

FORK_CODE = r"""
import ctypes, os, signal, sys, zex
ctx = zex.Context()
dev = ctx.device(0)
mod = zex.Module(dev, sys.argv[1])
k = mod.kernel("maybe_throw")
s = zex.Stream(dev)
buf = ctx.alloc_shared(4)
s.launch(k, 1, 4, buf, ctypes.c_uint32(0))
s.synchronize()
s.launch(k, 1, 4, buf, ctypes.c_uint32(1))  # throws; pending at the fork
ev = s.record()
mode = sys.argv[2]
pid = os.fork()
if pid == 0:
    signal.alarm(60)  # a hang becomes SIGALRM
    if mode == "use":
        for call in (lambda: s.launch(k, 1, 4, buf, ctypes.c_uint32(0)), s.synchronize, ev.synchronize,
                     lambda: zex.Stream(dev)):
            try:
                call()
                print("child: no error")
            except zex.ZeError as e:
                print("child: ZeError", "child of fork()" in str(e))
    sys.exit(0)  # a normal exit: the interpreter finalizes every zex object it inherited
_, status = os.waitpid(pid, 0)
print("child status", status)
try:
    s.synchronize()
except zex.KernelException as e:
    print("parent:", e.kernel_name)
ev.synchronize()
print("parent done")
"""


@pytest.mark.parametrize("mode", ["exit", "use"])
def test_a_forked_child_fails_cleanly_and_exits(kernel_spv, mode):
    r = subprocess.run([sys.executable, "-c", FORK_CODE, kernel_spv, mode], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, (r.returncode, r.stdout, r.stderr)
    lines = r.stdout.split("\n")
    if mode == "use":
        assert lines[:4] == ["child: ZeError True"] * 4, r.stdout
    assert "child status 0" in lines, (r.stdout, r.stderr)
    assert "parent: maybe_throw" in lines and "parent done" in lines, r.stdout
