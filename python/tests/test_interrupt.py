"""Ctrl-C (SIGINT, KeyboardInterrupt) while a wait blocks (issue 24): the KernelException that wait
found must not be lost, and its zex_exception_t must not leak."""
import ctypes
import signal
import threading
import time

import numpy as np
import pytest

import zex

u32 = ctypes.c_uint32


def interrupt_once_waiting(stream, flag):
    """On another thread: once the main thread is inside the stream's C wait (a call from here is then
    refused as concurrent use, and the held kernel keeps the wait blocking), sends it SIGINT, then lets
    the kernel go. Python raises the KeyboardInterrupt when the wait returns, after zex has reset the
    report and handed the exception over."""
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            stream.synchronize_for(0)
        except zex.InvalidState:
            break
        time.sleep(0.001)
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    flag[0] = 1


def test_ctrl_c_during_synchronize_keeps_the_exception_for_the_next(ctx, mod, stream):
    hold, throw = mod.kernel("wait_for_flag"), mod.kernel("maybe_throw")
    with ctx.alloc_shared(4) as flag, ctx.alloc_shared(4) as count:
        f = np.frombuffer(flag, np.uint32)
        f[0] = 0
        stream.launch(hold, 1, 1, flag)
        stream.launch(throw, 1, 1, count, u32(1))  # throws once the held kernel has finished
        t = threading.Thread(target=interrupt_once_waiting, args=(stream, f))
        t.start()
        try:
            with pytest.raises(KeyboardInterrupt):
                while True:
                    try:
                        stream.synchronize()
                    except zex.InvalidState:
                        continue  # the other thread was in a call just then: wait again
        finally:
            f[0] = 1
            t.join(60)
        # The wait that was interrupted had taken the exception: the next one raises it, at once.
        with pytest.raises(zex.KernelException) as ei:
            stream.synchronize()
        assert ei.value.kernel_name == "maybe_throw"
        assert "maybe_throw" in str(ei.value)
        stream.synchronize()  # raised once
        # Nothing held: the handle was destroyed (the old code leaked it).
        assert stream._raised.out.value is None and stream._raised.spent.value is None
        del f
