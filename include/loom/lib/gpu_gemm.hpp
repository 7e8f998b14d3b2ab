// The tensor-core GPU GEMM: C (f32) = A B for f16, bf16 or f32 (rounded to tf32) inputs, A, B and C
// each row- or column-major, any M, N, K. Each block computes a block_m x block_n tile with warps
// of warp_m x warp_n tiles; the k loop stages tiles of A and B in shared memory `stages` deep,
// each laid out as the operand is stored (cp.async of 16, 8 or 4 bytes as an operand's contiguous
// dimension allows, element copies otherwise), loads fragments with ldmatrix (or shared loads where
// 32-bit data is not contiguous in k) and multiplies with mma.sync: m16n8k16 for 16-bit inputs,
// m16n8k8 for tf32.
#pragma once

#include <cstdint>
#include <string>

#include "loom/lib/matrix_layout.hpp"
#include "loom/lower/lowered_func.hpp"
#include "loom/support/config.hpp"
#include "loom/support/error.hpp"

namespace loom::lib {

/// The defaults measured best of nine tile and stage choices on an H200 (docs/gpu-measurements.md).
struct GpuGemmConfig {
  /// The block tile of C (block_m x block_n) and the K step of one pipeline stage (block_k; 0: 128
  /// bytes of K per row, 64 elements for 16-bit inputs and 32 for tf32, so that a stage takes the
  /// same shared memory for every input type).
  /// @{
  int block_m = 128, block_n = 128, block_k = 0;
  /// @}
  /// The warp tile: the part of the block tile one warp computes with tensor core instructions.
  /// @{
  int warp_m = 64, warp_n = 64;
  /// @}
  /// Shared-memory stages of the k loop: 2 is double buffering; 3-4 hide global latency.
  int stages = 3;
  /// f32 inputs: each element of A and B is rounded to the nearest tf32 (cvt.rna.tf32.f32, as
  /// cuBLAS's TF32 mode rounds) before the mma. false: the tensor core reads the f32 bits and
  /// ignores the 13 low mantissa bits (toward zero: a bias of half a tf32 unit on average), one
  /// instruction per fragment element fewer. Ignored for 16-bit inputs.
  bool tf32_round = true;

  /// "128x128x64/64x64/s3": block_m x block_n x block_k / warp_m x warp_n / stages, and
  /// "/tf32_truncated" when tf32_round is off.
  std::string str() const {
    return cat(block_m, "x", block_n, "x", block_k, "/", warp_m, "x", warp_n, "/s", stages,
               tf32_round ? "" : "/tf32_truncated");
  }
};

/// What gpu_gemm() returns: the problem, the configuration and the lowered function to build.
struct GpuGemm {
  /// The sizes: C (m x n) = A (m x k) * B (k x n).
  /// @{
  int64_t m = 0, n = 0, k = 0;
  /// @}
  /// The element type of A and B: f16 or bf16 (mma.sync m16n8k16), or f32, which the tensor cores
  /// multiply as tf32 (sign, exponent and 10 mantissa bits; mma.sync m16n8k8 .tf32, accumulated in
  /// f32): rounded to nearest, or truncated with config.tf32_round off.
  DType input = f16;
  /// How A and B are stored. A: RowMajor is m x k (k contiguous), ColMajor is stored k x m (m
  /// contiguous). B: RowMajor is k x n (n contiguous), ColMajor is stored n x k (k contiguous).
  /// @{
  Layout a_layout = Layout::RowMajor, b_layout = Layout::RowMajor;
  /// @}
  /// How C is stored: RowMajor is m x n, ColMajor is stored n x m (m contiguous).
  Layout c_layout = Layout::RowMajor;
  /// The tile and stage choices (block_k resolved).
  GpuGemmConfig config;
  /// Bytes per cp.async that fill A's (B's) tiles: 16, or 8 or 4 when the operand's contiguous
  /// dimension, as stored, is a multiple of those bytes only (its rows start aligned to them);
  /// 0: element copies through registers (an odd count of 16-bit elements: that operand's stages
  /// are filled synchronously). Each operand decides for itself.
  /// @{
  int a_copy_bytes = 0, b_copy_bytes = 0;
  /// @}
  /// Parameters A and B of `input` and C of f32, each shaped as stored (A: m x k or k x m; B: k x n
  /// or n x k; C: m x n or n x m).
  LoweredFunc func;
  /// A one-line summary of the problem and configuration.
  LOOM_DECL std::string describe() const;
};

/// The kernel for one shape: C = A B with A, B and C stored as `a_layout`, `b_layout` and
/// `c_layout` say, with the tile configuration given (`{}`: the default GpuGemmConfig). Throws
/// loom::Error, naming the field, for an input type other than f16, bf16 or f32, or a tile
/// configuration the kernel cannot use.
LOOM_DECL GpuGemm gpu_gemm(int64_t m, int64_t n, int64_t k, DType input, const GpuGemmConfig& config,
                           Layout a_layout = Layout::RowMajor, Layout b_layout = Layout::RowMajor,
                           Layout c_layout = Layout::RowMajor);

/// The kernel for row-major A, B and C with the configuration the tuning database records as fastest
/// for the problem (recorded_gpu_gemm_config: after lib::tune_gpu_gemm, or with LOOM_TUNE=1), else the
/// default GpuGemmConfig. For other layouts, pass recorded_gpu_gemm_config(m, n, k, input, a_layout,
/// b_layout) as the configuration.
LOOM_DECL GpuGemm gpu_gemm(int64_t m, int64_t n, int64_t k, DType input = f16);

/// The configuration gpu_gemm() uses when given none: where the default database holds records of a
/// GPU tuner (or LOOM_TUNE=1 asks to tune), lib::tuned_gpu_gemm_config's (lib/gpu_gemm_tuning.hpp) for
/// the architecture of the GPU present, or for sm_90 (the H100 model) where there is none; otherwise,
/// or for a GPU the model does not describe, the default GpuGemmConfig. Looking a record up starts no
/// CUDA driver in this process.
LOOM_DECL GpuGemmConfig recorded_gpu_gemm_config(int64_t m, int64_t n, int64_t k, DType input,
                                                 Layout a_layout = Layout::RowMajor,
                                                 Layout b_layout = Layout::RowMajor);

}  // namespace loom::lib

#if LOOM_HEADER_ONLY
#include "loom/lib/impl/gpu_gemm.hpp"
// recorded_gpu_gemm_config's definition (its header includes this one first).
#include "loom/lib/gpu_gemm_tuning.hpp"
#endif
