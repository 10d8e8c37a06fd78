#!/usr/bin/env python3
"""CTest `igc_shape`: the zex device library must cost no private memory and no spills on Intel GPUs.

Compiles, with Intel's offline compiler (ocloc) for DG2 and PVC, every zex debug level (0, 1, 2) of
  - the bench/igc kernel shapes (vadd, gather17, stencil2d) with ZEX_CHECK_BOUNDS at every access,
    both as <zex/device.h> emits it (one cold block per site) and with one throw block per kernel,
  - tests/kernels/igc/abi_calls.cl, which calls the three ABI entry points as a compiler would,
  - tests/kernels/igc/merge_patterns.cl (loops, two exception kinds, inlined helpers), as is and after
    zex's throw-site merge (zex-spirv link, the per-kernel throw block the shapes get as -merged too),
each linked with the device library (user module first) and specialized through the debug-level
specialization constant, and fails if any kernel has per-thread private or spill memory
(.ze_info per_thread_memory_buffers) beyond what the same shape's floor variant has (helpers that are
not inlined take the state through a private copy and a stack call whatever the cold path is); for the
per-site modules (bench rows without -merged/-shared, which zex::Module never builds) it warns. A kernel that compiles to a narrower SIMD width than the same
shape with a silent check is reported (a failure with --strict-simd): IGC narrows kernels with calls
or heavy cold paths, which taxes the hot path.
A negative control (tests/kernels/igc/uses_private.cl) must be flagged, or the checker itself is broken.

Exit status: 0 pass, 1 fail, 77 skip (ocloc / libocloc not installed: Debian intel-opencl-icd).
Shape only: nothing here is timed.
"""
import argparse
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'bench', 'igc'))
import igclib  # noqa: E402
import igc_bench  # noqa: E402

SKIP = 77

# helper_then_barrier is not among them: it hands its state to a noinline helper, which IGC turns into a
# stack call with a private copy of the state (24-32 B per thread, 512 B scratch on PVC), the kernel's
# own shape (igc_bench's floors), with or without the convergence pass.
BARRIER_KERNELS = ('layer', 'stencil', 'wavefront', 'boxes', 'loop_barrier')
# likelihood (particlefilter's shape) at -O2 only: at -O0 clang inlines nothing, so its value-returning
# helper stays a call that IGC makes a stack call with a private copy of the state (32 B), as above.
BARRIER_KERNELS_O2 = BARRIER_KERNELS + ('likelihood',)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--device-spv', help='device library SPIR-V (default: build device/zex_device.cl)')
    ap.add_argument('--devices', default='dg2,pvc')
    ap.add_argument('--zex-spirv', help='the zex-spirv command (CTest passes the build\'s)')
    ap.add_argument('--strict-simd', action='store_true',
                    help='also fail when a zex kernel compiles to a narrower SIMD width than the silent check')
    a = ap.parse_args()

    ocloc = igclib.Ocloc()
    if not ocloc.available():
        print('SKIP: ocloc is not installed (Debian package intel-opencl-icd); '
              'cannot compile for DG2/PVC', flush=True)
        return SKIP
    devices = a.devices.split(',')
    tc = igclib.Toolchain(a.zex_spirv)
    failures, warnings = [], []
    checked = 0
    with tempfile.TemporaryDirectory(prefix='zex-igc-test-') as work:
        spv = a.device_spv if a.device_spv and os.path.exists(a.device_spv) else None
        lib, header = igc_bench.project_library(tc, ROOT, work, spv)
        print(f'device library: {spv or "device/zex_device.cl (built here)"}; header: {header}')
        mods = igc_bench.build_modules(tc, work, list(igc_bench.SHAPES), [lib], shared=True)
        for kname, merge in [('abi_calls', False), ('merge_patterns', False), ('merge_patterns', True),
                             ('abi_sequence', False), ('abi_sequence', True)]:
            user = tc.cl_to_spv(os.path.join(ROOT, 'tests', 'kernels', 'igc', f'{kname}.cl'), os.path.join(work, f'{kname}.spv'),
                                includes=lib.includes)
            style = '-merged' if merge else ''
            linked = tc.link(user, lib.spv, os.path.join(work, f'{kname}{style}_linked.spv'), merge=merge)
            for level in igc_bench.LEVELS:
                out = tc.specialize(linked, os.path.join(work, f'{kname}{style}{level}.spv'),
                                    {igclib.ZEX_SPEC_ID_DEBUG_LEVEL: level})
                mods.append((kname, f'zex{level}{style}', level, kname, open(out, 'rb').read()))
        # Throws before barriers (tests/kernels/barriers/barrier_kernels.cl, -O2 and -O0): a thrower runs on to
        # every barrier with its accesses redirected (src/spirv/passes/barrier_throws.cpp); that must cost no
        # private memory or spills either.
        for opt in ('-O2', '-O0'):
            name = 'barriers' + opt
            user = tc.cl_to_spv(os.path.join(ROOT, 'tests', 'kernels', 'barriers', 'barrier_kernels.cl'),
                                os.path.join(work, f'{name}.spv'), includes=lib.includes, flags=[opt])
            linked = tc.link(user, lib.spv, os.path.join(work, f'{name}_linked.spv'))
            for level in igc_bench.LEVELS:
                out = tc.specialize(linked, os.path.join(work, f'{name}{level}.spv'),
                                    {igclib.ZEX_SPEC_ID_DEBUG_LEVEL: level})
                data = open(out, 'rb').read()
                for k in BARRIER_KERNELS_O2 if opt == '-O2' else BARRIER_KERNELS:
                    mods.append((f'{name}:{k}', f'zex{level}', level, k, data))
        control = tc.cl_to_spv(os.path.join(ROOT, 'tests', 'kernels', 'igc', 'uses_private.cl'),
                               os.path.join(work, 'uses_private.spv'))
        control = open(control, 'rb').read()

        for dev in devices:
            simd_silent = {}
            floor_memory = {}
            for shape, variant, level, kname, data in mods:
                if variant in ('silent', 'floor'):
                    m = igclib.zebin_metrics(ocloc.compile(data, dev)[0], kname)
                    if variant == 'silent':
                        simd_silent[shape] = m['simd_size']
                    else:
                        floor_memory[shape] = m['per_thread_memory_bytes']
            for shape, variant, level, kname, data in mods:
                if level is None:
                    continue
                m = igclib.zebin_metrics(ocloc.compile(data, dev)[0], kname)
                checked += 1
                what = f'{dev} {shape} {variant}'
                print(f"{what:36} ISA {m['isa_bytes']:6} B  SIMD{m['simd_size']}  GRF {m['grf_count']}  "
                      f"private {m['private_bytes']} spill {m['spill_bytes']} scratch {m['scratch_bytes']}")
                # The floor passes the same 24-byte state the same way: what it costs (a by-value struct
                # handed to a helper IGC does not inline is a private copy, a stack call scratch) is the
                # kernel's shape, not zex's. The per-site rows (zex-spirv link --no-merge: neither the
                # throw-path numbering nor the merge, a module zex::Module never builds) are reported.
                allowed = floor_memory.get(shape, 0)
                if m['per_thread_memory_bytes'] > allowed:
                    per_site = shape in igc_bench.SHAPES and not variant.endswith(('-merged', '-shared'))
                    (warnings if per_site else failures).append(
                        f'{what}: per-thread memory {m["memory_buffers"]}'
                        + (f' (the floor has {allowed} B)' if allowed else '')
                        + (' [per-site module, not what zex::Module builds]' if per_site else ''))
                if shape in simd_silent and m['simd_size'] != simd_silent[shape]:
                    (failures if a.strict_simd else warnings).append(f'{what}: SIMD{m["simd_size"]}, the silent check compiles to '
                                    f'SIMD{simd_silent[shape]}')
            m = igclib.zebin_metrics(ocloc.compile(control, dev)[0], 'uses_private')
            if not m['per_thread_memory_bytes']:
                failures.append(f'{dev}: negative control uses_private shows no per-thread memory: the zebin '
                                f'reader is broken ({m})')
            else:
                print(f'{dev} negative control uses_private: {m["per_thread_memory_bytes"]} B/thread (flagged, good)')
    for w in warnings:
        print(f'WARNING (not a failure): {w}')
    if failures:
        print(f'FAIL: {len(failures)} of {checked} checked kernels:')
        for f in failures:
            print('  ' + f)
        return 1
    print(f'PASS: {checked} kernels (every zex level, DG2 and PVC): no private memory, no spills'
          + (f'; {len(warnings)} warnings' if warnings else '; SIMD width kept'))
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except igclib.ToolError as e:
        print(f'FAIL: {e}')
        sys.exit(1)
