// Stream-K GEMM for the GPU (Osama et al., PPoPP 2023): C = A x B on a persistent grid of as many
// blocks as the SMs hold at once (SMs x occupancy) that runs the decomposition plan of
// lib/streamk_decomposition.hpp, written as Loom loop IR (TE cannot express per-block work lists) and built
// for Target::cuda() or cuda_sim(). Its MAC loop is SIMT FMA by default, or lib::gpu_gemm's
// tensor-core main loop (cp.async stages, ldmatrix, mma.sync) over each unit's k range.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "loom/lib/gpu_gemm.hpp"
#include "loom/lib/matrix_layout.hpp"
#include "loom/lib/streamk_decomposition.hpp"
#include "loom/lower/lowered_func.hpp"
#include "loom/support/config.hpp"
#include "loom/support/gpu_device.hpp"

namespace loom::lib {

/// The tunables of streamk_gemm(); zero fields are resolved from the GPU (an H100 when there is none).
struct StreamKConfig {
  /// The output tile of one block (bm x bn) and the K step of one MAC-loop iteration (bk), for the
  /// SIMT main loop; with tensor_cores set, the tile is tensor_cores' block_m x block_n x block_k.
  GemmTile tile{64, 64, 16};
  /// Set: the MAC loop is lib::gpu_gemm's tensor-core main loop with this block tile (one MAC-loop
  /// iteration is one block_k step), warp tile and stages, for f16, bf16 or f32 inputs (f32
  /// rounded to tf32, or truncated with tensor_cores->tf32_round off); A and B may then be
  /// column-major. Unset (the
  /// default): SIMT FMA over `tile` with thread_m x thread_n accumulators per thread, f32 exact or
  /// f16, A and B row-major.
  std::optional<GpuGemmConfig> tensor_cores;
  /// Elements each thread accumulates in the SIMT main loop: (bm / thread_m) x (bn / thread_n)
  /// threads per block.
  /// @{
  int thread_m = 4, thread_n = 4;
  /// @}
  /// The SMs of the GPU; 0 takes the GPU's count, or 132 (an H100) when there is no GPU.
  int sms = 0;
  /// Blocks of the persistent grid per SM: the grid is sms x blocks_per_sm. 0 sizes it by the
  /// kernel's occupancy (StreamKGemm::residency says how it was found). A block waits only for
  /// the partial sums of lower-numbered blocks, which the GPU starts first, so a grid larger than
  /// what is resident at once still completes, but its last blocks start only as others end.
  int blocks_per_sm = 0;
  /// The architecture whose occupancy sizes the grid when there is no GPU ("" means sm_90).
  std::string arch;
  /// How the MAC-loop iterations are divided among the blocks.
  Decomposition decomposition = Decomposition::StreamKHybrid;
  /// For Decomposition::SplitK: the parts of each tile's K range (0: the best balanced of 1..16).
  int split_k = 0;
};

/// How many blocks of the kernel one SM holds, and how that was found.
struct StreamKResidency {
  std::string device;  ///< the GPU modelled, or the one the driver found
  /// The occupancy found: blocks per SM and what limits them.
  Occupancy occupancy;
  /// The register count the occupancy used.
  int registers_per_thread = 0;
  /// "driver" (cuOccupancyMaxActiveBlocksPerMultiprocessor), "ptxas" (its register count and the
  /// occupancy model), "estimate" (estimated registers and the model), "config" (given).
  std::string source;
};

/// The kernel and what it was built from. Build `func` with build(g.func, Target::cuda_sim())
/// (or Target::cuda()) and call it with (A, B as stored: m x k or k x m, k x n or n x k; C: m x n
/// f32).
struct StreamKGemm {
  /// The problem size.
  GemmShape shape;
  /// The element type of A and B.
  DType input = f32;
  /// How A and B are stored (as for gpu_gemm; column-major with tensor cores only).
  /// @{
  Layout a_layout = Layout::RowMajor, b_layout = Layout::RowMajor;
  /// @}
  /// With `sms` and `blocks_per_sm` resolved; with tensor cores, `tile` is their block tile and
  /// tensor_cores->block_k is resolved.
  StreamKConfig config;
  /// How the grid was sized.
  StreamKResidency residency;
  /// The work units of each block.
  DecompositionPlan plan;
  /// The lowered kernel to build.
  LoweredFunc func;
  int64_t workspace_floats = 0;  ///< partial accumulators in global memory (0: no tile is split)
  int64_t flag_count = 0;        ///< one i32 flag per workspace slot

  /// Which block runs which tiles and MAC-loop iterations, and who fixes up the split tiles.
  LOOM_DECL std::string describe() const;
};

/// The Stream-K GEMM kernel for C (m x n, f32, row-major) = A (m x k) x B (k x n), accumulated in
/// f32: inputs f32 or f16 with the SIMT main loop, f16, bf16 or f32 (as tf32) with tensor cores
/// (config.tensor_cores), A and B stored as `a_layout` and `b_layout` say (column-major with tensor
/// cores only). Throws loom::Error naming the field for a configuration the kernel cannot use.
LOOM_DECL StreamKGemm streamk_gemm(int64_t m, int64_t n, int64_t k, DType input, const StreamKConfig& config,
                                   Layout a_layout = Layout::RowMajor, Layout b_layout = Layout::RowMajor);

/// The kernel for row-major A and B with the configuration the tuning database records as fastest
/// for the problem (recorded_streamk_config: after lib::tune_streamk_gemm, or with LOOM_TUNE=1; a
/// tensor-core one for 16-bit inputs, a SIMT one for f32), else the default StreamKConfig.
LOOM_DECL StreamKGemm streamk_gemm(int64_t m, int64_t n, int64_t k, DType input = f32);

/// The configuration streamk_gemm() uses when given none. Where the default database holds records
/// of a GPU tuner (or LOOM_TUNE=1 asks to tune): lib::tuned_streamk_config's (lib/streamk_tuning.hpp)
/// for the architecture of the GPU present, or for sm_90 (the H100 model) where there is none: a
/// tensor-core configuration for 16-bit inputs, a SIMT one (StreamKMainLoop::Simt) for f32, which
/// keeps the loop that multiplies exactly (the tensor cores would round to tf32, which a caller must
/// ask for). Otherwise, for other inputs, or for a GPU the model does not describe, the default
/// StreamKConfig (the SIMT main loop). Looking a record up starts no CUDA driver in this process.
LOOM_DECL StreamKConfig recorded_streamk_config(int64_t m, int64_t n, int64_t k, DType input,
                                                Layout a_layout = Layout::RowMajor,
                                                Layout b_layout = Layout::RowMajor);

}  // namespace loom::lib

#if LOOM_HEADER_ONLY
#include "loom/lib/impl/streamk_gemm.hpp"
// recorded_streamk_config's definition (its header includes this one first).
#include "loom/lib/streamk_tuning.hpp"
#endif
