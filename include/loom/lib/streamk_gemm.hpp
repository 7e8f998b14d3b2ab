// Stream-K GEMM for the GPU (Osama et al., PPoPP 2023): C = A x B on a persistent grid of one
// block per SM that runs the decomposition plan of lib/streamk_decomposition.hpp, written as Loom
// loop IR (TE cannot express per-block work lists) and built for Target::cuda() or cuda_sim().
#pragma once

#include <cstdint>
#include <string>

#include "loom/lib/streamk_decomposition.hpp"
#include "loom/lower/lowered_func.hpp"
#include "loom/support/config.hpp"

namespace loom::lib {

struct StreamKConfig {
  /// The output tile of one block (bm x bn) and the K step of one MAC-loop iteration (bk).
  GemmTile tile{64, 64, 16};
  /// Elements each thread accumulates: (bm / thread_m) x (bn / thread_n) threads per block.
  int thread_m = 4, thread_n = 4;
  /// Blocks of the persistent grid, one per SM; 0 takes the GPU's SM count, or 132 (an H100)
  /// when there is no GPU. On a GPU all of them must be resident at once (a block waits for the
  /// partial sums of lower-numbered blocks), so do not ask for more blocks than the GPU holds.
  int sms = 0;
  Decomposition decomposition = Decomposition::StreamKHybrid;
  /// For Decomposition::SplitK: the parts of each tile's K range (0: the best balanced of 1..16).
  int split_k = 0;
};

/// The kernel and what it was built from. Build `func` with build(g.func, Target::cuda_sim())
/// (or Target::cuda()) and call it with (A: m x k, B: k x n, C: m x n f32).
struct StreamKGemm {
  GemmShape shape;
  DType input = f32;
  StreamKConfig config;  // with `sms` resolved
  DecompositionPlan plan;
  LoweredFunc func;
  int64_t workspace_floats = 0;  // partial accumulators in global memory (0: no tile is split)
  int64_t flag_count = 0;        // one i32 flag per workspace slot

  /// Which block runs which tiles and MAC-loop iterations, and who fixes up the split tiles.
  LOOM_DECL std::string describe() const;
};

/// The Stream-K GEMM kernel for C (m x n, f32) = A (m x k) x B (k x n), inputs f32 or f16
/// (accumulated in f32).
LOOM_DECL StreamKGemm streamk_gemm(int64_t m, int64_t n, int64_t k, DType input = f32,
                                   StreamKConfig config = {});

}  // namespace loom::lib

#if LOOM_HEADER_ONLY
#include "loom/lib/impl/streamk_gemm.hpp"
#endif
