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
OP_INT_COMPARE = {170, 171}   # OpIEqual, OpINotEqual


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
    """body: the instructions between OpFunction and OpFunctionEnd. Returns (new body, next id).

    A throw region is either
      (1) block A: zex calls, then OpBranch X or OpReturn; or
      (2) block A: zex calls ending with zex_report_exception, `%c = OpIEqual/OpINotEqual %r <const>`,
          OpBranchConditional %c to X and to block B (in either order), B's only predecessor being A;
          block B: zex calls, then OpBranch X
    (<zex/device.h> emits (2): only the claimant records a frame and signals). Regions with the same
    calls and the same exit become one region whose differing call operands come from OpPhi in A."""
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
    by_label = {label: insts for label, insts in blocks}
    preds = {}
    for label, insts in blocks:
        if insts and op(insts[-1]) in TERMINATORS:
            for t in branch_targets(insts[-1]):
                preds.setdefault(t, []).append(label)

    def zex_calls(insts, allow_used_last=False):
        for k, c in enumerate(insts):
            if op(c) != OP_FUNCTION_CALL or c[3] not in zex_ids:
                return False
            # Its own definition is one use; the claim result may feed the compare (pattern 2).
            limit = 2 if (allow_used_last and k == len(insts) - 1) else 1
            if uses.get(c[2], 0) > limit:
                return False
        return True

    def region(label):
        """(key, [A calls], [B calls], B label or None) or None."""
        insts = by_label[label]
        if len(insts) >= 2 and op(insts[-1]) in (OP_BRANCH, OP_RETURN) and zex_calls(insts[:-1]):
            return ((1, tuple((c[1], c[3], len(c)) for c in insts[:-1]), tuple(insts[-1])),
                    insts[:-1], [], None)
        if len(insts) >= 3 and op(insts[-1]) == OP_BRANCH_CONDITIONAL and op(insts[-2]) in OP_INT_COMPARE:
            calls, cmp_, br = insts[:-2], insts[-2], insts[-1]
            if not calls or not zex_calls(calls, allow_used_last=True):
                return None
            r = calls[-1][2]
            if zex_ids.get(calls[-1][3]) != 'zex_report_exception' or r not in cmp_[3:5] or br[1] != cmp_[2]:
                return None
            if uses.get(cmp_[2], 0) != 2:
                return None
            for b_pos in (2, 3):
                blab, xlab = br[b_pos], br[5 - b_pos]
                binsts = by_label.get(blab)
                if (binsts and preds.get(blab) == [label] and len(binsts) >= 1
                        and op(binsts[-1]) == OP_BRANCH and binsts[-1][1] == xlab and zex_calls(binsts[:-1])):
                    key = (2, tuple((c[1], c[3], len(c)) for c in calls), op(cmp_), cmp_[1],
                           tuple(w if w != r else -1 for w in cmp_[3:5]), b_pos, xlab,
                           tuple((c[1], c[3], len(c)) for c in binsts[:-1]))
                    return key, calls, binsts[:-1], blab
        return None

    # Blocks named by structured-control-flow merge instructions keep their identity.
    pinned = {w for _, insts in blocks for i in insts if op(i) in (OP_SELECTION_MERGE, OP_LOOP_MERGE)
              for w in i[1:3]}
    groups, info = {}, {}
    for label, _ in blocks:
        if not preds.get(label) or label in pinned:
            continue
        reg = region(label)
        if reg is not None:
            groups.setdefault(reg[0], []).append(label)
            info[label] = reg

    removed, new_blocks = set(), {}
    for key, labels in groups.items():
        labels = [lb for lb in labels if lb not in removed]
        if len(labels) < 2:
            continue
        kind = key[0]
        a_insts = by_label[labels[0]]
        exit_label = (key[2][1] if key[2][0] & 0xFFFF == OP_BRANCH else None) if kind == 1 else key[6]
        members = set(labels) | {info[lb][3] for lb in labels if info[lb][3] is not None}
        if members & pinned:
            log(f'  skip a group of {len(labels)}: a block is a structured merge target')
            continue
        edges = [(p, lb) for lb in labels for p in preds[lb]]
        if len({p for p, _ in edges}) != len(edges) or members & {p for p, _ in edges}:
            log(f'  skip a group of {len(labels)}: predecessors overlap')
            continue
        ok = True
        if exit_label is not None:
            for inst in by_label[exit_label]:
                if op(inst) != OP_PHI:
                    break
                for side in ([lb for lb in labels], [info[lb][3] for lb in labels if info[lb][3] is not None]):
                    vals = {inst[k] for k in range(3, len(inst), 2) if inst[k + 1] in side}
                    if len(vals) > 1:
                        ok = False
            if set(preds.get(exit_label, [])) <= members:
                ok = False   # the exit would be dominated by the new region: keep it simple
        if not ok:
            log(f'  skip a group of {len(labels)}: the exit block would need different phi values')
            continue
        a_label = next_id
        b_label = next_id + 1 if kind == 2 else None
        next_id += 2
        seqs = [info[lb][1] + info[lb][2] for lb in labels]     # A calls then B calls, per site
        n_a = len(info[labels[0]][1])
        phis, new_calls, remap = [], [], {}
        for ci, call in enumerate(seqs[0]):
            nc = list(call)
            nc[2] = next_id
            remap[call[2]] = next_id
            next_id += 1
            for w in range(4, len(call)):
                vals = [seqs[b][ci][w] for b in range(len(labels))]
                if len(set(vals)) == 1:
                    continue
                phi = [0, types[call[3]][w - 4], next_id]   # a call operand has its parameter's type
                next_id += 1
                for p, lb in edges:
                    phi += [seqs[labels.index(lb)][ci][w], p]
                phi[0] = (len(phi) << 16) | OP_PHI
                phis.append(phi)
                nc[w] = phi[2]
            new_calls.append(nc)
        if kind == 1:
            a_body = phis + new_calls + [list(key[2])]
            b_body = None
        else:
            cmp_ = list(a_insts[-2])
            cmp_[3:5] = [remap.get(w, w) for w in cmp_[3:5]]
            cmp_[2] = next_id
            next_id += 1
            br = list(a_insts[-1])
            br[1] = cmp_[2]
            br[key[5]] = b_label
            a_body = phis + new_calls[:n_a] + [cmp_, br]
            b_body = new_calls[n_a:] + [[(2 << 16) | OP_BRANCH, exit_label]]
        for p, lb in edges:
            retarget(by_label[p][-1], lb, a_label)
        if exit_label is not None:
            for inst in by_label[exit_label]:
                if op(inst) != OP_PHI:
                    break
                keep, va, vb = inst[:3], None, None
                for k in range(3, len(inst), 2):
                    if inst[k + 1] in labels:
                        va = inst[k]
                    elif inst[k + 1] in members:
                        vb = inst[k]
                    else:
                        keep += [inst[k], inst[k + 1]]
                if va is not None:
                    keep += [va, a_label]
                if vb is not None:
                    keep += [vb, b_label]
                keep[0] = (len(keep) << 16) | OP_PHI
                inst[:] = keep
        removed |= members
        dead |= members
        for lb in labels:
            dead.update(c[2] for c in info[lb][1] + info[lb][2])
            if kind == 2:
                dead.add(by_label[lb][-2][2])
        new_blocks[labels[0]] = [(a_label, a_body)] + ([(b_label, b_body)] if b_body else [])
        log(f'  merged {len(labels)} throw sites into one region ({len(phis)} phi)')

    out = list(head)
    for label, insts in blocks:
        for nl, ninsts in new_blocks.get(label, []):
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
