// The Stream-K family of GEMM decompositions: every plan covers each MAC-loop iteration of
// each tile exactly once, and the balance model gives the values the paper's argument expects.
#include <loom/lib/streamk_decomposition.hpp>

#include <doctest/doctest.h>

#include <vector>

using namespace loom;
using namespace loom::lib;

namespace {
void check_covers_exactly_once(const DecompositionPlan& plan) {
  std::vector<int> seen(static_cast<size_t>(plan.total_iterations()), 0);
  for (const auto& worker : plan.workers)
    for (const WorkUnit& u : worker) {
      REQUIRE(u.k_begin < u.k_end);
      REQUIRE(u.k_end <= plan.iterations_per_tile);
      for (int64_t k = u.k_begin; k < u.k_end; ++k)
        ++seen[static_cast<size_t>(u.tile * plan.iterations_per_tile + k)];
    }
  for (int c : seen) CHECK(c == 1);
}
}  // namespace

TEST_CASE("every decomposition covers each iteration once, for many shapes and worker counts") {
  for (int64_t m : {1, 100, 384, 1000})
    for (int64_t n : {64, 300, 512})
      for (int64_t k : {32, 100, 4096})
        for (int workers : {1, 4, 7, 132})
          for (Decomposition d : {Decomposition::DataParallel, Decomposition::SplitK, Decomposition::StreamK,
                                  Decomposition::StreamKHybrid}) {
            CAPTURE(m);
            CAPTURE(n);
            CAPTURE(k);
            CAPTURE(workers);
            CAPTURE(decomposition_name(d));
            check_covers_exactly_once(plan_decomposition(d, {m, n, k}, {128, 128, 32}, workers));
          }
}

TEST_CASE("the balance model: one tile more than the workers halves data-parallel efficiency") {
  // 4 workers, 5 tiles of 8 iterations: DP runs two waves, the second with one tile.
  GemmShape shape{5 * 128, 128, 8 * 32};
  DecompositionPlan dp = plan_decomposition(Decomposition::DataParallel, shape, {}, 4);
  CHECK(dp.tiles() == 5);
  CHECK(dp.busiest() == 16);
  CHECK(dp.balance_efficiency() == doctest::Approx(40.0 / 64.0));
  DecompositionPlan sk = plan_decomposition(Decomposition::StreamK, shape, {}, 4);
  CHECK(sk.busiest() == 10);
  CHECK(sk.balance_efficiency() == doctest::Approx(1.0));
  CHECK(sk.split_tiles() > 0);
  DecompositionPlan hybrid = plan_decomposition(Decomposition::StreamKHybrid, shape, {}, 4);
  CHECK(hybrid.busiest() == 10);
  // An exact number of waves: every decomposition is balanced, and the hybrid is data-parallel.
  DecompositionPlan even = plan_decomposition(Decomposition::StreamKHybrid, {8 * 128, 128, 256}, {}, 4);
  CHECK(even.balance_efficiency() == doctest::Approx(1.0));
  CHECK(even.split_tiles() == 0);
}

TEST_CASE("split-K picks the most balanced factor and rejects impossible ones") {
  // One tile of 16 iterations on 4 workers: split-K by 4 balances it perfectly.
  DecompositionPlan s = plan_decomposition(Decomposition::SplitK, {128, 128, 512}, {}, 4);
  CHECK(s.balance_efficiency() == doctest::Approx(1.0));
  CHECK_THROWS_WITH_AS(plan_decomposition(Decomposition::SplitK, {128, 128, 64}, {}, 4, 8),
                       doctest::Contains("exceeds the 2 iterations"), Error);
  CHECK_THROWS_WITH_AS(plan_decomposition(Decomposition::StreamK, {0, 128, 64}, {}, 4),
                       doctest::Contains("must be positive"), Error);
}
