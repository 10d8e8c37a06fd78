#!/usr/bin/env python3
"""Links a user module with the zex device library the way zex::Module does (src/spirv.cpp):
spirv-link (user module first), then merge the duplicate built-in variables the two modules bring
(both declare e.g. __spirv_BuiltInGlobalInvocationId; zex-cpu's SPIR-V translator rejects the
duplicate, IGC does not care), then spirv-val. Optionally runs merge_throw_sites.py on the user
module first (--merge-throw-sites).

    python3 bench/igc/spirv_link_zex.py user.spv zex_device.spv -o out.spv [--merge-throw-sites]
"""
import argparse
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import merge_throw_sites as mts  # noqa: E402

OP_NAME, OP_ENTRY_POINT, OP_VARIABLE, OP_DECORATE, OP_MEMBER_DECORATE = 5, 15, 59, 71, 72
OP_LOAD, OP_ACCESS_CHAINS = 61, {65, 66, 67, 70}
DECORATION_BUILTIN = 11


def merge_duplicate_builtins(data):
    """SPIR-V bytes -> bytes with one variable per (built-in, type). Built-in variables are only
    loaded from (or indexed) in OpenCL SPIR-V; any other use is refused rather than guessed at."""
    words = list(struct.unpack(f'<{len(data) // 4}I', data))
    header, insts = mts.parse(words)
    builtin_of = {i[1]: i[3] for i in insts if mts.op(i) == OP_DECORATE and len(i) >= 4 and i[2] == DECORATION_BUILTIN}
    canonical, replace = {}, {}
    for i in insts:
        if mts.op(i) == OP_VARIABLE and i[2] in builtin_of:
            key = (builtin_of[i[2]], i[1])
            if key in canonical:
                replace[i[2]] = canonical[key]
            else:
                canonical[key] = i[2]
    if not replace:
        return data
    out, in_functions = [], False
    for i in insts:
        o = mts.op(i)
        in_functions = in_functions or o == mts.OP_FUNCTION
        if o == OP_VARIABLE and i[2] in replace:
            continue
        if o in (OP_NAME, OP_DECORATE, OP_MEMBER_DECORATE) and i[1] in replace:
            continue
        if o == OP_ENTRY_POINT:
            k = 3
            while k < len(i) and (i[k] >> 24) != 0:
                k += 1
            k += 1
            ep = i[:k]
            for w in i[k:]:
                w = replace.get(w, w)
                if w not in ep[k:]:
                    ep.append(w)
            ep[0] = (len(ep) << 16) | OP_ENTRY_POINT
            out.append(ep)
            continue
        i = list(i)
        if (o == OP_LOAD or o in OP_ACCESS_CHAINS) and i[3] in replace:
            i[3] = replace[i[3]]
        elif in_functions and any(w in replace for w in i[1:]):
            raise ValueError(f'built-in variable used by opcode {o}: not merged')
        out.append(i)
    flat = header + [w for i in out for w in i]
    return struct.pack(f'<{len(flat)}I', *flat)


def link(user, lib, out, merge_throw_sites=False, spirv_link='spirv-link', spirv_val='spirv-val'):
    src = user
    if merge_throw_sites:
        src = out + '.user-merged.spv'
        with open(user, 'rb') as f:
            data = mts.merge_throw_sites(f.read())
        with open(src, 'wb') as f:
            f.write(data)
    subprocess.run([spirv_link, src, lib, '-o', out], check=True)
    with open(out, 'rb') as f:
        data = merge_duplicate_builtins(f.read())
    with open(out, 'wb') as f:
        f.write(data)
    if spirv_val:
        subprocess.run([spirv_val, out], check=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('user')
    ap.add_argument('lib')
    ap.add_argument('-o', '--out', required=True)
    ap.add_argument('--merge-throw-sites', action='store_true')
    a = ap.parse_args()
    try:
        link(a.user, a.lib, a.out, a.merge_throw_sites)
    except (subprocess.CalledProcessError, ValueError) as e:
        print(f'spirv_link_zex: {e}', file=sys.stderr)
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
