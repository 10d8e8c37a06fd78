#!/usr/bin/env python3
"""Memory checks' cost in Intel's compiler (issue 27): every kernel of bench/memory's shapes, of
tests/kernels/memory (the memory tests' kernels) and of the third-party corpus unchanged (tests/corpus/
rodinia and polybench: origin and licence in tests/corpus/README.md), linked as zex::Module links it
without (`zex-spirv link`) and with (`zex-spirv link --check-memory`) the checks, specialized to each
debug level and compiled with ocloc for each device. Prints per kernel the ISA bytes of both and their
ratio, the SIMD width and per-thread memory (private, spill, scratch) where they differ, the compile
time of each module, and per set the geometric means.

  python3 bench/igc/memory_isa.py --zex-spirv build/tools/zex-spirv [--devices dg2,pvc] [--levels 0,1,2]
"""
import argparse
import glob
import math
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import igclib  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SETS = {
    'project': [os.path.join(ROOT, 'bench/memory/kernels/memory_kernels.cl'),
                os.path.join(ROOT, 'tests/kernels/memory/memory_bugs.cl')],
    'corpus': sorted(glob.glob(os.path.join(ROOT, 'tests/corpus/rodinia/*.cl'))
                     + glob.glob(os.path.join(ROOT, 'tests/corpus/polybench/*.cl'))),
}
BLOCK = {'hotspot_kernel.cl': ['BLOCK_SIZE=16'], 'nw.cl': ['BLOCK_SIZE=16']}


def geomean(v):
    return math.exp(sum(math.log(x) for x in v) / len(v)) if v else float('nan')


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--zex-spirv')
    ap.add_argument('--devices', default='dg2,pvc')
    ap.add_argument('--levels', default='0,1,2')
    a = ap.parse_args()
    ocloc = igclib.Ocloc()
    if not ocloc.available():
        print('SKIP: ocloc is not installed (Debian package intel-opencl-icd)')
        return 77
    print(f'ocloc: {ocloc.mode()}')
    tc = igclib.Toolchain(a.zex_spirv)
    includes = [os.path.join(ROOT, 'device', 'include'), os.path.join(ROOT, 'include')]
    levels = [int(x) for x in a.levels.split(',')]
    devices = a.devices.split(',')
    rows = {}  # (dev, set, src, kernel, level) -> (plain metrics, checked metrics)
    times = {}  # (dev, set, src, level, variant) -> compile CPU seconds
    with tempfile.TemporaryDirectory(prefix='zex-memory-isa-') as work:
        for set_name, sources in SETS.items():
            for src in sources:
                name = os.path.basename(src)[:-3]
                base = os.path.join(work, set_name + '_' + name)
                tc.cl_to_spv(src, base + '.spv', includes=includes, defines=BLOCK.get(os.path.basename(src), []))
                subprocess.run([tc.zex_spirv, 'link', base + '.spv', '-o', base + '_plain.spv'], check=True)
                subprocess.run([tc.zex_spirv, 'link', base + '.spv', '-o', base + '_checked.spv', '--check-memory'],
                               check=True, stdout=subprocess.DEVNULL)
                kernels = subprocess.run([tc.zex_spirv, 'kernels', base + '_plain.spv'], check=True,
                                         stdout=subprocess.PIPE).stdout.decode().split()
                for dev in devices:
                    for level in levels:
                        bins = {}
                        for variant in ('plain', 'checked'):
                            out = tc.specialize(base + f'_{variant}.spv', base + f'_{variant}{level}.spv',
                                                {igclib.ZEX_SPEC_ID_DEBUG_LEVEL: level})
                            try:
                                zebin, _, cpu = ocloc.compile(open(out, 'rb').read(), dev)
                            except igclib.ToolError as e:
                                if variant == 'checked' and 'plain' in bins:
                                    print(f'FAIL: {dev} L{level} {name}: builds without the checks, not with them: {e}')
                                    return 1
                                reason = next((ln.strip() for ln in str(e).splitlines() if 'error' in ln), '')
                                print(f'skipped: {dev} L{level} {name}: ocloc cannot build it: {reason[:120]}')
                                break
                            bins[variant] = zebin
                            times[(dev, set_name, name, level, variant)] = cpu
                        if len(bins) < 2:
                            continue
                        for k in kernels:
                            rows[(dev, set_name, name, k, level)] = (igclib.zebin_metrics(bins['plain'], k),
                                                                     igclib.zebin_metrics(bins['checked'], k))
    bad = 0
    for dev in devices:
        for level in levels:
            for set_name in SETS:
                ratios, tratios = [], []
                for (d, s, src, k, lv), (p, c) in sorted(rows.items()):
                    if d != dev or s != set_name or lv != level:
                        continue
                    r = c['isa_bytes'] / p['isa_bytes']
                    ratios.append(r)
                    note = ''
                    if c['simd_size'] != p['simd_size']:
                        note += f'  SIMD {p["simd_size"]} -> {c["simd_size"]}'
                        bad += 1
                    if c['per_thread_memory_bytes'] != p['per_thread_memory_bytes']:
                        note += f'  per-thread memory {p["per_thread_memory_bytes"]} -> {c["per_thread_memory_bytes"]}'
                        bad += 1
                    print(f'{dev} L{level} {set_name:8s} {src:24s} {k:28s} {p["isa_bytes"]:7d} -> {c["isa_bytes"]:7d} B  '
                          f'{r:.3f}x{note}')
                for (d, s, src, lv, v), t in sorted(times.items()):
                    if d == dev and s == set_name and lv == level and v == 'checked':
                        tratios.append(t / max(times[(d, s, src, lv, 'plain')], 1e-6))
                if ratios:
                    print(f'== {dev} level {level} {set_name}: {len(ratios)} kernels, ISA geomean {geomean(ratios):.3f}x '
                          f'(max {max(ratios):.3f}x); compile CPU time geomean {geomean(tratios):.3f}x over '
                          f'{len(tratios)} modules')
    print(f'SIMD width or per-thread memory differences: {bad}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
