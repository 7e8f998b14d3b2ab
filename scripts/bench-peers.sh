#!/usr/bin/env bash
# Installs the optional peers that benchmarks load when present, into a venv inside the build tree
# (never needed to build or test Loom): the PyPI wheels `mkl` (Intel MKL) and `scipy-openblas32`
# (the newest OpenBLAS, with DYNAMIC_ARCH kernels). bench_gemm finds them in
# <build>/bench-peers/venv, or wherever LOOM_BENCH_PEERS points.
# Usage: bash scripts/bench-peers.sh [build-dir]     (default: build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build="${1:-build}"
venv="$build/bench-peers/venv"
if ! python3 -c 'import venv, ensurepip' 2> /dev/null; then
  echo "bench-peers: python3 with venv is needed (Debian: apt-get install python3-venv)" >&2
  exit 1
fi
mkdir -p "$build/bench-peers"
[ -x "$venv/bin/pip" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade mkl scipy-openblas32
echo "bench-peers: installed in $venv:"
"$venv/bin/pip" list --disable-pip-version-check 2> /dev/null | grep -Ei '^(mkl|scipy-openblas32) '
echo "bench-peers: bench_gemm loads them from there (or from \$LOOM_BENCH_PEERS)"
