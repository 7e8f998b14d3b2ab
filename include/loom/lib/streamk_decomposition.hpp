// Work-centric decompositions of a tiled GEMM over a fixed set of workers (GPU SMs or CPU
// threads), after Osama et al., "Stream-K" (PPoPP 2023): data-parallel, split-K, Stream-K and
// a fixup-aware hybrid of Stream-K and data-parallel, as explicit per-worker lists of MAC-loop
// iterations, with the load-balance model the paper reasons with.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/support/error.hpp"

namespace loom::lib {

/// The size of a GEMM: C (m x n) = A (m x k) * B (k x n).
struct GemmShape {
  /// The sizes: C (m x n) = A (m x k) * B (k x n).
  /// @{
  int64_t m = 0, n = 0, k = 0;
  /// @}
};

/// The output tile (bm x bn) and the K step of one MAC-loop iteration (bk).
struct GemmTile {
  /// Rows and columns of the tile, and the K step.
  /// @{
  int64_t bm = 128, bn = 128, bk = 32;
  /// @}
};

/// How a GEMM's MAC-loop iterations are divided among workers (thread blocks).
enum class Decomposition {
  DataParallel,  ///< one worker computes each output tile whole
  SplitK,        ///< each tile's K range is cut into `split_k` equal parts
  StreamK,       ///< all MAC-loop iterations are divided evenly among the workers
  /// Stream-K over the last partial wave (plus one full wave), possibly on fewer workers, the
  /// other tiles data-parallel, or plain data-parallel: whichever the fixup-aware model of
  /// plan_decomposition() finds fastest
  StreamKHybrid,
};

/// A name for messages and tables ("data-parallel", "split-K", "Stream-K", ...).
inline const char* decomposition_name(Decomposition d) {
  switch (d) {
    case Decomposition::DataParallel: return "data-parallel";
    case Decomposition::SplitK: return "split-K";
    case Decomposition::StreamK: return "Stream-K";
    case Decomposition::StreamKHybrid: return "Stream-K + data-parallel hybrid";
  }
  return "?";
}

/// Iterations [k_begin, k_end) of output tile `tile` (iteration i covers K in [i*bk, (i+1)*bk)).
struct WorkUnit {
  /// The output tile, row-major index into the tiles of C.
  int64_t tile = 0;
  /// The first and one-past-last iteration.
  /// @{
  int64_t k_begin = 0, k_end = 0;
  /// @}
  /// k_end - k_begin.
  int64_t iterations() const { return k_end - k_begin; }
};

/// Who computes what: the work units of each worker, in the order it runs them. A tile split
/// between several units is finished by its fixup unit, which adds the others' partial sums: the
/// unit of the highest-numbered worker among them, its last one of the tile (for Stream-K, the
/// unit with the tile's last iteration), as the kernels do (lib/impl/streamk_gemm.hpp).
struct DecompositionPlan {
  /// How the work was divided.
  Decomposition kind = Decomposition::DataParallel;
  /// The tiles of C in each direction, and the MAC-loop iterations of one tile.
  /// @{
  int64_t tiles_m = 0, tiles_n = 0, iterations_per_tile = 0;
  /// @}
  /// The work units each worker runs, in order.
  std::vector<std::vector<WorkUnit>> workers;

  /// Tiles in the output, MAC-loop iterations in all, and the iterations worker `worker` runs.
  /// @{
  int64_t tiles() const { return tiles_m * tiles_n; }
  int64_t total_iterations() const { return tiles() * iterations_per_tile; }
  int64_t iterations_of(size_t worker) const {
    int64_t n = 0;
    for (const WorkUnit& u : workers[worker]) n += u.iterations();
    return n;
  }
  /// @}
  /// The iterations of the busiest worker, which bounds the kernel's time.
  int64_t busiest() const {
    int64_t most = 0;
    for (size_t w = 0; w < workers.size(); ++w) most = std::max(most, iterations_of(w));
    return most;
  }
  /// Useful MAC-loop iterations over (workers x iterations of the busiest worker): 1 is a
  /// perfect balance; data-parallel on 132 SMs with 133 tiles is about 0.5.
  double balance_efficiency() const {
    int64_t b = busiest();
    return b == 0 ? 1.0 : static_cast<double>(total_iterations()) / (static_cast<double>(workers.size()) * b);
  }
  /// The Stream-K phase: iterations of tiles [0, stream_k_tiles) dealt evenly over workers
  /// [0, stream_k_workers); the later tiles' units are dealt round-robin from worker
  /// stream_k_workers % workers on (so that the workers without Stream-K work take them first).
  /// 0 and 0 when no tile is streamed (data-parallel, split-K).
  /// @{
  int64_t stream_k_tiles = 0, stream_k_workers = 0;
  /// @}

  /// How long the plan takes in a model where every worker is resident at once and one MAC-loop
  /// iteration takes one unit of time: a worker runs its units in order; a unit that leaves its
  /// tile unfinished publishes its partial sum, which costs `partial_cost`; a fixup unit waits for
  /// every other unit of its tile to have published, then reads their partials one after another,
  /// `partial_cost` each. A fixup waits only for lower-numbered workers and for its own worker's
  /// earlier units, so the waits always end, and one pass over the workers in order computes the
  /// times.
  double modeled_time(double partial_cost) const {
    const std::vector<double> t = finish_times(partial_cost);
    return t.empty() ? 0.0 : *std::max_element(t.begin(), t.end());
  }
  /// When each worker ends in modeled_time()'s model.
  std::vector<double> finish_times(double partial_cost) const {
    std::vector<std::pair<size_t, size_t>> fixup(static_cast<size_t>(tiles()));
    std::vector<int> units_of_tile(static_cast<size_t>(tiles()), 0);
    for (size_t w = 0; w < workers.size(); ++w)
      for (size_t i = 0; i < workers[w].size(); ++i) {
        ++units_of_tile[static_cast<size_t>(workers[w][i].tile)];
        fixup[static_cast<size_t>(workers[w][i].tile)] = {w, i};  // the last one seen is the fixup
      }
    std::vector<double> published(static_cast<size_t>(tiles()), 0);  // latest partial of each tile
    std::vector<double> finish(workers.size(), 0);
    for (size_t w = 0; w < workers.size(); ++w) {
      double clock = 0;
      for (size_t i = 0; i < workers[w].size(); ++i) {
        const size_t t = static_cast<size_t>(workers[w][i].tile);
        clock += static_cast<double>(workers[w][i].iterations());
        if (units_of_tile[t] < 2) continue;
        if (fixup[t] == std::pair<size_t, size_t>{w, i}) {
          clock = std::max(clock, published[t]) + partial_cost * (units_of_tile[t] - 1);
        } else {
          clock += partial_cost;
          published[t] = std::max(published[t], clock);
        }
      }
      finish[w] = clock;
    }
    return finish;
  }

  /// modeled_time() with free partial sums: how long workers wait for each other, in iterations.
  /// The busiest worker's iterations are the ideal.
  int64_t critical_path() const { return static_cast<int64_t>(modeled_time(0)); }

  /// Tiles whose iterations are split between several units (their partial sums need a fixup).
  int64_t split_tiles() const {
    std::vector<int> units(static_cast<size_t>(tiles()), 0);
    for (const auto& w : workers)
      for (const WorkUnit& u : w) ++units[static_cast<size_t>(u.tile)];
    return std::count_if(units.begin(), units.end(), [](int c) { return c > 1; });
  }
};

namespace detail {
inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Deals out the iterations [begin, end) of the tile-major iteration space evenly to the first
/// `workers` workers (the first ones get one more when it does not divide), appending units to each. A worker
/// runs its share from its last tile back to its first, as CUTLASS's Stream-K does: its last tile is the head
/// of a tile that the next worker finishes, so it publishes that partial sum before it waits, in its first
/// tile, for the partials of the workers before it. In increasing order every worker would wait for its
/// predecessor's last unit, which itself waited: a chain through all of them (critical_path() shows it).
inline void stream_iterations(DecompositionPlan& plan, int64_t begin, int64_t end, int64_t workers) {
  const int64_t p = workers, total = end - begin;
  const int64_t per = total / p, extra = total % p;
  int64_t at = begin;
  for (int64_t w = 0; w < p; ++w) {
    int64_t stop = at + per + (w < extra ? 1 : 0);
    std::vector<WorkUnit> share;
    while (at < stop) {
      int64_t tile = at / plan.iterations_per_tile, k = at % plan.iterations_per_tile;
      int64_t k_end = std::min(plan.iterations_per_tile, k + (stop - at));
      share.push_back(WorkUnit{tile, k, k_end});
      at += k_end - k;
    }
    std::vector<WorkUnit>& mine = plan.workers[static_cast<size_t>(w)];
    mine.insert(mine.end(), share.rbegin(), share.rend());
  }
}

/// What publishing or reading one partial sum costs, in MAC-loop iterations, for the hybrid's
/// choice: a partial is bm x bn f32 values moved through global memory (L2), an iteration moves
/// (bm + bn) x bk input values from it (counted as 4 bytes each) and multiplies them; the model
/// takes the two traffics as equally expensive per byte and the multiply as hidden behind them.
/// 1 for 16x16x8 tiles, 2 for 128x128x32: CUTLASS's Stream-K heuristic charges a fixup peer a
/// few iterations too. The timed simulator (bench_streamk_critical_path) measures the choice.
inline double partial_cost(const GemmTile& t) {
  return static_cast<double>(t.bm * t.bn) / static_cast<double>((t.bm + t.bn) * t.bk);
}

/// The hybrid's layout: the iterations of tiles [0, sk_tiles) streamed over workers
/// [0, sk_workers), then the other tiles whole, dealt round-robin from worker sk_workers % p on.
inline void hybrid_layout(DecompositionPlan& plan, int64_t sk_tiles, int64_t sk_workers) {
  const int64_t p = static_cast<int64_t>(plan.workers.size());
  plan.stream_k_tiles = sk_tiles;
  plan.stream_k_workers = sk_workers;
  stream_iterations(plan, 0, sk_tiles * plan.iterations_per_tile, sk_workers);
  for (int64_t t = sk_tiles; t < plan.tiles(); ++t)
    plan.workers[static_cast<size_t>((sk_workers + t - sk_tiles) % p)].push_back(
        WorkUnit{t, 0, plan.iterations_per_tile});
}

/// hybrid_layout's plan's modeled_time(cost), without materializing its whole tiles: they come
/// after every Stream-K unit of their worker and wait for nothing, so they add to its time.
inline double hybrid_time(const DecompositionPlan& empty, int64_t sk_tiles, int64_t sk_workers, double cost) {
  DecompositionPlan sk = empty;
  stream_iterations(sk, 0, sk_tiles * sk.iterations_per_tile, sk_workers);
  std::vector<double> finish = sk.finish_times(cost);
  const int64_t p = static_cast<int64_t>(finish.size()), whole = sk.tiles() - sk_tiles;
  double longest = 0;
  for (int64_t w = 0; w < p; ++w) {
    const int64_t slot = (w - sk_workers % p + p) % p;  // its place in the round-robin of whole tiles
    const int64_t count = whole / p + (slot < whole % p ? 1 : 0);
    longest = std::max(longest,
                       finish[static_cast<size_t>(w)] + static_cast<double>(count * sk.iterations_per_tile));
  }
  return longest;
}

/// Worker counts worth trying for `total` streamed iterations on at most p workers: for each
/// number of iterations g of the busiest worker, the fewest workers that give it (fewer split
/// tiles than more workers with the same g), and p.
inline std::vector<int64_t> stream_worker_counts(int64_t total, int64_t p) {
  std::vector<int64_t> counts = {p};
  for (int64_t g = ceil_div(total, p);;) {
    const int64_t v = ceil_div(total, g);
    if (v != p) counts.push_back(v);
    if (v == 1) break;
    g = ceil_div(total, v - 1);
  }
  return counts;
}
}  // namespace detail

/// The plan for `kind`. `split_k` is used by SplitK only (0 picks the factor with the best
/// balance among 1, 2, 4, 8, 16 that does not exceed the iterations per tile).
inline DecompositionPlan plan_decomposition(Decomposition kind, GemmShape shape, GemmTile tile, int workers,
                                            int split_k = 0) {
  if (shape.m <= 0 || shape.n <= 0 || shape.k <= 0)
    throw Error(cat("plan_decomposition: the GEMM shape must be positive, got ", shape.m, "x", shape.n, "x",
                    shape.k));
  if (tile.bm <= 0 || tile.bn <= 0 || tile.bk <= 0)
    throw Error(
        cat("plan_decomposition: the tile must be positive, got ", tile.bm, "x", tile.bn, "x", tile.bk));
  if (workers <= 0) throw Error(cat("plan_decomposition: need at least one worker, got ", workers));
  DecompositionPlan plan;
  plan.kind = kind;
  plan.tiles_m = detail::ceil_div(shape.m, tile.bm);
  plan.tiles_n = detail::ceil_div(shape.n, tile.bn);
  plan.iterations_per_tile = detail::ceil_div(shape.k, tile.bk);
  plan.workers.assign(static_cast<size_t>(workers), {});
  const int64_t tiles = plan.tiles(), iters = plan.iterations_per_tile, p = workers;
  switch (kind) {
    case Decomposition::DataParallel:
      for (int64_t t = 0; t < tiles; ++t)
        plan.workers[static_cast<size_t>(t % p)].push_back(WorkUnit{t, 0, iters});
      break;
    case Decomposition::SplitK: {
      if (split_k <= 0) {
        DecompositionPlan best;
        for (int s : {1, 2, 4, 8, 16}) {
          if (s > iters) break;
          DecompositionPlan candidate = plan_decomposition(kind, shape, tile, workers, s);
          if (best.workers.empty() || candidate.balance_efficiency() > best.balance_efficiency())
            best = candidate;
        }
        return best;
      }
      if (split_k > iters)
        throw Error(
            cat("plan_decomposition: split_k ", split_k, " exceeds the ", iters, " iterations of a tile"));
      const int64_t chunk = detail::ceil_div(iters, split_k);
      int64_t unit = 0;
      for (int64_t t = 0; t < tiles; ++t)
        for (int64_t b = 0; b < iters; b += chunk, ++unit)
          plan.workers[static_cast<size_t>(unit % p)].push_back(WorkUnit{t, b, std::min(iters, b + chunk)});
      break;
    }
    case Decomposition::StreamK:
      plan.stream_k_tiles = tiles;
      plan.stream_k_workers = p;
      detail::stream_iterations(plan, 0, tiles * iters, p);
      break;
    case Decomposition::StreamKHybrid: {
      // Data-parallel leaves a partial last wave; streaming it (and one full wave before it, so
      // that every worker streams between one and two tiles) balances the work but costs a
      // partial sum per split tile. When tiles are few and short, that cost can exceed the
      // balance won: the plan is the fastest in modeled_time() among data-parallel, the two-tile
      // and one-tile Stream-K phases, each over p workers or fewer (fewer split tiles).
      DecompositionPlan best = plan_decomposition(Decomposition::DataParallel, shape, tile, workers);
      const int64_t full_waves = tiles / p, remainder = tiles % p;
      if (remainder == 0) return best;
      const double cost = detail::partial_cost(tile);
      double best_time = best.modeled_time(cost);
      int64_t best_tiles = 0, best_workers = 0;
      std::vector<int64_t> streamed = {remainder + (full_waves >= 1 ? p : 0)};
      if (full_waves >= 1) streamed.push_back(remainder);
      for (int64_t sk_tiles : streamed)
        for (int64_t s : detail::stream_worker_counts(sk_tiles * iters, p)) {
          // Data-parallel wins a tie (no workspace); among Stream-K phases that tie, the one on
          // fewer workers (fewer split tiles), which comes later.
          const double time = detail::hybrid_time(plan, sk_tiles, s, cost);
          if (time < best_time || (time == best_time && best_tiles > 0)) {
            best_time = time;
            best_tiles = sk_tiles;
            best_workers = s;
          }
        }
      if (best_tiles == 0) return best;
      detail::hybrid_layout(plan, best_tiles, best_workers);
      break;
    }
  }
  return plan;
}

}  // namespace loom::lib
