// GEMM + bias + ReLU: lib::gemm with the epilogue fused (GemmProblem::epilogue) against lib::gemm
// alone (what the epilogue costs) and against the fastest BLAS it can load (blas_peers.hpp) followed
// by a bias + ReLU loop over C (what a user without fusion writes). f32, row-major, 1 and all
// threads. Without transparent huge pages 4096^3 has K in several blocks, where the product goes through
// a temporary before the epilogue (elsewhere the register tile is stored through it). One line per shape:
//   loom-bench gemm_epilogue m= n= k= dtype=float32 threads= epilogue=bias_relu plain_ms= fused_ms=
//     overhead=<fused/plain> peer=<library>-<version>:<kernel> peer_unfused_ms= ratio=<peer/fused>
// Times are the best of several calls. LOOM_BENCH_QUICK=1 (ctest's smoke run): small sizes only.
#include <loom/lib/gemm.hpp>
#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "blas_peers.hpp"

using namespace loom;

namespace {

/// The best seconds of `calls` calls after a warm-up; at least one timed call.
template <typename F>
double best_seconds(F&& call, int calls) {
  using Clock = std::chrono::steady_clock;
  call();
  double best = 1e30;
  for (int i = 0; i < calls; ++i) {
    const Clock::time_point start = Clock::now();
    call();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

/// The best seconds of each of two calls, alternated `calls` times after a warm-up of each, so that
/// the machine's slow spells fall on both.
template <typename F, typename G>
std::array<double, 2> best_seconds_alternating(F&& first, G&& second, int calls) {
  using Clock = std::chrono::steady_clock;
  first();
  second();
  std::array<double, 2> best{1e30, 1e30};
  for (int i = 0; i < calls; ++i) {
    Clock::time_point start = Clock::now();
    first();
    best[0] = std::min(best[0], std::chrono::duration<double>(Clock::now() - start).count());
    start = Clock::now();
    second();
    best[1] = std::min(best[1], std::chrono::duration<double>(Clock::now() - start).count());
  }
  return best;
}

void fill(Buffer<float>& b, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = dist(rng);
}

}  // namespace

int main() {
  const bool quick = std::getenv("LOOM_BENCH_QUICK") && std::string(std::getenv("LOOM_BENCH_QUICK")) != "0";
  const std::vector<loom_bench::BlasPeer> peers =
      loom_bench::load_blas_peers(loom_bench::blas_peers_venv(LOOM_BENCH_PEERS_VENV));
  for (const loom_bench::BlasPeer& p : peers)
    if (const std::string note = loom_bench::weak_kernel_note(p); !note.empty())
      std::printf("bench_gemm_epilogue: %s\n", note.c_str());
  runtime::ThreadPool& pool = runtime::ThreadPool::global();
  std::vector<int> thread_counts{1};
  if (pool.pool_threads() > 1) thread_counts.push_back(pool.pool_threads());
  const std::vector<int64_t> sizes =
      quick ? std::vector<int64_t>{256, 512} : std::vector<int64_t>{512, 1024, 2048, 4096};
  for (int threads : thread_counts)
    for (int64_t size : sizes) {
      const int64_t m = size, n = size, k = size;
      pool.set_num_threads(threads);
      for (const loom_bench::BlasPeer& p : peers) p.set_threads(threads);
      const int calls = quick ? 3 : std::max(3, static_cast<int>(4e9 / (2.0 * m * n * k)));
      Buffer<float> a{m, k}, b{k, n}, bias{n}, c{m, n}, expected{m, n};
      fill(a, 1);
      fill(b, 2);
      fill(bias, 3);

      lib::GemmProblem problem;
      problem.m = m, problem.n = n, problem.k = k;
      lib::Gemm plain = lib::gemm(problem);
      Kernel plain_kernel = build(plain.schedule, plain.args(), Target::cpu(), "gemm");
      Tensor bias_tensor = placeholder({static_cast<int>(n)}, f32, "bias");
      problem.epilogue = lib::bias_activation(bias_tensor, "relu");
      lib::Gemm fused = lib::gemm(problem);
      Kernel fused_kernel = build(fused.schedule, fused.args(), Target::cpu(), "gemm_bias_relu");

      std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the peers' spinning threads sleep
      const auto [plain_s, fused_s] = best_seconds_alternating([&] { plain_kernel(a, b, c); },
                                                               [&] { fused_kernel(a, b, bias, c); }, calls);
      // Each peer: its sgemm, then bias + ReLU over C on the calling thread's loop.
      double peer_s = 1e30;
      std::string peer_label;
      for (const loom_bench::BlasPeer& p : peers) {
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        const double s = best_seconds(
            [&] {
              p.gemm(static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), a.data(), b.data(),
                     expected.data());
              float* out = expected.data();
              const float* bv = bias.data();
              for (int64_t i = 0; i < m; ++i)
                for (int64_t j = 0; j < n; ++j) out[i * n + j] = std::max(out[i * n + j] + bv[j], 0.0f);
            },
            calls);
        if (s < peer_s) peer_s = s, peer_label = p.label();
      }
      double error = 0;
      for (int64_t i = 0; i < c.num_elements(); ++i)
        error = std::max(error, static_cast<double>(std::abs(c.at_flat(i) - expected.at_flat(i))));
      if (error > 1e-4 * std::sqrt(static_cast<double>(k))) {
        std::fprintf(stderr, "gemm_epilogue: %lldx%lldx%lld differs from the peer by %g\n",
                     static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), error);
        return 1;
      }
      std::printf(
          "loom-bench gemm_epilogue m=%lld n=%lld k=%lld dtype=float32 threads=%d epilogue=bias_relu "
          "plain_ms=%.3f fused_ms=%.3f overhead=%.3f peer=%s peer_unfused_ms=%.3f ratio=%.3f\n",
          static_cast<long long>(m), static_cast<long long>(n), static_cast<long long>(k), threads,
          plain_s * 1e3, fused_s * 1e3, fused_s / plain_s, peer_label.c_str(), peer_s * 1e3,
          peer_s / fused_s);
      std::fflush(stdout);
    }
  return 0;
}
