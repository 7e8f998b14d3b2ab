// Row softmax of a 4096 x 1024 float matrix, Y[i, j] = exp(X[i, j] - max_k X[i, k]) / sum_k ...,
// scheduled so each row stays in cache between its passes: rows in parallel, the max and the sum
// vectorized 16 wide through rfactor, exp vectorized (the CPU backend's polynomial, not libm).
// Checks every element against a double-precision C++ softmax, then times it against a
// STREAM-style copy of the same matrix in the same run (the copy is what the softmax must move:
// read X once, write Y once), with warm caches and with X and Y evicted before every call, and prints
//   loom-bench softmax rows=4096 cols=1024 ... caches=warm|cold ... copy_gbps= softmax_gbps=
//   ratio=<softmax/copy>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <iostream>
#include <vector>

#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>
#include <loom/support/cpu_info.hpp>

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

  // Two measurements, the two kernels alternating in each so that both see the same machine state,
  // best of each:
  //  - warm: calls back to back. X and Y together (32 MB) are about the size of a server CPU's L3, so
  //    part of either kernel's traffic may hit L3, by an amount that varies between runs;
  //  - cold: before every timed call, a read of twice the L3 evicts X and Y (STREAM's rule: the
  //    data must come from memory), so both kernels stream from DRAM.
  const double bytes = 2.0 * sizeof(float) * kRows * kCols;  // read X, write Y
  // (The L3 that sysfs reports, limited to [16, 128] MB: VMs report odd sizes.)
  const int64_t l3 =
      std::clamp<int64_t>(CpuCacheInfo::host().l3_bytes, int64_t{16} << 20, int64_t{128} << 20);
  std::vector<float> evict(static_cast<size_t>(2 * l3) / sizeof(float), 1.0f);
  volatile float evict_sink = 0;
  auto cold_ms = [&](const std::function<void()>& call) {
    float sum = 0;
    for (size_t i = 0; i < evict.size(); i += 16) sum += evict[i];
    evict_sink = sum;
    auto start = std::chrono::steady_clock::now();
    call();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  for (const char* mode : {"warm", "cold"}) {
    const bool cold = mode[0] == 'c';
    double softmax_ms = 1e30, copy_ms = 1e30;
    for (int round = 0; round < (cold ? 15 : 5); ++round) {
      auto run_softmax = [&] { softmax(x, y); };
      auto run_copy = [&] { copy(x, copied); };
      softmax_ms = std::min(softmax_ms, cold ? cold_ms(run_softmax) : tune::best_ms(run_softmax, 3));
      copy_ms = std::min(copy_ms, cold ? cold_ms(run_copy) : tune::best_ms(run_copy, 3));
    }
    std::printf(
        "loom-bench softmax rows=%d cols=%d threads=%d caches=%s peer=loom-copy-kernel softmax_ms=%.3f "
        "copy_ms=%.3f softmax_gbps=%.2f copy_gbps=%.2f ratio=%.3f\n",
        kRows, kCols, runtime::ThreadPool::global().num_threads(), mode, softmax_ms, copy_ms,
        bytes / softmax_ms / 1e6, bytes / copy_ms / 1e6, copy_ms / softmax_ms);
  }
  std::cout << "ok\n";
}
