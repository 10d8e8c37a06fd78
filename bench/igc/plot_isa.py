#!/usr/bin/env python3
"""Plots ISA bytes per bounds-check variant, per kernel shape, for DG2 and PVC, from igc_bench.py's CSV,
with gnuplot (Debian gnuplot-nox): one panel per (device, shape), log-scale bars, the value on each bar.

    python3 bench/igc/plot_isa.py <igc.csv> <out.png> [--variants nocheck,silent,...]
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys
import tempfile

DEFAULT_VARIANTS = ['nocheck', 'silent', 'printf', 'copy', 'zex0', 'zex1', 'zex2',
                    'zex0-merged', 'zex1-merged', 'zex2-merged']
COLORS = {'nocheck': '#7f7f7f', 'silent': '#b0b0b0', 'printf': '#d62728', 'copy': '#ff7f0e'}


def color(v):
    if v in COLORS:
        return COLORS[v]
    if v.endswith('-shared') or v.endswith('-merged'):
        return '#2ca02c'
    return '#1f77b4'


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('csv')
    ap.add_argument('png')
    ap.add_argument('--variants', default=','.join(DEFAULT_VARIANTS))
    a = ap.parse_args()
    gnuplot = shutil.which('gnuplot')
    if not gnuplot:
        print('plot_isa: gnuplot not found (Debian package gnuplot-nox)', file=sys.stderr)
        return 1
    with open(a.csv) as f:
        rows = list(csv.DictReader(f))
    variants = [v for v in a.variants.split(',') if v]
    devices = list(dict.fromkeys(r['device'] for r in rows))
    shapes = list(dict.fromkeys(r['shape'] for r in rows))
    idx = {(r['device'], r['shape'], r['variant']): r for r in rows}
    with tempfile.TemporaryDirectory(prefix='zex-plot-') as d:
        script = [
            f"set terminal pngcairo size {430 * len(shapes)},{380 * len(devices)} font 'DejaVu Sans,9'",
            f"set output '{os.path.abspath(a.png)}'",
            'set termoption noenhanced',
            f"set multiplot layout {len(devices)},{len(shapes)} title 'ISA bytes per bounds-check variant "
            f"(IGC via ocloc; blue: zex, one cold path per site; green: the same after the throw-site merge, one throw block per kernel)'",
            'set style fill solid 0.9 border -1', 'set boxwidth 0.75', 'set logscale y', 'set grid ytics',
            'set xtics rotate by -45 noenhanced', 'set ylabel "ISA bytes (log)"', 'unset key',
            'set format y "%.0s%c"', 'set yrange [256:*]', 'set offsets 0.5,0.5,0,0',
        ]
        for dev in devices:
            for shape in shapes:
                data = os.path.join(d, f'{dev}_{shape}.dat')
                with open(data, 'w') as f:
                    for v in variants:
                        r = idx.get((dev, shape, v))
                        if r:
                            f.write(f'"{v}" {r["isa_bytes"]} 0x{color(v)[1:]}\n')
                base = idx.get((dev, shape, 'silent'))
                title = f'{dev}: {shape}' + (f' (silent = {base["isa_bytes"]} B)' if base else '')
                script.append(f"set title '{title}' noenhanced")
                script.append(f"plot '{data}' using 0:2:3:xtic(1) with boxes lc rgb variable, "
                              f"'' using 0:2:(sprintf('%.1fk', $2/1000.0)) with labels offset 0,0.6 font ',7'")
        script.append('unset multiplot')
        gp = os.path.join(d, 'plot.gp')
        with open(gp, 'w') as f:
            f.write('\n'.join(script) + '\n')
        r = subprocess.run([gnuplot, gp], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if r.returncode != 0:
            print('plot_isa: gnuplot failed:\n' + r.stdout.decode(errors='replace'), file=sys.stderr)
            return 1
    print(f'plot_isa: wrote {a.png}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
