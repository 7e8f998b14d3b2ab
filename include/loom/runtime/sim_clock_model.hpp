// The GPU simulator's cost table: how many cycles each class of warp instruction advances the
// clock of the warp that executes it. A model for comparing schedules, not a claim about real time.
#pragma once

#include <cstdint>

namespace loom {

/// The simulator gives every warp a clock that starts when its block is dispatched and advances by
/// these costs, in cycles of the modelled GPU, as the warp executes. The model counts each warp's
/// own instructions only: warps of a block, and blocks resident on one SM, run side by side with
/// no contention for issue slots, pipelines or memory bandwidth, and every latency is exposed (no
/// instruction-level parallelism within a warp). It orders schedules by how much each warp does
/// and how long it waits for others (barriers, grid flags, the dispatch of blocks onto SMs); it
/// does not predict the run time of a real GPU. The defaults are round numbers of the order of an
/// Ampere/Hopper SM's dependent-issue latencies.
struct SimClockModel {
  /// An arithmetic, comparison, select or cast operation (a fused multiply-add is one), per lane
  /// of a vector operation: the dependent-issue latency of the FP32/INT32 pipes.
  int64_t arith = 4;
  /// A shared-memory access instruction, per wavefront (sim/access_recorder.hpp): a conflict-free
  /// 4-byte access is one wavefront, an n-way bank conflict n.
  int64_t shared_wavefront = 8;
  /// A global-memory load or store instruction, per distinct 32-byte sector its active lanes
  /// touch: a coalesced float load by 32 lanes is 4 sectors, a strided one up to 32.
  int64_t global_sector = 16;
  /// A block-wide barrier (__syncthreads), counted once every warp has arrived: the block's warps
  /// leave it at the latest arrival plus this.
  int64_t barrier = 24;
  /// One shuffle step of a thread_allreduce, per combined value: a reduction over g threads takes
  /// ceil(log2(g)) steps (within a warp: shuffles; across warps: steps through shared memory).
  int64_t shuffle = 8;
  /// Each iteration of a loop that is not unrolled: the increment, compare and branch.
  int64_t loop_iteration = 4;
  /// A grid-flag signal (a fence, then a release store) or a satisfied wait (the acquire load that
  /// sees the flag); a wait that had to wait resumes at the signal's time plus this.
  int64_t flag = 100;
};

}  // namespace loom
