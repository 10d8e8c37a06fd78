#!/usr/bin/env python3
"""Writes the seed corpus of decoder_fuzz (tests/fuzz/corpus/). The layout is the one decoder_fuzz.cpp
documents: a 512-byte zex_report_t, then the fake address space and the oracle's script."""
import os
import struct
import sys

NAME, REASON, FUNC, FILE = 0x7F0000001000, 0x7F0000002000, 0x7F0000003000, 0x7F0000004000


def report(level, abi=1, frame_count=0, frames=(), name=NAME, reason=REASON):
    r = struct.pack("<IIQQQ", 1, level, 7, name, reason)
    r += struct.pack("<3Q3Q3Q", 5, 6, 7, 1, 0, 0, 5, 6, 7)
    r += struct.pack("<II", frame_count, abi)
    fr = b"".join(struct.pack("<QQII", f, fl, ln, 0) for f, fl, ln in frames)
    r += fr.ljust(16 * 24, b"\0") + bytes(16)
    assert len(r) == 512
    return r


def region(mode, content, size_mode=0, delta=0, extra=b""):
    # anchor (mode, u16 delta), u8 size mode, u16 length, content, then what the size mode reads
    return struct.pack("<BHBH", mode, delta, size_mode, len(content)) + content + extra


def known(mode, content, nul=True, delta=0):
    return struct.pack("<BHHB", mode, delta, len(content), 1 if nul else 0) + content


def tail(regions, knowns=(), level=1, script=b""):
    return (bytes([len(regions)]) + b"".join(regions) + bytes([len(knowns)]) + b"".join(knowns)
            + bytes([level & 0xFF]) + script)


seeds = {
    "level1_valid": report(1) + tail([region(0, b"BoundsError\0"), region(1, b"Out-of-bounds array access\0")]),
    "level2_valid": report(2, frame_count=2, frames=[(FUNC, FILE, 12), (FUNC + 8, FILE, 40)]) + tail(
        [region(0, b"BoundsError\0"), region(1, b"index 12 past 8\0"),
         region(2, b"checked_get\0\0\0\0\0inner\0")],
        knowns=[known(3, b"kernels/user.cl\0")], level=2),
    "unknown_abi": report(1, abi=2) + tail([region(0, b"BoundsError\0"), region(1, b"reason\0")]),
    "frame_count_ffffffff": report(2, frame_count=0xFFFFFFFF, frames=[(FUNC + i, FILE, i) for i in range(16)])
    + tail([region(2, b"f" * 64), region(3, b"file.cl\0")], level=2),
    # Unterminated strings past kMaxString, a range ~2^64 long, a known string without NUL, and a
    # script that makes the oracle lie (huge range, failed read, short read).
    "lying": report(2, frame_count=1, frames=[(FUNC, FILE, 1)]) + tail(
        [region(0, b"\x01\x7f\xff" * 1700), region(1, b"r" * 100, size_mode=2, extra=b"\x10\x00"),
         region(2, b"fn\0", size_mode=4, extra=b"\x00\x10")],
        knowns=[known(3, b"no-nul", nul=False), known(3, b"", nul=False, delta=1)], level=-3,
        script=bytes([0, 4, 1, 2, 0, 0, 0, 3, 5, 2])),
}

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
os.makedirs(out, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(out, name), "wb") as f:
        f.write(data)
