// loom::lib::gemm: the tensors and the schedule of C = op(A) x op(B) on the CPU (f32/f64, any
// shape, row- or column-major, transposed operands, batched), BLIS-style, from Loom's primitives:
// data-parallel (lib/impl/gemm.hpp) or Stream-K over the thread pool (lib/impl/gemm_streamk.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "loom/lib/gemm_config.hpp"
#include "loom/lib/gemm_epilogue.hpp"
#include "loom/lib/matrix_layout.hpp"
#include "loom/lib/streamk_decomposition.hpp"
#include "loom/lower/lower.hpp"
#include "loom/schedule/schedule.hpp"
#include "loom/support/config.hpp"
#include "loom/te/tensor.hpp"

/// Library schedules built on Loom's primitives: CPU GEMM (gemm), Stream-K GEMM on GPUs
/// (streamk_gemm), tensor-core GEMM (gpu_gemm), and a tiled GPU GEMM (gpu_tiled_gemm).
namespace loom::lib {

/// C[m, n] = sum_k op(A)[m, k] * op(B)[k, n], op(X) = X or X^T; with batch > 0, every operand has a
/// leading batch dimension and each batch is an independent product.
struct GemmProblem {
  /// The product's sizes: C is m x n, the sum runs over k.
  /// @{
  int64_t m = 1, n = 1, k = 1;
  /// @}
  int64_t batch = 0;  ///< 0: not batched
  /// The element type of A, and of B and C unless b_dtype / c_dtype say otherwise (float32 by default).
  /// Supported: float32 or float64 throughout; bfloat16 A and B with a float32 C; 8-bit integer A and B
  /// (int8 or uint8, each) with an int32 C. The 8-bit products are exact. The bfloat16 products are
  /// exact in float32 and summed in float32; where the micro-kernel uses vdpbf16ps (GemmConfig::dot,
  /// chosen by this CPU and the shape) the sums also flush subnormals to zero, so results may differ
  /// in the last bits between shapes.
  DType dtype = f32;
  /// B's element type where it differs from A's (int8 x uint8); unset: dtype.
  std::optional<DType> b_dtype;
  /// C's element type (float32 for bfloat16 inputs, int32 for 8-bit ones); unset: dtype, or the
  /// accumulator those inputs need.
  std::optional<DType> c_dtype;
  bool transpose_a = false;  ///< A is stored as the k x m matrix A^T
  bool transpose_b = false;  ///< B is stored as the n x k matrix B^T
  /// The storage order of all three matrices.
  Layout layout = Layout::RowMajor;
  /// Applied to each element of the product as C is written (bias, activation, ...); none when empty.
  GemmEpilogue epilogue;

  /// The element types of A, B and C, defaults resolved.
  /// @{
  DType a_type() const { return dtype; }
  DType b_type() const { return b_dtype.value_or(dtype); }
  DType c_type() const {
    if (c_dtype) return *c_dtype;
    if (dtype.is_bfloat()) return f32;
    if (dtype.is_int() || dtype.is_uint()) return i32;
    return dtype;
  }
  /// @}
};

/// The result of gemm(): the placeholders to pass (A, B), the output C and its schedule.
/// Shapes, in storage order: A [batch,] rows x cols of how it is stored, likewise B and C.
struct Gemm {
  /// The inputs A and B and the output C, shaped as stored.
  /// @{
  Tensor A, B, C;
  /// @}
  /// C's schedule, ready to lower.
  Schedule schedule;
  /// The problem as given.
  GemmProblem problem;
  /// The tile sizes chosen (or given).
  GemmConfig config;
  /// The arguments of lower()/build(): A, B, the epilogue's inputs, C.
  std::vector<LowerArg> args() const {
    std::vector<LowerArg> a{A, B};
    for (const Tensor& t : problem.epilogue.inputs) a.emplace_back(t);
    a.emplace_back(C);
    return a;
  }
};

/// The Stream-K work split of a problem with tile sizes `cfg` (after gemm()'s adjustments): the
/// same plan plan_decomposition() makes, over the padded tiles of C and the kc-blocks of K.
struct StreamKLayout {
  /// The tile of C (bm x bn) and the K step of one MAC-loop iteration (kc).
  /// @{
  int64_t bm = 0, bn = 0, kc = 0;
  /// @}
  /// Tiles of C, row-major: tile t is (t / tiles_n, t % tiles_n).
  /// @{
  int64_t tiles_m = 0, tiles_n = 0;
  /// @}
  int64_t iterations_per_tile = 0;  ///< kc-blocks of the (zero-padded) K
  int64_t workers = 0;              ///< workers of the parallel loop (at most the iterations)
  int64_t segments = 0;             ///< most tiles one worker touches
  /// Worker w runs iterations [first(w), first(w + 1)), first(w) = w * per_worker + min(w, extra).
  /// @{
  int64_t per_worker = 0, extra = 0;
  /// @}
  /// The same split as work units per worker, as plan_decomposition() gives it.
  DecompositionPlan plan;

  /// tiles_m * tiles_n.
  int64_t tiles() const { return tiles_m * tiles_n; }
  /// All MAC-loop iterations: tiles() * iterations_per_tile.
  int64_t iterations() const { return tiles() * iterations_per_tile; }
};

/// The tensors and schedule of C = op(A) x op(B) with the given tile sizes.
LOOM_DECL Gemm gemm(const GemmProblem& problem, const GemmConfig& config);

/// The tensors and schedule of C = op(A) x op(B), tile sizes from this CPU's caches and SIMD width.
LOOM_DECL Gemm gemm(const GemmProblem& problem);

/// The Stream-K split gemm() would make for `problem` with `config` (decomposition StreamK),
/// e.g. to print it or to check the load balance.
LOOM_DECL StreamKLayout streamk_layout(const GemmProblem& problem, const GemmConfig& config);

}  // namespace loom::lib

#if LOOM_HEADER_ONLY
#include "loom/lib/impl/gemm.hpp"
#endif
