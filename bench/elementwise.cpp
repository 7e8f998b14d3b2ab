// Elementwise C = A + B over 2^24 floats: a Loom kernel (vectorize + parallel schedule) against a
// STREAM-style C++ loop compiled in this file with -O3 -march=native (OpenMP-parallel when the
// compiler has OpenMP, like STREAM). Prints `loom-bench elementwise_add ... ratio=<loom/peer>`.
// Run it with OMP_WAIT_POLICY=passive LOOM_SPIN_US=0 (as ctest does): idle threads of both sleep at
// once, where spinning ones would compete with the other side's for the cores of a busy machine.
#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

using namespace loom;

namespace {

constexpr int64_t kN = int64_t{1} << 24;
constexpr double kBytesPerIteration = 3.0 * sizeof(float) * kN;  // STREAM counts read A, B; write C

struct Data {
  Buffer<float> a{kN}, b{kN}, c{kN};
  Data() {
    for (int64_t i = 0; i < kN; ++i) {
      a.at_flat(i) = static_cast<float>(i % 1000) * 0.5f;
      b.at_flat(i) = static_cast<float>(i % 77);
    }
  }
  bool check() const {
    for (int64_t i = 0; i < kN; i += 4099)
      if (c.at_flat(i) != a.at_flat(i) + b.at_flat(i)) return false;
    return true;
  }
};

Data& data() {
  static Data d;
  return d;
}

/// C = A + B: chunks of 64K elements over the thread pool, 16 lanes (one AVX-512 register) each.
Kernel loom_add() {
  Tensor A = placeholder({kN}, f32, "A"), B = placeholder({kN}, f32, "B");
  Tensor C = compute(
      {kN}, [&](Expr i) { return A(i) + B(i); }, "C");
  Schedule s = create_schedule(C);
  auto [xo, xi] = s[C].split(C.axis(0), 1 << 16);
  auto [xio, xii] = s[C].split(xi, 16);
  s[C].parallel(xo);
  s[C].vectorize(xii);
  return build(s, {A, B, C}, Target::cpu(), "elementwise_add");
}

void peer_add(const float* __restrict a, const float* __restrict b, float* __restrict c, int64_t n) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

int peer_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

double loom_seconds = 0, peer_seconds = 0;

template <typename Run>
void timed(benchmark::State& state, double& seconds_per_iteration, Run&& run) {
  using Clock = std::chrono::steady_clock;
  run();  // warm up: page faults, thread start-up
  std::vector<double> times;
  for (auto _ : state) {
    Clock::time_point start = Clock::now();
    run();
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    times.push_back(s);
    state.SetIterationTime(s);
  }
  std::sort(times.begin(), times.end());
  seconds_per_iteration = times.empty() ? 0 : times[times.size() / 2];
  state.counters["GB/s"] = benchmark::Counter(kBytesPerIteration * static_cast<double>(state.iterations()),
                                              benchmark::Counter::kIsRate);
  if (!data().check()) state.SkipWithError("wrong result");
}

void BM_loom_elementwise_add(benchmark::State& state) {
  Kernel k = loom_add();
  Data& d = data();
  timed(state, loom_seconds, [&] { k(d.a, d.b, d.c); });
}
BENCHMARK(BM_loom_elementwise_add)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_peer_elementwise_add(benchmark::State& state) {
  Data& d = data();
  timed(state, peer_seconds, [&] { peer_add(d.a.data(), d.b.data(), d.c.data(), kN); });
}
BENCHMARK(BM_peer_elementwise_add)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  if (loom_seconds > 0 && peer_seconds > 0) {
    const double loom_gbps = kBytesPerIteration / loom_seconds / 1e9,
                 peer_gbps = kBytesPerIteration / peer_seconds / 1e9;
    std::printf(
        "loom-bench elementwise_add n=%lld loom_threads=%d peer_threads=%d omp_wait_policy=%s loom_ms=%.3f "
        "peer_ms=%.3f loom_gbps=%.2f peer_gbps=%.2f ratio=%.3f\n",
        static_cast<long long>(kN), runtime::ThreadPool::global().num_threads(), peer_threads(),
        std::getenv("OMP_WAIT_POLICY") ? std::getenv("OMP_WAIT_POLICY") : "default", loom_seconds * 1e3,
        peer_seconds * 1e3, loom_gbps, peer_gbps, loom_gbps / peer_gbps);
  }
  return 0;
}
