#!/usr/bin/env python3
"""CTest `igc_strings`: the strings zex reports live where Intel's driver can find them.

IGC 1.0.12504 (Debian 12) puts every constant array of i8 into the zebin section .data.const.string,
and NEO 22.43 patches kernels with a host pointer into it, which zeMemGetAddressRange rejects: the host
could not read a report's strings. zex's string pass (src/spirv/passes/strings.cpp) wraps the strings zex
calls take as { [N x i8] }, which IGC puts into .data.const (USM, registered).

Compiles through `zex-spirv link` (exactly what zex::Module hands the driver) the test kernels
(tests/kernels/runtime/zex_test_kernels.cl, tests/kernels/device/user_kernels.cl, tests/passes kernels) and the
example (examples/kernels/vadd.cl), bakes debug levels 1 and 2, compiles each for DG2 and PVC with ocloc
(zebin), and checks in the zebin's ELF:
  - every symbol a kernel relocates against lives in .data.const (none in .data.const.string), except,
    in modules that printf or read strings themselves, non-zex strings (IGC keeps printf's strings in
    .data.const.string on purpose); every __zex_str_* symbol and zex_abi_version is in .data.const;
  - the zex strings a kernel relocates against are names `zex-spirv strings` lists for the module;
  - .ze_info shows no private memory and no spill for any kernel.
The control: tests/kernels/passes/strings_shared.cl must show relocations into .data.const.string (its
printf strings), or the reader would pass anything.
Prints one summary line per device and level. Exit: 0 pass, 1 fail, 77 skip (no ocloc).
"""
import argparse
import concurrent.futures
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'bench', 'igc'))
import igclib  # noqa: E402

SKIP = 77
LEVELS = (1, 2)
# name -> (source, kind, may hold non-zex strings in .data.const.string)
MODULES = {
    'zex_test_kernels': ('tests/kernels/runtime/zex_test_kernels.cl', 'cl', False),
    'user_kernels': ('tests/kernels/device/user_kernels.cl', 'cl', False),
    'vadd_example': ('examples/kernels/vadd.cl', 'cl', False),
    'strings_shared': ('tests/kernels/passes/strings_shared.cl', 'cl', True),
    'strings_shared_g': ('tests/kernels/passes/strings_shared.cl', 'cl-g', True),
    'compiler_style_sites': ('tests/kernels/passes/compiler_style_sites.spvasm', 'spv1.4', False),
    'strings_compiler': ('tests/kernels/passes/strings_compiler.spvasm', 'spv1.3', True),
}
CONTROL = 'strings_shared'
# Kernels whose zex strings the pass cannot place on purpose, to test that the host then shows an
# invalid address (tests/runtime/stream_test.cpp, Stream.AStringThePassCannotPlaceIsAnInvalidAddress): a name
# loaded from a table at run time. No zex string of theirs may be misplaced; their other relocations
# (the table, and the plain strings it points to) are theirs.
UNPLACEABLE = {('zex_test_kernels', '.text.throw_computed_name'),
               # a throw before a barrier: converge_throws_at_barriers redirects the thrower's accesses to
               # its scratch words, module-scope __global variables (IGC: .data.global), not strings
               ('zex_test_kernels', '.text.stop_barrier')}


def zex_spirv(tc, *args):
    return subprocess.run([tc.zex_spirv, *args], check=True, stdout=subprocess.PIPE).stdout.decode()


def build(tc, work, includes):
    """[(module, level, kernels, zex string names, SPIR-V bytes)]"""
    out = []
    for name, (src, kind, _) in MODULES.items():
        path = os.path.join(ROOT, src)
        user = os.path.join(work, f'{name}.spv')
        if kind.startswith('cl'):
            tc.cl_to_spv(path, user, includes=includes, flags=igclib.DEBUG_FLAGS if kind == 'cl-g' else ())
        else:
            igclib.run(['spirv-as', '--target-env', kind, path, '-o', user], 'spirv-as')
        # No --library: the embedded device library, of the SPIR-V version zex::Module would choose.
        linked = os.path.join(work, f'{name}_linked.spv')
        zex_spirv(tc, 'link', user, '-o', linked)
        kernels = zex_spirv(tc, 'kernels', linked).split()
        strings = {line.split(' ', 1)[0] for line in zex_spirv(tc, 'strings', linked).splitlines()}
        for level in LEVELS:
            spv = tc.specialize(linked, os.path.join(work, f'{name}{level}.spv'),
                                {igclib.ZEX_SPEC_ID_DEBUG_LEVEL: level})
            out.append((name, level, kernels, strings, open(spv, 'rb').read()))
    return out


def check(name, level, kernels, strings, zebin, failures):
    """Checks one zebin; returns (relocations, against zex strings, of those in .data.const, relocations
    into .data.const.string)."""
    relocs = igclib.relocated_symbols(zebin)
    n_zex = n_zex_const = n_string_section = 0
    for text, sym, where in relocs:
        zex = sym.startswith('__zex_str_') or sym == 'zex_abi_version'
        n_zex += sym.startswith('__zex_str_')
        n_zex_const += sym.startswith('__zex_str_') and where == '.data.const'
        n_string_section += where == '.data.const.string'
        if sym.startswith('__zex_str_') and sym not in strings:
            failures.append(f'{name} L{level}: {text} relocates against {sym}, which the module does not list')
        if where == '.data.const':
            continue
        if not zex and (name, text) in UNPLACEABLE:
            continue  # the table (IGC: .data.global, it holds pointers) and the strings it points to
        if zex or not MODULES[name][2] or where != '.data.const.string':
            failures.append(f'{name} L{level}: {text} relocates against {sym} in {where}')
    for k in kernels:
        m = igclib.zebin_metrics(zebin, k)
        if m['per_thread_memory_bytes']:
            failures.append(f'{name} L{level} {k}: per-thread memory {m["memory_buffers"]}')
    if name == CONTROL and not n_string_section:
        failures.append(f'control {name} L{level}: no relocation into .data.const.string (printf\'s strings); '
                        'the ELF reader is broken')
    return len(relocs), n_zex, n_zex_const, n_string_section


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--zex-spirv', help='the zex-spirv command (CTest passes the build\'s)')
    ap.add_argument('--devices', default='dg2,pvc')
    ap.add_argument('--jobs', type=int, default=2, help='ocloc processes at once')
    a = ap.parse_args()

    ocloc = igclib.Ocloc(force_process=True)   # one process per compile, so that two can run at once
    if not ocloc.available():
        print('SKIP: ocloc is not installed (Debian package intel-opencl-icd); cannot compile for DG2/PVC',
              flush=True)
        return SKIP
    tc = igclib.Toolchain(a.zex_spirv)
    failures = []
    with tempfile.TemporaryDirectory(prefix='zex-igc-strings-') as work:
        includes = [os.path.join(ROOT, 'device', 'include'), os.path.join(ROOT, 'include')]
        mods = build(tc, work, includes)
        jobs = [(dev, m) for dev in a.devices.split(',') for m in mods]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            bins = list(pool.map(lambda j: ocloc.compile(j[1][4], j[0])[0], jobs))
        summary = {}
        for (dev, (name, level, kernels, strings, _)), zebin in zip(jobs, bins):
            t = summary.setdefault((dev, level), [0, 0, 0, 0, 0, 0])
            for i, v in enumerate((1, len(kernels)) + check(name, level, kernels, strings, zebin, failures)):
                t[i] += v
        for (dev, level), (n, k, r, z, zc, s) in summary.items():
            print(f'{dev} level {level}: {n} modules, {k} kernels, {r} relocations; {z} against zex strings, '
                  f'{zc} of them in .data.const; {s} into .data.const.string (printf and user strings)',
                  flush=True)
    if failures:
        print(f'FAIL: {len(failures)} problems:')
        for f in failures:
            print('  ' + f)
        return 1
    print('PASS')
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except (igclib.ToolError, subprocess.CalledProcessError, ValueError) as e:
        print(f'FAIL: {e}')
        sys.exit(1)
