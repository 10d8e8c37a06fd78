#!/usr/bin/env python3
"""Prototype of a link-time SPIR-V pass: merge a kernel's zex throw sites into one throw block.

<zex/device.h> expands every ZEX_THROW / ZEX_CHECK_BOUNDS into its own cold block:

    %cold_k = OpLabel
      OpFunctionCall zex_report_exception %zex %name_k %reason_k
      OpFunctionCall zex_report_frame     %zex %uint_0 %func %file %line_k
      OpFunctionCall zex_signal_exception %zex
      OpBranch %exit                      (or OpReturn)

and Intel's compiler inlines the device library into each of them: 17 checks, 17 copies. This pass
rewrites each group of such blocks (same calls, same exit) into ONE block that takes the operands
that differ between sites (the line, at most the strings) from OpPhi:

    %throw = OpLabel
      %line = OpPhi %uint %line_1 %pred_1 ... %line_17 %pred_17
      OpFunctionCall zex_report_exception ... ; report_frame ... %line ; signal_exception
      OpBranch %exit

The calls, their order and their arguments per site are unchanged, so the ABI and what the host sees
are unchanged; only the code is shared. It runs on the user module before spirv-link (the zex entry
points are still imports there). bench/igc measures it as the variants <lib><level>-merged.

Conservative: a block is merged only if it holds nothing but calls to zex_* functions whose results
are unused, ends in OpBranch or OpReturn, and the merge keeps every OpPhi of the exit block valid.

    python3 bench/igc/merge_throw_sites.py in.spv out.spv     # prints what it merged
"""
import struct
import sys

OP_NAME, OP_DECORATE, OP_FUNCTION, OP_FUNCTION_END, OP_FUNCTION_CALL = 5, 71, 54, 56, 57
OP_LABEL, OP_BRANCH, OP_BRANCH_CONDITIONAL, OP_SWITCH, OP_RETURN, OP_PHI = 248, 249, 250, 251, 253, 245
OP_SELECTION_MERGE, OP_LOOP_MERGE = 247, 246
DECORATION_LINKAGE = 41
TERMINATORS = {OP_BRANCH, OP_BRANCH_CONDITIONAL, OP_SWITCH, OP_RETURN, 254, 255, 252}
OP_FUNCTION_PARAMETER = 55


def decode_string(words):
    b = b''.join(struct.pack('<I', w) for w in words)
    return b[:b.index(b'\0')].decode()


def parse(words):
    """Header and a list of instructions (each a list of words)."""
    if words[0] != 0x07230203:
        raise ValueError('not a SPIR-V module (bad magic)')
    insts, i = [], 5
    while i < len(words):
        n = words[i] >> 16
        if n == 0:
            raise ValueError(f'malformed instruction at word {i}')
        insts.append(list(words[i:i + n]))
        i += n
    return list(words[:5]), insts


def op(inst):
    return inst[0] & 0xFFFF


def zex_functions(insts):
    """Ids of the functions named zex_* (by linkage name, else by OpName)."""
    ids = {}
    for inst in insts:
        if op(inst) == OP_DECORATE and inst[2] == DECORATION_LINKAGE:
            name = decode_string(inst[3:])
            if name.startswith('zex_'):
                ids[inst[1]] = name
        elif op(inst) == OP_NAME:
            name = decode_string(inst[2:])
            if name.startswith('zex_'):
                ids.setdefault(inst[1], name)
    return ids


def param_types(insts):
    """{function id: [parameter type ids]}: a call operand's type is its parameter's type."""
    out, cur = {}, None
    for inst in insts:
        if op(inst) == OP_FUNCTION:
            cur = out.setdefault(inst[2], [])
        elif op(inst) == OP_FUNCTION_PARAMETER and cur is not None:
            cur.append(inst[1])
        elif op(inst) == OP_LABEL:
            cur = None
    return out


def branch_targets(term):
    o = op(term)
    if o == OP_BRANCH:
        return [term[1]]
    if o == OP_BRANCH_CONDITIONAL:
        return [term[2], term[3]]
    if o == OP_SWITCH:
        return [term[2]] + term[4::2]
    return []


def retarget(term, old, new):
    o = op(term)
    if o == OP_BRANCH and term[1] == old:
        term[1] = new
    elif o == OP_BRANCH_CONDITIONAL:
        for k in (2, 3):
            if term[k] == old:
                term[k] = new
    elif o == OP_SWITCH:
        if term[2] == old:
            term[2] = new
        for k in range(4, len(term), 2):
            if term[k] == old:
                term[k] = new


def merge_function(body, zex_ids, types, next_id, dead, log):
    """body: the instructions between OpFunction and OpFunctionEnd. Returns (new body, next id)."""
    head, blocks, cur = [], [], None
    for inst in body:
        if op(inst) == OP_LABEL:
            cur = [inst[1], []]
            blocks.append(cur)
        elif cur is None:
            head.append(inst)
        else:
            cur[1].append(inst)
    uses = {}
    for _, insts in blocks:
        for inst in insts:
            for w in inst[1:]:
                uses[w] = uses.get(w, 0) + 1

    def cold_key(label, insts):
        if len(insts) < 2 or op(insts[-1]) not in (OP_BRANCH, OP_RETURN):
            return None
        calls = insts[:-1]
        for c in calls:
            if op(c) != OP_FUNCTION_CALL or c[3] not in zex_ids or uses.get(c[2], 0) > 1:   # its own definition is one
                return None
        return (tuple((c[1], c[3], len(c)) for c in calls), tuple(insts[-1]))

    preds = {}
    for label, insts in blocks:
        if insts and op(insts[-1]) in TERMINATORS:
            for t in branch_targets(insts[-1]):
                preds.setdefault(t, []).append(label)
    groups = {}
    for label, insts in blocks:
        k = cold_key(label, insts)
        if k is not None and preds.get(label):
            groups.setdefault(k, []).append(label)

    by_label = {label: insts for label, insts in blocks}
    removed, new_blocks = set(), {}
    for key, labels in groups.items():
        if len(labels) < 2:
            continue
        exit_term = list(key[1])
        exit_label = exit_term[1] if op(exit_term) == OP_BRANCH else None
        # Phi entries (pred, cold block); a predecessor reaching two blocks of the group is not merged.
        edges = [(p, lb) for lb in labels for p in preds[lb]]
        if len({p for p, _ in edges}) != len(edges):
            log(f'  skip a group of {len(labels)}: a predecessor reaches two of its blocks')
            continue
        exit_phis_ok = True
        if exit_label is not None:
            for inst in by_label[exit_label]:
                if op(inst) != OP_PHI:
                    break
                vals = {inst[k] for k in range(3, len(inst), 2) if inst[k + 1] in labels}
                if len(vals) > 1:
                    exit_phis_ok = False
            if set(preds.get(exit_label, [])) <= set(labels):
                exit_phis_ok = False   # the exit would be dominated by the new block: keep it simple
        if not exit_phis_ok:
            log(f'  skip a group of {len(labels)}: the exit block would need different phi values')
            continue
        new_label = next_id
        next_id += 1
        calls = [by_label[lb][:-1] for lb in labels]
        phis, merged_calls = [], []
        for ci, call in enumerate(calls[0]):
            new_call = list(call)
            new_call[2] = next_id
            next_id += 1
            for w in range(4, len(call)):
                vals = [calls[b][ci][w] for b in range(len(labels))]
                if len(set(vals)) == 1:
                    continue
                ty = types[call[3]][w - 4]   # OpFunctionCall: type, result, callee, args...
                phi = [0, ty, next_id]
                next_id += 1
                for p, lb in edges:
                    phi += [calls[labels.index(lb)][ci][w], p]
                phi[0] = (len(phi) << 16) | OP_PHI
                phis.append(phi)
                new_call[w] = phi[2]
            merged_calls.append(new_call)
        for p, lb in edges:
            retarget(by_label[p][-1], lb, new_label)
        if exit_label is not None:
            for inst in by_label[exit_label]:
                if op(inst) != OP_PHI:
                    break
                keep, val = inst[:3], None
                for k in range(3, len(inst), 2):
                    if inst[k + 1] in labels:
                        val = inst[k]
                    else:
                        keep += [inst[k], inst[k + 1]]
                if val is not None:
                    keep += [val, new_label]
                keep[0] = (len(keep) << 16) | OP_PHI
                inst[:] = keep
        removed.update(labels)
        dead.update(labels)
        dead.update(c[2] for blk in calls for c in blk)
        new_blocks[labels[0]] = (new_label, phis + merged_calls + [exit_term])
        log(f'  merged {len(labels)} throw sites into one block ({len(phis)} phi)')

    out = list(head)
    for label, insts in blocks:
        if label in new_blocks:
            nl, ninsts = new_blocks[label]
            out.append([(2 << 16) | OP_LABEL, nl])
            out += ninsts
        if label in removed:
            continue
        out.append([(2 << 16) | OP_LABEL, label])
        out += insts
    return out, next_id


def merge_throw_sites(data, log=lambda m: None):
    """SPIR-V bytes in, SPIR-V bytes out (unchanged if there is nothing to merge)."""
    words = list(struct.unpack(f'<{len(data) // 4}I', data))
    header, insts = parse(words)
    zex_ids = zex_functions(insts)
    if not zex_ids:
        return data
    types = param_types(insts)
    next_id = header[3]
    out, i, dead = [], 0, set()
    while i < len(insts):
        inst = insts[i]
        out.append(inst)
        i += 1
        if op(inst) == OP_FUNCTION:
            j = i
            while op(insts[j]) != OP_FUNCTION_END:
                j += 1
            body = insts[i:j]
            if any(op(x) == OP_LABEL for x in body):
                body, next_id = merge_function(body, zex_ids, types, next_id, dead, log)
            out += body
            i = j
    header[3] = next_id
    # Names and decorations of the removed labels and call results go too.
    out = [x for x in out if not (op(x) in (OP_NAME, OP_DECORATE) and x[1] in dead)]
    flat = header + [w for inst in out for w in inst]
    return struct.pack(f'<{len(flat)}I', *flat)


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    data = open(sys.argv[1], 'rb').read()
    out = merge_throw_sites(data, log=print)
    with open(sys.argv[2], 'wb') as f:
        f.write(out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
