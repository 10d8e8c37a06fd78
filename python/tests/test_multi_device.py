"""Several devices from Python: sub-devices (tiles), lookup by handle, and a throw caught on every device
and tile, naming it (docs/integration.md, "Several devices"). zex-cpu shows two devices of two tiles each
with ZEX_CPU_DEVICES=2 ZEX_CPU_SUBDEVICES=2, read at zeInit: the CTest entry zex_python_multi_device;
anywhere else this skips itself."""
import ctypes
import os

import pytest

import zex

pytestmark = pytest.mark.skipif(
    (os.environ.get("ZEX_CPU_DEVICES"), os.environ.get("ZEX_CPU_SUBDEVICES")) != ("2", "2"),
    reason="runs in the CTest entry zex_python_multi_device (ZEX_CPU_DEVICES=2 ZEX_CPU_SUBDEVICES=2)")


def everything(ctx):
    out = []
    for d in ctx.devices():
        out.append(d)
        out.extend(d.sub_devices())
    return out


def test_two_devices_of_two_tiles_each_and_lookup_by_handle():
    with zex.Context() as ctx:
        assert ctx.device_count == 2
        d0 = ctx.device(0)
        tiles = d0.sub_devices()
        assert len(tiles) == 2 and all(t.parent == d0 for t in tiles)
        assert tiles[1].sub_devices() == []
        assert d0.sub_devices() == tiles  # equal Devices, not new ones
        assert repr(tiles[1]).startswith("<zex.Device 0.1 of")
        for d in everything(ctx):
            assert ctx.device_for(d.handle) == d
        with pytest.raises(zex.InvalidArgument, match="neither a device nor a sub-device"):
            ctx.device_for(0x1000)


def test_a_throw_on_every_device_and_tile_is_caught_there(kernel_spv):
    u32 = ctypes.c_uint32
    with zex.Context() as ctx:
        for i, d in enumerate(everything(ctx)):
            k = zex.Module(d, kernel_spv).kernel("throw_at")
            s = zex.Stream(d)
            with ctx.alloc_shared(4 * 16, device=d) as out:
                s.launch(k, 1, 8, out, u32(i), u32(0), debug_level=2)
                with pytest.raises(zex.KernelException) as ei:
                    s.synchronize()
                assert ei.value.global_id == (i, 0, 0)
                name = "zex-cpu %d" % d.index if d.parent is None else "zex-cpu %d.%d" % (d.parent.index, d.index)
                assert (" on %s " % name) in str(ei.value), str(ei.value)
