#!/usr/bin/env python3
"""Device-code cost of bounds checks on Intel's compiler (IGC through ocloc), for DG2 and PVC.

For each kernel shape (tests/kernels/igc_bench/) and each way of handling a failed check, builds SPIR-V,
compiles it with ocloc --format zebin and reads from the zebin: ISA bytes (.text.<kernel>), GRF
count, per-thread private/spill/scratch memory (.ze_info per_thread_memory_buffers), and the median
compile time over --runs compiles (all configurations are compiled round-robin, so drift in machine
load hits every variant alike).

Variants: nocheck, silent, printf, copy (ancestor: strings copied on the device), floor (issue 15: one
shared throw block per kernel storing a site number: CAS, site, launch id, fence, status; every row
is also reported × floor), zex0/zex1/zex2 (the
user kernel linked with the zex device library, the debug level set through its specialization
constant); -shared: one throw block per kernel written by hand; -merged: the per-site module through
zex-spirv link (the C++ throw-site merge, exactly what zex::Module does). With --debug-info every
kernel is compiled with -g (docs/benchmarks-igc.md, "With debug information").

Writes <out>/igc.csv, <out>/igc.json (read by summarize.py) and <out>/igc.md. Exit status: 0 on success (targets are
reported, not enforced; tests/igc enforces the shape rules), 1 on a tool failure, 77 when ocloc is
not installed.

    python3 bench/igc/igc_bench.py --zex-spirv build/tools/zex-spirv --out build/igc-results   # ~1-2 min
    python3 bench/igc/igc_bench.py --debug-info --shapes gather17 --runs 1 --out /tmp/g          # with -g
"""

import argparse
import csv
import json
import os
import random
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import igclib  # noqa: E402

SHAPES = {  # shape -> (source, kernel name, checked sites in the source)
    'vadd': ('vadd.cl', 'vadd', 1),
    'gather17': ('gather17.cl', 'gather17', 17),
    'stencil2d': ('stencil2d.cl', 'stencil2d', 12),
    # issue 15: checks in helpers (inline / noinline), and a second gather nobody tuned for
    'helper3': ('helper3.cl', 'helper3', 2),
    'helper3ni': ('helper3.cl', 'helper3', 2),
    'gather17b': ('gather17b.cl', 'gather17b', 17),
}
SHAPE_DEFINES = {'helper3ni': ['ZEXB_NOINLINE']}
# ZEXB_VARIANT values (check.h); floor: one shared throw block, site number only (issue 15)
BASE_VARIANTS = {'nocheck': 0, 'silent': 1, 'printf': 2, 'copy': 3, 'floor': 7}
ZEXB_ZEX = 4
ZEXB_ZEX_SHARED = 5
LEVELS = (0, 1, 2)
# Call-site styles: as <zex/device.h> emits it (one cold block per site); one throw block per kernel
# written by hand (what a compiler can emit); the per-site module after zex's throw-site merge.
# (The macros call the fused entry point zex_throw since issue 15, item 4: the -fused rows that
# compared it with the three calls are gone; docs/benchmarks-igc.md keeps their figures.)
STYLES = ('', '-shared', '-merged')
STYLE_LABELS = {'': '', '-shared': ' (one throw block per kernel, by hand)',
                '-merged': ' (per-site macro + throw-site merge)'}


def repo_root():
    return os.path.dirname(os.path.dirname(HERE))


class Library:
    """The zex device library user kernels are linked with."""

    def __init__(self, label, spv, includes):
        self.label, self.spv, self.includes = label, spv, includes


def project_library(tc, root, work, device_spv):
    """The project's device library: --device-spv (the CMake build's ${ZEX_DEVICE_SPV}) or built here
    from device/zex_device.cl, so that the script runs without make."""
    incs = [os.path.join(root, 'device', 'include'), os.path.join(root, 'include')]
    header = 'device/include/zex/device.h'
    if device_spv:
        spv = device_spv
    else:
        src = os.path.join(root, 'device', 'zex_device.cl')
        spv = tc.cl_to_spv(src, os.path.join(work, 'zex_device.spv'), includes=incs)
    return Library('zex', spv, incs), header


def build_modules(tc, work, shapes, libs, shared, flags=()):
    """[(shape, variant, level or None, kernel name, SPIR-V bytes)] for every configuration; `flags`
    go to clang (DEBUG_FLAGS for -g)."""
    kdir = os.path.join(os.path.dirname(os.path.dirname(HERE)), 'tests', 'kernels', 'igc_bench')
    mods = []
    for shape in shapes:
        src, kname, _ = SHAPES[shape]
        path = os.path.join(kdir, src)
        for v, num in BASE_VARIANTS.items():
            spv = tc.cl_to_spv(path, os.path.join(work, f'{shape}_{v}.spv'), includes=[kdir],
                               defines=[f'ZEXB_VARIANT={num}'] + SHAPE_DEFINES.get(shape, []), flags=flags)
            mods.append((shape, v, None, kname, open(spv, 'rb').read()))
        for lib in libs:
            styles = [('', ZEXB_ZEX)]
            if shared and lib.label == 'zex':   # the hand-written block cross-checks the pass once
                styles += [('-shared', ZEXB_ZEX_SHARED)]
            if shared:
                styles += [('-merged', ZEXB_ZEX)]
            for style, num in styles:
                tag = f'{shape}_{lib.label}{style}'
                user = tc.cl_to_spv(path, os.path.join(work, f'{tag}_user.spv'),
                                    includes=[kdir] + lib.includes, defines=[f'ZEXB_VARIANT={num}'] + SHAPE_DEFINES.get(shape, []), flags=flags)
                linked = tc.link(user, lib.spv, os.path.join(work, f'{tag}.spv'), merge=style.endswith('-merged'))
                for level in LEVELS:
                    out = tc.specialize(linked, os.path.join(work, f'{tag}{level}.spv'),
                                        {igclib.ZEX_SPEC_ID_DEBUG_LEVEL: level})
                    mods.append((shape, f'{lib.label}{level}{style}', level, kname, open(out, 'rb').read()))
    return mods


def measure(ocloc, mods, devices, runs, log):
    """Compiles every (module, device) `runs` times round-robin after one warm-up round; returns rows."""
    rows = {}
    order = [(m, d) for m in mods for d in devices]
    for rep in range(runs + 1):
        # A fresh order each round (seeded, so reruns repeat it): no variant always follows the same
        # neighbour, whose caches and allocator state it would inherit.
        random.Random(rep).shuffle(order)
        t0 = time.perf_counter()
        for (shape, variant, level, kname, spv), dev in order:
            zebin, dt, ct = ocloc.compile(spv, dev)
            key = (shape, variant, dev)
            if key not in rows:
                r = {'shape': shape, 'variant': variant, 'level': '' if level is None else level,
                     'device': dev, 'spirv_bytes': len(spv)}
                r.update(igclib.zebin_metrics(zebin, kname))
                r['times'], r['cpu_times'] = [], []
                rows[key] = r
            elif igclib.zebin_metrics(zebin, kname)['isa_bytes'] != rows[key]['isa_bytes']:
                raise igclib.ToolError(f'non-deterministic ISA size for {key}')
            if rep > 0:   # round 0 warms IGC's lazily loaded parts and is not timed
                rows[key]['times'].append(dt)
                rows[key]['cpu_times'].append(ct)
        log(f'  round {rep}/{runs}: {len(order)} compiles in {time.perf_counter() - t0:.1f} s'
            + (' (warm-up, not timed)' if rep == 0 else ''))
    out = []
    for r in rows.values():
        r['compile_ms'] = round(1000 * statistics.median(r['times']), 2)
        r['compile_ms_min'] = round(1000 * min(r['times']), 2)
        r['compile_cpu_ms'] = round(1000 * statistics.median(r.pop('cpu_times')), 2)
        r['runs'] = len(r.pop('times'))
        out.append(r)
    return out


def add_ratios(rows):
    """isa_vs_silent, isa_vs_nocheck, isa_vs_floor and time_vs_nocheck, against the same shape and device."""
    idx = {(r['shape'], r['device'], r['variant']): r for r in rows}
    for r in rows:
        s = idx.get((r['shape'], r['device'], 'silent'))
        n = idx.get((r['shape'], r['device'], 'nocheck'))
        f = idx.get((r['shape'], r['device'], 'floor'))
        r['isa_vs_floor'] = round(r['isa_bytes'] / f['isa_bytes'], 3) if f else ''
        r['isa_vs_silent'] = round(r['isa_bytes'] / s['isa_bytes'], 3) if s else ''
        r['isa_vs_nocheck'] = round(r['isa_bytes'] / n['isa_bytes'], 3) if n else ''
        r['time_vs_nocheck'] = round(r['compile_ms'] / n['compile_ms'], 3) if n else ''
        r['cpu_vs_nocheck'] = round(r['compile_cpu_ms'] / n['compile_cpu_ms'], 3) if n else ''


def evaluate_targets(rows, libs, devices):
    """The issue-4 targets per library, call-site style and device:
    [(library, target, device, value, limit, ok, detail)]. Also checks that the kernel keeps the SIMD
    width of the silent check: IGC narrows kernels that make calls (SIMD32 -> SIMD8 on DG2), which
    costs the hot path far more than any ISA byte count shows."""
    idx = {(r['shape'], r['device'], r['variant']): r for r in rows}
    present = {r['variant'] for r in rows}
    res = []
    for lib in libs:
        for style in STYLES:
            names = [f'{lib.label}{lv}{style}' for lv in LEVELS]
            if not any(n in present for n in names):
                continue
            label = lib.label + STYLE_LABELS[style]
            for dev in devices:
                mem = [(r['shape'], r['variant'], r['per_thread_memory_bytes']) for r in rows
                       if r['device'] == dev and r['variant'] in names]
                worst = max((m[2] for m in mem), default=0)
                bad = [f'{s}/{v}={b}' for s, v, b in mem if b]
                res.append((label, 'private+spill bytes/thread, every shape and level', dev, worst, 0, worst == 0,
                            ', '.join(bad)))
                g = lambda v: idx.get(('gather17', dev, v))  # noqa: E731
                l1, l2 = g(names[1]), g(names[2])
                if l1 and g('silent'):
                    x = l1['isa_bytes'] / g('silent')['isa_bytes']
                    res.append((label, 'gather17 level-1 ISA / silent ISA', dev, round(x, 3), 1.5, x <= 1.5, ''))
                if l2 and g('silent'):
                    x = l2['isa_bytes'] / g('silent')['isa_bytes']
                    res.append((label, 'gather17 level-2 ISA / silent ISA', dev, round(x, 3), 3.0, x <= 3.0, ''))
                if l1 and g('nocheck'):
                    x = l1['compile_cpu_ms'] / g('nocheck')['compile_cpu_ms']
                    w = l1['compile_ms'] / g('nocheck')['compile_ms']
                    res.append((label, 'gather17 level-1 compile CPU time / nocheck', dev, round(x, 3), 1.25,
                                x <= 1.25, f'wall-clock ratio {w:.3f}'))
                # Issue 15: gather17 × silent at every level, one-site vadd × the floor, level-2 compile time.
                for lv, (lim_s, lim_f) in enumerate(ISSUE15_LIMITS):
                    z = g(names[lv])
                    if z and g('silent'):
                        x = z['isa_bytes'] / g('silent')['isa_bytes']
                        res.append((label, f'(issue 15) gather17 level-{lv} ISA / silent ISA', dev, round(x, 3),
                                    lim_s, x <= lim_s, ''))
                    v, vf = idx.get(('vadd', dev, names[lv])), idx.get(('vadd', dev, 'floor'))
                    if v and vf:
                        x = v['isa_bytes'] / vf['isa_bytes']
                        res.append((label, f'(issue 15) vadd level-{lv} ISA / floor ISA', dev, round(x, 3), lim_f,
                                    x <= lim_f, f"{v['isa_bytes']} B vs {vf['isa_bytes']} B"))
                if l2 and g('nocheck'):
                    x = l2['compile_cpu_ms'] / g('nocheck')['compile_cpu_ms']
                    res.append((label, '(issue 15) gather17 level-2 compile CPU time / nocheck', dev, round(x, 3),
                                1.2, x <= 1.2, ''))
                narrowed = [f"{r['shape']}/{r['variant']}: SIMD{r['simd_size']}" for r in rows
                            if r['device'] == dev and r['variant'] in names
                            and idx.get((r['shape'], dev, 'silent'))
                            and r['simd_size'] != idx[(r['shape'], dev, 'silent')]['simd_size']]
                res.append((label, '(extra) SIMD width = silent check\'s, every shape and level', dev,
                            len(narrowed), 0, not narrowed, ', '.join(narrowed)))
    return res


# Issue 15 limits per level (0, 1, 2): (gather17 ISA / silent, vadd ISA / floor).
ISSUE15_LIMITS = ((1.50, 1.10), (1.60, 1.20), (1.70, 1.40))


COLS = ['shape', 'device', 'variant', 'level', 'isa_bytes', 'isa_vs_silent', 'isa_vs_nocheck', 'isa_vs_floor',
        'grf_count',
        'simd_size', 'private_bytes', 'spill_bytes', 'scratch_bytes', 'per_thread_memory_bytes',
        'has_stack_calls', 'other_text_bytes', 'compile_cpu_ms', 'cpu_vs_nocheck', 'compile_ms', 'compile_ms_min',
        'time_vs_nocheck', 'runs',
        'spirv_bytes']


def write_outputs(out, rows, targets, meta):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'igc.csv'), 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=COLS, extrasaction='ignore')
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(out, 'igc.json'), 'w') as f:
        json.dump({'meta': meta, 'rows': rows,
                   'targets': [dict(zip(['library', 'target', 'device', 'value', 'limit', 'ok', 'detail'], t))
                               for t in targets]}, f, indent=1, default=str)
    md = []
    md.append(f"ocloc: {meta['ocloc']}; intel-opencl-icd {meta['ocloc_version']}; compile times are medians "
              f"of {meta['runs']} compiles (CPU time of the compile, and wall clock); device library: "
              f"{meta['device_library']}; header: {meta['header']}; {meta['date_utc']} UTC.")
    md.append('')
    for dev in meta['devices']:
        md.append(f'#### {dev}')
        md.append('')
        md.append('| shape | variant | ISA bytes | × silent | × nocheck | × floor | GRF | SIMD | private+spill B/thread '
                  '| compile CPU ms | × nocheck | compile wall ms | × nocheck |')
        md.append('|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|')
        for r in rows:
            if r['device'] != dev:
                continue
            md.append(f"| {r['shape']} | {r['variant']} | {r['isa_bytes']} | {r['isa_vs_silent']} | "
                      f"{r['isa_vs_nocheck']} | {r['isa_vs_floor']} | {r['grf_count']} | {r['simd_size']} | "
                      f"{r['per_thread_memory_bytes']} | {r['compile_cpu_ms']} | {r['cpu_vs_nocheck']} | "
                      f"{r['compile_ms']} | {r['time_vs_nocheck']} |")
        md.append('')
    md.append('#### Targets')
    md.append('')
    md.append('| library | target | device | measured | limit | met |')
    md.append('|---|---|---|--:|--:|---|')
    for lib, t, dev, val, lim, ok, detail in targets:
        md.append(f"| {lib} | {t} | {dev} | {val} | {'≤ ' if lim else '= '}{lim} | "
                  f"{'yes' if ok else 'NO'}{(' (' + detail + ')') if detail else ''} |")
    md.append('')
    with open(os.path.join(out, 'igc.md'), 'w') as f:
        f.write('\n'.join(md))
    return '\n'.join(md)


def ocloc_version():
    try:
        import subprocess
        r = subprocess.run(['dpkg-query', '-W', '-f=${Version}', 'intel-opencl-icd'], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
        return r.stdout.decode() or 'unknown'
    except OSError:
        return 'unknown'


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--root', default=repo_root(), help='zex source tree (default: this checkout)')
    ap.add_argument('--device-spv', help='the device library SPIR-V (default: build device/zex_device.cl here)')
    ap.add_argument('--out', default='igc-results', help='output directory (default: ./igc-results)')
    ap.add_argument('--runs', type=int, default=5, help='timed compiles per configuration (default 5)')
    ap.add_argument('--devices', default='dg2,pvc')
    ap.add_argument('--shapes', default=','.join(SHAPES))
    ap.add_argument('--zex-spirv', help='the zex-spirv command (default: $ZEX_SPIRV, build/tools/, PATH)')
    ap.add_argument('--debug-info', action='store_true', help='compile every kernel with -g')
    ap.add_argument('--no-zex', action='store_true', help='skip the project device library')
    ap.add_argument('--no-shared', action='store_true',
                    help='skip the shared-throw-block variants (<lib><level>-shared, <lib><level>-merged)')
    ap.add_argument('--process', action='store_true', help='run the ocloc executable per compile')
    ap.add_argument('--skip-ok', action='store_true', help='exit 0, not 77, when ocloc is missing')
    a = ap.parse_args(argv)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731

    ocloc = igclib.Ocloc(force_process=a.process)
    if not ocloc.available():
        log('igc_bench: SKIP: ocloc is not installed (Debian package intel-opencl-icd)')
        return 0 if a.skip_ok else 77
    devices = [d for d in a.devices.split(',') if d]
    shapes = [s for s in a.shapes.split(',') if s]
    for s in shapes:
        if s not in SHAPES:
            raise SystemExit(f'unknown shape {s!r}; shapes: {", ".join(SHAPES)}')
    try:
        tc = igclib.Toolchain(a.zex_spirv)
        with tempfile.TemporaryDirectory(prefix='zex-igc-') as work:
            libs = []
            header = ''
            if not a.no_zex:
                lib, header = project_library(tc, a.root, work, a.device_spv)
                libs.append(lib)
            mods = build_modules(tc, work, shapes, libs, not a.no_shared,
                                 igclib.DEBUG_FLAGS if a.debug_info else ())
            log(f'igc_bench: {len(mods)} modules x {len(devices)} devices, {a.runs} timed runs, {ocloc.mode()}')
            rows = measure(ocloc, mods, devices, a.runs, log)
    except igclib.ToolError as e:
        log(f'igc_bench: {e}')
        return 1
    order = {v: i for i, v in enumerate(list(BASE_VARIANTS) + [f'{lb.label}{lv}{st}' for lb in libs
                                                                 for st in STYLES for lv in LEVELS])}
    rows.sort(key=lambda r: (devices.index(r['device']), shapes.index(r['shape']), order[r['variant']]))
    add_ratios(rows)
    targets = evaluate_targets(rows, libs, devices)
    meta = {'ocloc': ocloc.mode(), 'ocloc_version': ocloc_version(), 'runs': a.runs, 'devices': devices,
            'shapes': shapes, 'device_library': a.device_spv or 'device/zex_device.cl (built by the script)',
            'header': header or 'n/a', 'libraries': [lb.label for lb in libs], 'debug_info': a.debug_info,
            'date_utc': time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())}
    print(write_outputs(a.out, rows, targets, meta))
    log(f'igc_bench: wrote {a.out}/igc.csv, igc.json, igc.md')
    return 0


if __name__ == '__main__':
    sys.exit(main())
