#!/usr/bin/env bash
# Installs the optional peers that benchmarks load when present, into a venv inside the build tree
# (never needed to build or test Loom): the PyPI wheels `mkl` (Intel MKL) and `scipy-openblas32`
# (the newest OpenBLAS, with DYNAMIC_ARCH kernels). bench_gemm finds them in
# <build>/bench-peers/venv, or wherever LOOM_BENCH_PEERS points.
# Usage: bash scripts/bench-peers.sh [build-dir]     (default: build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

source scripts/lib/pip-venv.sh
pip_venv bench-peers "${1:-build}" mkl scipy-openblas32
echo "bench-peers: bench_gemm loads them from there (or from \$LOOM_BENCH_PEERS)"
