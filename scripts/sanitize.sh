#!/usr/bin/env bash
# Builds the tests that matter most under sanitizers (cmake/LoomSanitize.cmake) and runs them: argument
# checks, hostile inputs, the interpreter, the disk cache, the error catalog and a short fuzz run with
# AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/), the concurrency tests with ThreadSanitizer
# (build-tsan/). Any finding fails the script. .ci/run calls it after the normal test run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

asan_dir="${LOOM_ASAN_BUILD_DIR:-build-asan}"
tsan_dir="${LOOM_TSAN_BUILD_DIR:-build-tsan}"
jobs="$(nproc)"

build() {  # build <dir> <sanitizers>
  mkdir -p "$1"
  cmake -S . -B "$1" -DCMAKE_BUILD_TYPE=Release -DLOOM_BUILD_TESTS=ON -DLOOM_BUILD_EXAMPLES=OFF \
    -DLOOM_BUILD_BENCH=OFF -DLOOM_SANITIZE="$2" > "$1/configure.log" || {
    cat "$1/configure.log"
    return 1
  }
  cmake --build "$1" -j"$jobs" --target loom_sanitize_tests
}

# Kernels the tests compile go to a fresh cache directory, never to ~/.cache/loom.
cache_dir="$(mktemp -d /tmp/loom-sanitize-cache-XXXXXX)"
trap 'rm -rf "$cache_dir"' EXIT
export LOOM_CACHE_DIR="$cache_dir"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer"
build "$asan_dir" "address,undefined"
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# A short run of the schedule fuzzer (200 random schedules, each interpreted and JIT-compiled);
# the illegal-primitive fuzzer is cheap and needs its full default count to reach every category.
LOOM_FUZZ_ITERS="${LOOM_FUZZ_ITERS:-200}" \
  "$asan_dir/tests/loom_sanitize_tests" --no-version --test-case-exclude='fuzz: illegal*'
"$asan_dir/tests/loom_sanitize_tests" --no-version --test-case='fuzz: illegal*'

echo "== ThreadSanitizer"
build "$tsan_dir" "thread"
# The concurrency tests: build() from 8 threads, one kernel with a parallel loop called from 8
# threads, two processes sharing one disk cache (and the other cache tests, which are quick), and
# three threads calling the thread pool back to back.
TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1" \
  "$tsan_dir/tests/loom_sanitize_tests" --no-version --test-case='jit concurrency*,jit cache*,thread pool*'

echo "sanitize.sh: no findings"
