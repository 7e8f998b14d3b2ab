// The JIT tests' oracle check: check_jit_matches_interpreter(f, args...) runs a lowered function
// through the reference interpreter and through the LLVM JIT on copies of the same inputs and
// compares every buffer (bit-exact for integers, 1e-5 relative for floats) and every error.
// Declarations only (defined once in jit_harness.cpp), so test files compile quickly; LLVM-free.
#pragma once

#include <loom/backend/build.hpp>
#include <loom/runtime/kernel_cache.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <unistd.h>

namespace loom::test {

/// Memory for one copy of a buffer argument, 64-byte aligned, spanning what its strides reach.
struct OwnedCopy {
  std::shared_ptr<std::byte> storage;
  BufferView view;
};

/// A deep copy of the memory a view reaches.
OwnedCopy copy_buffer(const BufferView& v);

/// Element at flat offset `i` from data, as a double (integers exact up to 2^53).
double element_value(const BufferView& v, int64_t i);
/// Stores `value` at flat offset `i` the way the interpreter converts it to the element type
/// (floats round to nearest even, integers truncate and saturate).
void set_element(const BufferView& v, int64_t i, double value);

struct JitCheckOptions {
  Target target = Target::cpu();
  double relative_tolerance = 1e-5;
  /// Float results are also allowed this absolute difference (sums that cancel to near zero).
  double absolute_tolerance = 1e-6;
  /// Compare floats bit for bit too (NaNs of any payload still match): for code whose every
  /// operation is correctly rounded (+ - * / sqrt, casts), where the JIT must give the same bits.
  bool exact_floats = false;
};

/// Kernel arguments together with the memory their buffer views point into.
struct OwnedArgs {
  std::vector<OwnedCopy> storage;
  std::vector<KernelArg> args;
};

/// Deep copies of the buffer arguments (scalars are passed through), in argument order.
OwnedArgs copy_arguments(const std::vector<KernelArg>& args);

/// Checks that every buffer argument of `actual_args` equals the one of `expected_args` (same
/// argument lists of f, e.g. interpreter and JIT results), within `options`' tolerances.
void check_buffers_match(const LoweredFunc& f, const std::vector<KernelArg>& expected_args,
                         const std::vector<KernelArg>& actual_args, const JitCheckOptions& options);

/// Runs f through the interpreter and the JIT on copies of `args`; checks that both fail with the
/// same message or that every buffer ends up equal. Returns the JIT's kernel for further checks.
Kernel check_jit_matches_interpreter(const LoweredFunc& f, const std::vector<KernelArg>& args,
                                     const JitCheckOptions& options = JitCheckOptions());

template <typename... Args>
requires(std::is_constructible_v<KernelArg, Args&&>&&...) Kernel
    check_jit_matches_interpreter(const LoweredFunc& f, Args&&... args) {
  return check_jit_matches_interpreter(f, std::vector<KernelArg>{KernelArg(std::forward<Args>(args))...});
}

/// Fills a buffer of any dtype with seeded random values in [lo, hi] (integers rounded; bool 0/1).
void fill_random_view(const BufferView& v, uint32_t seed, double lo = -1.0, double hi = 1.0);

/// Owned random buffers for every buffer parameter of f, with constant shapes or shapes given by
/// `sizes` (values of f.size_vars, in order), and the scalars of scalar parameters from `sizes`.
using RandomArgs = OwnedArgs;
RandomArgs random_args(const LoweredFunc& f, uint32_t seed, const std::vector<int64_t>& sizes = {},
                       double lo = -1.0, double hi = 1.0);

/// Fresh caches for one test: an empty memory cache and a new LOOM_CACHE_DIR, removed afterwards.
struct ScopedCacheDir {
  std::string path;
  std::string previous;
  bool had_previous = false;
  ScopedCacheDir() {
    char tmpl[] = "/tmp/loom-jit-test-XXXXXX";
    path = ::mkdtemp(tmpl);
    if (const char* p = std::getenv("LOOM_CACHE_DIR")) {
      previous = p;
      had_previous = true;
    }
    ::setenv("LOOM_CACHE_DIR", path.c_str(), 1);
    runtime::MemoryKernelCache::global().clear();
  }
  ~ScopedCacheDir() {
    if (had_previous) {
      ::setenv("LOOM_CACHE_DIR", previous.c_str(), 1);
    } else {
      ::unsetenv("LOOM_CACHE_DIR");
    }
    runtime::MemoryKernelCache::global().clear();  // no kernel outlives the directory it came from
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace loom::test
