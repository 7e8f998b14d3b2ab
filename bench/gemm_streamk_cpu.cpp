// Stream-K on the CPU thread pool: lib::gemm with Decomposition::StreamK against the same tiles
// data-parallel, 2 threads, on shapes of 3, 5 and 7 output tiles (where data-parallel leaves a
// thread idle for part of the run). Prints `loom-bench gemm_streamk_cpu ... ratio=<streamk/dp>`.
#include <loom/lib/gemm.hpp>
#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace loom;

namespace {

// One output tile is bm x bn of C; a shape of `tiles` tiles is (tiles * bm) x bn.
constexpr int64_t kTileM = 256, kTileN = 512;

bool quick() {
  const char* q = std::getenv("LOOM_BENCH_QUICK");
  return q && std::string(q) != "0";
}

int64_t depth() { return quick() ? 512 : 2048; }

int bench_threads() { return std::min(2, runtime::ThreadPool::global().pool_threads()); }

struct Result {
  double streamk_seconds = 0, dp_seconds = 0;
};
std::map<int64_t, Result>& results() {
  static std::map<int64_t, Result> r;
  return r;
}

lib::GemmProblem problem_of(int64_t tiles) {
  lib::GemmProblem p;
  p.m = tiles * kTileM;
  p.n = kTileN;
  p.k = depth();
  return p;
}

lib::GemmConfig config_of(const lib::GemmProblem& p, lib::Decomposition d) {
  lib::GemmConfig c = lib::default_gemm_config(p.m, p.n, p.k, p.dtype, bench_threads());
  c.mc = kTileM;  // the data-parallel schedule runs one mc-row block per parallel iteration
  c.nc = kTileN;
  // K in blocks of the L2-sized kc (the default for a tile's rows alone): with K in one block, as
  // the default takes it for many rows, a tile is one MAC-loop iteration and Stream-K cannot split it.
  c.kc = lib::default_gemm_config(kTileM, p.n, p.k, p.dtype, 1).kc;
  c.decomposition = d;
  c.workers = bench_threads();
  return c;
}

/// The best seconds per call (after one warm-up call): other processes only slow a call down.
template <typename Run>
double timed(benchmark::State& state, Run&& run) {
  using Clock = std::chrono::steady_clock;
  run();
  double best = 1e30;
  for (auto _ : state) {
    Clock::time_point start = Clock::now();
    run();
    const double t = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::min(best, t);
    state.SetIterationTime(t);
  }
  return best;
}

struct Operands {
  Buffer<float> a, b, c, reference;
  explicit Operands(const lib::GemmProblem& p)
      : a({p.m, p.k}), b({p.k, p.n}), c({p.m, p.n}), reference({p.m, p.n}) {
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    for (int64_t i = 0; i < a.num_elements(); ++i) a.at_flat(i) = dist(rng);
    for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = dist(rng);
  }
};

void run_case(benchmark::State& state, int64_t tiles, bool stream_k) {
  runtime::ThreadPool::global().set_num_threads(bench_threads());
  static std::map<int64_t, std::unique_ptr<Operands>> operands;
  const lib::GemmProblem p = problem_of(tiles);
  auto& d = operands[tiles];
  const bool first = !d;
  if (first) d = std::make_unique<Operands>(p);
  lib::Gemm g =
      lib::gemm(p, config_of(p, stream_k ? lib::Decomposition::StreamK : lib::Decomposition::DataParallel));
  Kernel f = build(g.schedule, g.args(), Target::cpu(), stream_k ? "gemm_streamk" : "gemm_dp");
  const double seconds = timed(state, [&] { f(d->a, d->b, d->c); });
  // Whichever side runs first keeps its product; the other must agree with it.
  if (first) {
    for (int64_t i = 0; i < d->c.num_elements(); ++i) d->reference.at_flat(i) = d->c.at_flat(i);
  } else {
    double error = 0;
    for (int64_t i = 0; i < d->c.num_elements(); ++i)
      error = std::max(error, static_cast<double>(std::abs(d->c.at_flat(i) - d->reference.at_flat(i))));
    if (error > 1e-3) state.SkipWithError(cat("Stream-K and data-parallel differ by ", error).c_str());
  }
  (stream_k ? results()[tiles].streamk_seconds : results()[tiles].dp_seconds) = seconds;
  state.SetLabel(g.config.str());
  const double flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void register_all() {
  for (int64_t tiles : {3, 5, 7})
    for (bool stream_k : {false, true}) {
      const std::string name = cat(stream_k ? "streamk" : "dp", "/tiles=", tiles);
      benchmark::RegisterBenchmark(name.c_str(),
                                   [tiles, stream_k](benchmark::State& s) { run_case(s, tiles, stream_k); })
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
}

}  // namespace

int main(int argc, char** argv) {
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (const auto& [tiles, r] : results()) {
    if (r.streamk_seconds <= 0 || r.dp_seconds <= 0) continue;
    const lib::GemmProblem p = problem_of(tiles);
    const double flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k);
    const double sk = flops / r.streamk_seconds / 1e9, dp = flops / r.dp_seconds / 1e9;
    std::printf(
        "loom-bench gemm_streamk_cpu m=%lld n=%lld k=%lld tiles=%lld threads=%d streamk_gflops=%.2f "
        "dp_gflops=%.2f ratio=%.3f\n",
        static_cast<long long>(p.m), static_cast<long long>(p.n), static_cast<long long>(p.k),
        static_cast<long long>(tiles), bench_threads(), sk, dp, sk / dp);
  }
  return 0;
}
