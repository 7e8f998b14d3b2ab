#!/usr/bin/env bash
# The checks that need a real NVIDIA GPU: builds Loom with the device tests and the benchmarks in
# build-gpu/, runs every CUDA kernel of tests/device on the GPU against the reference interpreter,
# then the GPU GEMM bench against cuBLAS (when cuBLAS is installed). On a machine without a CUDA
# driver and GPU it says so and exits 0: CI has no GPU and never needs this script.
# Usage: bash scripts/gpu-check.sh            (LOOM_GPU_CHECK_BENCH=0 skips the bench)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

have_gpu() {
  if command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L 2> /dev/null | grep -q '^GPU '; then
    return 0
  fi
  return 1
}

if ! have_gpu; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi lists none); nothing to check. The simulator-based"
  echo "gpu-check: CUDA tests run in the normal test suite (bash scripts/test.sh)."
  exit 0
fi
nvidia-smi -L

bash scripts/install-deps.sh
jobs="$(nproc)"
cmake -S . -B build-gpu \
  -DCMAKE_BUILD_TYPE=Release \
  -DLOOM_BUILD_TESTS=ON \
  -DLOOM_BUILD_GPU_CHECK=ON \
  -DLOOM_BUILD_EXAMPLES=OFF \
  -DLOOM_BUILD_BENCH="$([ "${LOOM_GPU_CHECK_BENCH:-1}" = 1 ] && echo ON || echo OFF)"
targets=(--target loom_device_tests loom_tests_cuda)
if [ "${LOOM_GPU_CHECK_BENCH:-1}" = 1 ]; then targets+=(bench_gpu_gemm); fi
cmake --build build-gpu -j"$jobs" "${targets[@]}"

status=0
echo "== the CUDA kernels on the GPU, against the interpreter"
./build-gpu/tests/loom_device_tests || status=1
echo "== the CUDA test layer (NVRTC, ptxas, the simulator; Stream-K sized by the driver)"
(cd build-gpu/tests && ./loom_tests_cuda) || status=1
if [ "${LOOM_GPU_CHECK_BENCH:-1}" = 1 ]; then
  echo "== GPU GEMM against cuBLAS"
  ./build-gpu/bench/bench_gpu_gemm || status=1
fi
exit "$status"
