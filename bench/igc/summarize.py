#!/usr/bin/env python3
"""Condenses igc_bench.py's igc.json (and zexcpu_levels' ratios JSON, if given) into the markdown
tables of docs/benchmarks-igc.md.

    python3 bench/igc/summarize.py <results>/igc.json [<results>/zexcpu_ratios.json] > tables.md
    python3 bench/igc/summarize.py ... --doc docs/benchmarks-igc.md   # replaces the block between
                                        # <!-- igc-tables:begin --> and <!-- igc-tables:end -->
"""
import json
import sys

MAIN = ['nocheck', 'silent', 'printf', 'copy', 'zex0', 'zex1', 'zex2', 'zex0-merged', 'zex1-merged',
        'zex2-merged']


def main():
    doc = outfile = None
    if '--out' in sys.argv:
        k = sys.argv.index('--out')
        outfile = sys.argv[k + 1]
        del sys.argv[k:k + 2]
    if '--doc' in sys.argv:
        k = sys.argv.index('--doc')
        doc = sys.argv[k + 1]
        del sys.argv[k:k + 2]
    if len(sys.argv) not in (2, 3):
        print(__doc__)
        return 2
    d = json.load(open(sys.argv[1]))
    rows, meta = d['rows'], d['meta']
    idx = {(r['device'], r['shape'], r['variant']): r for r in rows}
    out = [f"Measured {meta['date_utc']} UTC; ocloc {meta['ocloc']}, intel-opencl-icd {meta['ocloc_version']}; "
           f"median of {meta['runs']} compiles per configuration.", '']

    out += ['**ISA bytes** (`.text.<kernel>`; in parentheses: × the silent check of the same shape; '
            '`*` marks a kernel IGC compiled at a narrower SIMD width than the silent check):', '']
    for dev in meta['devices']:
        out.append(f'| {dev} | ' + ' | '.join(MAIN) + ' |')
        out.append('|---|' + '--:|' * len(MAIN))
        for shape in meta['shapes']:
            cells = []
            s = idx.get((dev, shape, 'silent'))
            for v in MAIN:
                r = idx.get((dev, shape, v))
                if not r:
                    cells.append('')
                    continue
                star = '*' if s and r['simd_size'] != s['simd_size'] else ''
                cells.append(f"{r['isa_bytes']}{star} ({r['isa_vs_silent']})")
            out.append(f'| {shape} | ' + ' | '.join(cells) + ' |')
        out.append('')

    cold = []
    for dev in meta['devices']:
        s = idx.get((dev, 'vadd', 'silent'))
        parts = [f"level {lv}: {idx[(dev, 'vadd', f'zex{lv}')]['isa_bytes'] - s['isa_bytes']} B"
                 for lv in (0, 1, 2) if s and (dev, 'vadd', f'zex{lv}') in idx]
        if parts:
            cold.append(f"{dev}: " + ', '.join(parts))
    if cold:
        out += ['**One zex cold path** (vadd: zex ISA minus silent ISA): ' + '; '.join(cold) + '.', '']

    out += ['**Compile time**, gather17, CPU ms of the compile (median; in parentheses × nocheck):', '']
    out.append('| device | ' + ' | '.join(MAIN) + ' |')
    out.append('|---|' + '--:|' * len(MAIN))
    for dev in meta['devices']:
        cells = []
        for v in MAIN:
            r = idx.get((dev, 'gather17', v))
            cells.append(f"{r['compile_cpu_ms']:.0f} ({r['cpu_vs_nocheck']})" if r else '')
        out.append(f'| {dev} | ' + ' | '.join(cells) + ' |')
    out.append('')

    main_rows = [r for r in rows if r['variant'] in MAIN]
    mem = sorted({(r['device'], r['shape'], r['variant'], r['per_thread_memory_bytes']) for r in main_rows
                  if r['per_thread_memory_bytes']})
    grfs = sorted({r['grf_count'] for r in main_rows})
    out += ['**Private + spill memory** (`per_thread_memory_buffers`) of the variants above, every shape and '
            'device: ' + ('none' if not mem else ', '.join(f'{d}/{s}/{v}: {b} B' for d, s, v, b in mem))
            + f"; GRF count: {', '.join(map(str, grfs))}.", '']

    out += ['**Targets** (issue 4), project device library:', '',
            '| call site | target | device | measured | limit | met |', '|---|---|---|--:|--:|---|']
    for t in d['targets']:
        if not t['library'].startswith('zex'):
            continue
        lim = t['limit']
        out.append(f"| {t['library'].replace('zex', 'zex', 1)} | {t['target']} | {t['device']} | {t['value']} | "
                   f"{'≤ ' + str(lim) if lim else '= 0'} | {'yes' if t['ok'] else '**no**'}"
                   f"{(' — ' + t['detail']) if t['detail'] else ''} |")
    out.append('')

    cpu = []
    if len(sys.argv) == 3:
        c = json.load(open(sys.argv[2]))
        cpu += [f"**zex-cpu**, 2^24-element vector add ({c['device']}), same run: median of the interleaved "
                f"repetitions, and the best repetition against nocheck's best:", '',
                '| variant | ms per launch (median) | throughput × nocheck | best ms | best × nocheck best '
                '| process CPU ms per launch | CPU efficiency × nocheck | target ≥ 0.95 (median) |',
                '|---|--:|--:|--:|--:|--:|--:|---|']
        for v in c['variants']:
            tgt = ('met' if v['throughput_vs_nocheck'] >= 0.95 else '**not met**') if v['variant'].startswith('zex') else ''
            cpu.append(f"| {v['variant']} | {v['ms']:.2f} | {v['throughput_vs_nocheck']:.3f} | "
                       f"{v.get('best_ms', 0):.2f} | {v.get('best_vs_best_nocheck', 0):.3f} | "
                       f"{v.get('cpu_ms', 0):.2f} | {v.get('cpu_efficiency_vs_nocheck', 0):.3f} | {tgt} |")
        cpu.append('')
    if not doc:
        text = '\n'.join(out + cpu)
        if outfile:
            with open(outfile, 'w') as f:
                f.write(text + '\n')
        else:
            print(text)
        return 0
    body = open(doc).read()
    for tag, lines in (('igc-tables', out), ('zexcpu', cpu)):
        if not lines:
            continue
        begin, end = f'<!-- {tag}:begin -->', f'<!-- {tag}:end -->'
        if begin not in body or end not in body:
            print(f'summarize: {doc} has no {begin} ... {end} block', file=sys.stderr)
            return 1
        head, rest = body.split(begin, 1)
        _, tail = rest.split(end, 1)
        body = head + begin + '\n' + '\n'.join(lines) + '\n' + end + tail
    with open(doc, 'w') as f:
        f.write(body)
    print(f'summarize: updated {doc}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
