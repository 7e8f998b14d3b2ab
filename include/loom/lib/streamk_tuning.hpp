// The Stream-K GEMM's decomposition, grid and tile chosen by its performance model:
// tune_streamk_gemm predicts every candidate StreamKConfig of one problem (decomposition, split-K
// factor, blocks per SM, and the tile of the main loop it tunes: tensor cores or SIMT FMA) with
// lib::predict_streamk_gemm on an A100 (sm_80) or an
// H100 (sm_90), skips (and counts) those streamk_gemm refuses and those whose grid the GPU cannot
// hold at once, ranks the rest by predicted time and appends them to the tuning database
// (tune/database.hpp); tuned_streamk_config reads the best of them back in a later process, as
// streamk_gemm() does when given no configuration (recorded_streamk_config, declared beside
// streamk_gemm and defined here). Without
// a GPU the times are the model's predictions, and the records' target says so, as lib::tune_gpu_gemm's
// do ("cuda -arch=sm_90 model:H100-SXM5"); where a GPU of the architecture is present, the best
// predicted candidates are also measured on it and those records ("device:") come first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/lib/gpu_gemm.hpp"
#include "loom/lib/matrix_layout.hpp"
#include "loom/lib/streamk_decomposition.hpp"
#include "loom/lib/streamk_gemm.hpp"
#include "loom/lib/streamk_model.hpp"
#include "loom/support/config.hpp"
#include "loom/tune/config.hpp"

namespace loom::lib {

/// The main loop whose configurations tune_streamk_gemm tries. The two are tuned apart: on f32
/// inputs the tensor cores round to tf32, where the SIMT loop multiplies exactly, so one must not
/// replace the other because it is faster.
enum class StreamKMainLoop {
  TensorCores,  ///< lib::gpu_gemm's main loop (StreamKConfig::tensor_cores): f16, bf16, f32 as tf32
  Simt,         ///< SIMT FMA (tensor_cores unset): f32 exact or f16; A and B row-major
};

/// One SIMT main loop's tile: StreamKConfig::tile with thread_m x thread_n accumulators per thread.
struct StreamKSimtTile {
  GemmTile tile{64, 64, 16};  ///< StreamKConfig::tile
  /// StreamKConfig::thread_m and thread_n.
  /// @{
  int thread_m = 4, thread_n = 4;
  /// @}
};

/// The candidates tune_streamk_gemm predicts: every tile, with every number of blocks per SM, with
/// every decomposition (split-K once per factor), and where it records them.
struct StreamKTuneOptions {
  /// The decompositions tried. Decomposition::StreamKHybrid is the default's own choice among
  /// data-parallel and Stream-K phases (by the plan's iteration-count model).
  std::vector<Decomposition> decompositions = {Decomposition::DataParallel, Decomposition::SplitK,
                                               Decomposition::StreamK, Decomposition::StreamKHybrid};
  /// Split-K factors (for Decomposition::SplitK); a factor above a tile's k-steps is refused by
  /// streamk_gemm and counted.
  std::vector<int> split_k = {2, 4, 8};
  /// Blocks of the persistent grid per SM; empty: every count from 1 to what an SM holds.
  std::vector<int> blocks_per_sm;
  /// The tensor-core main loop's configurations (block tile, warp tile, stages; block_k 0 is
  /// gpu_gemm's default): the default, and block_k 32, whose stages take half the shared memory
  /// (two or more blocks per SM of an A100, where the default fits one).
  std::vector<GpuGemmConfig> tiles = {GpuGemmConfig{}, GpuGemmConfig{128, 128, 32, 64, 64, 3}};
  /// Which main loop is tuned: `tiles` for the tensor cores, `simt_tiles` for SIMT.
  StreamKMainLoop main_loop = StreamKMainLoop::TensorCores;
  /// The SIMT main loop's tiles: the default (64 x 64 x 16, 4 x 4 per thread), bk 8, and the
  /// larger per-thread tiles that read fewer shared-memory words per multiply-add (8 x 8 of a
  /// 128 x 128 tile, as CUTLASS's SIMT SGEMM), each within the 64 accumulators a thread may hold.
  std::vector<StreamKSimtTile> simt_tiles = {{{64, 64, 16}, 4, 4},  {{64, 64, 8}, 4, 4},
                                             {{128, 64, 8}, 8, 4},  {{64, 128, 8}, 4, 8},
                                             {{128, 128, 8}, 8, 8}, {{128, 128, 16}, 8, 8}};
  /// Candidates with fewer blocks per SM are predicted but not ranked or recorded: with one block per
  /// SM the tensor-core GEMM's model was 1.18-1.56x optimistic against the H100 and H200
  /// (lib::GpuGemmTuneOptions::min_blocks_per_sm says more); the SIMT model was checked against
  /// grids of four blocks per SM only. 1: rank every prediction.
  int min_blocks_per_sm = 2;
  /// Where a GPU of the architecture is present, how many of the best predicted candidates are also
  /// built (their grid on the GPU's own SMs), checked against the default's C and timed on it (the
  /// default too), and then ranked by their measured times, as lib::GpuGemmTuneOptions::measure_top.
  /// 0: predictions only, in tuning and in tuned_streamk_config's lookup.
  int measure_top = 8;
  /// The tuning database file ("": the default, LOOM_CACHE_DIR/tuning.jsonl; "off": record nothing).
  std::string database;
};

/// One candidate and what the model made of it.
struct StreamKTuneCandidate {
  /// The configuration (tensor_cores resolved, sms the modelled GPU's, blocks_per_sm given).
  StreamKConfig config;
  /// Why it was skipped: "refused" (streamk_gemm threw a loom::Error), "does not fit" (no block
  /// fits on an SM, or the grid needs more blocks per SM than it holds), "few blocks" (predicted,
  /// with fewer blocks per SM than min_blocks_per_sm); empty when ranked. `detail` holds the error
  /// message or the numbers.
  /// @{
  std::string skipped, detail;
  /// @}
  /// The model's prediction (when ranked, or skipped for "few blocks").
  StreamKPrediction prediction;
  /// The median device time measured on the GPU (0: not measured), or why a measurement failed.
  /// @{
  double measured_ms = 0;
  std::string measure_failure;
  /// @}
};

/// What tune_streamk_gemm found.
struct StreamKTuneResult {
  /// The key the records are filed under (streamk_gemm_workload_key) and their target
  /// (gpu_gemm_model_target).
  /// @{
  std::string workload, target;
  /// @}
  /// Every distinct candidate: the ranked ones fastest first (the measured ones by their measured
  /// times, then the others by their predictions), then the skipped ones in the order they were
  /// tried.
  std::vector<StreamKTuneCandidate> candidates;
  /// Candidates ranked, refused, not fitting, with too few blocks per SM.
  /// @{
  int ranked = 0, refused = 0, does_not_fit = 0, few_blocks = 0;
  /// @}
  /// The fastest ranked configuration and its prediction, chosen as lib::GpuGemmTuneResult::best is
  /// (the default where the GPU measured it and no candidate ran faster).
  /// @{
  StreamKConfig best;
  StreamKPrediction best_prediction;
  /// @}
  /// The prediction of streamk_gemm's default for the problem (the hybrid on gpu_gemm's default
  /// tile, the grid as many blocks per SM as the kernel's residency finds); all zero when the
  /// default is refused or does not fit on this GPU.
  StreamKPrediction default_prediction;
  /// The GPU that measured, the default's measured time, the candidates it timed, and why it timed
  /// none where a GPU was present (as lib::GpuGemmTuneResult's).
  /// @{
  std::string device;
  double default_measured_ms = 0;
  int measured = 0;
  std::string measure_failure;
  /// @}
  /// Where the measuring ran (as lib::GpuGemmTuneResult's).
  std::string measured_in;
  /// Wall time of the whole search, in seconds.
  double seconds = 0;
};

/// The database key of the problem's Stream-K GEMM on `arch` with `main_loop`: a structural hash of
/// the data-parallel kernel with the main loop's default tile (gpu_gemm's, or StreamKConfig's SIMT
/// one) and one block per SM of the modelled GPU, as 16 hex digits (a change to the kernel's code
/// files its problems under new keys).
LOOM_DECL std::string streamk_gemm_workload_key(int64_t m, int64_t n, int64_t k, DType input,
                                                const std::string& arch, Layout a_layout = Layout::RowMajor,
                                                Layout b_layout = Layout::RowMajor,
                                                StreamKMainLoop main_loop = StreamKMainLoop::TensorCores);

/// A configuration as database knobs: decomposition (its enum's value), split_k, blocks_per_sm, and
/// the main loop's tile: with tensor cores, its six (gpu_gemm_config_knobs) and tf32_round (1 or
/// 0); for SIMT, bm, bn, bk, thread_m and thread_n.
LOOM_DECL tune::Assignment streamk_config_knobs(const StreamKConfig& config);

/// Predicts every candidate of `options` for the problem on `arch` ("sm_80": A100, "sm_90": H100),
/// ranks those with min_blocks_per_sm or more blocks per SM and appends one record per ranked candidate (its
/// predicted milliseconds) to the database. Where a GPU of `arch` is present, the best measure_top of them
/// and the default are also timed on it, ranked by those times, and recorded under measured_gpu_target.
/// Throws loom::Error for an architecture the model has no GPU for, for options with an empty list or a value
/// out of range, for the SIMT main loop with inputs it does not read (bfloat16, a column-major A or B),
/// or when no candidate can be ranked.
LOOM_DECL StreamKTuneResult tune_streamk_gemm(int64_t m, int64_t n, int64_t k, DType input,
                                              const std::string& arch, Layout a_layout = Layout::RowMajor,
                                              Layout b_layout = Layout::RowMajor,
                                              const StreamKTuneOptions& options = StreamKTuneOptions());

/// The configuration recorded with the smallest time for the problem on `arch` with `options`'
/// main loop in the database of `options` (its tile, decomposition, split_k and blocks_per_sm;
/// `arch` set; sms 0, the GPU's, where a GPU is present, else the modelled GPU's), or streamk_gemm's
/// default for the main loop when there is none (with tensor cores: StreamKConfig with tensor_cores
/// = GpuGemmConfig{}; SIMT: StreamKConfig{}). Times measured on a GPU of
/// `arch` that is present come before predictions, as in tuned_gpu_gemm_config; with LOOM_TUNE=1 and
/// nothing recorded, tunes `options`' candidates first (and records them). A record streamk_gemm would
/// refuse for the problem is passed over. Throws loom::Error where tune_streamk_gemm does.
LOOM_DECL StreamKConfig tuned_streamk_config(int64_t m, int64_t n, int64_t k, DType input,
                                             const std::string& arch, Layout a_layout = Layout::RowMajor,
                                             Layout b_layout = Layout::RowMajor,
                                             const StreamKTuneOptions& options = StreamKTuneOptions());

}  // namespace loom::lib

#if LOOM_HEADER_ONLY
#include "loom/lib/impl/streamk_tuning.hpp"
#endif
