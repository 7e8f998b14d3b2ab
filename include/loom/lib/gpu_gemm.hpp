// The tensor-core GPU GEMM: C (f32) = A B for f16 or bf16 inputs, row-major, any M, N, K. Each
// block computes a block_m x block_n tile with warps of warp_m x warp_n tiles; the k loop stages
// tiles of A and B in shared memory `stages` deep (cp.async when K and N allow 16-byte copies,
// element copies otherwise), loads fragments with ldmatrix and multiplies with mma.sync m16n8k16.
#pragma once

#include <cstdint>
#include <string>

#include "loom/lower/lowered_func.hpp"
#include "loom/support/config.hpp"

namespace loom::lib {

/// The defaults measured best of nine tile and stage choices on an H200 (docs/gpu-measurements.md).
struct GpuGemmConfig {
  /// The block tile of C (block_m x block_n) and the K step of one pipeline stage (block_k).
  /// @{
  int block_m = 128, block_n = 128, block_k = 64;
  /// @}
  /// The warp tile: the part of the block tile one warp computes with tensor core instructions.
  /// @{
  int warp_m = 64, warp_n = 64;
  /// @}
  /// Shared-memory stages of the k loop: 2 is double buffering; 3-4 hide global latency.
  int stages = 3;
};

/// What gpu_gemm() returns: the problem, the configuration and the lowered function to build.
struct GpuGemm {
  /// The sizes: C (m x n) = A (m x k) * B (k x n).
  /// @{
  int64_t m = 0, n = 0, k = 0;
  /// @}
  /// The element type of A and B (f16 or bf16).
  DType input = f16;
  /// The tile and stage choices.
  GpuGemmConfig config;
  /// 16-byte cp.async copies of A and B tiles (K and N multiples of 8), or element copies through
  /// registers (any K and N; the stages are then filled synchronously).
  bool async_copies = false;
  /// Parameters A (m x k), B (k x n) of `input` and C (m x n) of f32, row-major.
  LoweredFunc func;
  /// A one-line summary of the problem and configuration.
  LOOM_DECL std::string describe() const;
};

/// The kernel for one shape. Throws loom::Error, naming the field, for an input type other than
/// f16/bf16 or a tile configuration the kernel cannot use.
LOOM_DECL GpuGemm gpu_gemm(int64_t m, int64_t n, int64_t k, DType input = f16, GpuGemmConfig config = {});

}  // namespace loom::lib

#if LOOM_HEADER_ONLY
#include "loom/lib/impl/gpu_gemm.hpp"
#endif
