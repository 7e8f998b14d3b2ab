// The Stream-K family of GEMM decompositions: every plan covers each MAC-loop iteration of
// each tile exactly once, and the balance model gives the values the paper's argument expects.
#include <loom/lib/streamk_decomposition.hpp>

#include <doctest/doctest.h>

#include <algorithm>
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

TEST_CASE("Stream-K blocks publish before they wait: the critical path is the busiest block's work") {
  // The shapes of the review that found the chain (64x64x16 tiles, and 128x128x32 for the large
  // one, 132 SMs). Run in increasing order, every block's first unit waits for its predecessor's
  // last one, which waited too: 21.6x the ideal for the hybrid at 2048^3, 97.7x at 1024x1024x8192.
  struct Case {
    GemmShape shape;
    GemmTile tile;
    double chained;  // the increasing order's critical path over the ideal, at least
  };
  for (const Case& c :
       {Case{{2048, 2048, 2048}, {64, 64, 16}, 21.0}, Case{{1000, 1000, 1000}, {64, 64, 16}, 46.0},
        Case{{1024, 1024, 8192}, {64, 64, 16}, 97.0}, Case{{4096, 11008, 4096}, {128, 128, 32}, 7.0},
        Case{{623, 315, 1000}, {64, 64, 16}, 5.0}})
    for (Decomposition d : {Decomposition::StreamK, Decomposition::StreamKHybrid}) {
      CAPTURE(c.shape.m);
      CAPTURE(c.shape.n);
      CAPTURE(c.shape.k);
      CAPTURE(decomposition_name(d));
      DecompositionPlan plan = plan_decomposition(d, c.shape, c.tile, 132);
      CHECK(plan.critical_path() == plan.busiest());
      // The hybrid streams nothing where data-parallel is as fast once partial sums cost time:
      // 1000^3 in 64x64x16 tiles is 256 tiles of 63 iterations, two waves (126) against 122 + the
      // fixups. Nothing can chain there.
      if (d == Decomposition::StreamKHybrid && plan.split_tiles() == 0) {
        CHECK(c.shape.m == 1000);
        continue;
      }
      // The model sees the chain: the same units, each block running them in increasing order.
      for (auto& units : plan.workers)
        std::sort(units.begin(), units.end(), [](const WorkUnit& a, const WorkUnit& b) {
          return a.tile != b.tile ? a.tile < b.tile : a.k_begin < b.k_begin;
        });
      CHECK(static_cast<double>(plan.critical_path()) >= c.chained * static_cast<double>(plan.busiest()));
    }
}

TEST_CASE("the critical-path model: a fixup waits for every partial of its tile") {
  // One tile of 8 iterations split 5 + 3: worker 1 holds the tile's end and fixes it up, waiting
  // for worker 0's partial (ready at 5) after its own 3 iterations, so it ends at 5.
  DecompositionPlan plan;
  plan.kind = Decomposition::StreamK;
  plan.tiles_m = 1;
  plan.tiles_n = 1;
  plan.iterations_per_tile = 8;
  plan.workers = {{WorkUnit{0, 0, 5}}, {WorkUnit{0, 5, 8}}};
  CHECK(plan.critical_path() == 5);
  CHECK(plan.busiest() == 5);
  // Two tiles of 6 iterations streamed over three workers, 4 each. In increasing order worker 1
  // first fixes tile 0 up (its 2 iterations, then it waits for worker 0 until 4), only then
  // publishes its head of tile 1 (at 6), for which worker 2 waits: 6 against an ideal of 4.
  plan.tiles_n = 2;
  plan.iterations_per_tile = 6;
  plan.workers = {{WorkUnit{0, 0, 4}}, {WorkUnit{0, 4, 6}, WorkUnit{1, 0, 2}}, {WorkUnit{1, 2, 6}}};
  CHECK(plan.busiest() == 4);
  CHECK(plan.critical_path() == 6);
  // Worker 1 running its tile-1 head first publishes at 2 and nobody waits beyond its own work.
  plan.workers[1] = {WorkUnit{1, 0, 2}, WorkUnit{0, 4, 6}};
  CHECK(plan.critical_path() == 4);
}

TEST_CASE("the fixup-aware model: partial sums cost time, and the hybrid weighs them") {
  // One tile of 8 iterations split 5 + 3 with partials costing 2: worker 0 publishes at 5 + 2,
  // worker 1 waits for it and reads it: 7 + 2.
  DecompositionPlan plan;
  plan.kind = Decomposition::StreamK;
  plan.tiles_m = plan.tiles_n = 1;
  plan.iterations_per_tile = 8;
  plan.workers = {{WorkUnit{0, 0, 5}}, {WorkUnit{0, 5, 8}}};
  CHECK(plan.modeled_time(2.0) == doctest::Approx(9.0));
  CHECK(plan.modeled_time(0.0) == doctest::Approx(5.0));
  // Three contributors: the fixup reads two partials one after the other.
  plan.workers = {{WorkUnit{0, 0, 3}}, {WorkUnit{0, 3, 6}}, {WorkUnit{0, 6, 8}}};
  CHECK(plan.modeled_time(1.0) == doctest::Approx(4.0 + 2.0));

  // 16x16x8 tiles cost one iteration per partial. One tile of 8 iterations on 4 workers: 2 each
  // would need 3 partials (2 + 1 + 3 = 6); 4 each on 2 workers ends at 4 + 1 + 1 = 6 too, with one
  // split: the fewer workers win the tie. Data-parallel takes 8.
  DecompositionPlan one = plan_decomposition(Decomposition::StreamKHybrid, {16, 16, 64}, {16, 16, 8}, 4);
  CHECK(one.kind == Decomposition::StreamKHybrid);
  CHECK(one.stream_k_tiles == 1);
  CHECK(one.stream_k_workers == 2);
  CHECK(one.modeled_time(1.0) == doctest::Approx(6.0));
  CHECK(one.workers[2].empty());
  // 9 tiles of 3 iterations on 4 workers: three waves (9) against 15 streamed iterations over 4
  // workers (4), a partial or two each, and a whole tile after: data-parallel.
  DecompositionPlan short_k = plan_decomposition(Decomposition::StreamKHybrid, {45, 37, 21}, {16, 16, 8}, 4);
  CHECK(short_k.kind == Decomposition::DataParallel);
  CHECK(short_k.split_tiles() == 0);
  // The same tiles with 12 iterations each: the two-tile hybrid on every worker.
  DecompositionPlan long_k = plan_decomposition(Decomposition::StreamKHybrid, {45, 37, 93}, {16, 16, 8}, 4);
  CHECK(long_k.stream_k_tiles == 5);
  CHECK(long_k.stream_k_workers == 4);
  CHECK(long_k.modeled_time(1.0) <
        plan_decomposition(Decomposition::DataParallel, {45, 37, 93}, {16, 16, 8}, 4).modeled_time(1.0));
  // Whichever it picks, the hybrid is never modeled slower than data-parallel.
  for (int64_t m : {16, 100, 384})
    for (int64_t k : {8, 64, 1000})
      for (int workers : {3, 7, 132}) {
        const GemmShape s{m, 200, k};
        const GemmTile t{16, 16, 8};
        CAPTURE(m);
        CAPTURE(k);
        CAPTURE(workers);
        CHECK(plan_decomposition(Decomposition::StreamKHybrid, s, t, workers).modeled_time(1.0) <=
              plan_decomposition(Decomposition::DataParallel, s, t, workers).modeled_time(1.0));
      }
}
