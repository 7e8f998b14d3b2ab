// The machine's FMA peak, measured: independent chains of widest-vector FMAs (no loads) run by
// `threads` threads at once. Shared by bench_fma_peak and bench_gemm (which prints peak_frac=).
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>
#include <vector>

namespace loom_bench {

// GCC/Clang vector extension: one register of the widest SIMD the compiler targets (-march=native).
#if defined(__AVX512F__)
constexpr int kFmaLanes = 16;
#elif defined(__AVX__)
constexpr int kFmaLanes = 8;
#else
constexpr int kFmaLanes = 4;
#endif
typedef float FmaVec __attribute__((vector_size(kFmaLanes * sizeof(float))));

// Enough independent accumulators to cover the FMA latency times the FMA ports (4 cycles x 2).
constexpr int kFmaChains = 16;
// Short calls (~40 us), the best of many: on a shared machine a long call is likely to be
// preempted, and a peak is what the code does when it has the core.
constexpr long kFmaIterations = 1L << 14;
constexpr double kFlopsPerFmaCall = 2.0 * kFmaLanes * kFmaChains * static_cast<double>(kFmaIterations);

/// kFmaIterations rounds of kFmaChains independent FMAs; returns a value that depends on all of them.
__attribute__((noinline)) inline float fma_chains(float x, float y) {
  FmaVec acc[kFmaChains];
  for (int c = 0; c < kFmaChains; ++c) acc[c] = FmaVec{} + static_cast<float>(c) * 1e-3f;
  const FmaVec vx = FmaVec{} + x, vy = FmaVec{} + y;
  for (long i = 0; i < kFmaIterations; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kFmaChains; ++c) acc[c] = acc[c] * vx + vy;  // contracted to one FMA
  }
  FmaVec total = FmaVec{};
  for (int c = 0; c < kFmaChains; ++c) total += acc[c];
  float s = 0;
  for (int l = 0; l < kFmaLanes; ++l) s += total[l];
  return s;
}

inline volatile float fma_sink = 0;

/// Float32 GFLOP/s of `threads` threads running `calls` calls each at the same time: the sum of
/// each thread's best call rate.
inline double measure_fma_peak(int threads, int calls) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> best(static_cast<size_t>(threads), 1e30);
  std::vector<float> results(static_cast<size_t>(threads), 0.0f);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int c = 0; c < calls; ++c) {
        Clock::time_point s0 = Clock::now();
        results[static_cast<size_t>(t)] += fma_chains(0.999999f, 1e-7f);
        best[static_cast<size_t>(t)] =
            std::min(best[static_cast<size_t>(t)], std::chrono::duration<double>(Clock::now() - s0).count());
      }
    });
  for (std::thread& w : workers) w.join();
  for (float r : results) fma_sink = fma_sink + r;  // the results are used: the calls cannot be dropped
  double total = 0;
  for (double b : best) total += kFlopsPerFmaCall / b / 1e9;
  return total;
}

}  // namespace loom_bench
