// The machine's FMA peak, measured: independent chains of widest-vector FMAs (no loads) run by
// `threads` threads at once, and likewise the peaks of the 512-bit dot instructions (vdpbf16ps,
// vpdpbusd) where the CPU has them. Shared by bench_fma_peak, bench_gemm and bench_gemm_lowp
// (which print peak_frac=).
#pragma once

#if defined(__AVX512BF16__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#endif

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

/// The rate (in units of `ops_per_call` per second, / 1e9) of `threads` threads running `calls` calls
/// of `kernel` each at the same time: the sum of each thread's best call rate.
template <typename Kernel>
double measure_peak(int threads, int calls, Kernel kernel, double ops_per_call) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> best(static_cast<size_t>(threads), 1e30);
  std::vector<float> results(static_cast<size_t>(threads), 0.0f);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t)
    workers.emplace_back([&, t] {
      for (int c = 0; c < calls; ++c) {
        Clock::time_point s0 = Clock::now();
        results[static_cast<size_t>(t)] += kernel();
        best[static_cast<size_t>(t)] =
            std::min(best[static_cast<size_t>(t)], std::chrono::duration<double>(Clock::now() - s0).count());
      }
    });
  for (std::thread& w : workers) w.join();
  for (float r : results) fma_sink = fma_sink + r;  // the results are used: the calls cannot be dropped
  double total = 0;
  for (double b : best) total += ops_per_call / b / 1e9;
  return total;
}

/// Float32 GFLOP/s of `threads` threads running `calls` calls each at the same time: the sum of
/// each thread's best call rate.
inline double measure_fma_peak(int threads, int calls) {
  return measure_peak(
      threads, calls, [] { return fma_chains(0.999999f, 1e-7f); }, kFlopsPerFmaCall);
}

#if defined(__AVX512BF16__) && defined(__AVX512VNNI__)
/// kFmaIterations rounds of kFmaChains independent 512-bit dot instructions (vdpbf16ps, or vpdpbusd
/// with `int8`): the peak of lib::gemm's bfloat16 and 8-bit micro-kernels.
__attribute__((noinline)) inline float dot_chains(bool int8, int seed) {
  const __m512i x = _mm512_set1_epi32(0x3f803f80 + seed), y = _mm512_set1_epi32(0x3c003c00 + seed);
  float s = 0;
  if (int8) {
    __m512i acc[kFmaChains];
    for (int c = 0; c < kFmaChains; ++c) acc[c] = _mm512_set1_epi32(c);
    for (long i = 0; i < kFmaIterations; ++i) {
#pragma GCC unroll 16
      for (int c = 0; c < kFmaChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], x, y);
    }
    alignas(64) int lanes[16];
    for (int c = 0; c < kFmaChains; ++c) {
      _mm512_store_si512(lanes, acc[c]);
      s += static_cast<float>(lanes[0]);
    }
  } else {
    __m512 acc[kFmaChains];
    for (int c = 0; c < kFmaChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c));
    for (long i = 0; i < kFmaIterations; ++i) {
#pragma GCC unroll 16
      for (int c = 0; c < kFmaChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], (__m512bh)x, (__m512bh)y);
    }
    for (int c = 0; c < kFmaChains; ++c) s += _mm512_cvtss_f32(acc[c]);
  }
  return s;
}

/// GFLOP/s of vdpbf16ps (or GOP/s of vpdpbusd with `int8`; 2 per multiply-add) on `threads` threads.
inline double measure_dot_peak(bool int8, int threads, int calls) {
  const double per_call = 2.0 * (int8 ? 64 : 32) * kFmaChains * static_cast<double>(kFmaIterations);
  return measure_peak(
      threads, calls, [int8] { return dot_chains(int8, 0); }, per_call);
}
#else
/// 0: this compiler's target has no AVX512-BF16 and AVX512-VNNI (the bench is built -march=native).
inline double measure_dot_peak(bool, int, int) { return 0; }
#endif

}  // namespace loom_bench
