// lib::gpu_gemm's tile configuration chosen by its performance model: tune_gpu_gemm predicts every
// candidate GpuGemmConfig of one problem with lib::predict_gpu_gemm on an A100 (sm_80) or an H100
// (sm_90), skips (and counts) those gpu_gemm refuses, that do not fit on an SM, that spill, or that
// run one block per SM (where the model is least trusted), ranks the rest by predicted time and
// appends them to the tuning database (tune/database.hpp);
// tuned_gpu_gemm_config reads the best of them back in a later process, as gpu_gemm() does when given
// no configuration (recorded_gpu_gemm_config, declared beside gpu_gemm and defined here). Without a GPU the
// times are the model's predictions, and the records' target says so, "cuda -arch=sm_80
// model:A100-SXM4-80GB"; where a GPU of the architecture is present, the best predicted candidates are also
// measured on it and recorded as measured ("cuda -arch=sm_90 device:NVIDIA H100 80GB HBM3"), and those
// records come first. docs/gpu-gemm-model.md says how far the model is trusted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/lib/gpu_gemm.hpp"
#include "loom/lib/gpu_gemm_model.hpp"
#include "loom/lib/matrix_layout.hpp"
#include "loom/support/config.hpp"
#include "loom/tune/config.hpp"

namespace loom::lib {

/// The candidates tune_gpu_gemm predicts: every combination of these values of the GpuGemmConfig
/// fields (3 x 3 x 2 x 2 x 2 x 4 = 288 by default, block_k 0 being 64 or 32), which of their
/// predictions it trusts, and where it records them.
struct GpuGemmTuneOptions {
  /// The block tile's rows and columns.
  /// @{
  std::vector<int> block_m = {64, 128, 256}, block_n = {64, 128, 256};
  /// @}
  /// The K step of a stage; 0 is gpu_gemm's default (128 bytes of K: 64 for 16-bit inputs, 32 for
  /// tf32) and counts once when another value is the same. Values that are not a multiple of the
  /// mma.sync's k (16; 8 for tf32) are refused by gpu_gemm and counted as invalid.
  std::vector<int> block_k = {0, 32, 64};
  /// The warp tile's rows and columns.
  /// @{
  std::vector<int> warp_m = {32, 64}, warp_n = {32, 64};
  /// @}
  /// Shared-memory stages of the k loop.
  std::vector<int> stages = {2, 3, 4, 5};
  /// Candidates with fewer resident blocks per SM are predicted but not ranked or recorded. With
  /// one block per SM the model was 1.18-1.56x optimistic against the H100 and H200 (128x256
  /// tiles, which it ranks above the default and which ran slower than it at 4096^3), where with
  /// two or more it was within 0.92-1.19 (docs/gpu-gemm-model.md). 1: rank every prediction.
  int min_blocks_per_sm = 2;
  /// Where a GPU of the architecture is present (the driver's device 0), how many of the best
  /// predicted candidates are also built, checked against the default configuration's C and timed
  /// on it (the default too); they are then ranked by their measured times. 0: predictions only,
  /// in tuning and in tuned_gpu_gemm_config's lookup (which then ignores measured records).
  int measure_top = 8;
  /// The tuning database file ("": the default, LOOM_CACHE_DIR/tuning.jsonl; "off": record nothing).
  std::string database;
};

/// One candidate configuration and what the model (and the GPU, where one measured it) made of it.
struct GpuGemmTuneCandidate {
  /// The configuration (block_k resolved: never 0).
  GpuGemmConfig config;
  /// Why it was skipped: "refused" (gpu_gemm, NVRTC or ptxas threw a loom::Error), "does not fit"
  /// (no block fits on an SM), "spills" (ptxas spilled registers to local memory or needed more
  /// than 255), "few blocks" (predicted, with fewer blocks per SM than min_blocks_per_sm); empty
  /// when it was ranked. `detail` holds the error message or the numbers.
  /// @{
  std::string skipped, detail;
  /// @}
  /// The model's prediction (when ranked, or skipped for "few blocks").
  GpuGemmPrediction prediction;
  /// The median device time measured on the GPU (0: not measured), or why a measurement failed
  /// (the kernel did not build or run, or its C differs from the default configuration's).
  /// @{
  double measured_ms = 0;
  std::string measure_failure;
  /// @}
};

/// What tune_gpu_gemm found.
struct GpuGemmTuneResult {
  /// The key the records are filed under (gpu_gemm_workload_key) and their target
  /// (gpu_gemm_model_target).
  /// @{
  std::string workload, target;
  /// @}
  /// Every distinct candidate: the ranked ones fastest first (the measured ones by their measured
  /// times, then the others by their predictions), then the skipped ones in the order they were
  /// tried.
  std::vector<GpuGemmTuneCandidate> candidates;
  /// Candidates ranked; skipped by reason; invalid: refused, not fitting or spilling (all skipped
  /// ones but the "few blocks" ones).
  /// @{
  int ranked = 0, refused = 0, does_not_fit = 0, spills = 0, few_blocks = 0, invalid = 0;
  /// @}
  /// The fastest ranked configuration and its prediction. Where the GPU measured the default: the
  /// fastest measured configuration, the default itself when no candidate ran faster (or every one
  /// failed). Otherwise the fastest prediction.
  /// @{
  GpuGemmConfig best;
  GpuGemmPrediction best_prediction;
  /// @}
  /// The prediction of the default GpuGemmConfig, whether or not the candidates include it (all
  /// zero when the default is skipped on this GPU).
  GpuGemmPrediction default_prediction;
  /// The GPU that measured (its name; empty: none of the architecture is present, or measure_top is
  /// 0), the default configuration's measured time, the candidates it timed, and why it timed none
  /// where a GPU was present (the default could not be built, run or checked).
  /// @{
  std::string device;
  double default_measured_ms = 0;
  int measured = 0;
  std::string measure_failure;
  /// @}
  /// Where the measuring ran: "worker processes" (forked ones, while this process has not loaded the
  /// CUDA driver: a candidate that faults or hangs costs only its own measurement), or "this process
  /// (...)" with the reason and what it risks; empty when nothing was measured.
  std::string measured_in;
  /// Wall time of the whole search, in seconds.
  double seconds = 0;
};

/// The database key of gpu_gemm(m, n, k, input, GpuGemmConfig{}, a_layout, b_layout): a structural
/// hash of the default configuration's lowered function and its parameters' types and shapes, as 16 hex
/// digits (so a change to the kernel's code files its problems under new keys, and old records go unused).
LOOM_DECL std::string gpu_gemm_workload_key(int64_t m, int64_t n, int64_t k, DType input,
                                            Layout a_layout = Layout::RowMajor,
                                            Layout b_layout = Layout::RowMajor);

/// The target that records of the model's predictions for `arch` carry: "cuda -arch=sm_80
/// model:A100-SXM4-80GB" (GpuPerfSpec::for_arch's GPU), never a measured target's "cuda -arch=...".
/// Throws loom::Error for an architecture the model has no GPU for.
LOOM_DECL std::string gpu_gemm_model_target(const std::string& arch);

/// The target that records of times measured on `device`, a GPU of `arch`, carry: "cuda
/// -arch=sm_90 device:NVIDIA H100 80GB HBM3".
LOOM_DECL std::string measured_gpu_target(const std::string& arch, const std::string& device);

/// A configuration as database knobs: block_m, block_n, block_k, warp_m, warp_n, stages.
LOOM_DECL tune::Assignment gpu_gemm_config_knobs(const GpuGemmConfig& config);

/// Predicts every candidate of `options` for the problem on `arch` ("sm_80": A100, "sm_90": H100),
/// ranks those with min_blocks_per_sm or more blocks per SM and appends one record per ranked
/// candidate (its predicted milliseconds) to the database. Where a GPU of `arch` is present, the
/// best measure_top of them and the default are also timed on it, ranked by those times, and
/// recorded under the target measured_gpu_target names. Registers come from ptxas where NVRTC and the CUDA
/// toolkit are installed (then candidates that spill are skipped), else from the model's estimate. Throws
/// loom::Error for an architecture the model has no GPU for, for options with an empty list or a value that
/// is no size, when the default configuration is refused, or when no candidate can be ranked.
LOOM_DECL GpuGemmTuneResult tune_gpu_gemm(int64_t m, int64_t n, int64_t k, DType input,
                                          const std::string& arch, Layout a_layout = Layout::RowMajor,
                                          Layout b_layout = Layout::RowMajor,
                                          const GpuGemmTuneOptions& options = GpuGemmTuneOptions());

/// The configuration recorded with the smallest time for the problem on `arch` in the database of
/// `options` (records of other architectures, problems or kernel code are not used): where a GPU of
/// `arch` is present and the database holds times measured on it, the fastest of those; else the
/// fastest prediction; the default GpuGemmConfig when there is neither, or, with LOOM_TUNE=1,
/// tune_gpu_gemm's best (which measures where the GPU can, and records). Throws loom::Error for an
/// architecture the model has no GPU for, and where tune_gpu_gemm does.
LOOM_DECL GpuGemmConfig tuned_gpu_gemm_config(int64_t m, int64_t n, int64_t k, DType input,
                                              const std::string& arch, Layout a_layout, Layout b_layout,
                                              const GpuGemmTuneOptions& options);

/// tuned_gpu_gemm_config over the default candidates, with the database file `database` ("": the
/// default LOOM_CACHE_DIR/tuning.jsonl).
LOOM_DECL GpuGemmConfig tuned_gpu_gemm_config(int64_t m, int64_t n, int64_t k, DType input,
                                              const std::string& arch, Layout a_layout = Layout::RowMajor,
                                              Layout b_layout = Layout::RowMajor,
                                              const std::string& database = "");

}  // namespace loom::lib

#if LOOM_HEADER_ONLY
#include "loom/lib/impl/gpu_gemm_tuning.hpp"
#endif
