// An analytic model of one round of the Stream-K GEMM's SIMT main loop (lib::streamk_gemm without
// tensor cores) on an A100 or H100/H200: the time for every block resident on an SM to run one
// k-step, which lib/streamk_model.hpp plays its decomposition plan out with, as it does the
// tensor-core loop's round from lib/gpu_gemm_model.hpp.
//
// A k-step of the SIMT loop is synchronous: a barrier, each thread loads its share of A's bm x bk
// and B's bk x bn tiles from global memory and stores them to shared memory, a barrier, then bk
// multiply-adds of the thread's thread_m x thread_n accumulators, each reading thread_m elements of
// A and thread_n of B from shared memory. Per warp and k-step the model counts (from the
// configuration; SASS of NVRTC's code for sm_90 in docs/gpu-gemm-model.md):
//   ffma       = bk * thread_m * thread_n;
//   shared     = bk * (thread_m + thread_n) element loads, each as many wavefronts as the warp's
//                lanes put distinct words in one bank (A's rows are bk words apart: a bank conflict
//                when a warp spans rows whose starts share a bank; averaged over the block's
//                warps), plus the copies' stores;
//   copies     = ceil(bm bk / threads) + ceil(bk bn / threads) global loads and shared stores;
//   issued     = ffma + loads + copies' loads and stores + 3 address instructions per copy + one
//                conversion per element load of f16 + 2 barriers + 8 for the loop.
// Per SM and round, with b blocks of w warps resident and n_w blocks computing on the GPU:
//   fma     = ceil(b w / 4) * ffma * 32 / (FP32 lanes per SM / 4): each scheduler's FP32 pipe;
//   shared  = b w * wavefronts, one 128-byte wavefront per clock;
//   l2      = n_w * (bm + bn) * bk * element bytes / the GPU's sustained L2 bytes per clock;
//   issue   = b w * issued / 4 schedulers;
//   exposed = a DRAM latency + 2 barrier latencies + a shared-memory latency.
// round = the largest of fma, shared, l2 and issue, plus `exposed`. The exposed part is the
// assumption that decides this model: the blocks on an SM run the same instructions from the same
// start, so they reach their copies together and wait for them together (no block computes while
// another waits), and the copies of a step are new to L2 (the blocks of a wave move through K
// together), so they wait for DRAM. Measured on an H200 (docs/gpu-measurements.md, sixth session):
// a round of four blocks of the default configuration took 5000-5200 cycles and a round of two
// 3950-4090, 0.8 of it, where the throughput terms alone would make it half. The model gives 5345 and
// 3169: the two-block round is a fifth short, some latency it does not see.
//
// Not modelled: register-bank conflicts and dependency stalls within a warp, clock changes, the
// edge tiles' bounds tests. docs/gpu-gemm-model.md compares the model with the measurements.
#pragma once

#include <cstdint>
#include <string>

#include "loom/lib/gpu_gemm_model.hpp"
#include "loom/support/config.hpp"
#include "loom/support/gpu_device.hpp"

namespace loom::lib {

// Only referred to here: its header's header-only tail reaches this one through the model's.
struct StreamKGemm;

/// What one warp executes in one k-step of the SIMT main loop.
struct SimtStepCounts {
  /// Multiply-adds, element loads of shared memory (A's and B's), and the shared-memory wavefronts
  /// they take with the copies' stores.
  /// @{
  int64_t ffma = 0, shared_loads = 0;
  double shared_wavefronts = 0;
  /// @}
  /// The copies: global loads and shared stores (one each per element a thread copies).
  /// @{
  int64_t global_loads = 0, shared_stores = 0;
  /// @}
  /// Block barriers, and the instructions issued in all.
  /// @{
  int64_t barriers = 0;
  double instructions = 0;
  /// @}
};

/// The SIMT main loop of one kernel on one GPU: its counts, block and occupancy, and the terms of a
/// round with every resident block computing (SM cycles).
struct SimtLoopPrediction {
  /// Per warp and k-step.
  SimtStepCounts per_warp;
  /// The block's resources and the resulting occupancy.
  /// @{
  GpuGemmResources resources;
  Occupancy occupancy;
  /// @}
  /// The terms of a full round and the round: the FP32 pipe, shared memory, L2, instruction issue,
  /// the latency exposed once a round, and the round.
  /// @{
  double fma_cycles = 0, shared_cycles = 0, l2_cycles = 0, issue_cycles = 0, exposed_cycles = 0;
  double round_cycles = 0;
  /// @}
  /// The largest term: "fma", "shared", "l2" or "issue".
  std::string limiter;
  /// A sentence: the counts, occupancy and the round's terms.
  LOOM_DECL std::string str() const;
};

/// Per-warp counts of one k-step of `g`'s SIMT main loop (see the header comment). Throws
/// loom::Error for a kernel on tensor cores.
LOOM_DECL SimtStepCounts streamk_simt_step_counts(const StreamKGemm& g);

/// The block `g`'s SIMT kernel asks of an SM: its threads, its registers (the kernel's residency's
/// count, ptxas's where the CUDA toolkit is installed, else the estimate) and its shared tiles.
LOOM_DECL GpuGemmResources streamk_simt_resources(const StreamKGemm& g);

/// The SIMT main loop of `g` on `spec` with `resources`: counts, occupancy and a full round. Throws
/// loom::Error for a kernel on tensor cores, for a GPU with a rate that is not positive or a negative
/// latency, for resources of another thread count than the kernel's block, or when a block does not
/// fit on an SM.
LOOM_DECL SimtLoopPrediction predict_streamk_simt_loop(const StreamKGemm& g, const GpuPerfSpec& spec,
                                                       const GpuGemmResources& resources);

/// One round of `g`'s SIMT loop with `blocks` blocks computing on the busiest SM and `active` on the
/// GPU, in SM cycles. `loop` is predict_streamk_simt_loop's for `g` on `spec`. Throws loom::Error where
/// predict_streamk_simt_loop does, and for fewer than one block or more on the SM than on the GPU.
LOOM_DECL double streamk_simt_round_cycles(const StreamKGemm& g, const GpuPerfSpec& spec,
                                           const SimtLoopPrediction& loop, int64_t blocks, int64_t active);

}  // namespace loom::lib

// StreamKGemm, for the programs that include this header alone. Header-only mode reaches it through
// the Stream-K model's header instead, whose tail also brings this header's definitions: StreamKGemm's
// header-only tail reaches the tuner's declarations, which need the model's, so the model's header
// must be read before StreamKGemm's.
#if LOOM_HEADER_ONLY
#include "loom/lib/streamk_model.hpp"
#else
#include "loom/lib/streamk_gemm.hpp"
#endif
