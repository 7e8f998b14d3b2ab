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

}  // namespace
