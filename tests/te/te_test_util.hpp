// Helpers for the tensor-expression tests: seeded random host buffers, the constant shape of
// a tensor, and closeness checks for results computed by lower() + interpret().
#pragma once

#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace loom::te_test {

/// The shape of a tensor whose extents are all constants.
inline std::vector<int64_t> shape_of(const Tensor& t) {
  std::vector<int64_t> shape;
  for (const Expr& e : t.shape()) {
    const int64_t* v = as_const_int(e);
    REQUIRE(v != nullptr);
    shape.push_back(*v);
  }
  return shape;
}

template <typename T>
void fill_random(const Buffer<T>& b, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = static_cast<T>(dist(rng));
}

template <typename T>
Buffer<T> random_buffer(std::vector<int64_t> shape, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  Buffer<T> b(std::move(shape));
  fill_random(b, seed, lo, hi);
  return b;
}

template <typename T>
Buffer<T> filled(std::vector<int64_t> shape, T value) {
  Buffer<T> b(std::move(shape));
  b.fill(value);
  return b;
}

/// |actual - expected| <= rel * max(1, |expected|).
inline bool close(double actual, double expected, double rel = 1e-5) {
  return std::abs(actual - expected) <= rel * std::max(1.0, std::abs(expected));
}

/// The number of elements of `actual` that differ from `expected` by more than `rel`.
template <typename T>
int64_t count_mismatches(const Buffer<T>& actual, const Buffer<T>& expected, double rel = 1e-5) {
  REQUIRE(actual.shape() == expected.shape());
  int64_t bad = 0;
  for (int64_t i = 0; i < actual.num_elements(); ++i)
    if (!close(static_cast<double>(actual.at_flat(i)), static_cast<double>(expected.at_flat(i)), rel)) ++bad;
  return bad;
}

}  // namespace loom::te_test
