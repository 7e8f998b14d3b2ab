// The machine's FMA peak, the ceiling GEMM results are read against: independent chains of
// widest-vector FMAs (no loads) on 1 thread and on all. Prints `loom-bench fma_peak threads=.. gflops=..`.
#include <loom/runtime/thread_pool.hpp>

#include "fma_peak.hpp"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace {

constexpr int kCallsPerThread = 400;
double gflops_by_threads[2] = {0, 0};

void run(benchmark::State& state, int threads, double& gflops) {
  using Clock = std::chrono::steady_clock;
  gflops = 0;
  for (auto _ : state) {
    Clock::time_point start = Clock::now();
    // Every thread times its calls while all run at once; the machine's rate is the sum of the
    // threads' best rates.
    gflops = std::max(gflops, loom_bench::measure_fma_peak(threads, kCallsPerThread));
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
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
