#!/usr/bin/env bash
# Installs the Debian 12 packages zex needs (docs/design.md, "Build, subprojects and packages"), only
# when one is missing.
# Not root: prints the exact apt-get line and stops, so nothing is installed behind your back.
set -euo pipefail
PKGS=(
  cmake make g++ pkg-config python3
  python3-pytest python3-numpy python3-venv python3-setuptools python3-pip python3-wheel
  libze1 libze-dev
  clang-15 llvm-15 llvm-spirv-15 spirv-tools spirv-headers
  pocl-opencl-icd ocl-icd-opencl-dev opencl-headers llvm-15-dev libllvmspirvlib-15-dev
  intel-opencl-icd
  googletest libgtest-dev libbenchmark-dev
  gnuplot-nox fonts-liberation
)
missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "zex: missing packages: ${missing[*]}" >&2
  echo "zex: run as root:  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "zex: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
