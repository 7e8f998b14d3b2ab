// Small helpers shared by the examples: random inputs, comparing results, failing loudly.
// Every example ends by printing `ok` when its checks pass (ctest looks for it).
#pragma once

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include <loom/core.hpp>

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

}  // namespace example
