// GEMM: loom::lib::gemm against every BLAS it can load in the same process (Debian's OpenBLAS
// always; MKL and the newest OpenBLAS when scripts/bench-peers.sh installed them: blas_peers.hpp),
// square and skinny shapes, 1 and all threads. One line per shape and peer:
//   loom-bench gemm m= n= k= dtype= threads= loom_gflops= peer=<library>-<version>:<kernel>
//     peer_gflops= fma_peak_gflops= peak_frac=<loom/FMA peak> [cpu_peak_frac=] ratio=<loom/peer>
// The full set takes minutes; with LOOM_BENCH_QUICK=1 (ctest's smoke run) only the small sizes run.
#include <loom/lib/gemm.hpp>
#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>

#include <benchmark/benchmark.h>

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
#include <thread>
#include <tuple>
#include <vector>

#include "blas_peers.hpp"
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
  double loom_seconds = 0;
  std::map<std::string, double> peer_seconds;  // by BlasPeer::label()
  double fma_peak_gflops = 0;   // float32, with the shape's thread count, measured after Loom's run
  double loom_cpu_seconds = 0;  // the calling thread's CPU time (all of the work with one thread)
};
std::map<Shape, Result>& results() {
  static std::map<Shape, Result> r;
  return r;
}

const std::vector<loom_bench::BlasPeer>& peers() {
  static const std::vector<loom_bench::BlasPeer> p =
      loom_bench::load_blas_peers(loom_bench::blas_peers_venv(LOOM_BENCH_PEERS_VENV));
  return p;
}

int all_threads() { return runtime::ThreadPool::global().pool_threads(); }

void set_threads(int n) {
  runtime::ThreadPool::global().set_num_threads(n);
  for (const loom_bench::BlasPeer& p : peers()) p.set_threads(n);
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
void blas(const loom_bench::BlasPeer& peer, const Operands<T>& d, const Shape& s, Buffer<T>& c) {
  peer.gemm(static_cast<int>(s.m), static_cast<int>(s.n), static_cast<int>(s.k), d.a.data(), d.b.data(),
            c.data());
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

/// Times Loom (peer == nullptr) or one peer on shape s.
template <typename T>
void run_shape(benchmark::State& state, Shape s, const loom_bench::BlasPeer* peer) {
  set_threads(s.threads);
  static std::map<std::tuple<int64_t, int64_t, int64_t>, std::shared_ptr<Operands<T>>> cache;
  auto& slot = cache[{s.m, s.n, s.k}];
  if (!slot) {
    cache.clear();  // one shape's operands at a time: 4096^2 matrices are 64 MB each
    slot = std::make_shared<Operands<T>>(s.m, s.n, s.k);
    blas(peers().front(), *slot, s, slot->reference);
  }
  Operands<T>& d = *slot;
  // Idle BLAS threads spin a while before they sleep (OpenBLAS about 0.1 s, MKL's OpenMP 0.2 s):
  // let the previous library's threads fall asleep before timing the next one.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  double seconds = 0;
  if (!peer) {
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
    if (error > tolerance) state.SkipWithError(cat("loom differs from Debian's OpenBLAS by ", error).c_str());
    state.SetLabel(g.config.str());
    results()[s].loom_seconds = seconds;
    // The peak now, with the same threads: a share of it is comparable across a loaded machine's
    // moods in a way that GFLOP/s alone is not.
    results()[s].fma_peak_gflops = loom_bench::measure_fma_peak(s.threads, 100);
  } else {
    seconds = timed(state, [&] { blas(*peer, d, s, d.c); });
    results()[s].peer_seconds[peer->label()] = seconds;
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
    std::vector<const loom_bench::BlasPeer*> sides{nullptr};
    for (const loom_bench::BlasPeer& p : peers()) sides.push_back(&p);
    for (const loom_bench::BlasPeer* side : sides) {
      auto fn = [s, side](benchmark::State& state) {
        if (s.f64)
          run_shape<double>(state, s, side);
        else
          run_shape<float>(state, s, side);
      };
      benchmark::RegisterBenchmark(cat(side ? side->name : "loom", "_", name).c_str(), fn)
          ->UseManualTime()
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string names;
  for (const loom_bench::BlasPeer& p : peers()) names += " " + p.label();
  std::printf("bench_gemm peers:%s%s\n", names.c_str(),
              peers().size() == 1 ? " (bash scripts/bench-peers.sh adds MKL and the newest OpenBLAS)" : "");
  for (const loom_bench::BlasPeer& p : peers())
    if (const std::string note = loom_bench::weak_kernel_note(p); !note.empty())
      std::printf("bench_gemm: %s\n", note.c_str());
  register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (const auto& [s, r] : results())
    for (const auto& [peer, peer_seconds] : r.peer_seconds) {
      if (r.loom_seconds <= 0 || peer_seconds <= 0) continue;
      const double loom_gflops = s.flops() / r.loom_seconds / 1e9,
                   peer_gflops = s.flops() / peer_seconds / 1e9;
      // A double-precision FMA does half the lanes' work.
      const double peak = r.fma_peak_gflops / (s.f64 ? 2.0 : 1.0);
      // With one thread, also the share of the peak in CPU time: what the kernel does while it has
      // the core, which a loaded machine does not change much (wall-clock shares fall with the load).
      std::string cpu_frac;
      if (s.threads == 1 && r.loom_cpu_seconds > 0)
        cpu_frac =
            cat(" cpu_peak_frac=", std::to_string(s.flops() / r.loom_cpu_seconds / 1e9 / peak).substr(0, 5));
      std::printf(
          "loom-bench gemm m=%lld n=%lld k=%lld dtype=%s threads=%d loom_gflops=%.2f peer=%s "
          "peer_gflops=%.2f "
          "fma_peak_gflops=%.2f peak_frac=%.3f%s ratio=%.3f\n",
          static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
          s.f64 ? "float64" : "float32", s.threads, loom_gflops, peer.c_str(), peer_gflops, peak,
          loom_gflops / peak, cpu_frac.c_str(), loom_gflops / peer_gflops);
    }
  return 0;
}
