// Small helpers shared by the examples: random inputs, comparing results, failing loudly (for
// timing, the examples use loom::tune::best_ms from tune/measure.hpp).
// Every example ends by printing `ok` when its checks pass (ctest looks for it).
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>

#include <loom/core.hpp>
#include <loom/tune/measure.hpp>

namespace example {

template <typename T>
void fill_random(const loom::Buffer<T>& b, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = static_cast<T>(dist(rng));
}

/// Exits with a message when `actual` and `expected` differ by more than a relative tolerance.
inline void expect_close(double actual, double expected, const char* what, double tolerance = 1e-4) {
  if (std::abs(actual - expected) > tolerance * (1.0 + std::abs(expected))) {
    std::printf("MISMATCH in %s: got %.9g, expected %.9g\n", what, actual, expected);
    std::exit(1);
  }
}

/// Exits with a message unless every element of `actual` is close to the same element of
/// `expected` (two buffers of the same shape, e.g. the results of two schedules).
template <typename T>
void expect_all_close(const loom::Buffer<T>& actual, const loom::Buffer<T>& expected, const char* what,
                      double tolerance = 1e-4) {
  if (actual.shape() != expected.shape()) {
    std::printf("MISMATCH in %s: the buffers have different shapes\n", what);
    std::exit(1);
  }
  for (int64_t i = 0; i < actual.num_elements(); ++i) {
    double a = static_cast<double>(actual.at_flat(i)), e = static_cast<double>(expected.at_flat(i));
    if (std::abs(a - e) > tolerance * (1.0 + std::abs(e))) {
      std::printf("MISMATCH in %s at flat index %lld: got %.9g, expected %.9g\n", what,
                  static_cast<long long>(i), a, e);
      std::exit(1);
    }
  }
}

/// The line the primitive examples print between the IR before and after the primitive, as
/// the TVM schedule tutorial does.
inline void print_cutting_line() { std::cout << "---------cutting line---------\n"; }

}  // namespace example
