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

// Enough independent accumulators to cover the FMA latency times the FMA ports (4 cycles x 2), and
// few enough that they and the two operands stay in registers: AVX2's 16 registers hold 12 (with 16
// the compiler spilled accumulators every iteration, and one Zen 3 core measured 54 GFLOP/s where
// OpenBLAS's sgemm ran 80).
#if defined(__AVX512F__)
constexpr int kFmaChains = 16;
#else
constexpr int kFmaChains = 12;
#endif
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
#pragma GCC unroll kFmaChains
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
/// Eight dot instructions `op` ("vpdpbusd" or "vdpbf16ps"), each adding x . y into its own
/// accumulator. Written in assembly: GCC 12 spills and copies sixteen accumulators of the intrinsics
/// every iteration (vpdpbusd measured 586 against 1100 GOP/s on one Zen 5 core).
#define LOOM_DOT8(op, a0, a1, a2, a3, a4, a5, a6, a7)                                                 \
  asm volatile(op " %8, %9, %0\n\t" op " %8, %9, %1\n\t" op " %8, %9, %2\n\t" op " %8, %9, %3\n\t" op \
                  " %8, %9, %4\n\t" op " %8, %9, %5\n\t" op " %8, %9, %6\n\t" op " %8, %9, %7"        \
               : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7)       \
               : "v"(x), "v"(y))

/// kFmaIterations rounds of kFmaChains (16) independent 512-bit dot instructions (vdpbf16ps, or
/// vpdpbusd with `int8`): the peak of lib::gemm's bfloat16 and 8-bit micro-kernels.
__attribute__((noinline)) inline float dot_chains(bool int8, int seed) {
  static_assert(kFmaChains == 16, "dot_chains issues two groups of eight");
  const __m512i x = _mm512_set1_epi32(0x3f803f80 + seed), y = _mm512_set1_epi32(0x3c003c00 + seed);
  __m512i a0 = _mm512_set1_epi32(0), a1 = _mm512_set1_epi32(1), a2 = _mm512_set1_epi32(2),
          a3 = _mm512_set1_epi32(3), a4 = _mm512_set1_epi32(4), a5 = _mm512_set1_epi32(5),
          a6 = _mm512_set1_epi32(6), a7 = _mm512_set1_epi32(7), a8 = _mm512_set1_epi32(8),
          a9 = _mm512_set1_epi32(9), a10 = _mm512_set1_epi32(10), a11 = _mm512_set1_epi32(11),
          a12 = _mm512_set1_epi32(12), a13 = _mm512_set1_epi32(13), a14 = _mm512_set1_epi32(14),
          a15 = _mm512_set1_epi32(15);
  for (long i = 0; i < kFmaIterations; ++i) {
    if (int8) {
      LOOM_DOT8("vpdpbusd", a0, a1, a2, a3, a4, a5, a6, a7);
      LOOM_DOT8("vpdpbusd", a8, a9, a10, a11, a12, a13, a14, a15);
    } else {
      LOOM_DOT8("vdpbf16ps", a0, a1, a2, a3, a4, a5, a6, a7);
      LOOM_DOT8("vdpbf16ps", a8, a9, a10, a11, a12, a13, a14, a15);
    }
  }
  // A value that depends on every accumulator, so that none of the work is dead.
  for (__m512i a : {a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15})
    a0 = _mm512_xor_si512(a0, a);
  alignas(64) int lanes[16];
  _mm512_store_si512(lanes, a0);
  return static_cast<float>(lanes[0]);
}
#undef LOOM_DOT8

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
