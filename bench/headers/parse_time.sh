#!/usr/bin/env bash
# How long `#include <zex/zex.hpp>` takes to parse, against the std and Level Zero headers the API's
# declarations need (docs/benchmarks.md, "Header parse time"). CPU time (user+sys) of
# `c++ -std=c++17 -fsyntax-only`, the minimum and the median of N interleaved runs.
#   bench/headers/parse_time.sh [N=15]     (env: CXX=c++, ZEX_INCLUDE=<another include/ dir>)
set -euo pipefail
n=${1:-15}
cxx=${CXX:-c++}
root=$(cd "$(dirname "$0")/../.." && pwd)
inc=${ZEX_INCLUDE:-$root/include}  # another tree's headers, to compare
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# What the public declarations use: handles and structs of ze_api.h, fixed-width integers, strings,
# vectors, arrays, optionals, shared/unique pointers, std::runtime_error.
cat > "$tmp/baseline.cpp" <<'CPP'
#include <level_zero/ze_api.h>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>
CPP
echo '#include <zex/zex.hpp>' > "$tmp/zex.cpp"
cpu() { /usr/bin/time -f "%U %S" "$cxx" -std=c++17 -fsyntax-only -I"$inc" "$1" 2>&1 >/dev/null | awk '{print $1 + $2}'; }
: > "$tmp/b"; : > "$tmp/z"
for _ in $(seq "$n"); do cpu "$tmp/baseline.cpp" >> "$tmp/b"; cpu "$tmp/zex.cpp" >> "$tmp/z"; done
stats() { sort -n "$1" | awk '{v[NR]=$1} END {printf "%.3f %.3f", v[1], (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
read -r bmin bmed <<<"$(stats "$tmp/b")"
read -r zmin zmed <<<"$(stats "$tmp/z")"
echo "baseline (std + ze_api.h): min ${bmin} s, median ${bmed} s"
echo "zex/zex.hpp:               min ${zmin} s, median ${zmed} s"
awk -v a="$zmin" -v b="$bmin" -v c="$zmed" -v d="$bmed" 'BEGIN {printf "ratio: %.2fx (min), %.2fx (median); target <= 1.5x\n", a/b, c/d}'
