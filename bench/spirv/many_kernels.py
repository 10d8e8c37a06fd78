#!/usr/bin/env python3
"""Writes an OpenCL C file of N one-line checked kernels (S bounds checks each) for timing zex's
module creation (issue 24): `zex-spirv link` of its SPIR-V is zex::Module's own work without the
driver. Usage: many_kernels.py N [S] > k.cl (docs/benchmarks.md, "Module creation time")."""
import sys

n = int(sys.argv[1])
sites = int(sys.argv[2]) if len(sys.argv) > 2 else 1
print('#include <zex/device.h>')
for k in range(n):
    checks = ' '.join(f'ZEX_CHECK_BOUNDS(zex, i + {s}, n);' for s in range(sites))
    print(f'__kernel void k{k}(__global uint* d, uint n, zex_state_t zex) '
          f'{{ size_t i = get_global_id(0); {checks} d[i] = {k}u; }}')
