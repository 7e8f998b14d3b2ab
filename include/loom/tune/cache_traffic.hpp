// The bytes a lowered CPU function moves into each level of the cache hierarchy, estimated from
// its loop nests before anything is built: the footprint of a loop (the cache lines its loads and
// stores touch during one whole run of it) is loaded once per run of the outermost loop whose
// footprint still fits a cache, and once per run of each loop inside an outer one that does not.
// A feature for the tuner's cost model (tune/ir_features.hpp), not a simulator: it ignores
// associativity, prefetching and the overlap of a buffer's accesses beyond the largest one.
#pragma once

#include "loom/lower/lowered_func.hpp"
#include "loom/support/config.hpp"
#include "loom/support/cpu_info.hpp"

namespace loom::tune {

/// Estimated bytes each cache level passes on, for one call of a function.
struct CacheTraffic {
  /// Bytes of cache lines loaded into L1 (what misses L1 and comes from L2 or further out), into
  /// L2, and from memory into L3.
  /// @{
  double l1_fill_bytes = 0, l2_fill_bytes = 0, l3_fill_bytes = 0;
  /// @}
  /// The whole function's footprint: every line it touches, once.
  double footprint_bytes = 0;
};

/// The traffic of `f` on a CPU with `caches` when `threads` threads share its L3 (L1 and L2 are
/// each thread's own). Loops of non-constant extent count as one iteration; an index that is not
/// a sum of loop variables times constants (through a load, a quotient or a let variable) counts
/// as touching a new line on every iteration of the loops around it.
LOOM_DECL CacheTraffic cache_traffic(const LoweredFunc& f, const CpuCacheInfo& caches, int threads);

}  // namespace loom::tune

#if LOOM_HEADER_ONLY
#include "loom/tune/impl/cache_traffic.hpp"
#endif
