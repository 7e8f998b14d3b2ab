// Row softmax of a 4096 x 1024 float matrix, Y[i, j] = exp(X[i, j] - max_k X[i, k]) / sum_k ...,
// scheduled so each row stays in cache between its passes: rows in parallel, the max and the sum
// vectorized 16 wide through rfactor, exp vectorized (the CPU backend's polynomial, not libm).
// Checks every element against a double-precision C++ softmax, then times it against a
// STREAM-style copy of the same matrix in the same run (the copy is what the softmax must move:
// read X once, write Y once) and prints
//   loom-bench softmax rows=4096 cols=1024 ... copy_gbps= softmax_gbps= ratio=<softmax/copy>
#include <algorithm>
#include <cstring>
#include <iostream>

#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>

#include "example_util.hpp"

using namespace loom;

namespace {

constexpr int kRows = 4096, kCols = 1024, kLanes = 16;

/// A row reduction R[i] = reduce_k src(i, k), computed 16 lanes at a time: rfactor keeps 16 partial
/// results per row (the vector), which one short loop then combines. Both run inside `at`'s row loop.
void vectorize_row_reduction(Schedule& s, const Tensor& r, const Tensor& at, const IterVar& row) {
  auto [ko, ki] = s[r].split(r.reduce_axis(0), kLanes);
  Tensor partial = s.rfactor(r, ki, /*factor_axis=*/1);  // partial[i, ki]
  s[r].compute_at(s[at], row);
  s[partial].compute_at(s[r], r.axis(0));
  // The 16 lanes innermost, the reduction over ko around them.
  s[partial].reorder({partial.axis(0), partial.reduce_axis(0), partial.axis(1)});
  s[partial].vectorize(partial.axis(1));
}

Kernel build_softmax(bool print_ir) {
  Tensor X = placeholder({kRows, kCols}, f32, "X");
  IterVar k1 = reduce_axis(0, kCols, "k1"), k2 = reduce_axis(0, kCols, "k2");
  Tensor M = compute(
      {kRows}, [&](Expr i) { return max(X(i, k1), {k1}); }, "M");
  Tensor E = compute(
      {kRows, kCols}, [&](Expr i, Expr j) { return exp(X(i, j) - M(i)); }, "E");
  Tensor S = compute(
      {kRows}, [&](Expr i) { return sum(E(i, k2), {k2}); }, "S");
  Tensor Y = compute(
      {kRows, kCols}, [&](Expr i, Expr j) { return E(i, j) * (1.0f / S(i)); }, "Y");

  Schedule s = create_schedule(Y);
  IterVar row = Y.axis(0);
  s[Y].parallel(row);
  auto [jo, ji] = s[Y].split(Y.axis(1), kLanes);
  s[Y].vectorize(ji);
  // Consumers first: a stage moves inside Y's row loop once every stage that reads it is there.
  vectorize_row_reduction(s, S, Y, row);
  s[E].compute_at(s[Y], row);  // one row of E (4 KiB) stays in cache between the sum and Y
  auto [eo, ei] = s[E].split(E.axis(1), kLanes);
  s[E].vectorize(ei);
  vectorize_row_reduction(s, M, Y, row);
  if (print_ir) std::cout << lower(s, {X, Y}, "softmax") << "\n";
  return build(s, {X, Y}, Target::cpu(), "softmax");
}

/// The copy peer: Y = X with the softmax's schedule (parallel rows, 16-wide vectors), compiled by
/// the same backend, so both move the same bytes with the same threads.
Kernel build_copy() {
  Tensor X = placeholder({kRows, kCols}, f32, "X");
  Tensor Y = compute(
      {kRows, kCols}, [&](Expr i, Expr j) { return X(i, j); }, "Y");
  Schedule s = create_schedule(Y);
  s[Y].parallel(Y.axis(0));
  auto [jo, ji] = s[Y].split(Y.axis(1), kLanes);
  s[Y].vectorize(ji);
  return build(s, {X, Y}, Target::cpu(), "copy");
}

}  // namespace

int main() {
  Kernel softmax = build_softmax(true);
  Kernel copy = build_copy();

  Buffer<float> x({kRows, kCols}), y({kRows, kCols}), copied({kRows, kCols});
  example::fill_random(x, 1);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.at_flat(i) *= 20.0f;  // logits in [-20, 20]
  softmax(x, y);
  for (int i = 0; i < kRows; ++i) {
    double m = -1e30, total = 0;
    for (int j = 0; j < kCols; ++j) m = std::max(m, static_cast<double>(x(i, j)));
    for (int j = 0; j < kCols; ++j) total += std::exp(static_cast<double>(x(i, j)) - m);
    for (int j = 0; j < kCols; ++j)
      example::expect_close(y(i, j), std::exp(static_cast<double>(x(i, j)) - m) / total, "Y[i, j]", 1e-5);
  }
  copy(x, copied);
  if (std::memcmp(copied.data(), x.data(), sizeof(float) * kRows * kCols) != 0) {
    std::cout << "MISMATCH in the copy\n";
    return 1;
  }

  // Alternate the two so that both see the same machine state; best of each.
  double softmax_s = 1e30, copy_s = 1e30;
  for (int round = 0; round < 5; ++round) {
    softmax_s = std::min(softmax_s, tune::best_ms([&] { softmax(x, y); }, 3) / 1e3);
    copy_s = std::min(copy_s, tune::best_ms([&] { copy(x, copied); }, 3) / 1e3);
  }
  const double bytes = 2.0 * sizeof(float) * kRows * kCols;  // read X, write Y
  std::printf(
      "loom-bench softmax rows=%d cols=%d threads=%d peer=loom-copy-kernel softmax_ms=%.3f copy_ms=%.3f "
      "softmax_gbps=%.2f copy_gbps=%.2f ratio=%.3f\n",
      kRows, kCols, runtime::ThreadPool::global().num_threads(), softmax_s * 1e3, copy_s * 1e3,
      bytes / softmax_s / 1e9, bytes / copy_s / 1e9, copy_s / softmax_s);
  std::cout << "ok\n";
}
