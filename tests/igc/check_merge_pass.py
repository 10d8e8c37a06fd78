#!/usr/bin/env python3
"""CTest `igc_merge_pass`: bench/igc/merge_throw_sites.py (the link-time pass that gives a kernel one
throw block instead of one per check) keeps modules valid and keeps every site's arguments.

For the bench kernel shapes compiled with <zex/device.h> (ZEX_CHECK_BOUNDS at every access) and for
tests/igc/kernels/abi_calls.cl:
  - the output passes spirv-val, before and after linking with the device library;
  - gather17 goes from 17 zex_report_exception calls to 1, and the lines its report_frame receives
    (through the new OpPhi) are exactly the 17 lines of the source's checks;
  - a module with one site (vadd) comes out byte-identical; running the pass twice changes nothing;
  - with --cxx <merge_throw_sites_cli>, the C++ port (src/merge_throw_sites.hpp) gives the same
    bytes as the Python prototype on every module.
No Intel compiler needed: SPIR-V only.
"""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, 'bench', 'igc'))
import igclib  # noqa: E402
import igc_bench  # noqa: E402
import merge_throw_sites as mts  # noqa: E402


def calls(data, name):
    """The operand lists of every OpFunctionCall to the function `name`."""
    words = list(__import__('struct').unpack(f'<{len(data) // 4}I', data))
    _, insts = mts.parse(words)
    ids = {i for i, n in mts.zex_functions(insts).items() if n == name}
    consts = {inst[2]: inst[3] for inst in insts if mts.op(inst) == 43 and len(inst) == 4}   # OpConstant
    phis = {inst[2]: inst for inst in insts if mts.op(inst) == mts.OP_PHI}
    return [inst[4:] for inst in insts if mts.op(inst) == mts.OP_FUNCTION_CALL and inst[3] in ids], consts, phis


def main():
    cxx = os.environ.get('ZEX_MERGE_THROW_SITES_CLI')   # set by CTest
    if '--cxx' in sys.argv:
        cxx = sys.argv[sys.argv.index('--cxx') + 1]
    if cxx and not os.path.exists(cxx):
        print(f'FAIL: the C++ port {cxx} is not built (cmake --build <dir> --target merge_throw_sites_cli)')
        return 1
    tc = igclib.Toolchain()
    fails = []
    with tempfile.TemporaryDirectory(prefix='zex-merge-test-') as work:
        lib, _ = igc_bench.project_library(tc, ROOT, work, None)
        kdir = os.path.join(ROOT, 'bench', 'igc', 'kernels')
        srcs = [(s, os.path.join(kdir, f), [kdir], [f'ZEXB_VARIANT={igc_bench.ZEXB_ZEX}'])
                for s, (f, _, _) in igc_bench.SHAPES.items()]
        srcs.append(('abi_calls', os.path.join(HERE, 'kernels', 'abi_calls.cl'), [], []))
        srcs.append(('merge_patterns', os.path.join(HERE, 'kernels', 'merge_patterns.cl'), [], []))
        srcs.append(('abi_sequence', os.path.join(HERE, 'kernels', 'abi_sequence.cl'), [], []))
        for name, src, incs, defs in srcs:
            spv = tc.cl_to_spv(src, os.path.join(work, f'{name}.spv'), includes=incs + lib.includes, defines=defs)
            data = open(spv, 'rb').read()
            out = mts.merge_throw_sites(data)
            merged = os.path.join(work, f'{name}_merged.spv')
            open(merged, 'wb').write(out)
            try:
                tc.validate(merged)
                tc.validate(tc.link([merged, lib.spv], os.path.join(work, f'{name}_linked.spv')))
            except igclib.ToolError as e:
                fails.append(f'{name}: invalid after the pass: {e}')
                continue
            if cxx:
                cxx_out = os.path.join(work, f'{name}_cxx.spv')
                r = subprocess.run([cxx, spv, cxx_out], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                if r.returncode != 0:
                    fails.append(f'{name}: C++ port failed: {r.stdout.decode(errors="replace")}')
                elif open(cxx_out, 'rb').read() != out:
                    fails.append(f'{name}: the C++ port and the Python prototype disagree')
                else:
                    print(f'{name}: C++ port == Python prototype ({len(out)} bytes)')
            if mts.merge_throw_sites(out) != out:
                fails.append(f'{name}: a second run of the pass changed the module')
            before, _, _ = calls(data, 'zex_report_exception')
            after, _, _ = calls(out, 'zex_report_exception')
            print(f'{name}: zex_report_exception calls {len(before)} -> {len(after)}')
            if name == 'merge_patterns' and not (len(before) >= 4 and len(after) < len(before)):
                fails.append(f'merge_patterns: expected fewer sites after the pass, got {len(before)} -> {len(after)}')
            if name == 'abi_sequence' and (len(before), len(after)) != (4, 1):
                fails.append(f'abi_sequence: expected 4 -> 1 sites, got {len(before)} -> {len(after)}')
            if name == 'vadd' and out != data:
                fails.append('vadd: one site, yet the module changed')
            if name == 'gather17':
                if len(before) != 17 or len(after) != 1:
                    fails.append(f'gather17: expected 17 -> 1 sites, got {len(before)} -> {len(after)}')
                frames, consts, phis = calls(out, 'zex_report_frame')
                src_lines = [i + 1 for i, l in enumerate(open(src).read().split('\n'))
                             if re.search(r'ZEXB_CHECK\(j, n\)', l)]
                line_arg = frames[0][-1] if len(frames) == 1 else None
                phi = phis.get(line_arg)
                got = sorted(consts[phi[k]] for k in range(3, len(phi), 2)) if phi else []
                if got != src_lines:
                    fails.append(f'gather17: merged lines {got} != source check lines {src_lines}')
                else:
                    print(f'gather17: the merged report_frame takes the 17 source lines through one OpPhi')
    if fails:
        print('FAIL:\n  ' + '\n  '.join(fails))
        return 1
    print('PASS')
    return 0


if __name__ == '__main__':
    try:
        sys.exit(main())
    except igclib.ToolError as e:
        print(f'FAIL: {e}')
        sys.exit(1)
