#!/usr/bin/env bash
# Installs the CUDA toolkit's SASS readers from PyPI into a venv inside the build tree (never needed
# to build or test Loom): the wheels `nvidia-cuda-cuobjdump` and `nvidia-cuda-nvdisasm`, whose
# executables land in <venv>/lib/python3.X/site-packages/nvidia/cu<major>/bin. bench_gpu_gemm_model
# and the CUDA tests (gpu_gemm's SASS counts) find them in <build>/sass-tools/venv, or wherever
# LOOM_SASS_TOOLS points (a folder or venv; LOOM_CUOBJDUMP names the executable itself); without them
# they print `sass=unavailable` and skip the SASS checks.
# Usage: bash scripts/sass-tools.sh [build-dir]     (default: build)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

source scripts/lib/pip-venv.sh
pip_venv sass-tools "${1:-build}" nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm
found=0
for tool in "$venv"/lib/python3*/site-packages/nvidia/*/bin/cuobjdump "$venv"/lib/python3*/site-packages/nvidia/*/bin/nvdisasm; do
  if [ -x "$tool" ]; then
    echo "sass-tools: $tool"
    found=$((found + 1))
  fi
done
if [ "$found" -lt 2 ]; then
  echo "sass-tools: the wheels did not provide cuobjdump and nvdisasm where expected (site-packages/nvidia/*/bin)" >&2
  exit 1
fi
