"""Shared pieces of the IGC benchmark (bench/igc/igc_bench.py) and the shape test (tests/igc/):
OpenCL C -> SPIR-V, linking with a zex device library, specializing the debug level, compiling with
Intel's offline compiler (ocloc, in process through libocloc.so when possible) and reading the zebin.

Python 3 standard library only: the zebin is an ELF64 file whose .ze_info section is a small YAML
document; both are parsed here rather than pulling in pyyaml.
"""

import ctypes
import ctypes.util
import os
import shutil
import struct
import subprocess
import tempfile
import time

# SpecId of the zex debug level (include/zex/abi.h: ZEX_SPEC_ID_DEBUG_LEVEL = 0x7A657831).
ZEX_SPEC_ID_DEBUG_LEVEL = 0x7A657831


class ToolError(RuntimeError):
    """A tool of the pipeline failed; the message holds its command line and output."""


# ----------------------------------------------------------------------------------------------------
# Tools

def find_tool(names):
    """The first of `names` found on PATH, or None."""
    for n in names:
        p = shutil.which(n)
        if p:
            return p
    return None


def run(cmd, what):
    """Runs cmd; raises ToolError with its output when it fails."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        raise ToolError(f"{what} failed ({r.returncode}): {' '.join(map(str, cmd))}\n"
                        + r.stdout.decode(errors='replace'))
    return r.stdout.decode(errors='replace')


# With -g: the debug information clang-15 -g writes (cc1 spelling), as the compilers zex serves do.
DEBUG_FLAGS = ['-debug-info-kind=limited', '-dwarf-version=4']


def find_zex_spirv(given=None):
    """zex-spirv (tools/), the C++ passes as a command: `given`, $ZEX_SPIRV, the build tree, or PATH."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for p in (given, os.environ.get('ZEX_SPIRV'), os.path.join(root, 'build', 'tools', 'zex-spirv')):
        if p and os.path.exists(p):
            return p
    return find_tool(['zex-spirv'])


class Toolchain:
    """clang-15 + llvm-spirv-15 + spirv-opt + zex-spirv, located once."""

    def __init__(self, zex_spirv=None):
        self.clang = find_tool(['clang-15'])
        self.llvm_spirv = find_tool(['llvm-spirv-15'])
        self.spirv_opt = find_tool(['spirv-opt'])
        self.zex_spirv = find_zex_spirv(zex_spirv)
        missing = [n for n, p in [('clang-15', self.clang), ('llvm-spirv-15', self.llvm_spirv),
                                  ('spirv-opt', self.spirv_opt), ('zex-spirv', self.zex_spirv)] if not p]
        if missing:
            raise ToolError('missing tools: ' + ', '.join(missing)
                            + ' (Debian: clang-15 llvm-spirv-15 spirv-tools, see scripts/install-deps.sh; '
                            'zex-spirv: cmake --build build --target zex-spirv, or --zex-spirv PATH)')

    def cl_to_spv(self, src, out, includes=(), defines=(), flags=()):
        """OpenCL C -> SPIR-V the way cmake/ZexSpirv.cmake does (cc1, typed pointers, -O2)."""
        bc = out + '.bc'
        cmd = [self.clang, '-cc1', '-no-opaque-pointers', '-triple', 'spir64-unknown-unknown',
               '-cl-std=CL2.0', '-finclude-default-header', '-emit-llvm-bc', '-O2', *flags]
        for i in includes:
            cmd += ['-I', i]
        for d in defines:
            cmd += ['-D', d]
        run(cmd + [src, '-o', bc], 'clang-15')
        run([self.llvm_spirv, bc, '-o', out], 'llvm-spirv-15')
        return out

    def validate(self, spv):
        """The validation zex::Module does (debug information set aside; docs/spirv-passes.md)."""
        run([self.zex_spirv, 'validate', spv], 'zex-spirv validate')

    def merge(self, spv, out):
        """The throw-site merge alone (src/spirv/passes/merge_throw_sites.cpp)."""
        run([self.zex_spirv, 'merge', spv, '-o', out], 'zex-spirv merge')
        return out

    def link(self, user, lib, out, merge=True, strings=True):
        """What zex::Module hands the driver: validate, wrap the zex strings (unless strings=False), merge
        the throw sites (unless merge=False), link with the library `lib` (user module first), one
        variable per built-in, validate."""
        run([self.zex_spirv, 'link', user, '-o', out, '--library', lib] + ([] if merge else ['--no-merge'])
            + ([] if strings else ['--no-strings']), 'zex-spirv link')
        return out

    def specialize(self, spv, out, values):
        """Bakes spec-constant values into the module. ocloc has no option to set specialization
        constants, so they are set as the default values and then frozen into ordinary constants,
        which is what a driver does with ze_module_constants_t before IGC sees the module."""
        pairs = ' '.join(f'{k}:{v}' for k, v in values.items())
        # --skip-validation: spirv-opt's own check refuses llvm-spirv's -g output (docs/spirv-passes.md); the
        # module was validated by zex-spirv the way zex::Module validates it.
        run([self.spirv_opt, '--skip-validation', '--set-spec-const-default-value', pairs, '--freeze-spec-const',
             spv, '-o', out], 'spirv-opt')
        return out


# ----------------------------------------------------------------------------------------------------
# ocloc

class Ocloc:
    """Intel's offline compiler. In process through libocloc.so's oclocInvoke (so that the measured
    compile time is IGC's work, not the ~0.4 s of loading IGC into a fresh process), else the ocloc
    executable. `available()` says whether either exists. ZEX_IGC_OCLOC=none in the environment
    makes it unavailable, to exercise the skip paths."""

    def __init__(self, force_process=False):
        self.lib = None
        disabled = os.environ.get('ZEX_IGC_OCLOC') == 'none'
        self.exe = None if disabled else find_tool(['ocloc'])
        if not force_process and not disabled:
            for name in ['libocloc.so', ctypes.util.find_library('ocloc')]:
                if not name:
                    continue
                try:
                    self.lib = ctypes.CDLL(name)
                    break
                except OSError:
                    pass
        if self.lib is not None:
            P = ctypes.POINTER
            u8pp = P(P(ctypes.c_uint8))
            self.lib.oclocInvoke.restype = ctypes.c_int
            self.lib.oclocInvoke.argtypes = [
                ctypes.c_uint, P(ctypes.c_char_p),
                ctypes.c_uint32, u8pp, P(ctypes.c_uint64), P(ctypes.c_char_p),
                ctypes.c_uint32, u8pp, P(ctypes.c_uint64), P(ctypes.c_char_p),
                P(ctypes.c_uint32), P(u8pp), P(P(ctypes.c_uint64)), P(P(ctypes.c_char_p))]
            self.lib.oclocFreeOutput.argtypes = [P(ctypes.c_uint32), P(u8pp), P(P(ctypes.c_uint64)),
                                                 P(P(ctypes.c_char_p))]

    def available(self):
        return self.lib is not None or self.exe is not None

    def mode(self):
        return 'libocloc.so (in process)' if self.lib is not None else f'{self.exe} (one process per compile)'

    @staticmethod
    def args(device):
        return ['compile', '-file', 'k.spv', '-spirv_input', '-device', device, '--format', 'zebin',
                '-q', '-output', 'k', '-output_no_suffix']

    def compile(self, spv_bytes, device):
        """Compiles SPIR-V for `device`; returns (zebin bytes, wall seconds, CPU seconds). CPU time is
        this process's (in process) or the child's (executable): what the compile cost, whatever else
        the machine was doing. Raises ToolError."""
        if self.lib is not None:
            return self._compile_lib(spv_bytes, device)
        return self._compile_exe(spv_bytes, device)

    def _compile_lib(self, spv, device):
        P = ctypes.POINTER
        argl = [b'ocloc'] + [a.encode() for a in self.args(device)]
        argv = (ctypes.c_char_p * len(argl))(*argl)
        buf = (ctypes.c_uint8 * len(spv)).from_buffer_copy(spv)
        srcs = (P(ctypes.c_uint8) * 1)(ctypes.cast(buf, P(ctypes.c_uint8)))
        lens = (ctypes.c_uint64 * 1)(len(spv))
        names = (ctypes.c_char_p * 1)(b'k.spv')
        n = ctypes.c_uint32(0)
        data = P(P(ctypes.c_uint8))()
        ln = P(ctypes.c_uint64)()
        nm = P(ctypes.c_char_p)()
        c0, t0 = time.process_time(), time.perf_counter()
        rc = self.lib.oclocInvoke(len(argl), argv, 1, srcs, lens, names, 0, None, None, None,
                                  ctypes.byref(n), ctypes.byref(data), ctypes.byref(ln), ctypes.byref(nm))
        dt, ct = time.perf_counter() - t0, time.process_time() - c0
        outs = {nm[i].decode(): ctypes.string_at(data[i], ln[i]) for i in range(n.value)}
        self.lib.oclocFreeOutput(ctypes.byref(n), ctypes.byref(data), ctypes.byref(ln), ctypes.byref(nm))
        if rc != 0 or 'k' not in outs:
            log = b''.join(v for k, v in outs.items() if k.endswith('.log')).decode(errors='replace')
            raise ToolError(f'ocloc (libocloc) failed ({rc}) for {device}:\n{log}')
        return outs['k'], dt, ct

    def _compile_exe(self, spv, device):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, 'k.spv'), 'wb') as f:
                f.write(spv)
            c0, t0 = os.times(), time.perf_counter()
            r = subprocess.run([self.exe] + self.args(device), cwd=d, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
            dt, c1 = time.perf_counter() - t0, os.times()
            ct = (c1.children_user + c1.children_system) - (c0.children_user + c0.children_system)
            out = os.path.join(d, 'k')
            if r.returncode != 0 or not os.path.exists(out):
                raise ToolError(f'ocloc failed ({r.returncode}) for {device}:\n'
                                + r.stdout.decode(errors='replace'))
            with open(out, 'rb') as f:
                return f.read(), dt, ct


# ----------------------------------------------------------------------------------------------------
# zebin: ELF64 + the .ze_info YAML subset

def _elf_section_headers(data):
    """The section headers of an ELF64 little-endian file, each a dict with its name resolved."""
    if data[:4] != b'\x7fELF' or data[4] != 2 or data[5] != 1:
        raise ValueError('not an ELF64 little-endian file (is the ocloc output a zebin?)')
    shoff, = struct.unpack_from('<Q', data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from('<HHH', data, 0x3A)
    secs = []
    for i in range(shnum):
        name, typ, _flags, _addr, off, size, link, info, _align, entsize = struct.unpack_from(
            '<IIQQQQIIQQ', data, shoff + i * shentsize)
        secs.append(dict(name=name, type=typ, off=off, size=size, link=link, info=info, entsize=entsize))
    strtab = secs[shstrndx]
    for s in secs:
        start = strtab['off'] + s['name']
        s['name'] = data[start:data.index(b'\0', start)].decode()
    return secs


def elf_sections(data):
    """{section name: bytes} of an ELF64 little-endian file."""
    # SHT_NOBITS (8): nothing in the file
    return {s['name']: bytes(s['size']) if s['type'] == 8 else data[s['off']:s['off'] + s['size']]
            for s in _elf_section_headers(data)}


def _scalar(s):
    s = s.strip()
    if not s:
        return None
    if (s[0] == s[-1] == "'") or (s[0] == s[-1] == '"'):
        return s[1:-1]
    if s in ('true', 'false'):
        return s == 'true'
    try:
        return int(s, 0)
    except ValueError:
        return s


def parse_yaml(text):
    """Parses the block-style YAML subset that zeinfo uses: nested mappings, sequences of mappings
    or scalars ('- key: value'), plain/quoted scalars. Flow collections become strings."""
    lines = []
    for raw in text.splitlines():
        if raw.strip() in ('---', '...') or not raw.strip() or raw.lstrip().startswith('#'):
            continue
        lines.append(raw)
    pos = 0

    def indent(l):
        return len(l) - len(l.lstrip(' '))

    def parse_block(ind):
        nonlocal pos
        if pos >= len(lines):
            return None
        if lines[pos].lstrip().startswith('- ') or lines[pos].strip() == '-':
            seq = []
            while pos < len(lines) and indent(lines[pos]) == ind and lines[pos].lstrip().startswith('-'):
                body = lines[pos].lstrip()[1:]
                item_ind = ind + 1 + (len(body) - len(body.lstrip(' ')))
                if ':' in body and not body.strip().startswith(("'", '"')):
                    # The item is a mapping whose first key sits on the dash line: re-indent it.
                    lines[pos] = ' ' * item_ind + body.lstrip()
                    seq.append(parse_map(item_ind))
                else:
                    pos += 1
                    seq.append(_scalar(body))
            return seq
        return parse_map(ind)

    def parse_map(ind):
        nonlocal pos
        m = {}
        while pos < len(lines) and indent(lines[pos]) == ind and not lines[pos].lstrip().startswith('- '):
            key, _, rest = lines[pos].strip().partition(':')
            pos += 1
            if rest.strip():
                m[key.strip()] = _scalar(rest)
            elif pos < len(lines) and (indent(lines[pos]) > ind or
                                       (indent(lines[pos]) == ind and lines[pos].lstrip().startswith('- '))):
                m[key.strip()] = parse_block(indent(lines[pos]))
            else:
                m[key.strip()] = None
        return m

    return parse_block(indent(lines[0])) if lines else {}


def zebin_metrics(data, kernel):
    """Per-kernel metrics of a zebin: isa_bytes (.text.<kernel>), other_text_bytes (functions IGC
    kept out of line), grf_count, simd_size, private/spill/scratch bytes per thread, stack calls."""
    secs = elf_sections(data)
    text = secs.get('.text.' + kernel)
    if text is None:
        raise ValueError(f'no .text.{kernel} in the zebin (sections: {sorted(secs)})')
    info = parse_yaml(secs['.ze_info'].decode(errors='replace'))
    kinfo = next((k for k in info.get('kernels') or [] if k.get('name') == kernel), None)
    if kinfo is None:
        raise ValueError(f'kernel {kernel} missing from .ze_info')
    env = kinfo.get('execution_env') or {}
    private = spill = single = 0
    buffers = kinfo.get('per_thread_memory_buffers') or []
    for b in buffers:
        usage, size = b.get('usage'), int(b.get('size') or 0)
        if usage == 'private_space':
            private += size
        elif usage == 'spill_fill_space':
            spill += size
        else:   # single_space: IGC's one scratch space holding both private data and spills
            single += size
    other = sum(len(v) for k, v in secs.items() if k.startswith('.text') and k != '.text.' + kernel)
    return {
        'isa_bytes': len(text),
        'other_text_bytes': other,
        'grf_count': env.get('grf_count'),
        'simd_size': env.get('simd_size'),
        'private_bytes': private,
        'spill_bytes': spill,
        'scratch_bytes': single,
        'per_thread_memory_bytes': private + spill + single,
        'has_stack_calls': bool(env.get('has_stack_calls', False)),
        'memory_buffers': buffers,
    }


def relocated_symbols(data):
    """[(kernel text section, symbol name, section of the symbol)] for every relocation (SHT_REL and
    SHT_RELA) that applies to a .text.* section of an ELF64 little-endian zebin."""
    secs = _elf_section_headers(data)
    out = []
    for s in secs:
        if s['type'] not in (4, 9) or not secs[s['info']]['name'].startswith('.text'):   # SHT_RELA, SHT_REL
            continue
        symtab = secs[s['link']]
        strtab = secs[symtab['link']]
        step = s['entsize'] or (24 if s['type'] == 4 else 16)
        for off in range(s['off'], s['off'] + s['size'], step):
            _r_offset, r_info = struct.unpack_from('<QQ', data, off)
            st_name, _st_info, _st_other, st_shndx = struct.unpack_from('<IBBH', data, symtab['off'] + (r_info >> 32) * 24)
            start = strtab['off'] + st_name
            where = secs[st_shndx]['name'] if 0 < st_shndx < len(secs) else f'shndx {st_shndx}'
            out.append((secs[s['info']]['name'], data[start:data.index(b'\0', start)].decode(), where))
    return out
