#!/usr/bin/env python3
"""Early stop's cost in Intel's compiler (issue 26, item 3; target <= 1.05x ISA): every kernel of the
project's bench kernels and of the third-party corpus (tests/corpus/checked: Rodinia and PolyBench with
bounds checks, origin and licence in tests/corpus/README.md), linked as zex::Module links it and then
with the stop checks (`zex-spirv stop`), compiled with ocloc for each device at each level; prints the
ISA bytes of both, the ratio per kernel, the geometric mean per set, and any SIMD width or per-thread
memory difference.

  python3 bench/igc/stop_isa.py --zex-spirv build/tools/zex-spirv [--devices dg2,pvc] [--levels 0,1,2]
                                [--no-retry]

--no-retry compiles with IGC_DisableRecompilation=1: IGC keeps its first build instead of recompiling
a kernel whose first build spilled. That retry decision has a cut-off (vISA skips it when spill code is
under about 2 % of the instructions), and a kernel near it flips with any small edit, the stop check's
20 instructions included (Rodinia's nw_kernel1 on PVC at level 1: 8064 -> 53632 B with the retry,
53184 -> 53632 B without). Both figures are reported in docs/benchmarks.md.
"""
import argparse
import concurrent.futures
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
    'project': [os.path.join(ROOT, 'bench/zex/kernels/bench_kernels.cl')]
    + sorted(glob.glob(os.path.join(ROOT, 'tests/kernels/igc_bench/*.cl'))),
    'corpus': sorted(glob.glob(os.path.join(ROOT, 'tests/corpus/checked/*.cl'))),
}
# Rodinia's hotspot and nw take their block size from the host's build options (tests/corpus/CMakeLists.txt).
BLOCK = {'hotspot_kernel.cl': ['BLOCK_SIZE=16'], 'nw.cl': ['BLOCK_SIZE=16']}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--zex-spirv')
    ap.add_argument('--devices', default='dg2')
    ap.add_argument('--levels', default='1')
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--no-retry', action='store_true', help='IGC_DisableRecompilation=1 for every compile')
    a = ap.parse_args()
    if a.no_retry:
        os.environ['IGC_DisableRecompilation'] = '1'  # ocloc runs as a child process (force_process)
        print('IGC_DisableRecompilation=1: first builds only')
    ocloc = igclib.Ocloc(force_process=True)
    if not ocloc.available():
        print('SKIP: ocloc is not installed (Debian package intel-opencl-icd)')
        return 77
    tc = igclib.Toolchain(a.zex_spirv)
    includes = [os.path.join(ROOT, 'device', 'include'), os.path.join(ROOT, 'include'),
                os.path.join(ROOT, 'tests/kernels/igc_bench'), os.path.join(ROOT, 'tests/corpus/checked')]
    levels = [int(x) for x in a.levels.split(',')]
    with tempfile.TemporaryDirectory(prefix='zex-stop-isa-') as work:
        jobs = []  # (set, source, kernels, level, variant, spv bytes)
        for set_name, sources in SETS.items():
            for src in sources:
                base = os.path.join(work, set_name + '_' + os.path.basename(src)[:-3])
                # tests/kernels/igc_bench: zex's checks (check.h's ZEXB_ZEX), as igc_bench.py builds its zex
                # variant; Rodinia's hotspot and nw: the block size tests/corpus/CMakeLists.txt gives them
                tc.cl_to_spv(src, base + '.spv', includes=includes, defines=['ZEXB_VARIANT=4'] + BLOCK.get(os.path.basename(src), []))
                subprocess.run([tc.zex_spirv, 'link', base + '.spv', '-o', base + '_plain.spv'], check=True)
                subprocess.run([tc.zex_spirv, 'stop', base + '.spv', '-o', base + '_stop.spv'], check=True)
                kernels = subprocess.run([tc.zex_spirv, 'kernels', base + '_plain.spv'], check=True,
                                         stdout=subprocess.PIPE).stdout.decode().split()
                for level in levels:
                    for variant in ('plain', 'stop'):
                        out = tc.specialize(base + f'_{variant}.spv', base + f'_{variant}{level}.spv',
                                            {igclib.ZEX_SPEC_ID_DEBUG_LEVEL: level})
                        jobs.append((set_name, src, kernels, level, variant, open(out, 'rb').read()))
        work_items = [(dev, j) for dev in a.devices.split(',') for j in jobs]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            # A module the device cannot build without the checks either (PolyBench's double kernels on
            # DG2, which has no fp64) is left out, with ocloc's reason; a failure of the stop build alone
            # is the pass's and fails the script.
            def compile_one(w):
                try:
                    return ocloc.compile(w[1][5], w[0])[0], None
                except igclib.ToolError as e:
                    reason = next((ln.strip() for ln in str(e).splitlines() if ln.strip().startswith('error:')),
                                  str(e).splitlines()[0])
                    return None, reason
            bins = list(pool.map(compile_one, work_items))
        failed = {}
        for (dev, (set_name, src, kernels, level, variant, _)), (zebin, reason) in zip(work_items, bins):
            if zebin is None:
                failed[(dev, src, level, variant)] = reason
        for (dev, src, level, variant), reason in sorted(failed.items()):
            if variant == 'stop' and (dev, src, level, 'plain') not in failed:
                print(f'FAIL: {dev} level {level} {src}: builds without the stop checks, not with them: {reason}')
                return 1
            if variant == 'plain':
                print(f'skipped: {dev} level {level} {os.path.basename(src)}: ocloc cannot build it: {reason}')
        metrics = {}
        for (dev, (set_name, src, kernels, level, variant, _)), (zebin, _) in zip(work_items, bins):
            if (dev, src, level, 'plain') in failed:
                continue
            for k in kernels:
                metrics[(dev, set_name, os.path.basename(src), k, level, variant)] = igclib.zebin_metrics(zebin, k)
    for dev in a.devices.split(','):
        for level in levels:
            for set_name in SETS:
                ratios, worst = [], (0, '')
                for (d, s, src, k, lv, v), m in sorted(metrics.items()):
                    if d != dev or s != set_name or lv != level or v != 'plain':
                        continue
                    st = metrics[(d, s, src, k, lv, 'stop')]
                    r = st['isa_bytes'] / m['isa_bytes']
                    ratios.append(r)
                    worst = max(worst, (r, f'{src}:{k}'))
                    note = ''
                    if st['simd_size'] != m['simd_size']:
                        note += f'  SIMD {m["simd_size"]} -> {st["simd_size"]}'
                    if st['per_thread_memory_bytes'] != m['per_thread_memory_bytes']:
                        note += f'  per-thread memory {m["per_thread_memory_bytes"]} -> {st["per_thread_memory_bytes"]}'
                    print(f'{dev} L{level} {set_name:8s} {src:28s} {k:28s} {m["isa_bytes"]:7d} -> {st["isa_bytes"]:7d} B  {r:.3f}x{note}')
                if ratios:
                    g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
                    print(f'== {dev} level {level} {set_name}: {len(ratios)} kernels, geomean {g:.3f}x, '
                          f'worst {worst[0]:.3f}x ({worst[1]})')
    return 0


if __name__ == '__main__':
    sys.exit(main())
