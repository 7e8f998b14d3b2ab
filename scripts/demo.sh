#!/usr/bin/env bash
# Builds Loom in build/ and runs the flagship demo (the `demo` target; the README's demo command).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install-deps.sh

# Same options as scripts/test.sh, so switching between the two does not reconfigure build/.
cmake -S . -B build \
  -DCMAKE_BUILD_TYPE=Release \
  -DLOOM_BUILD_TESTS=ON \
  -DLOOM_BUILD_EXAMPLES=ON \
  -DLOOM_BUILD_BENCH="${LOOM_BUILD_BENCH:-OFF}"
exec cmake --build build -j"$(nproc)" --target demo
