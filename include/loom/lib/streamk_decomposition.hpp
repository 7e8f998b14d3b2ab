// Work-centric decompositions of a tiled GEMM over a fixed set of workers (GPU SMs or CPU
// threads), after Osama et al., "Stream-K" (PPoPP 2023): data-parallel, split-K, Stream-K and
// the "two-tile Stream-K + data-parallel" hybrid, as explicit per-worker lists of MAC-loop
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
  DataParallel,   ///< one worker computes each output tile whole
  SplitK,         ///< each tile's K range is cut into `split_k` equal parts
  StreamK,        ///< all MAC-loop iterations are divided evenly among the workers
  StreamKHybrid,  ///< Stream-K over the last partial wave plus one full wave, data-parallel before
};

/// A name for messages and tables ("data-parallel", "split-K", "Stream-K", ...).
inline const char* decomposition_name(Decomposition d) {
  switch (d) {
    case Decomposition::DataParallel: return "data-parallel";
    case Decomposition::SplitK: return "split-K";
    case Decomposition::StreamK: return "Stream-K";
    case Decomposition::StreamKHybrid: return "two-tile Stream-K + data-parallel";
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
  /// How long the plan takes in a model where every worker is resident at once and one MAC-loop
  /// iteration takes one unit of time: a worker runs its units in order; a unit publishes its
  /// partial sum when it ends; a fixup unit ends no earlier than every other unit of its tile
  /// (it waits for their partials; adding them is not counted). The busiest worker's iterations
  /// are the ideal. A fixup waits only for lower-numbered workers and for its own worker's earlier
  /// units, so the waits always end, and one pass over the workers in order computes the times.
  int64_t critical_path() const {
    std::vector<std::pair<size_t, size_t>> fixup(static_cast<size_t>(tiles()));
    std::vector<int> units_of_tile(static_cast<size_t>(tiles()), 0);
    for (size_t w = 0; w < workers.size(); ++w)
      for (size_t i = 0; i < workers[w].size(); ++i) {
        ++units_of_tile[static_cast<size_t>(workers[w][i].tile)];
        fixup[static_cast<size_t>(workers[w][i].tile)] = {w, i};  // the last one seen is the fixup
      }
    std::vector<int64_t> published(static_cast<size_t>(tiles()), 0);  // latest partial of each tile
    int64_t longest = 0;
    for (size_t w = 0; w < workers.size(); ++w) {
      int64_t clock = 0;
      for (size_t i = 0; i < workers[w].size(); ++i) {
        const size_t t = static_cast<size_t>(workers[w][i].tile);
        clock += workers[w][i].iterations();
        if (units_of_tile[t] < 2) continue;
        if (fixup[t] == std::pair<size_t, size_t>{w, i}) {
          clock = std::max(clock, published[t]);
        } else {
          published[t] = std::max(published[t], clock);
        }
      }
      longest = std::max(longest, clock);
    }
    return longest;
  }

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

/// Deals out the iterations [begin, end) of the tile-major iteration space evenly to `workers`
/// (the first ones get one more when it does not divide), appending units to each. A worker runs
/// its share from its last tile back to its first, as CUTLASS's Stream-K does: its last tile is
/// the head of a tile that the next worker finishes, so it publishes that partial sum before it
/// waits, in its first tile, for the partials of the workers before it. In increasing order every
/// worker would wait for its predecessor's last unit, which itself waited: a chain through all of
/// them (critical_path() shows it).
inline void stream_iterations(DecompositionPlan& plan, int64_t begin, int64_t end) {
  const int64_t p = static_cast<int64_t>(plan.workers.size()), total = end - begin;
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
    case Decomposition::StreamK: detail::stream_iterations(plan, 0, tiles * iters); break;
    case Decomposition::StreamKHybrid: {
      // Whole waves of tiles are data-parallel except the last full one, which joins the
      // partial wave in the Stream-K part: every worker streams between one and two tiles.
      const int64_t full_waves = tiles / p, remainder = tiles % p;
      if (remainder == 0) return plan_decomposition(Decomposition::DataParallel, shape, tile, workers);
      const int64_t sk_tiles = remainder + (full_waves >= 1 ? p : 0);
      detail::stream_iterations(plan, 0, sk_tiles * iters);
      for (int64_t t = sk_tiles; t < tiles; ++t)
        plan.workers[static_cast<size_t>((t - sk_tiles) % p)].push_back(WorkUnit{t, 0, iters});
      break;
    }
  }
  return plan;
}

}  // namespace loom::lib
