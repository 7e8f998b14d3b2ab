// What a configuration's lowered function says about its cost before it is built or run: a few
// counts from one walk over its loops and the bytes it moves into each cache level, which the evolutionary
// search gives its cost model next to the knobs (the model learns their weights from the measurements).
// Counting is cheap next to a build and a timing, so the search can rank many proposals by them.
#pragma once

#include <vector>

#include "loom/lower/lowered_func.hpp"
#include "loom/support/config.hpp"
#include "loom/support/cpu_info.hpp"
#include "loom/tune/cache_traffic.hpp"

namespace loom::tune {

/// Counts over one run of a lowered function (loops with constant extents; a loop whose extent is
/// not constant counts once).
struct IrFeatures {
  double loop_iterations = 0;        ///< iterations of all loops (their overhead, roughly)
  double element_stores = 0;         ///< elements stored
  double flops = 0;                  ///< floating-point +, -, *, /, min and max, per lane
  double vector_store_fraction = 0;  ///< of the elements stored, the share that vector stores store
  /// ceil(n / threads) * threads / n for the outermost parallel loop's n iterations (counting the
  /// loops around it): 1 when they share evenly, or when nothing runs in parallel.
  double parallel_imbalance = 1;
  bool parallel = false;  ///< a loop runs on the thread pool
  /// Bytes loaded into L1, L2 and L3 (tune/cache_traffic.hpp's footprint model).
  CacheTraffic traffic;

  /// As the cost model takes them: log2(1 + loop iterations), log2(1 + element stores),
  /// log2(1 + flops), the vector share, the imbalance, 1 for a serial function, and log2(1 +
  /// bytes) into L1, L2, L3.
  std::vector<double> vector() const;
};

/// The counts of `f` for a pool of `threads` threads on a CPU with `caches`.
LOOM_DECL IrFeatures ir_features(const LoweredFunc& f, int threads,
                                 const CpuCacheInfo& caches = CpuCacheInfo::host());

}  // namespace loom::tune

#if LOOM_HEADER_ONLY
#include "loom/tune/impl/ir_features.hpp"
#endif
