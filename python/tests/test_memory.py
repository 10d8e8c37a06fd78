"""Issue 27 from Python: zex.Module(dev, spv, check_memory=True) on zex's test kernels (zex-cpu under
CTest). copy_word writes a uint into an allocation of 1 byte: caught as OutOfBoundsAccess with the
offset and the allocation's size; the stream stays usable; the counts and the hidden arguments."""
import ctypes

import pytest

import zex


@pytest.fixture(scope="module")
def checked(dev, kernel_spv):
    return zex.Module(dev, kernel_spv, check_memory=True)


def test_counts_and_hidden_arguments(mod, checked):
    assert mod.memory_checks["enabled"] is False and mod.memory_checks["checked"] == 0
    c = checked.memory_checks
    assert c["enabled"] is True and c["checked"] > 0
    assert set(c) == {"enabled", "checked", "loaded", "from_integer", "untraced", "local"}
    assert checked.kernel("copy_word").hidden_argument_count == 1
    assert mod.kernel("copy_word").hidden_argument_count == 0
    assert checked.kernel("copy_word").checked_arguments == [0, 1]  # dst, src
    assert mod.kernel("copy_word").checked_arguments == []


def test_a_write_past_the_end_is_caught(ctx, stream, checked):
    k = checked.kernel("copy_word")
    dst, src, big = ctx.alloc_shared(1), ctx.alloc_shared(4), ctx.alloc_shared(4)
    try:
        ctypes.c_uint32.from_buffer(src).value = 42
        stream.launch(k, 1, 1, dst, src)
        with pytest.raises(zex.KernelException) as ei:
            stream.synchronize()
        e = ei.value
        assert e.name == "OutOfBoundsAccess"
        assert e.values == (0, 1)
        assert "write of argument 'dst' at byte offset 0 of an allocation of 1 bytes" in str(e)
        zex.forget_memory_bounds()
        stream.launch(k, 1, 1, big, src)
        stream.synchronize()
        assert ctypes.c_uint32.from_buffer(big).value == 42
    finally:
        for b in (dst, src, big):
            b.free()


def test_check_memory_must_be_a_bool(dev, kernel_spv):
    with pytest.raises(zex.InvalidArgument, match="check_memory must be True or False"):
        zex.Module(dev, kernel_spv, check_memory=1)
