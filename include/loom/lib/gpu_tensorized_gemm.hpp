// A tensor-core GEMM written as a TE schedule, not as IR: each warp keeps its tiles of A, B and C in
// "local.fragment" buffers, and tensorize turns the 16 x 16 / 16 x 8 loops that fill, multiply and
// store them into ldmatrix, mma.sync and the C fragment's stores (te/ptx_tensor_intrins.hpp). The
// schedule is returned, so it can be changed before it is lowered; lib::gpu_gemm is the hand-built
// kernel for any shape, with swizzled tiles and per-operand copy widths.
#pragma once

#include <string>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/lib/matrix_layout.hpp"
#include "loom/lower/lower.hpp"
#include "loom/schedule/schedule.hpp"
#include "loom/te/compute.hpp"
#include "loom/te/placeholder.hpp"
#include "loom/te/ptx_tensor_intrins.hpp"
#include "loom/te/reduction.hpp"
#include "loom/te/thread_axis.hpp"

namespace loom::lib {

/// The tiles of gpu_tensorized_gemm(): each divides the one above it and the problem.
struct TensorizedGemmConfig {
  /// The block tile (C rows x columns).
  /// @{
  int block_m = 128, block_n = 128;
  /// @}
  /// The K depth of one shared-memory step; 0: 64 bytes of K, 32 for 16-bit inputs and 16 for f32
  /// (32 would take 107 KB of shared memory at 3 stages: one block per A100 SM).
  int block_k = 0;
  /// The tile of C one warp computes (multiples of 16 x 8): block_m / warp_m x block_n / warp_n warps.
  /// @{
  int warp_m = 64, warp_n = 64;
  /// @}
  /// Shared-memory slots of A and B filled by cp.async ahead of their use (Stage::pipeline);
  /// 0 copies synchronously into one slot.
  int stages = 3;
  /// The mma tensor intrinsic; empty: ptx_tensor::mma for the input type and layouts. Another one must
  /// compute the same 16 x 8 x 16 product (for instance with a different fragment mapping).
  TensorIntrin mma;
};

/// What gpu_tensorized_gemm() returns: the tensors and their schedule, to lower or build.
struct TensorizedGemm {
  /// A (m x k, or k x m when column-major), B (k x n, or n x k when column-major) and C (m x n, f32).
  /// @{
  Tensor A, B, C;
  /// @}
  Schedule schedule;  ///< C's schedule, ready to lower or build for Target::cuda() or cuda_sim()
  /// The stages to change before lowering: A's and B's shared tiles, their fragments, and C's
  /// accumulator fragment.
  /// @{
  Tensor A_shared, B_shared, A_fragment, B_fragment, C_fragment;
  /// @}
};

namespace detail {

/// A shared tile copied with 16-byte vectors, spread over every thread of the block. Each thread's
/// copies stay a loop: unrolled, ptxas keeps every copy's addresses live (sm_80, the default tiles:
/// 204 registers instead of 166, for no fewer instructions per K step).
inline void schedule_tile_copy(Schedule& s, const Tensor& t, int warps_m, int warps_n, int lanes) {
  auto [chunk, vector] = s[t].split(t.axis(1), lanes);
  IterVar fused = s[t].fuse(t.axis(0), chunk);
  auto [rest, x] = s[t].split(fused, 32);
  auto [rest_y, y] = s[t].split(rest, warps_n);
  auto [steps, z] = s[t].split(rest_y, warps_m);
  (void)steps;
  s[t].bind(x, thread_axis(thread_tag::threadIdx_x));
  s[t].bind(y, thread_axis(thread_tag::threadIdx_y));
  s[t].bind(z, thread_axis(thread_tag::threadIdx_z));
  s[t].vectorize(vector);
}

inline void check_tensorized_gemm(int64_t m, int64_t n, int64_t k, DType input,
                                  const TensorizedGemmConfig& c) {
  // tile must be a positive multiple of `unit` and divide `size`: tensorize replaces whole tiles.
  auto check = [](const char* what, int64_t tile, const std::string& unit_name, int64_t unit, const char* of,
                  int64_t size) {
    if (tile > 0 && tile % unit == 0 && size % tile == 0) return;
    throw Error(cat("gpu_tensorized_gemm: ", what, " = ", tile, " must be a positive multiple of ", unit_name,
                    " that divides ", of, " = ", size,
                    " (tensorize replaces whole tiles, so nothing may be left over; pad the problem, or use "
                    "lib::gpu_gemm, which takes any shape)"));
  };
  if (input != f16 && input != bf16 && input != f32)
    throw Error(cat("gpu_tensorized_gemm: inputs of type ", input.str(),
                    " are not supported; the tensor cores take f16, bf16 or f32 (as tf32)"));
  check("warp_m", c.warp_m, "16", 16, "block_m", c.block_m);
  check("warp_n", c.warp_n, "8", 8, "block_n", c.block_n);
  check("block_m", c.block_m, cat("warp_m (", c.warp_m, ")"), c.warp_m, "m", m);
  check("block_n", c.block_n, cat("warp_n (", c.warp_n, ")"), c.warp_n, "n", n);
  const int ks = ptx_tensor::k_slice(input);
  check("block_k", c.block_k, std::to_string(ks), ks, "k", k);
  if (c.stages < 0 || c.stages == 1 || c.stages > 8)
    throw Error(cat("gpu_tensorized_gemm: stages = ", c.stages, " must be 0 (synchronous copies) or 2 to 8"));
}

}  // namespace detail

/// C (m x n, f32) = A (m x k) B on tensor cores, as a TE schedule. Inputs f16 or bf16 are summed in
/// f32; f32 inputs are read as tf32 (the tensor core ignores their 13 low mantissa bits). A and B
/// are each row-major (A m x k, B k x n) or column-major (stored k x m and n x k), as in
/// lib::gpu_gemm. Blocks of block_m x block_n (blockIdx.y, blockIdx.x); warps of warp_m x warp_n
/// (threadIdx.z, threadIdx.y; 32 lanes each on threadIdx.x); A and B tiles of block_k staged in
/// shared memory (rows padded so that ldmatrix is conflict-free) and pipelined; per k slice (16, or
/// 8 for tf32) ldmatrix into fragments (B 16 columns at a time where warp_n allows; tf32 tiles with
/// m or n contiguous by 32-bit loads) and one mma per 16 x 8 tile of the warp's C. Every tile must
/// divide the one above it and the problem (a loom::Error says which does not).
inline TensorizedGemm gpu_tensorized_gemm(int m, int n, int k, DType input = f16,
                                          const TensorizedGemmConfig& config = {},
                                          Layout a_layout = Layout::RowMajor,
                                          Layout b_layout = Layout::RowMajor) {
  TensorizedGemmConfig c = config;
  if (c.block_k == 0) c.block_k = 64 / input.bytes();
  detail::check_tensorized_gemm(m, n, k, input, c);
  const bool mk = a_layout == Layout::RowMajor, kn = b_layout == Layout::RowMajor;
  const ptx_tensor::ALayout a_tiles = mk ? ptx_tensor::ALayout::MK : ptx_tensor::ALayout::KM;
  const ptx_tensor::BLayout b_tiles = kn ? ptx_tensor::BLayout::KN : ptx_tensor::BLayout::NK;
  TensorizedGemm g;
  g.A = mk ? placeholder({m, k}, input, "A") : placeholder({k, m}, input, "A");
  g.B = kn ? placeholder({k, n}, input, "B") : placeholder({n, k}, input, "B");
  const Tensor A = g.A, B = g.B;
  IterVar r = reduce_axis(0, k, "k");
  auto widen = [&](Expr x) { return input == f32 ? x : cast(f32, x); };  // as ptx_tensor::mma computes
  g.C = compute(
      {m, n},
      [&](Expr i, Expr j) { return sum(widen(mk ? A(i, r) : A(r, i)) * widen(kn ? B(r, j) : B(j, r)), {r}); },
      "C");
  const Tensor C = g.C;
  Schedule s = create_schedule(C);
  Tensor AS = s.cache_read(A, scope::shared, {C}), BS = s.cache_read(B, scope::shared, {C});
  Tensor AF = s.cache_read(AS, scope::fragment, {C}), BF = s.cache_read(BS, scope::fragment, {C});
  Tensor CF = s.cache_write(C, scope::fragment);
  const int warps_m = c.block_m / c.warp_m, warps_n = c.block_n / c.warp_n;

  // C: blocks, then warps, then 16 x 8 tiles stored from the accumulator fragment.
  auto [bi, i1] = s[C].split(C.axis(0), c.block_m);
  auto [bj, j1] = s[C].split(C.axis(1), c.block_n);
  auto [wi, i2] = s[C].split(i1, c.warp_m);
  auto [wj, j2] = s[C].split(j1, c.warp_n);
  auto [ti, i3] = s[C].split(i2, 16);
  auto [tj, j3] = s[C].split(j2, 8);
  s[C].reorder({bi, bj, wi, wj, ti, tj, i3, j3});
  s[C].bind(bi, thread_axis(thread_tag::blockIdx_y));
  s[C].bind(bj, thread_axis(thread_tag::blockIdx_x));
  s[C].bind(wi, thread_axis(thread_tag::threadIdx_z));
  s[C].bind(wj, thread_axis(thread_tag::threadIdx_y));
  s[C].unroll(ti);  // constant fragment indices keep the fragments in registers
  s[C].unroll(tj);
  s[C].tensorize(i3, ptx_tensor::store_c());

  // The warp's accumulators: per block_k step and k slice (16, or 8 for tf32), one mma per 16 x 8 tile.
  const int ks = ptx_tensor::k_slice(input);
  s[CF].compute_at(s[C], wj);
  auto [ko, kin] = s[CF].split(CF.reduce_axis(0), c.block_k);
  auto [kk, ki] = s[CF].split(kin, ks);
  auto [cti, ci] = s[CF].split(CF.axis(0), 16);
  auto [ctj, cj] = s[CF].split(CF.axis(1), 8);
  s[CF].reorder({ko, kk, cti, ctj, ci, cj, ki});
  s[CF].unroll(kk);
  s[CF].unroll(cti);
  s[CF].unroll(ctj);
  s[CF].tensorize(ci, c.mma ? c.mma : ptx_tensor::mma(input, b_tiles, a_tiles));

  // The A and B fragments of one k slice, from the shared tiles.
  s[AF].compute_at(s[CF], kk);
  if (mk) {  // A[m, k]: 16 x ks tiles
    auto [ati, ai] = s[AF].split(AF.axis(0), 16);
    s[AF].unroll(ati);
    s[AF].tensorize(ai, ptx_tensor::load_a(input, a_tiles));
  } else {  // A[k, m]: ks x 16 tiles, k down the rows
    auto [ati, ai] = s[AF].split(AF.axis(1), 16);
    s[AF].reorder({ati, AF.axis(0), ai});
    s[AF].unroll(ati);
    s[AF].tensorize(AF.axis(0), ptx_tensor::load_a(input, a_tiles));
  }
  s[BF].compute_at(s[CF], kk);
  const int b_width = c.warp_n % 16 == 0 ? 16 : 8;  // two mma tiles per ldmatrix where they fit
  if (kn) {                                         // B[k, n]: 16 x b_width tiles, k down the rows
    auto [btj, bj2] = s[BF].split(BF.axis(1), b_width);
    s[BF].reorder({btj, BF.axis(0), bj2});
    s[BF].unroll(btj);
    s[BF].tensorize(BF.axis(0), ptx_tensor::load_b(input, b_tiles, b_width));
  } else {  // B[n, k]: b_width x ks tiles
    auto [btj, bj2] = s[BF].split(BF.axis(0), b_width);
    s[BF].unroll(btj);
    s[BF].tensorize(bj2, ptx_tensor::load_b(input, b_tiles, b_width));
  }

  // The shared tiles of one block_k step, rows padded so that the 8 rows one ldmatrix phase reads
  // fall in 8 different groups of 4 banks (16 bytes), and tf32 tiles with m or n contiguous, read
  // by 32-bit loads of 4 rows x 8 columns per warp, in 32 different banks (32 bytes).
  for (const Tensor& t : {AS, BS}) {
    const bool is_b = t.name() == BS.name(), k_rows = is_b ? kn : !mk;  // k runs down the tile's rows
    const int row = k_rows ? (is_b ? c.block_n : c.block_m) : c.block_k;
    const int pad_bytes = k_rows && input == f32 ? 32 : 16;
    s[t].compute_at(s[CF], ko);
    detail::schedule_tile_copy(s, t, warps_m, warps_n, 16 / input.bytes());
    // Rows of at most pad_bytes need no padding: 8 of them already cover distinct banks.
    if (row * input.bytes() > pad_bytes) s[t].storage_align(t.axis(0), row, pad_bytes / input.bytes());
    if (c.stages) s[t].pipeline(c.stages);
  }
  g.schedule = s;
  g.A_shared = AS, g.B_shared = BS, g.A_fragment = AF, g.B_fragment = BF, g.C_fragment = CF;
  return g;
}

}  // namespace loom::lib
