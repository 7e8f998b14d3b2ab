// What a configuration's lowered function says about its cost before it is built or run: a few
// counts from one walk over its loops, which the evolutionary search gives its cost model next to
// the knobs (the model learns their weights from the measurements). Counting is cheap next to a
// build and a timing, so the search can rank many proposals by them.
#pragma once

#include <vector>

#include "loom/lower/lowered_func.hpp"
#include "loom/support/config.hpp"

namespace loom::tune {

/// Counts over one run of a lowered function (loops with constant extents; a loop whose extent is
/// not constant counts once).
struct IrFeatures {
  double loop_iterations = 0;        ///< iterations of all loops (their overhead, roughly)
  double element_stores = 0;         ///< elements stored
  double vector_store_fraction = 0;  ///< of the elements stored, the share that vector stores store
  /// ceil(n / threads) * threads / n for the outermost parallel loop's n iterations (counting the
  /// loops around it): 1 when they share evenly, or when nothing runs in parallel.
  double parallel_imbalance = 1;
  bool parallel = false;  ///< a loop runs on the thread pool

  /// As the cost model takes them: log2(1 + loop iterations), log2(1 + element stores), the
  /// vector share, the imbalance, and 1 for a serial function.
  std::vector<double> vector() const;
};

/// The counts of `f` for a pool of `threads` threads.
LOOM_DECL IrFeatures ir_features(const LoweredFunc& f, int threads);

}  // namespace loom::tune

#if LOOM_HEADER_ONLY
#include "loom/tune/impl/ir_features.hpp"
#endif
