// GEMM: loom::lib::gemm against OpenBLAS's cblas_sgemm/dgemm in the same process, square and skinny
// shapes, 1 and all threads: `loom-bench gemm ... peak_frac=<loom/FMA peak> ratio=<loom/openblas>`.
// The full set takes minutes; with LOOM_BENCH_QUICK=1 (ctest's smoke run) only the small sizes run.
#include <loom/lib/gemm.hpp>
#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "fma_peak.hpp"

using namespace loom;

namespace {

struct Shape {
  int64_t m, n, k;
  bool f64;
  int threads;
  auto key() const { return std::make_tuple(m, n, k, f64, threads); }
  bool operator<(const Shape& o) const { return key() < o.key(); }
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

struct Result {
  double loom_seconds = 0, openblas_seconds = 0;
  double fma_peak_gflops = 0;   // float32, with the shape's thread count, measured after Loom's run
  double loom_cpu_seconds = 0;  // the calling thread's CPU time (all of the work with one thread)
};
std::map<Shape, Result>& results() {
  static std::map<Shape, Result> r;
  return r;
}

int all_threads() { return runtime::ThreadPool::global().pool_threads(); }

void set_threads(int n) {
  runtime::ThreadPool::global().set_num_threads(n);
  openblas_set_num_threads(n);
}

template <typename T>
struct Operands {
  Buffer<T> a, b, c, reference;
  Operands(int64_t m, int64_t n, int64_t k) : a({m, k}), b({k, n}), c({m, n}), reference({m, n}) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> dist(-1.0, 1.0);
    for (int64_t i = 0; i < a.num_elements(); ++i) a.at_flat(i) = static_cast<T>(dist(rng));
    for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = static_cast<T>(dist(rng));
  }
};

template <typename T>
void blas(const Operands<T>& d, const Shape& s, Buffer<T>& c) {
  const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  if constexpr (sizeof(T) == 4)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, d.a.data(), k, d.b.data(), n, 0.0f,
                c.data(), n);
  else
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, d.a.data(), k, d.b.data(), n, 0.0,
                c.data(), n);
}

/// The CPU time of the calling thread: with one thread the whole product runs on it, and the time
/// other processes take the core from it is not counted.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// The best seconds per call over the benchmark's iterations (after one warm-up call): on a shared
/// machine other processes only ever slow a call down, for both sides alike. `cpu_seconds`: the
/// best of the calling thread's CPU time per call.
template <typename Run>
double timed(benchmark::State& state, Run&& run, double* cpu_seconds = nullptr) {
  using Clock = std::chrono::steady_clock;
  run();
  std::vector<double> times, cpu_times;
  for (auto _ : state) {
    const double cpu_start = thread_cpu_seconds();
    Clock::time_point start = Clock::now();
    run();
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    cpu_times.push_back(thread_cpu_seconds() - cpu_start);
    times.push_back(t);
    state.SetIterationTime(t);
  }
  if (cpu_seconds)
    *cpu_seconds = cpu_times.empty() ? 0 : *std::min_element(cpu_times.begin(), cpu_times.end());
  return times.empty() ? 0 : *std::min_element(times.begin(), times.end());
}

template <typename T>
void run_shape(benchmark::State& state, Shape s, bool loom_side) {
  set_threads(s.threads);
  static std::map<std::tuple<int64_t, int64_t, int64_t>, std::shared_ptr<Operands<T>>> cache;
  auto& slot = cache[{s.m, s.n, s.k}];
  if (!slot) {
    cache.clear();  // one shape's operands at a time: 4096^2 matrices are 64 MB each
    slot = std::make_shared<Operands<T>>(s.m, s.n, s.k);
    blas(*slot, s, slot->reference);
  }
  Operands<T>& d = *slot;
  double seconds = 0;
  if (loom_side) {
    lib::GemmProblem p;
    p.m = s.m;
    p.n = s.n;
    p.k = s.k;
    p.dtype = s.f64 ? f64 : f32;
    lib::Gemm g = lib::gemm(p);  // sized for the current thread count
    Kernel f = build(g.schedule, g.args(), Target::cpu(), "gemm");
    seconds = timed(
        state, [&] { f(d.a, d.b, d.c); }, &results()[s].loom_cpu_seconds);
    double error = 0;
    for (int64_t i = 0; i < d.c.num_elements(); ++i)
      error = std::max(error, std::abs(static_cast<double>(d.c.at_flat(i)) - d.reference.at_flat(i)));
    const double tolerance = (s.f64 ? 1e-10 : 1e-4) * std::sqrt(static_cast<double>(s.k));
    if (error > tolerance) state.SkipWithError(cat("loom differs from OpenBLAS by ", error).c_str());
    state.SetLabel(g.config.str());
    results()[s].loom_seconds = seconds;
    // The peak now, with the same threads: a share of it is comparable across a loaded machine's
    // moods in a way that GFLOP/s alone is not.
    results()[s].fma_peak_gflops = loom_bench::measure_fma_peak(s.threads, 100);
  } else {
    seconds = timed(state, [&] { blas(d, s, d.c); });
    results()[s].openblas_seconds = seconds;
  }
  state.counters["GFLOP/s"] =
      benchmark::Counter(s.flops() * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

std::vector<Shape> shapes() {
  const bool quick = std::getenv("LOOM_BENCH_QUICK") && std::string(std::getenv("LOOM_BENCH_QUICK")) != "0";
  std::vector<std::array<int64_t, 3>> mnk;
  if (quick) {
    mnk = {{256, 256, 256}, {512, 512, 512}, {1, 512, 512}, {512, 64, 512}};
  } else {
    mnk = {{256, 256, 256}, {512, 512, 512},  {1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096},
           {1, 4096, 4096}, {64, 4096, 4096}, {4096, 64, 4096},   {4096, 4096, 64}};
  }
  std::vector<int> thread_counts = {1};
  if (all_threads() > 1) thread_counts.push_back(all_threads());
  std::vector<Shape> out;
  for (int t : thread_counts)
    for (auto [m, n, k] : mnk) {
      out.push_back({m, n, k, false, t});
      // Double precision at the sizes the targets name (and the smallest in a quick run).
      if ((m == n && n == k && (m == 1024 || m == 2048)) || (quick && m == 256))
        out.push_back({m, n, k, true, t});
    }
  return out;
}

void register_all() {
  for (const Shape& s : shapes()) {
    const std::string name =
        cat("gemm/", s.f64 ? "f64" : "f32", "/m=", s.m, "/n=", s.n, "/k=", s.k, "/threads=", s.threads);
    for (bool loom_side : {true, false}) {
      auto fn = [s, loom_side](benchmark::State& state) {
        if (s.f64)
          run_shape<double>(state, s, loom_side);
        else
          run_shape<float>(state, s, loom_side);
      };
      benchmark::RegisterBenchmark((std::string(loom_side ? "loom_" : "openblas_") + name).c_str(), fn)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (const auto& [s, r] : results()) {
    if (r.loom_seconds <= 0 || r.openblas_seconds <= 0) continue;
    const double loom_gflops = s.flops() / r.loom_seconds / 1e9,
                 blas_gflops = s.flops() / r.openblas_seconds / 1e9;
    // A double-precision FMA does half the lanes' work.
    const double peak = r.fma_peak_gflops / (s.f64 ? 2.0 : 1.0);
    // With one thread, also the share of the peak in CPU time: what the kernel does while it has
    // the core, which a loaded machine does not change much (wall-clock shares fall with the load).
    std::string cpu_frac;
    if (s.threads == 1 && r.loom_cpu_seconds > 0)
      cpu_frac =
          cat(" cpu_peak_frac=", std::to_string(s.flops() / r.loom_cpu_seconds / 1e9 / peak).substr(0, 5));
    std::printf(
        "loom-bench gemm m=%lld n=%lld k=%lld dtype=%s threads=%d loom_gflops=%.2f openblas_gflops=%.2f "
        "fma_peak_gflops=%.2f peak_frac=%.3f%s ratio=%.3f\n",
        static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
        s.f64 ? "float64" : "float32", s.threads, loom_gflops, blas_gflops, peak, loom_gflops / peak,
        cpu_frac.c_str(), loom_gflops / blas_gflops);
  }
  return 0;
}
