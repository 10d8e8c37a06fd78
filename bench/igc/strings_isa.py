#!/usr/bin/env python3
"""The ISA cost of zex's string wrapping (src/spirv/passes/strings.cpp) on Intel's compiler.

For the bench/igc shapes (default: gather17 and vadd, ZEX_CHECK_BOUNDS at every access), at zex debug
levels 1 and 2, for DG2 and PVC: `.text.<kernel>` bytes of the module `zex-spirv link` builds with the
strings wrapped (what zex::Module does) and with `--no-strings` (plain [N x i8] strings, which IGC
1.0.12504 puts into .data.const.string), both after the throw-site merge. Prints a Markdown table.
ocloc runs in its own process, two at a time.
"""
import argparse
import concurrent.futures
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import igclib  # noqa: E402
import igc_bench  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--device-spv', help='device library SPIR-V (default: build device/zex_device.cl)')
    ap.add_argument('--zex-spirv', help='the zex-spirv command')
    ap.add_argument('--shapes', default='gather17,vadd')
    ap.add_argument('--devices', default='dg2,pvc')
    ap.add_argument('--levels', default='1,2')
    ap.add_argument('--jobs', type=int, default=2)
    a = ap.parse_args()
    ocloc = igclib.Ocloc(force_process=True)
    if not ocloc.available():
        raise SystemExit('ocloc is not installed (Debian package intel-opencl-icd)')
    tc = igclib.Toolchain(a.zex_spirv)
    levels = [int(x) for x in a.levels.split(',')]
    kdir = os.path.join(os.path.dirname(os.path.dirname(HERE)), 'tests', 'kernels', 'igc_bench')
    with tempfile.TemporaryDirectory(prefix='zex-strings-isa-') as work:
        lib, _ = igc_bench.project_library(tc, igc_bench.repo_root(), work, a.device_spv)
        mods = []   # (shape, kernel, level, wrapped?, bytes)
        for shape in a.shapes.split(','):
            src, kname, _ = igc_bench.SHAPES[shape]
            user = tc.cl_to_spv(os.path.join(kdir, src), os.path.join(work, f'{shape}.spv'),
                                includes=[kdir] + lib.includes, defines=[f'ZEXB_VARIANT={igc_bench.ZEXB_ZEX}'])
            for wrapped in (False, True):
                linked = tc.link(user, lib.spv, os.path.join(work, f'{shape}_{wrapped}.spv'), strings=wrapped)
                for level in levels:
                    out = tc.specialize(linked, os.path.join(work, f'{shape}_{wrapped}{level}.spv'),
                                        {igclib.ZEX_SPEC_ID_DEBUG_LEVEL: level})
                    mods.append((shape, kname, level, wrapped, open(out, 'rb').read()))
        jobs = [(dev, m) for dev in a.devices.split(',') for m in mods]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            bins = list(pool.map(lambda j: ocloc.compile(j[1][4], j[0])[0], jobs))
    isa = {}
    for (dev, (shape, kname, level, wrapped, _)), zebin in zip(jobs, bins):
        m = igclib.zebin_metrics(zebin, kname)
        in_string_section = sum(1 for _, _, where in igclib.relocated_symbols(zebin) if where == '.data.const.string')
        isa[(dev, shape, level, wrapped)] = (m['isa_bytes'], m['simd_size'], in_string_section,
                                             m['per_thread_memory_bytes'])
    print('| device | kernel | level | ISA plain strings (B) | ISA wrapped (B) | change | SIMD '
          '| relocations into .data.const.string | private+spill |')
    print('| --- | --- | --- | ---: | ---: | ---: | --- | --- | --- |')
    for dev in a.devices.split(','):
        for shape in a.shapes.split(','):
            for level in levels:
                b, sb, rb, pb = isa[(dev, shape, level, False)]
                w, sw, rw, pw = isa[(dev, shape, level, True)]
                print(f'| {dev} | {shape} | {level} | {b} | {w} | {w - b:+d} ({100.0 * (w - b) / b:+.1f}%) | '
                      f'{sb} -> {sw} | {rb} -> {rw} | {pb} -> {pw} |')


if __name__ == '__main__':
    main()
