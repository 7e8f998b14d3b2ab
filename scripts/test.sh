#!/usr/bin/env bash
# Builds Loom with its tests and examples in build/ and runs them all with ctest (the README's
# test command). Its exit code is ctest's. Set LOOM_BUILD_BENCH=ON to also build benchmarks.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh

jobs="$(nproc)"
cmake -S . -B build \
  -DCMAKE_BUILD_TYPE=Release \
  -DLOOM_BUILD_TESTS=ON \
  -DLOOM_BUILD_EXAMPLES=ON \
  -DLOOM_BUILD_BENCH="${LOOM_BUILD_BENCH:-OFF}"
cmake --build build -j"$jobs"
exec ctest --test-dir build --output-on-failure -j"$jobs"
