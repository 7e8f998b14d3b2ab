// lib::gemm with tuned blocking against the cache model's blocking, in the same run: tunes each
// size with lib::tune_gemm (a throw-away database in /tmp, not the user's), then times both
// configurations in alternating rounds and prints
//   loom-bench gemm_tuned m= n= k= dtype=float32 threads= trials= measured= invalid= wrong=
//     peer=loom-cache-model-blocking peer_ms= loom_ms= peer_gflops= loom_gflops= best={...} ratio=<peer/loom>
// LOOM_BENCH_QUICK=1 (the ctest smoke run): 128^3 and 4 trials; LOOM_TUNE_TRIALS: trials per size
// (default 24).
#include <loom/lib/gemm_tuning.hpp>
#include <loom/loom.hpp>
#include <loom/runtime/thread_pool.hpp>

#include <unistd.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

using namespace loom;

int main() {
  const bool quick = std::getenv("LOOM_BENCH_QUICK") != nullptr;
  const char* trials_env = std::getenv("LOOM_TUNE_TRIALS");
  const int trials = trials_env && std::atoi(trials_env) > 0 ? std::atoi(trials_env) : quick ? 4 : 24;
  const std::string db = (std::filesystem::temp_directory_path() /
                          ("loom-bench-gemm-tune-" + std::to_string(::getpid()) + ".jsonl"))
                             .string();
  std::vector<int64_t> sizes = quick ? std::vector<int64_t>{128} : std::vector<int64_t>{512, 1024, 2048};
  for (int64_t n : sizes) {
    lib::GemmProblem p;
    p.m = p.n = p.k = n;
    const lib::GemmConfig model = lib::model_gemm_config(p);
    tune::Options o;
    o.database = db;
    o.max_trials = trials;
    o.repeats = quick ? 1 : 5;
    o.min_sample_ms = quick ? 0.01 : 30;
    tune::Result r = lib::tune_gemm(p, o);
    tune::Config best_cfg(r.best);
    const lib::GemmConfig tuned = lib::gemm_config_knobs(best_cfg, model, p);
    lib::Gemm gm = lib::gemm(p, model), gt = lib::gemm(p, tuned);
    Kernel km = build(gm.schedule, gm.args(), Target::cpu(), "gemm_model");
    Kernel kt = build(gt.schedule, gt.args(), Target::cpu(), "gemm_tuned");
    Buffer<float> a({n, n}), b({n, n}), c({n, n});
    for (int64_t i = 0; i < a.num_elements(); ++i) {
      a.at_flat(i) = static_cast<float>(i % 17) * 0.01f;
      b.at_flat(i) = static_cast<float>(i % 13) * 0.02f;
    }
    // Alternating rounds, best of each: both see the same machine state.
    double model_ms = 1e30, tuned_ms = 1e30;
    for (int round = 0; round < (quick ? 1 : 5); ++round) {
      model_ms = std::min(model_ms, tune::best_ms([&] { km(a, b, c); }, 3));
      tuned_ms = std::min(tuned_ms, tune::best_ms([&] { kt(a, b, c); }, 3));
    }
    const std::string best = tune::knobs_text(r.best);
    const double flop = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
    std::printf(
        "loom-bench gemm_tuned m=%lld n=%lld k=%lld dtype=float32 threads=%d trials=%zu measured=%d "
        "invalid=%d "
        "wrong=%d peer=loom-cache-model-blocking peer_ms=%.3f loom_ms=%.3f peer_gflops=%.1f loom_gflops=%.1f "
        "best={%s} ratio=%.3f\n",
        static_cast<long long>(n), static_cast<long long>(n), static_cast<long long>(n),
        runtime::ThreadPool::global().num_threads(), r.trials.size(), r.measured, r.invalid, r.wrong,
        model_ms, tuned_ms, flop / model_ms / 1e6, flop / tuned_ms / 1e6, best.c_str(), model_ms / tuned_ms);
  }
  std::filesystem::remove(db);
}
