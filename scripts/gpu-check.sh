#!/usr/bin/env bash
# The checks that need a real NVIDIA GPU: every CUDA kernel of tests/device on the GPU against the
# reference interpreter, the CUDA test layer with the driver present (Stream-K sized by the
# driver's occupancy), compute-sanitizer's memcheck, racecheck and synccheck over the device tests
# when the sanitizer is installed, and the GPU GEMM bench against cuBLAS when cuBLAS is installed.
# On a machine without a CUDA driver and GPU it says so and exits 0: CI has no GPU and never needs
# this script.
# Usage:
#   bash scripts/gpu-check.sh                 build in build-gpu/, then run everything
#   bash scripts/gpu-check.sh --build-only    build the programs only (no GPU needed), then copy
#                                             them to build-gpu/bin/ for a GPU machine without a
#                                             compiler or Loom's dependencies
#   bash scripts/gpu-check.sh --run-only DIR  run the programs of DIR (made by --build-only)
# LOOM_GPU_CHECK_BENCH=0 skips the bench, LOOM_GPU_CHECK_SANITIZE=0 the sanitizer;
# LOOM_GPU_CHECK_LOGS=DIR keeps each step's full output there (default: build-gpu/logs);
# LOOM_GPU_CHECK_STEP_TIMEOUT=S stops a step after S seconds (default 1800).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mode=all
bin=build-gpu/bin
case "${1:-}" in
  --build-only) mode=build ;;
  --run-only)
    mode=run
    bin="${2:?--run-only needs the folder of the programs}"
    ;;
  "") ;;
  *)
    echo "usage: $0 [--build-only | --run-only DIR]" >&2
    exit 2
    ;;
esac
bench="${LOOM_GPU_CHECK_BENCH:-1}"
programs=(loom_device_tests loom_tests_cuda)
if [ "$bench" = 1 ]; then programs+=(bench_gpu_gemm); fi

# Without a GPU there is nothing to run: say so before spending minutes on a build.
if [ "$mode" != build ] && ! { command -v nvidia-smi > /dev/null 2>&1 && nvidia-smi -L 2> /dev/null | grep -q '^GPU '; }; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi lists none); nothing to check. The simulator-based"
  echo "gpu-check: CUDA tests run in the normal test suite (bash scripts/test.sh)."
  exit 0
fi

if [ "$mode" != run ]; then
  bash scripts/install-deps.sh
  # Without the LLVM backend: the programs then need only the C++ runtime, so --build-only's
  # output runs on a GPU machine without LLVM (they use the GPU, the simulator and the interpreter).
  cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DLOOM_BUILD_TESTS=ON -DLOOM_BUILD_GPU_CHECK=ON \
    -DLOOM_ENABLE_JIT=OFF -DLOOM_BUILD_EXAMPLES=OFF -DLOOM_BUILD_BENCH="$([ "$bench" = 1 ] && echo ON || echo OFF)"
  cmake --build build-gpu -j"$(nproc)" --target "${programs[@]}"
  mkdir -p "$bin"
  cp build-gpu/tests/loom_device_tests build-gpu/tests/loom_tests_cuda "$bin/"
  if [ "$bench" = 1 ]; then cp build-gpu/bench/bench_gpu_gemm "$bin/"; fi
  if [ "$mode" = build ]; then
    echo "gpu-check: built ${programs[*]} into $bin"
    exit 0
  fi
fi

nvidia-smi -L

# Loom dlopens NVRTC (and the bench cuBLAS): put the toolkit's libraries, or those of the pip
# wheels that some images carry instead, on the search path when the loader does not know them.
for lib in libnvrtc.so.13 libcublas.so.13; do
  if ! ldconfig -p 2> /dev/null | grep -q "$lib"; then
    found="$(find /usr/local/cuda*/lib64 /usr/local/cuda*/targets/*/lib /opt /usr/lib/python3* \
      -name "$lib" 2> /dev/null | head -n 1 || true)"
    if [ -n "$found" ]; then export LD_LIBRARY_PATH="$(dirname "$found")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; fi
  fi
done
logs="${LOOM_GPU_CHECK_LOGS:-build-gpu/logs}"
mkdir -p "$logs"
bin="$(cd "$bin" && pwd)"

status=0
step() {  # step NAME COMMAND...: runs a command, keeps its output in $logs/NAME.log
  local name="$1"
  shift
  echo "== $name"
  local start=$SECONDS
  if timeout "${LOOM_GPU_CHECK_STEP_TIMEOUT:-1800}" "$@" > "$logs/$name.log" 2>&1; then
    echo "   passed ($((SECONDS - start)) s)"
  else
    echo "   FAILED ($((SECONDS - start)) s); the end of $logs/$name.log:"
    tail -n 40 "$logs/$name.log"
    status=1
  fi
}

step device_tests "$bin/loom_device_tests"
# Alone, so that no earlier case has loaded the driver: lib's GPU tuners then measure in workers.
step device_tuning_in_workers "$bin/loom_device_tests" "-tc=device tuning in workers*"
# The test layer reads nothing from its working directory but may write files there.
step cuda_tests bash -c "cd \"\$(mktemp -d)\" && '$bin/loom_tests_cuda'"
if [ "$bench" = 1 ]; then
  step bench_gpu_gemm "$bin/bench_gpu_gemm"
  grep '^loom-bench' "$logs/bench_gpu_gemm.log" || true
fi
if [ "${LOOM_GPU_CHECK_SANITIZE:-1}" = 1 ]; then
  sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2> /dev/null | head -n 1 || true)"
  if [ -n "$sanitizer" ]; then
    # Stream-K at full size under the sanitizer takes minutes: its small case stands in for it. The
    # tuners' measurements (dozens of kernels, each timed for 20 ms) run once, above.
    for tool in memcheck racecheck synccheck; do
      step "sanitizer_$tool" "$sanitizer" --tool "$tool" --error-exitcode 1 "$bin/loom_device_tests" \
        --test-case-exclude='*every decomposition*,*tuners measure*'
    done
  else
    echo "== compute-sanitizer is not installed: memcheck, racecheck and synccheck skipped"
  fi
fi
exit "$status"
