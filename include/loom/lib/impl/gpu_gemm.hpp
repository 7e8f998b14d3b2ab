// The tensor-core GEMM's kernel, built as loop IR: the multistage k loop (cp.async or element
// copies into `stages` shared buffers), ldmatrix fragments and mma.sync m16n8k16, then the guarded
// store of the accumulators.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/gpu_gemm.hpp");

#include <limits>
#include <string>
#include <vector>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/stmt.hpp"
#include "loom/lib/gpu_gemm.hpp"
#include "loom/lower/lower.hpp"
#include "loom/te/ptx_intrinsics.hpp"

namespace loom::lib {

namespace detail {

class GpuGemmBuilder {
 public:
  explicit GpuGemmBuilder(const GpuGemm& g) : g_(g), c_(g.config) {
    warps_n_ = c_.block_n / c_.warp_n;
    threads_ = 32 * (c_.block_m / c_.warp_m) * warps_n_;
    pitch_a_ = c_.block_k + 8;  // 16 bytes of padding: ldmatrix's 8 rows fall in distinct banks
    pitch_b_ = c_.block_n + 8;
    m_tiles_ = c_.warp_m / 16;
    n_tiles_ = c_.warp_n / 8;
  }

  LoweredFunc build() {
    LoweredFunc f;
    f.name = cat("gpu_gemm_", g_.input.str());
    add_param(f, "A", a_, g_.input, g_.m, g_.k);
    add_param(f, "B", b_, g_.input, g_.k, g_.n);
    add_param(f, "C", out_, f32, g_.m, g_.n);
    bx_ = Var("block_n", i32);
    by_ = Var("block_m", i32);
    tx_ = Var("tx", i32);
    as_ = Var("A_shared", handle_type);
    bs_ = Var("B_shared", handle_type);
    acc_ = Var("acc", handle_type);
    af_ = Var("a_frag", handle_type);
    bf_ = Var("b_frag", handle_type);
    kt_ = Var("kt", i32);
    stage_ = Var("stage", handle_type);
    lane_ = tx_ % 32;
    const Expr warp = tx_ / 32;
    warp_row_ = warp / warps_n_ * c_.warp_m;
    warp_col_ = warp % warps_n_ * c_.warp_n;
    m0_ = by_ * c_.block_m;
    n0_ = bx_ * c_.block_n;

    k_tiles_ = static_cast<int>((g_.k + c_.block_k - 1) / c_.block_k);
    std::vector<Stmt> body;
    const int acc_elems = m_tiles_ * n_tiles_ * 4;
    Var i("i", i32);
    body.push_back(
        ForNode::make(i, 0, acc_elems, ForKind::Unrolled, StoreNode::make(acc_, make_const(f32, 0.0), i)));
    // Prologue: stages - 1 tiles in flight (a group per stage even when K has fewer tiles, so that
    // the loop's wait_group counts stay right).
    for (int s = 0; s < c_.stages - 1; ++s) {
      if (s < k_tiles_)
        body.push_back(load_tile(Expr(s), Expr(s), s == k_tiles_ - 1 && g_.k % c_.block_k != 0));
      if (g_.async_copies) body.push_back(warp_intrinsic_call(ptx::cp_async_commit, {}));
    }
    // The stage that step kt multiplies, kept in a register: kt % stages would cost a division
    // per step.
    body.push_back(StoreNode::make(stage_, Expr(0), Expr(0)));
    // Each step: wait for tile kt, let every thread see it, refill the stage that step kt - 1 read
    // (all threads are past it: they passed the barrier), multiply tile kt.
    const Expr stage = LoadNode::make(i32, stage_, Expr(0));
    std::vector<Stmt> step;
    if (g_.async_copies) step.push_back(warp_intrinsic_call(ptx::cp_async_wait(c_.stages - 2), {}));
    step.push_back(BarrierNode::make(scope::shared));
    const Expr next = kt_ + (c_.stages - 1);
    const Expr refill = select(stage == 0, Expr(c_.stages - 1), stage - 1);
    // Only the last tile can reach past K: the others copy without a k bound.
    Stmt load = load_tile(refill, next, false);
    if (g_.k % c_.block_k != 0)
      load = IfThenElseNode::make(next < k_tiles_ - 1, load,
                                  IfThenElseNode::make(next == k_tiles_ - 1, load_tile(refill, next, true)));
    else
      load = IfThenElseNode::make(next < k_tiles_, load);
    step.push_back(load);
    if (g_.async_copies) step.push_back(warp_intrinsic_call(ptx::cp_async_commit, {}));
    step.push_back(multiply(stage));
    step.push_back(StoreNode::make(stage_, select(stage == c_.stages - 1, Expr(0), stage + 1), Expr(0)));
    body.push_back(ForNode::make(kt_, 0, k_tiles_, ForKind::Serial, SeqNode::make(step)));
    if (g_.async_copies) body.push_back(warp_intrinsic_call(ptx::cp_async_wait(0), {}));
    body.push_back(store_c());

    Stmt s = SeqNode::make(body);
    s = AllocateNode::make(stage_, i32, {Expr(1)}, scope::local, s);
    s = AllocateNode::make(bf_, g_.input, {Expr(n_tiles_ * 4)}, scope::local, s);
    s = AllocateNode::make(af_, g_.input, {Expr(m_tiles_ * 8)}, scope::local, s);
    s = AllocateNode::make(acc_, f32, {Expr(acc_elems)}, scope::local, s);
    s = AllocateNode::make(bs_, g_.input, {Expr(c_.stages * c_.block_k * pitch_b_)}, scope::shared, s);
    s = AllocateNode::make(as_, g_.input, {Expr(c_.stages * c_.block_m * pitch_a_)}, scope::shared, s);
    s = ForNode::make(tx_, 0, threads_, ForKind::ThreadBinding, s, thread_tag::threadIdx_x);
    s = ForNode::make(bx_, 0, static_cast<int>((g_.n + c_.block_n - 1) / c_.block_n), ForKind::ThreadBinding,
                      s, thread_tag::blockIdx_x);
    s = ForNode::make(by_, 0, static_cast<int>((g_.m + c_.block_m - 1) / c_.block_m), ForKind::ThreadBinding,
                      s, thread_tag::blockIdx_y);
    f.body = s;
    return lower_from(std::move(f), Phase::Loops);
  }

 private:
  static void add_param(LoweredFunc& f, const std::string& name, Var& data, DType t, int64_t rows,
                        int64_t cols) {
    data = Var(name, handle_type);
    FuncParam p;
    p.buffer = BufferParam{name,
                           data,
                           t,
                           {Expr(static_cast<int>(rows)), Expr(static_cast<int>(cols))},
                           {Expr(static_cast<int>(cols)), Expr(1)}};
    f.params.push_back(p);
  }

  /// Copies the tiles of k-step `kt` (zeros past M and N, and past K where `past_k`) into stage
  /// `stage`.
  Stmt load_tile(const Expr& stage, const Expr& kt, bool past_k) {
    const Expr k0 = kt * c_.block_k;
    const int64_t no_bound = std::numeric_limits<int32_t>::max();
    const int64_t k_bound = past_k ? g_.k : no_bound;
    std::vector<Stmt> copies;
    // A: block_m x block_k of rows m0.., columns k0..; B: block_k x block_n of rows k0.., columns n0...
    copies.push_back(copy_tile(a_, as_, stage * (c_.block_m * pitch_a_), c_.block_m, c_.block_k, pitch_a_,
                               m0_, k0, g_.m, k_bound, g_.k));
    copies.push_back(copy_tile(b_, bs_, stage * (c_.block_k * pitch_b_), c_.block_k, c_.block_n, pitch_b_, k0,
                               n0_, k_bound, g_.n, g_.n));
    return SeqNode::make(copies);
  }

  /// rows x cols elements of `src` (row-major with `src_cols` columns) from (row0, col0) into `dst`
  /// at `dst_base` with row pitch `pitch`; elements at or past row `row_bound` or column
  /// `col_bound` become 0 (a bound of 2^31 - 1 is no check).
  Stmt copy_tile(const Var& src, const Var& dst, const Expr& dst_base, int rows, int cols, int pitch,
                 const Expr& row0, const Expr& col0, int64_t row_bound, int64_t col_bound, int64_t src_cols) {
    const int per_copy = g_.async_copies ? 8 : 1;  // elements per copy
    const int copies = rows * cols / per_copy;
    const int per_thread = (copies + threads_ - 1) / threads_;
    Var i(cat(src.name(), "_copy"), i32);
    const Expr c = tx_ + i * threads_;
    const Expr r = c / (cols / per_copy), col = c % (cols / per_copy) * per_copy;
    const Expr grow = row0 + r, gcol = col0 + col;
    const int64_t no_bound = std::numeric_limits<int32_t>::max();
    Expr inside = make_const(boolean, 1.0);
    if (row_bound != no_bound) inside = grow < static_cast<int>(row_bound);
    if (col_bound != no_bound) inside = inside && gcol < static_cast<int>(col_bound);
    const Expr src_index = select(inside, grow * static_cast<int>(src_cols) + gcol, Expr(0));
    const Expr dst_index = dst_base + r * pitch + col;
    Stmt copy;
    if (g_.async_copies) {
      // K and N are multiples of 8: a 16-byte chunk is wholly inside or wholly outside.
      copy = warp_intrinsic_call(ptx::cp_async_cg16, {{dst, g_.input, dst_index},
                                                      {src, g_.input, src_index},
                                                      {Var(), i32, select(inside, Expr(16), Expr(0))}});
    } else {
      const Expr value = if_then_else(inside, LoadNode::make(g_.input, src, src_index), make_zero(g_.input));
      copy = StoreNode::make(dst, value, dst_index);
    }
    if (copies % threads_ != 0) copy = IfThenElseNode::make(c < copies, copy);
    return ForNode::make(i, 0, per_thread, ForKind::Unrolled, copy);
  }

  /// The warp's mma over stage `stage`: for each 16-deep slice, A fragments of its m tiles and B
  /// fragments of its n tiles by ldmatrix, then one mma per (m tile, n tile).
  Stmt multiply(const Expr& stage) {
    std::vector<Stmt> s;
    const Expr a_base = stage * (c_.block_m * pitch_a_), b_base = stage * (c_.block_k * pitch_b_);
    for (int kk = 0; kk < c_.block_k / 16; ++kk) {
      // ldmatrix.x4: lane l addresses row l % 16, column 8 (l / 16) of the 16 x 16 slice: the
      // four 8x8 matrices are then a0-a1, a2-a3, a4-a5, a6-a7 of the fragment.
      for (int mi = 0; mi < m_tiles_; ++mi) {
        const Expr row = warp_row_ + mi * 16 + lane_ % 16;
        s.push_back(warp_intrinsic_call(
            ptx::ldmatrix(4, false), {{af_, g_.input, Expr(mi * 8)},
                                      {as_, g_.input, a_base + row * pitch_a_ + kk * 16 + lane_ / 16 * 8}}));
      }
      // ldmatrix.x4.trans on B (k rows, n contiguous): k rows 0-7 and 8-15 of two n tiles.
      for (int ni = 0; ni < n_tiles_; ni += 2) {
        const Expr row = kk * 16 + lane_ % 16, col = warp_col_ + ni * 8 + lane_ / 16 * 8;
        s.push_back(warp_intrinsic_call(
            ptx::ldmatrix(4, true),
            {{bf_, g_.input, Expr(ni * 4)}, {bs_, g_.input, b_base + row * pitch_b_ + col}}));
      }
      for (int mi = 0; mi < m_tiles_; ++mi)
        for (int ni = 0; ni < n_tiles_; ++ni) {
          const Expr acc = Expr((mi * n_tiles_ + ni) * 4);
          s.push_back(warp_intrinsic_call(g_.input == bf16 ? ptx::mma_bf16 : ptx::mma_f16,
                                          {{acc_, f32, acc},
                                           {af_, g_.input, Expr(mi * 8)},
                                           {bf_, g_.input, Expr(ni * 4)},
                                           {acc_, f32, acc}}));
        }
    }
    return SeqNode::make(s);
  }

  /// Each lane's accumulators to C (c0..c3 of each m16n8 tile: PTX's C fragment), inside M x N.
  Stmt store_c() {
    std::vector<Stmt> s;
    const Expr g = lane_ / 4, t = lane_ % 4;
    for (int mi = 0; mi < m_tiles_; ++mi)
      for (int ni = 0; ni < n_tiles_; ++ni)
        for (int e = 0; e < 4; ++e) {
          const Expr row = m0_ + warp_row_ + mi * 16 + g + (e / 2) * 8;
          const Expr col = n0_ + warp_col_ + ni * 8 + t * 2 + e % 2;
          const Expr value = LoadNode::make(f32, acc_, Expr((mi * n_tiles_ + ni) * 4 + e));
          s.push_back(IfThenElseNode::make(row < static_cast<int>(g_.m) && col < static_cast<int>(g_.n),
                                           StoreNode::make(out_, value, row * static_cast<int>(g_.n) + col)));
        }
    return SeqNode::make(s);
  }

  const GpuGemm& g_;
  const GpuGemmConfig& c_;
  int warps_n_ = 0, threads_ = 0, pitch_a_ = 0, pitch_b_ = 0, m_tiles_ = 0, n_tiles_ = 0, k_tiles_ = 0;
  Var a_, b_, out_, bx_, by_, tx_, as_, bs_, acc_, af_, bf_, kt_, stage_;
  Expr lane_, warp_row_, warp_col_, m0_, n0_;
};

}  // namespace detail

LOOM_DECL std::string GpuGemm::describe() const {
  return cat("gpu_gemm ", m, "x", n, "x", k, " ", input.str(), " -> float32: block ", config.block_m, "x",
             config.block_n, "x", config.block_k, ", warp ", config.warp_m, "x", config.warp_n, ", ",
             config.stages, " stages, ",
             async_copies ? "cp.async 16-byte copies" : "element copies (K or N not a multiple of 8)",
             ", mma.sync m16n8k16");
}

LOOM_DECL GpuGemm gpu_gemm(int64_t m, int64_t n, int64_t k, DType input, GpuGemmConfig config) {
  auto refuse = [](const std::string& what) { throw Error(cat("gpu_gemm: ", what)); };
  if (input != f16 && input != bf16)
    refuse(cat("input type ", input.str(),
               " is not supported; the tensor-core GEMM takes float16 or bfloat16 "
               "(tf32 is not built yet: use lib::streamk_gemm for float32)"));
  if (m < 1 || n < 1 || k < 1) refuse(cat("the shape ", m, "x", n, "x", k, " must be positive"));
  if (m >= (int64_t{1} << 31) / std::max<int64_t>(k, n) || n >= (int64_t{1} << 31) / k)
    refuse(
        cat("the shape ", m, "x", n, "x", k, " has 2^31 or more elements in A, B or C; 32-bit indices only"));
  const GpuGemmConfig& c = config;
  if (c.block_k % 16 != 0 || c.block_k < 16)
    refuse(cat("config.block_k = ", c.block_k, " must be a multiple of 16"));
  if (c.warp_m % 16 != 0 || c.warp_m < 16)
    refuse(cat("config.warp_m = ", c.warp_m, " must be a multiple of 16"));
  if (c.warp_n % 16 != 0 || c.warp_n < 16)
    refuse(
        cat("config.warp_n = ", c.warp_n, " must be a multiple of 16 (ldmatrix.x4 loads two n tiles of 8)"));
  if (c.block_m % c.warp_m != 0 || c.block_n % c.warp_n != 0)
    refuse(cat("config.block_m x block_n = ", c.block_m, "x", c.block_n,
               " must be a multiple of the warp tile ", c.warp_m, "x", c.warp_n));
  const int threads = 32 * (c.block_m / c.warp_m) * (c.block_n / c.warp_n);
  if (threads > 1024) refuse(cat("the config has ", threads, " threads per block; CUDA allows 1024"));
  if (c.stages < 2 || c.stages > 8) refuse(cat("config.stages = ", c.stages, " must be 2 to 8"));
  GpuGemm g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.input = input;
  g.config = config;
  // 16-byte copies need every chunk of 8 elements to start 16-byte aligned in A and B.
  g.async_copies = k % 8 == 0 && n % 8 == 0 && c.block_k % 8 == 0 && c.block_n % 8 == 0;
  g.func = detail::GpuGemmBuilder(g).build();
  return g;
}

}  // namespace loom::lib
