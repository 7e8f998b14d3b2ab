// The machine's FMA peak, the ceiling GEMM results are read against: independent chains of
// widest-vector FMAs (no loads) on 1 thread and on all. Prints `loom-bench fma_peak threads=.. gflops=..`.
#include <loom/runtime/thread_pool.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

// GCC/Clang vector extension: one register of the widest SIMD the compiler targets (-march=native).
#if defined(__AVX512F__)
constexpr int kLanes = 16;
#elif defined(__AVX__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));

// Enough independent accumulators to cover the FMA latency times the FMA ports (4 cycles x 2).
constexpr int kChains = 16;
// Short calls (~40 us), the best of many: on a shared machine a long call is likely to be
// preempted, and a peak is what the code does when it has the core.
constexpr long kIterations = 1L << 14;
constexpr int kCallsPerThread = 400;
constexpr double kFlopsPerCall = 2.0 * kLanes * kChains * static_cast<double>(kIterations);

/// kIterations rounds of kChains independent FMAs; returns a value that depends on all of them.
__attribute__((noinline)) float fma_chains(float x, float y) {
  Vec acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = Vec{} + static_cast<float>(c) * 1e-3f;
  const Vec vx = Vec{} + x, vy = Vec{} + y;
  for (long i = 0; i < kIterations; ++i) {
#pragma GCC unroll 16
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * vx + vy;  // contracted to one FMA
  }
  Vec total = Vec{};
  for (int c = 0; c < kChains; ++c) total += acc[c];
  float s = 0;
  for (int l = 0; l < kLanes; ++l) s += total[l];
  return s;
}

double gflops_by_threads[2] = {0, 0};
volatile float sink = 0;

void run(benchmark::State& state, int threads, double& gflops) {
  using Clock = std::chrono::steady_clock;
  gflops = 0;
  for (auto _ : state) {
    Clock::time_point start = Clock::now();
    // Every thread times its calls while all run at once; the machine's rate is the sum of the
    // threads' best rates.
    std::vector<double> best(static_cast<size_t>(threads), 1e30);
    std::vector<float> results(static_cast<size_t>(threads), 0.0f);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t] {
        for (int c = 0; c < kCallsPerThread; ++c) {
          Clock::time_point s0 = Clock::now();
          results[static_cast<size_t>(t)] += fma_chains(0.999999f, 1e-7f);
          best[static_cast<size_t>(t)] = std::min(best[static_cast<size_t>(t)],
                                                  std::chrono::duration<double>(Clock::now() - s0).count());
        }
      });
    for (std::thread& w : workers) w.join();
    for (float r : results) sink = sink + r;  // the results are used: the calls cannot be dropped
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
    double total = 0;
    for (double b : best) total += kFlopsPerCall / b / 1e9;
    gflops = std::max(gflops, total);
  }
  state.counters["GFLOP/s"] = gflops;
}

int pool_threads() { return loom::runtime::ThreadPool::global().pool_threads(); }

void BM_fma_peak_one_thread(benchmark::State& state) { run(state, 1, gflops_by_threads[0]); }
BENCHMARK(BM_fma_peak_one_thread)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_fma_peak_all_threads(benchmark::State& state) { run(state, pool_threads(), gflops_by_threads[1]); }
BENCHMARK(BM_fma_peak_all_threads)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (gflops_by_threads[0] > 0)
    std::printf("loom-bench fma_peak threads=1 gflops=%.2f\n", gflops_by_threads[0]);
  if (gflops_by_threads[1] > 0 && pool_threads() > 1)
    std::printf("loom-bench fma_peak threads=%d gflops=%.2f\n", pool_threads(), gflops_by_threads[1]);
  return 0;
}
