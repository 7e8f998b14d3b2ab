// The Stream-K GEMM kernel of lib on the timed GPU simulator: for each shape, modelled device and
// decomposition, the simulated cycles of the GEMM launch (its makespan through block dispatch,
// barriers and grid-flag waits) against the ideal, the busiest block's own busy cycles. Cycles are
// the simulator's clock model (runtime/sim_clock_model.hpp), not a GPU's time.
//
// The shapes are those of bench_streamk_balance's critical-path review, scaled down: the simulator
// runs every multiply-add of every thread in an interpreter (a few million per second), so 2048^3
// would take hours. Each keeps roughly its original's aspect, 8 to 64 times smaller per dimension,
// with 16x16x8 tiles: they simulate in seconds, but have far fewer tiles than the originals (64 for
// 2048^3's 1024 of 64x64), fewer than the 132 (108) SMs, the regime where Stream-K splits every
// tile. The ratios are this regime's, not the original shapes'. With LOOM_BENCH_QUICK=1 (the ctest
// smoke run) only the first two shapes run, on the H100 only.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <loom/lib/streamk_gemm.hpp>
#include <loom/loom.hpp>

using namespace loom;

namespace {

struct Shape {
  int64_t m, n, k;
};

/// lib's Stream-K GEMM of shape `s` with decomposition `d`, 16x16x8 tiles and 2x2 outputs per
/// thread, and a persistent grid of one block per SM of `device`.
lib::StreamKGemm simulated_gemm(const Shape& s, lib::Decomposition d, const GpuDeviceSpec& device) {
  lib::StreamKConfig cfg;
  cfg.tile = lib::GemmTile{16, 16, 8};
  cfg.thread_m = cfg.thread_n = 2;
  cfg.sms = device.sms;
  cfg.blocks_per_sm = 1;
  cfg.decomposition = d;
  return lib::streamk_gemm(s.m, s.n, s.k, f32, cfg);
}

void BM_streamk_critical_path(benchmark::State& state) {
  // Review shapes (scaled; the original in the comment).
  std::vector<Shape> shapes = {{128, 128, 128},  // 2048 x 2048 x 2048
                               {125, 125, 125},  // 1000 x 1000 x 1000
                               {64, 64, 512},    // 1024 x 1024 x 8192
                               {128, 344, 64},   // 4096 x 11008 x 4096
                               {78, 40, 125}};   // 623 x 315 x 1000
  std::vector<GpuDeviceSpec> devices = {GpuDeviceSpec::h100(), GpuDeviceSpec::a100()};
  const char* quick = std::getenv("LOOM_BENCH_QUICK");
  if (quick && std::string(quick) == "1") {
    shapes.resize(2);
    devices.resize(1);
  }
  const lib::Decomposition decompositions[] = {lib::Decomposition::StreamK, lib::Decomposition::StreamKHybrid,
                                               lib::Decomposition::DataParallel};
  for (auto _ : state) {
    for (const Shape& s : shapes) {
      Buffer<float> a({s.m, s.k}), b({s.k, s.n}), c({s.m, s.n});
      for (int64_t i = 0; i < a.num_elements(); ++i) a.at_flat(i) = static_cast<float>(i % 7) - 3.0f;
      for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = static_cast<float>(i % 5) - 2.0f;
      for (const GpuDeviceSpec& device : devices) {
        for (lib::Decomposition d : decompositions) {
          const lib::StreamKGemm g = simulated_gemm(s, d, device);
          SimOptions options;
          options.device = device;
          const SimReport report = simulate(g.func, {a, b, c}, options);
          const SimLaunch& gemm = report.launches.back();  // after the kernel that clears the flags
          std::printf(
              "loom-bench streamk_critical_path device=%s m=%lld n=%lld k=%lld tile=16x16x8 blocks=%lld "
              "blocks_per_sm=%d decomposition=%s simulated_cycles=%lld ideal_cycles=%lld "
              "flag_wait_cycles=%lld "
              "ratio=%.3f\n",
              device.name.c_str(), static_cast<long long>(s.m), static_cast<long long>(s.n),
              static_cast<long long>(s.k), static_cast<long long>(gemm.grid.count()), gemm.blocks_per_sm,
              lib::decomposition_name(d), static_cast<long long>(gemm.simulated_cycles),
              static_cast<long long>(gemm.busiest_block_cycles),
              static_cast<long long>(gemm.flag_wait_cycles),
              static_cast<double>(gemm.simulated_cycles) / static_cast<double>(gemm.busiest_block_cycles));
          std::fflush(stdout);
        }
      }
    }
  }
}
BENCHMARK(BM_streamk_critical_path)->Iterations(1)->Unit(benchmark::kMillisecond);

/// The 512 shapes of bench_streamk_balance scaled down 32 times per dimension (m, n, k each one of
/// 4 * 2^(6i/7), i = 0..7: 4 ... 256) on the timed simulator, H100 and A100 descriptions: how often
/// the hybrid's launch is no slower than data-parallel's, and within 1.10x of its busiest block;
/// on how many it streams tiles (else it chose data-parallel) and its time over data-parallel's.
/// Scaled shapes have 1 to 256 tiles, fewer than SMs on most: the regime where Stream-K splits
/// tiles. Minutes of simulation: skipped in the ctest smoke run (LOOM_BENCH_QUICK=1).
void BM_streamk_shape_sweep(benchmark::State& state) {
  const char* quick = std::getenv("LOOM_BENCH_QUICK");
  if (quick && std::string(quick) == "1") {
    state.SkipWithError("skipped with LOOM_BENCH_QUICK=1 (minutes of simulation)");
    for (auto _ : state) {
    }
    return;
  }
  std::vector<int64_t> sizes;
  for (int i = 0; i < 8; ++i) sizes.push_back(std::llround(4.0 * std::pow(2.0, 6.0 * i / 7.0)));
  for (auto _ : state) {
    for (const GpuDeviceSpec& device : {GpuDeviceSpec::h100(), GpuDeviceSpec::a100()}) {
      int shapes = 0, not_slower = 0, within = 0, streamed = 0;
      double worst_vs_dp = 0, worst_vs_ideal = 0, best_vs_dp = 1, log_vs_dp = 0;
      SimOptions options;
      options.device = device;
      for (int64_t m : sizes)
        for (int64_t n : sizes)
          for (int64_t k : sizes) {
            const Shape s{m, n, k};
            Buffer<float> a({m, k}), b({k, n}), c({m, n});
            a.fill(1.0f);
            b.fill(1.0f);
            const lib::StreamKGemm hybrid_gemm = simulated_gemm(s, lib::Decomposition::StreamKHybrid, device);
            streamed += hybrid_gemm.plan.stream_k_tiles > 0;
            const SimLaunch hybrid = simulate(hybrid_gemm.func, {a, b, c}, options).launches.back();
            const SimLaunch dp =
                simulate(simulated_gemm(s, lib::Decomposition::DataParallel, device).func, {a, b, c}, options)
                    .launches.back();
            ++shapes;
            const double vs_dp =
                static_cast<double>(hybrid.simulated_cycles) / static_cast<double>(dp.simulated_cycles);
            const double vs_ideal = static_cast<double>(hybrid.simulated_cycles) /
                                    static_cast<double>(hybrid.busiest_block_cycles);
            not_slower += vs_dp <= 1.0;
            within += vs_ideal <= 1.10;
            worst_vs_dp = std::max(worst_vs_dp, vs_dp);
            best_vs_dp = std::min(best_vs_dp, vs_dp);
            log_vs_dp += std::log(vs_dp);
            worst_vs_ideal = std::max(worst_vs_ideal, vs_ideal);
          }
      std::printf(
          "loom-bench streamk_shape_sweep device=%s shapes=%d scale=1/32 tile=16x16x8 model=timed_simulator "
          "hybrid_streams=%d hybrid_not_slower_than_dp=%d hybrid_within_1.10x_ideal=%d "
          "worst_hybrid_vs_dp=%.3f "
          "best_hybrid_vs_dp=%.3f geomean_hybrid_vs_dp=%.3f worst_hybrid_vs_ideal=%.3f ratio=%.3f\n",
          device.name.c_str(), shapes, streamed, not_slower, within, worst_vs_dp, best_vs_dp,
          std::exp(log_vs_dp / shapes), worst_vs_ideal, static_cast<double>(not_slower) / shapes);
      std::fflush(stdout);
    }
  }
}
BENCHMARK(BM_streamk_shape_sweep)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
