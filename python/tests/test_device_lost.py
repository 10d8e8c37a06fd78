"""A lost device from Python: ZeError.device_report (docs/integration.md, "When the device is lost").
zex-cpu loses its device at the second launch (ZEX_CPU_LOSE_DEVICE=2) for the rest of the process, so
this runs in a CTest entry of its own (zex_python_device_lost) and skips itself anywhere else."""
import ctypes
import os
import pickle

import numpy as np
import pytest

import zex

pytestmark = pytest.mark.skipif(os.environ.get("ZEX_TEST_DEVICE_LOST") != "python",
                                reason="runs in the CTest entry zex_python_device_lost (ZEX_CPU_LOSE_DEVICE=2)")


def test_the_wait_raises_zeerror_with_the_device_report(kernel_spv):
    n = 256
    with zex.Context() as ctx:
        dev = ctx.device(0)
        vadd = zex.Module(dev, kernel_spv).kernel("vadd")
        stream = zex.Stream(dev)
        a, b, c = (ctx.alloc_shared(4 * n) for _ in range(3))
        np.frombuffer(a, np.float32)[:] = np.arange(n)
        np.frombuffer(b, np.float32)[:] = 1
        stream.launch(vadd, n // 64, 64, c, a, b, ctypes.c_uint32(n))
        stream.synchronize()  # the first launch runs
        assert np.frombuffer(c, np.float32)[10] == 11
        stream.launch(vadd, n // 64, 64, c, a, b, ctypes.c_uint32(n))
        with pytest.raises(zex.ZeError) as info:
            stream.synchronize()
        e = info.value
        print(str(e))
        assert e.result == zex.ZeResult.ERROR_DEVICE_LOST
        r = e.device_report
        assert isinstance(r, zex.DeviceReport)
        assert r.device.startswith("zex-cpu")
        assert "wedged" in r.state
        assert r.counters == (zex.RasCounter("uncorrectable", "reset", 0, 1),)
        assert len(r.records) == 1
        rec = r.records[0]
        assert rec.format == "CPER" and rec.bytes[:4] == b"CPER" and len(rec.bytes) == 128 + 72 + 192
        assert "processor generic (fatal): micro-architectural error" in rec.summary
        assert "Device report for" in str(e)
        assert r.info_log == "" and r.notes == ()
        # A ZeError pickles with its report (multiprocessing, concurrent.futures).
        back = pickle.loads(pickle.dumps(e))
        assert back.device_report == r and back.result == e.result
