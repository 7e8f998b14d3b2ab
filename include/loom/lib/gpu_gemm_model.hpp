// An analytic performance model of the tensor-core GEMM (lib::gpu_gemm): what fraction of a GPU's
// dense tensor peak the kernel of one shape and configuration should reach on an A100 (sm_80) or an
// H100/H200 (sm_90), and which resource limits it. A model of this kernel, not of GEMMs in general:
// it reads the instructions one warp executes per k-step from the lowered IR (mma.sync, ldmatrix,
// shared loads, cp.async or element copies, barriers), the registers from ptxas (an estimate
// without the CUDA toolkit) and the shared memory from the kernel's allocations.
//
// Per SM and per "round" (every block resident on the SM runs one k-step), in SM clock cycles, with
// b blocks of w warps resident (the occupancy of support/gpu_device.hpp), n_w blocks running on the
// whole GPU in this wave, q = ceil(w / 4) warps of one block per warp scheduler:
//   tensor  = ceil(b w / 4) * m, m = mma per warp-step * flops per mma / (peak flops per SM-clock *
//             mma_sync_fraction / 4): a scheduler's tensor pipe runs its warps' mma one after another;
//   shared  = b w * (4 per ldmatrix.x4 + 4 per 16-byte cp.async + 1 per 32-bit shared load or
//             element store) wavefronts of 128 bytes, one per clock;
//   l2      = n_w * (A and B tile bytes per k-step) / (sustained L2 bytes per clock): every block
//             reads its tiles through L2 (cp.async.cg bypasses L1); the GPU's L2 bandwidth is shared;
//   issue   = b w * instructions per warp-step / 4 schedulers;
//   latency = chain + copy wait, chain = q * m + barriers * barrier latency + q * (non-mma
//             instructions) + one shared-memory latency (a step's first fragments) + for element
//             copies one L2 latency (they wait for their loads before storing them). After each
//             barrier a block's warps issue their copies and first fragment loads before any mma;
//             only warps of other blocks can fill that bubble, so the chain is one block's step;
//   copy wait: a tile's copies are issued stages - 1 rounds before it is read; when their latency
//             (L2 latency + b * tile bytes / the SM's share of L2) is longer, the round stretches
//             to (chain + latency) / stages and the rest of the latency is waited for.
// round = the largest term. A wave takes a DRAM latency and one tile's transfer (the prologue),
// k-steps * round, and the store of its C tiles through L2; and no less than its DRAM traffic (the
// distinct A and B panels its tiles read, once per wave: L2 keeps what the wave's blocks share, as
// they move through K together; nothing is assumed kept between waves) over the DRAM bandwidth.
// Waves: tiles / (SMs * b), the last one partial (its busiest SM runs ceil(n_w / SMs) blocks).
//
// What is not modelled: contention between terms that are close to each other (the model takes
// the largest, the GPU pays some of the others too), clock changes under load, bank conflicts (the
// kernel's padded tiles have none), the edge tiles' partial reads, the prologue's copies beyond
// its first tile (they matter only when K spans a few k-steps), launch overhead. The figures and
// where each comes from: GpuPerfSpec::sources. The model against the measurements, and where it
// misses: docs/gpu-gemm-model.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/ir/dtype.hpp"
#include "loom/support/config.hpp"
#include "loom/support/gpu_device.hpp"

namespace loom::lib {

// Only referred to here: its header's header-only tail reaches this one through the tuner's.
struct GpuGemm;

/// One GPU as the model sees it: published specifications, the figures NVIDIA does not publish
/// (stated where each comes from in `sources`), and the per-SM limits of `device` for occupancy.
struct GpuPerfSpec {
  /// The GPU ("A100-SXM4-80GB") and its architecture ("sm_80").
  /// @{
  std::string name, arch;
  /// @}
  /// SMs, registers, shared memory and threads per SM: the occupancy model's limits.
  GpuDeviceSpec device;
  /// The SM clock the published peaks are computed at (GHz); the model's cycles become time at it.
  double clock_ghz = 0;
  /// Published dense tensor-core peaks (TFLOP/s, f32 accumulation): f16 or bf16 inputs, and tf32.
  /// @{
  double dense_tflops_16bit = 0, dense_tflops_tf32 = 0;
  /// @}
  /// The fraction of the dense peak that mma.sync reaches (the kernel's instruction): 1 where it is
  /// the tensor cores' native path (sm_80); on sm_90 the full rate needs wgmma.
  double mma_sync_fraction = 1;
  /// DRAM bandwidth (published) and the sustained L2-to-SM bandwidth of cp.async tile streams, in
  /// TB/s (10^12 bytes per second).
  /// @{
  double dram_tbps = 0, l2_tbps = 0;
  /// @}
  /// Shared-memory bandwidth per SM: bytes per clock (a 128-byte wavefront per clock).
  int shared_bytes_per_clock = 128;
  /// FP32 lanes per SM: an FFMA of a warp takes 32 / (this / 4) clocks of its scheduler (64 on
  /// sm_80: two clocks; 128 on sm_90: one). The SIMT main loop's peak (lib/streamk_simt_model.hpp).
  int fp32_lanes_per_sm = 64;
  /// Latencies in SM cycles: an L2 hit, a DRAM access, a block barrier, a shared-memory load.
  /// @{
  double l2_latency = 0, dram_latency = 0, barrier_latency = 0, shared_latency = 0;
  /// @}
  /// Where each figure comes from, one line each.
  std::vector<std::string> sources;

  /// NVIDIA A100 SXM4 80 GB (sm_80).
  LOOM_DECL static GpuPerfSpec a100();
  /// NVIDIA H100 SXM5 (sm_90).
  LOOM_DECL static GpuPerfSpec h100();
  /// NVIDIA H200 SXM (sm_90): an H100 SXM5's SMs, clocks and L2 with 4.8 TB/s of HBM3e.
  LOOM_DECL static GpuPerfSpec h200();
  /// The GPU the model uses for `arch`: sm_80 is an A100, sm_90 an H100. Throws loom::Error for
  /// any other architecture.
  LOOM_DECL static GpuPerfSpec for_arch(const std::string& arch);
  /// Whether for_arch describes `arch` (a GPU present may be of another architecture).
  static bool describes(const std::string& arch) { return arch == "sm_80" || arch == "sm_90"; }
  /// The dense peak for inputs of `input` (f16, bf16: 16-bit; f32: tf32), TFLOP/s.
  LOOM_DECL double dense_tflops(DType input) const;
  /// The FP32 FMA peak without tensor cores (2 flops per lane per clock), TFLOP/s.
  double fp32_tflops() const { return 2.0 * device.sms * fp32_lanes_per_sm * clock_ghz / 1e3; }
  /// The sustained L2 and the DRAM bandwidth in bytes per SM clock (the models' unit of time).
  /// @{
  double l2_bytes_per_clock() const { return l2_tbps * 1e12 / (clock_ghz * 1e9); }
  double dram_bytes_per_clock() const { return dram_tbps * 1e12 / (clock_ghz * 1e9); }
  /// @}
};

/// What one warp executes in one k-step of the kernel's main loop, counted in the lowered IR (a
/// statement under a branch counts as the larger of the branches; an unrolled loop as its body times
/// its trip count). A kernel of one k-step has no loop: its whole body is counted.
struct GpuGemmStepCounts {
  /// mma.sync, ldmatrix and cp.async instructions.
  /// @{
  int64_t mma = 0, ldmatrix = 0, cp_async = 0;
  /// @}
  /// Loads and stores of shared memory outside the warp intrinsics (32-bit fragment loads of tf32
  /// data, element copies' stores) and loads of global memory (element copies).
  /// @{
  int64_t shared_loads = 0, shared_stores = 0, global_loads = 0;
  /// @}
  /// Block barriers.
  int64_t barriers = 0;
  /// f32 fragment elements rounded to tf32 (cvt.rna.tf32.f32: three SASS instructions alone, about
  /// two per element in the main loop on sm_90).
  int64_t tf32_roundings = 0;
};

/// The instructions of one warp per k-step of `g`'s main loop, from its lowered IR.
LOOM_DECL GpuGemmStepCounts gpu_gemm_step_counts(const GpuGemm& g);

/// What one block of the kernel asks of an SM.
struct GpuGemmResources {
  /// Threads per block.
  int threads = 0;
  /// Registers per thread, and where the count came from: "ptxas" (NVRTC's PTX through the CUDA
  /// toolkit's ptxas), "estimate" (gpu_gemm_estimated_registers) or "given".
  /// @{
  int registers = 0;
  std::string registers_from;
  /// @}
  /// Shared memory per block (its stages of A and B, bytes).
  int64_t shared_bytes = 0;
  /// Bytes ptxas spilled to local memory (stores + loads; 0 for an estimate).
  int64_t spill_bytes = 0;
};

/// Registers per thread when ptxas cannot say: the warp tile's f32 accumulators (warp_m * warp_n /
/// 32), the A and B fragments of one k slice (warp_m / 4 + warp_n / 4), twice with four warps a
/// block (ptxas then loads the next slice's ahead), one per 16-byte copy a thread issues per k-step
/// (its address), and 8, rounded up to 8 and capped at 255. Fitted to ptxas 13.0 for sm_90 on the
/// tile sweep's configurations, within 8% of each (216 for the default's 212, 208 for block_k =
/// 32's 199, 104 for 64x32 warps' 96).
LOOM_DECL int gpu_gemm_estimated_registers(const GpuGemm& g);

/// The kernel's threads, registers (ptxas for `arch` when NVRTC and the toolkit's ptxas are
/// present, else the estimate) and shared memory.
LOOM_DECL GpuGemmResources gpu_gemm_resources(const GpuGemm& g, const std::string& arch);

/// The SASS of the kernel's main loop, counted per k-step (the loop's counts divided by its
/// barriers: one per k-step, so a loop ptxas unrolled is still counted per step).
struct GpuGemmSass {
  /// Whether cuobjdump (and NVRTC) were found; `unavailable` says what is missing when not.
  /// @{
  bool available = false;
  std::string unavailable;
  /// @}
  /// HMMA, LDSM, LDGSTS (cp.async), BAR, LDS, STS and LDG instructions per k-step, and all
  /// instructions per k-step.
  /// @{
  double hmma = 0, ldsm = 0, ldgsts = 0, bar = 0, lds = 0, sts = 0, ldg = 0, instructions = 0;
  /// @}
  /// k-steps per iteration of the SASS loop (its BAR count).
  int64_t steps_per_iteration = 0;
  /// The cuobjdump that read the cubin.
  std::string tool;
};

/// The SASS of `g`'s kernel compiled for `arch` by NVRTC, read with cuobjdump (found by
/// runtime::cuda::find_cuobjdump(tools): `tools` is a folder or the venv of scripts/sass-tools.sh).
/// Not available (with the reason) when NVRTC or cuobjdump is missing, or when ptxas unrolled a
/// loop of a few k-steps completely; throws loom::Error when a longer loop has no HMMA.
LOOM_DECL GpuGemmSass gpu_gemm_sass(const GpuGemm& g, const std::string& arch, const std::string& tools = "");

/// What the model predicts for one kernel on one GPU.
struct GpuGemmPrediction {
  /// The GPU modelled and its architecture.
  /// @{
  std::string device, arch;
  /// @}
  /// The kernel's per-warp k-step instructions, and the instructions issued per warp-step (SASS
  /// when given, else the counted ones plus 3 address instructions per copy and 8 for the loop).
  /// @{
  GpuGemmStepCounts per_warp;
  double instructions_per_warp_step = 0;
  /// @}
  /// The block's resources and the resulting occupancy; warps per SM.
  /// @{
  GpuGemmResources resources;
  Occupancy occupancy;
  int warps_per_sm = 0;
  /// @}
  /// The terms of one round of a full wave (one k-step of each block resident on an SM), in SM
  /// cycles: tensor pipe, shared memory, L2, instruction issue, the latency chain (its copy-wait
  /// part separately), and the round (the largest).
  /// @{
  double tensor_cycles = 0, shared_cycles = 0, l2_cycles = 0, issue_cycles = 0, latency_cycles = 0;
  double copy_wait_cycles = 0, round_cycles = 0;
  /// @}
  /// The term that sets the round: "tensor", "shared", "l2", "issue" or "latency"; "dram" when DRAM
  /// traffic sets a wave's time instead.
  std::string limiter;
  /// Output tiles, k-steps per tile, waves, and the share of slots the last wave fills (0-1].
  /// @{
  int64_t tiles = 0, k_steps = 0, waves = 0;
  double last_wave_fill = 0;
  /// @}
  /// Bytes read through L2 (every block's tiles) and from DRAM (per-wave panels and C).
  /// @{
  double l2_bytes = 0, dram_bytes = 0;
  /// @}
  /// The kernel's predicted time, its TFLOP/s (2 m n k flops), the dense peak and the fraction of it.
  /// @{
  double seconds = 0, tflops = 0, peak_tflops = 0, fraction_of_peak = 0;
  /// @}
  /// A paragraph: the terms, the limiter, occupancy and waves.
  LOOM_DECL std::string str() const;
};

/// The model's prediction for `g` on `spec` with `resources`; `instructions_per_warp_step` (SASS's
/// count per k-step, when known) replaces the estimate of the instructions issued.
LOOM_DECL GpuGemmPrediction predict_gpu_gemm(const GpuGemm& g, const GpuPerfSpec& spec,
                                             const GpuGemmResources& resources,
                                             double instructions_per_warp_step = 0);

/// The prediction on GpuPerfSpec::for_arch(arch) with gpu_gemm_resources(g, arch). Throws
/// loom::Error for an architecture the model does not describe.
LOOM_DECL GpuGemmPrediction predict_gpu_gemm(const GpuGemm& g, const std::string& arch);

/// One round of `g`'s main loop (every block resident on the busiest SM runs one k-step), in SM
/// cycles, with `blocks` blocks on that SM and `active` on the whole GPU: the round of
/// predict_gpu_gemm's model for a wave of that size. `prediction` is predict_gpu_gemm's for `g` on
/// `spec` (its instruction counts and threads). The Stream-K model (lib/streamk_model.hpp) times
/// its work units with it, as their number per SM changes.
LOOM_DECL double gpu_gemm_round_cycles(const GpuGemm& g, const GpuPerfSpec& spec,
                                       const GpuGemmPrediction& prediction, int64_t blocks, int64_t active);

}  // namespace loom::lib

// What the model reads, gpu_gemm() and GpuGemm, for the programs that include this header alone.
#include "loom/lib/gpu_gemm.hpp"

#if LOOM_HEADER_ONLY
#include "loom/lib/impl/gpu_gemm_model.hpp"
#endif
