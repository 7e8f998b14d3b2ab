// The load-balance model of the Stream-K paper over its shape range: m, n, k log-sampled in
// [128, 8192], 128x128x32 tiles, 132 SMs (an H100). Prints the mean and worst efficiency of
// data-parallel, split-K and Stream-K, and times the planner.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include <loom/lib/streamk_decomposition.hpp>

using namespace loom::lib;

namespace {

std::vector<GemmShape> paper_shapes() {
  // 8 log-spaced sizes per dimension: 128 * 2^(6i/7), i = 0..7, so 128 ... 8192.
  std::vector<int64_t> sizes;
  for (int i = 0; i < 8; ++i)
    sizes.push_back(static_cast<int64_t>(std::llround(128.0 * std::pow(2.0, 6.0 * i / 7.0))));
  std::vector<GemmShape> shapes;
  for (int64_t m : sizes)
    for (int64_t n : sizes)
      for (int64_t k : sizes) shapes.push_back({m, n, k});
  return shapes;
}

void BM_streamk_balance(benchmark::State& state) {
  const std::vector<GemmShape> shapes = paper_shapes();
  const int sms = 132;
  const GemmTile tile{128, 128, 32};
  struct Stats {
    double sum = 0, min = 1;
    void add(double e) {
      sum += e;
      min = std::min(min, e);
    }
  };
  Stats dp, split, sk, hybrid;
  for (auto _ : state) {
    dp = split = sk = hybrid = Stats();
    for (const GemmShape& s : shapes) {
      dp.add(plan_decomposition(Decomposition::DataParallel, s, tile, sms).balance_efficiency());
      split.add(plan_decomposition(Decomposition::SplitK, s, tile, sms).balance_efficiency());
      sk.add(plan_decomposition(Decomposition::StreamK, s, tile, sms).balance_efficiency());
      hybrid.add(plan_decomposition(Decomposition::StreamKHybrid, s, tile, sms).balance_efficiency());
    }
  }
  const double n = static_cast<double>(shapes.size());
  state.counters["shapes"] = n;
  std::printf(
      "loom-bench streamk_balance shapes=%zu sms=%d tile=128x128x32 dp_mean=%.4f sk_mean=%.4f dp_min=%.4f "
      "sk_min=%.4f splitk_mean=%.4f splitk_min=%.4f hybrid_mean=%.4f hybrid_min=%.4f\n",
      shapes.size(), sms, dp.sum / n, sk.sum / n, dp.min, sk.min, split.sum / n, split.min, hybrid.sum / n,
      hybrid.min);
}
BENCHMARK(BM_streamk_balance)->Iterations(1)->Unit(benchmark::kMillisecond);

// The critical path of the decompositions (DecompositionPlan::critical_path: every block resident,
// one MAC-loop iteration = one time unit, a fixup waits for the partials it adds; a model, not a
// timing) against the ideal, the busiest block's iterations: the shapes of the Stream-K review
// (64x64x16 tiles but for the 128x128x32 one), then the paper's 512 shapes, where the hybrid must
// also be no slower than data-parallel.
void BM_streamk_critical_path(benchmark::State& state) {
  struct Case {
    GemmShape shape;
    GemmTile tile;
  };
  const int sms = 132;
  const std::vector<Case> review = {{{2048, 2048, 2048}, {64, 64, 16}},
                                    {{1000, 1000, 1000}, {64, 64, 16}},
                                    {{1024, 1024, 8192}, {64, 64, 16}},
                                    {{4096, 11008, 4096}, {128, 128, 32}},
                                    {{623, 315, 1000}, {64, 64, 16}}};
  for (auto _ : state) {
    for (const Case& c : review)
      for (Decomposition d : {Decomposition::StreamK, Decomposition::StreamKHybrid, Decomposition::DataParallel}) {
        const DecompositionPlan plan = plan_decomposition(d, c.shape, c.tile, sms);
        const int64_t path = plan.critical_path(), ideal = plan.busiest();
        std::printf(
            "loom-bench streamk_critical_path m=%lld n=%lld k=%lld tile=%lldx%lldx%lld sms=%d decomposition=%s "
            "model=critical_path critical_path=%lld ideal=%lld ratio=%.3f\n",
            static_cast<long long>(c.shape.m), static_cast<long long>(c.shape.n), static_cast<long long>(c.shape.k),
            static_cast<long long>(c.tile.bm), static_cast<long long>(c.tile.bn), static_cast<long long>(c.tile.bk),
            sms, decomposition_name(d), static_cast<long long>(path), static_cast<long long>(ideal),
            static_cast<double>(path) / static_cast<double>(ideal));
      }
    int hybrid_not_slower = 0, within_110 = 0;
    const std::vector<GemmShape> shapes = paper_shapes();
    for (const GemmShape& s : shapes) {
      const GemmTile tile{128, 128, 32};
      const DecompositionPlan hybrid = plan_decomposition(Decomposition::StreamKHybrid, s, tile, sms);
      const DecompositionPlan dp = plan_decomposition(Decomposition::DataParallel, s, tile, sms);
      hybrid_not_slower += hybrid.critical_path() <= dp.critical_path();
      within_110 += static_cast<double>(hybrid.critical_path()) <= 1.10 * static_cast<double>(hybrid.busiest());
    }
    std::printf(
        "loom-bench streamk_critical_path shapes=%zu sms=%d tile=128x128x32 model=critical_path "
        "hybrid_within_1.10x_ideal=%d hybrid_not_slower_than_dp=%d ratio=%.3f\n",
        shapes.size(), sms, within_110, hybrid_not_slower,
        static_cast<double>(hybrid_not_slower) / static_cast<double>(shapes.size()));
  }
}
BENCHMARK(BM_streamk_critical_path)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace
