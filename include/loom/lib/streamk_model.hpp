// An analytic time model of the Stream-K GEMM (lib::streamk_gemm) on an A100 or H100/H200: its
// decomposition plan played out on the modelled GPU, so that decompositions and grid sizes can be
// compared without one. The main loop's round comes from lib::gpu_gemm's model for the tensor-core
// loop (config.tensor_cores) and from lib/streamk_simt_model.hpp's for the SIMT one.
//
// Worker w of the persistent grid (sms x blocks_per_sm blocks, all resident) runs on SM w % sms and
// works through its units in order, each in three phases:
//   start:   its first tiles' copies are exposed: an L2 latency and one k-step of the SM's resident
//            blocks' tiles at the SM's share of L2 bandwidth (the copy latency of lib::gpu_gemm's
//            model); nothing for the SIMT loop, whose every round waits for its copies;
//   compute: its MAC-loop iterations, one k-step each, at the main loop's round for the number of
//            blocks computing on its SM and on the GPU at that moment (so a block
//            alone on its SM at the end runs faster, as the data-parallel model's last wave does);
//   finish:  C's tile (bm x bn floats) is stored, or, for a unit that leaves its tile unfinished, its
//            partial sum is written to the workspace and published; the tile's fixup unit reads the
//            other units' partials one by one, in worker order as the kernel does, waiting for each
//            to be published, then stores C.
//            Each move takes an L2 latency, then its bytes at the block's share of its SM's port to
//            L2 (64 bytes per clock, an assumption) or of the GPU's L2 bandwidth, whichever is
//            smaller, shared among the blocks moving tiles at that moment.
// The kernel's time is the last worker's end, and no less than a DRAM latency plus A, B and C read
// or written once over the DRAM bandwidth. Not modelled: launches (the kernel's own and, when tiles
// are split, the one that clears the flags: microseconds, which decide shapes under about 50 us), the
// workspace's DRAM traffic (taken to stay in L2), a worker's A and B panels read again from DRAM,
// and the registers the Stream-K code adds to the main loop's (the data-parallel kernel's count is
// used unless the kernel's residency gives a larger one). docs/gpu-gemm-model.md compares it with
// measurements.
#pragma once

#include <cstdint>
#include <string>

#include "loom/lib/gpu_gemm_model.hpp"
#include "loom/lib/streamk_simt_model.hpp"
#include "loom/support/config.hpp"

namespace loom::lib {

// Only referred to here: its header's header-only tail reaches this one through the tuner's.
struct StreamKGemm;

/// What the model predicts for one Stream-K kernel on one GPU.
struct StreamKPrediction {
  /// The GPU modelled and its architecture.
  /// @{
  std::string device, arch;
  /// @}
  /// For the tensor-core main loop: lib::gpu_gemm's prediction for the same main loop, data-parallel
  /// (its counts, resources, occupancy and round are the Stream-K kernel's too). Empty for SIMT.
  GpuGemmPrediction main_loop;
  /// For the SIMT main loop: its counts, occupancy and full round. Empty with tensor cores.
  SimtLoopPrediction simt_loop;
  /// Workers (blocks of the persistent grid) and how many each SM holds.
  /// @{
  int64_t workers = 0;
  int blocks_per_sm = 0;
  /// @}
  /// Tiles split between units, and units in all.
  /// @{
  int64_t split_tiles = 0, units = 0;
  /// @}
  /// One round with every worker computing (blocks_per_sm on each SM), a unit's start, and one
  /// tile of floats moved while every block of the grid moves one (the slowest case). SM cycles.
  /// @{
  double full_round_cycles = 0, unit_start_cycles = 0, tile_transfer_cycles = 0;
  /// @}
  /// The busiest worker's time without waiting (its own phases), the longest any worker waited
  /// for partial sums, the last worker's end, and the DRAM floor. SM cycles.
  /// @{
  double busiest_worker_cycles = 0, longest_wait_cycles = 0, makespan_cycles = 0, dram_cycles = 0;
  /// @}
  /// "compute" (the workers' makespan) or "dram" (the floor) decides the time.
  std::string limiter;
  /// The predicted time, its TFLOP/s (2 m n k flops), the peak (the dense tensor peak; the FP32 FMA
  /// peak for the SIMT loop) and the fraction of it.
  /// @{
  double seconds = 0, tflops = 0, peak_tflops = 0, fraction_of_peak = 0;
  /// @}
  /// A paragraph: grid, units, phases, waits and the result.
  LOOM_DECL std::string str() const;
};

/// The model's prediction for `g` on `spec`, with `resources` for its main loop's block (as
/// streamk_main_loop_resources gives them). Throws loom::Error when its grid was sized for another
/// number of SMs than `spec`'s, when a block does not fit on an SM of `spec`, or when the grid has
/// more blocks than the GPU holds at once.
LOOM_DECL StreamKPrediction predict_streamk_gemm(const StreamKGemm& g, const GpuPerfSpec& spec,
                                                 const GpuGemmResources& resources);

/// The resources of `g`'s main loop on `arch`. Tensor cores: the data-parallel gpu_gemm's of the
/// same configuration (ptxas's registers where it is installed, else the estimate), registers
/// raised to the Stream-K kernel's own when its residency found more. SIMT: streamk_simt_resources
/// (the kernel's residency was found for its configuration's arch).
LOOM_DECL GpuGemmResources streamk_main_loop_resources(const StreamKGemm& g, const std::string& arch);

/// The prediction on GpuPerfSpec::for_arch(arch) with streamk_main_loop_resources(g, arch).
LOOM_DECL StreamKPrediction predict_streamk_gemm(const StreamKGemm& g, const std::string& arch);

}  // namespace loom::lib

// What the model reads, streamk_gemm() and StreamKGemm, for the programs that include this header alone.
#include "loom/lib/streamk_gemm.hpp"

#if LOOM_HEADER_ONLY
#include "loom/lib/impl/streamk_model.hpp"
#include "loom/lib/impl/streamk_simt_model.hpp"
#endif
