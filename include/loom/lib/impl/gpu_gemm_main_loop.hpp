// The tensor-core GEMM's main loop, shared by lib::gpu_gemm (one tile per block, the whole K range)
// and lib::streamk_gemm's tensor-core path (a tile's MAC-loop iterations [k_begin, k_end)): the
// multistage k loop (cp.async or element copies into `stages` shared buffers laid out as A and B
// are stored), fragments by ldmatrix (or shared loads), mma.sync m16n8k16 (f16, bf16) or m16n8k8
// (tf32); and the checks of a problem and configuration both kernels share.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/gpu_gemm.hpp");

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "loom/ir/bitwise_op.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/stmt.hpp"
#include "loom/lib/gpu_gemm.hpp"
#include "loom/te/ptx_intrinsics.hpp"

namespace loom::lib {

namespace detail {

/// How each operand's tile sits in shared memory and how a warp reads its fragments.
///
/// A tile is staged as its operand is stored (A row-major: block_m rows of block_k; A column-major:
/// block_k rows of block_m; B row-major: block_k rows of block_n; B column-major: block_n rows of
/// block_k), so that a 16-byte cp.async is 16 contiguous bytes on both sides. Fragments:
/// - 16-bit inputs: ldmatrix.x4 gives a lane the pair of elements adjacent in k (the fragment's
///   register) when k is the tile's contiguous dimension (A row-major, B column-major), and
///   ldmatrix.x4.trans does when k runs down the tile's rows (A column-major, B row-major).
/// - tf32: a 32-bit element is a pair of b16, so untransposed ldmatrix gives lane l element
///   (l / 4, l % 4) of an 8 x 4 f32 matrix: exactly the tf32 fragments' (groupID,
///   threadID_in_group) pattern when k is contiguous. When it is not, .trans would swap the
///   16-bit halves of different elements, so each lane loads its elements with 32-bit shared loads:
///   a warp's load is 128 bytes, one wavefront, the same shared bandwidth as ldmatrix per byte,
///   at four times the instructions (and tf32 mma runs at half the f16 rate, which leaves issue
///   slots for them). Transposing while staging would instead give up 16-byte cp.async.
/// Bank conflicts: ldmatrix reads 8 rows of 16 bytes (one chunk each) per phase, and a cp.async or
/// a copy writes 8 consecutive chunks of a row. A tile read with ldmatrix is XOR-swizzled: chunk c
/// of row r is stored at chunk c ^ ((r / L) % S) of its row, where S = min(chunks per row, 8) and
/// L = 8 / S rows share a 128-byte line. The 8 rows of a phase (consecutive r) then land in 8
/// distinct 16-byte bank groups, a row's 8 chunks stay a permutation of themselves, and the tile
/// needs no padding. That takes rows of a power of two chunks up to 8, or a multiple of 8; other
/// widths are padded by 16 bytes (a pitch that is an odd multiple of 16 bytes). The 32-bit loads'
/// lanes read rows t (0-3) at columns g (0-7), distinct banks when the pitch is 8 or 24 words
/// modulo 32: those tiles are padded by 32 bytes.
class GpuGemmMainLoop {
 public:
  explicit GpuGemmMainLoop(const GpuGemm& g) : g_(g), c_(g.config) {
    warps_n_ = c_.block_n / c_.warp_n;
    threads_ = 32 * (c_.block_m / c_.warp_m) * warps_n_;
    tf32_ = g.input == f32;
    any_async_ = g.a_copy_bytes > 0 || g.b_copy_bytes > 0;
    mma_k_ = tf32_ ? 8 : 16;
    chunk_ = 16 / (g.input.bits / 8);
    a_row_ = g.a_layout == Layout::RowMajor;
    b_row_ = g.b_layout == Layout::RowMajor;
    a_rows_ = a_row_ ? c_.block_m : c_.block_k;
    a_cols_ = a_row_ ? c_.block_k : c_.block_m;
    b_rows_ = b_row_ ? c_.block_k : c_.block_n;
    b_cols_ = b_row_ ? c_.block_n : c_.block_k;
    a_scalar_ = tf32_ && !a_row_;
    b_scalar_ = tf32_ && b_row_;
    a_swizzle_ = !a_scalar_ && swizzles(a_cols_ / chunk_);
    b_swizzle_ = !b_scalar_ && swizzles(b_cols_ / chunk_);
    pitch_a_ = a_cols_ + (a_swizzle_ ? 0 : a_scalar_ ? 8 : chunk_);
    pitch_b_ = b_cols_ + (b_swizzle_ ? 0 : b_scalar_ ? 8 : chunk_);
    m_tiles_ = c_.warp_m / 16;
    n_tiles_ = c_.warp_n / 8;
    a_elems_ = 16 * mma_k_ / 32;
    b_elems_ = 8 * mma_k_ / 32;
    k_tiles_ = static_cast<int>((g_.k + c_.block_k - 1) / c_.block_k);
    tx_ = Var("tx", i32);
    as_ = Var("A_shared", handle_type);
    bs_ = Var("B_shared", handle_type);
    acc_ = Var("acc", handle_type);
    af_ = Var("a_frag", handle_type);
    bf_ = Var("b_frag", handle_type);
    stage_ = Var("stage", handle_type);
    lane_ = tx_ % 32;
    const Expr warp = tx_ / 32;
    warp_row_ = warp / warps_n_ * c_.warp_m;
    warp_col_ = warp % warps_n_ * c_.warp_n;
  }

  /// Threads per block: the caller binds thread() to threadIdx.x over [0, threads()).
  int threads() const { return threads_; }
  const Var& thread() const { return tx_; }
  /// The f32 accumulators of a thread (local): accumulators() elements, see each_accumulator.
  /// @{
  const Var& accumulator_buffer() const { return acc_; }
  int accumulators() const { return m_tiles_ * n_tiles_ * 4; }
  /// @}

  /// Adds parameters A and B of the input type, each shaped as stored (A: m x k or k x m; B: k x n
  /// or n x k).
  void add_operands(LoweredFunc& f) {
    if (a_row_)
      add_param(f, "A", a_, g_.input, g_.m, g_.k);
    else
      add_param(f, "A", a_, g_.input, g_.k, g_.m);
    if (b_row_)
      add_param(f, "B", b_, g_.input, g_.k, g_.n);
    else
      add_param(f, "B", b_, g_.input, g_.n, g_.k);
  }

  /// The shared stages, the accumulators, fragments and stage register around `body`, which runs
  /// tile_loop() as often as it likes.
  Stmt allocate(Stmt s) const {
    s = AllocateNode::make(stage_, i32, {Expr(1)}, scope::local, s);
    s = AllocateNode::make(bf_, g_.input, {Expr(n_tiles_ * b_elems_)}, scope::local, s);
    s = AllocateNode::make(af_, g_.input, {Expr(m_tiles_ * a_elems_)}, scope::local, s);
    s = AllocateNode::make(acc_, f32, {Expr(accumulators())}, scope::local, s);
    s = AllocateNode::make(bs_, g_.input, {Expr(c_.stages * b_rows_ * pitch_b_)}, scope::shared, s);
    return AllocateNode::make(as_, g_.input, {Expr(c_.stages * a_rows_ * pitch_a_)}, scope::shared, s);
  }

  /// The accumulators of the tile whose corner is (m0, n0) over the whole K range (gpu_gemm).
  Stmt tile_loop(const Expr& m0, const Expr& n0) { return loop(m0, n0, Expr(0), Expr(k_tiles_), true); }

  /// The accumulators of the tile whose corner is (m0, n0) over its k-steps (block_k each) [k_begin,
  /// k_end), 0 <= k_begin < k_end <= the k-steps of K (Stream-K's units). It starts with a barrier:
  /// a block that runs several units overwrites the stages its warps read in the previous one.
  Stmt tile_loop(const Expr& m0, const Expr& n0, const Expr& k_begin, const Expr& k_end) {
    return loop(m0, n0, k_begin, k_end, false);
  }

  /// fn(i, row, col) for each accumulator i of a thread: element (row, col) of the tile (c0..c3 of
  /// each m16n8 tile: PTX's C fragment), in a Seq.
  template <typename Fn>
  Stmt each_accumulator(Fn&& fn) const {
    std::vector<Stmt> s;
    const Expr g = lane_ / 4, t = lane_ % 4;
    for (int mi = 0; mi < m_tiles_; ++mi)
      for (int ni = 0; ni < n_tiles_; ++ni)
        for (int e = 0; e < 4; ++e) {
          const Expr row = warp_row_ + mi * 16 + g + (e / 2) * 8;
          const Expr col = warp_col_ + ni * 8 + t * 2 + e % 2;
          s.push_back(fn((mi * n_tiles_ + ni) * 4 + e, row, col));
        }
    return SeqNode::make(s);
  }

 private:
  /// tile_loop: the whole K range (`whole`: k_begin 0 and k_end the k-steps, as constants, and no
  /// leading barrier) or a part.
  Stmt loop(const Expr& m0, const Expr& n0, const Expr& k_begin, const Expr& k_end, bool whole) {
    m0_ = m0;
    n0_ = n0;
    Var kt("kt", i32);
    std::vector<Stmt> body;
    if (!whole) body.push_back(BarrierNode::make(scope::shared));
    Var i("i", i32);
    body.push_back(ForNode::make(i, 0, accumulators(), ForKind::Unrolled,
                                 StoreNode::make(acc_, make_const(f32, 0.0), i)));
    // Prologue: stages - 1 tiles in flight (a group per stage even when the range has fewer tiles,
    // so that the loop's wait_group counts stay right).
    for (int s = 0; s < c_.stages - 1; ++s) {
      // A part's prologue copies with the k bound, once per unit: one version of the copies
      // instead of the steady loop's two (with and without the bound).
      if (!whole)
        body.push_back(IfThenElseNode::make(k_begin + s < k_end, load_tile(Expr(s), k_begin + s, true)));
      else if (s < k_tiles_)
        body.push_back(load_tile(Expr(s), Expr(s), s == k_tiles_ - 1 && g_.k % c_.block_k != 0));
      if (any_async_) body.push_back(warp_intrinsic_call(ptx::cp_async_commit, {}));
    }
    // The stage that step kt multiplies, kept in a register: kt % stages would cost a division
    // per step.
    body.push_back(StoreNode::make(stage_, Expr(0), Expr(0)));
    // Each step: wait for tile kt, let every thread see it, refill the stage that step kt - 1 read
    // (all threads are past it: they passed the barrier), multiply tile kt.
    const Expr stage = LoadNode::make(i32, stage_, Expr(0));
    std::vector<Stmt> step;
    if (any_async_) step.push_back(warp_intrinsic_call(ptx::cp_async_wait(c_.stages - 2), {}));
    step.push_back(BarrierNode::make(scope::shared));
    const Expr next = (whole ? Expr(kt) : k_begin + kt) + (c_.stages - 1);
    const Expr refill = select(stage == 0, Expr(c_.stages - 1), stage - 1);
    step.push_back(load_step(refill, next, k_end, whole));
    if (any_async_) step.push_back(warp_intrinsic_call(ptx::cp_async_commit, {}));
    step.push_back(multiply(stage));
    step.push_back(StoreNode::make(stage_, select(stage == c_.stages - 1, Expr(0), stage + 1), Expr(0)));
    const Expr steps = whole ? Expr(k_tiles_) : k_end - k_begin;
    body.push_back(ForNode::make(kt, Expr(0), steps, ForKind::Serial, SeqNode::make(step)));
    if (any_async_) body.push_back(warp_intrinsic_call(ptx::cp_async_wait(0), {}));
    return SeqNode::make(body);
  }

  /// Copies k-step `kt` into `stage` when kt < k_end (`whole`: k_end is the k-steps of K, and
  /// the checks against it fold away). Only the last k-step of K can reach past K: the others copy
  /// without a k bound.
  Stmt load_step(const Expr& stage, const Expr& kt, const Expr& k_end, bool whole) {
    const int last = k_tiles_ - 1;
    if (g_.k % c_.block_k == 0) return IfThenElseNode::make(kt < k_end, load_tile(stage, kt, false));
    // k_end <= k-steps: the last k-step is before k_end exactly when k_end is the k-steps.
    const Expr inner = whole ? kt < last : kt < min(k_end, Expr(last));
    const Expr at_last = whole ? kt == last : kt == last && k_end == k_tiles_;
    return IfThenElseNode::make(inner, load_tile(stage, kt, false),
                                IfThenElseNode::make(at_last, load_tile(stage, kt, true)));
  }

  /// Whether rows of `chunks` 16-byte chunks can be XOR-swizzled (see the class comment).
  static bool swizzles(int chunks) { return chunks % 8 == 0 || (chunks < 8 && (chunks & (chunks - 1)) == 0); }

  /// A row or column coordinate in a tile, in three parts: `warp`, the same for every lane of a
  /// warp (a multiple of 8 for rows); `step`, a constant (a multiple of 8 for rows, of a chunk for
  /// columns); `lane`, what varies from lane to lane. Each part's chunk index of a column uses bits
  /// the others leave clear (at every call: lane bit 0, step the bits above it, warp higher), so
  /// that their sum is their XOR.
  struct TileCoord {
    Expr warp;
    int step = 0;
    Expr lane;
  };

  /// The index of element (row, col) of A's (`a`) or B's tile in the stage at `base`. Swizzled,
  /// the column step's low chunk bits are XORed into the whole address last (the stage base and
  /// the rows above leave those bits clear): the address then depends on the loop through the
  /// stage, so the compiler keeps one per k slice and fragment row step instead of hoisting an
  /// address register for every fragment out of the loop (42 more registers, ptxas sm_90).
  Expr tile_index(bool a, const Expr& base, const TileCoord& row, const TileCoord& col) const {
    const int pitch = a ? pitch_a_ : pitch_b_;
    if (!(a ? a_swizzle_ : b_swizzle_))
      return base + (row.warp + row.step + row.lane) * pitch + col.warp + col.step + col.lane;
    const int span = std::min((a ? a_cols_ : b_cols_) / chunk_, 8);  // S: chunks XORed
    // Row r's chunks are XORed with (r / L) % S, L = 8 / S: only the lane part of r counts, the
    // others being multiples of 8 = L S.
    const Expr flip = row.lane / (8 / span) % span;
    const Expr c = col.warp + col.lane;
    const Expr lane = row.lane * pitch + bitwise_xor(c / chunk_, flip) * chunk_ + c % chunk_;
    const int low = col.step / chunk_ % span;
    return bitwise_xor(base + row.warp * pitch + lane, Expr(low * chunk_)) + row.step * pitch +
           (col.step - low * chunk_);
  }

  /// A row-major parameter `name` of rows x cols: the shape the caller's buffer is checked against.
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
  /// `stage`, each as its operand is stored.
  Stmt load_tile(const Expr& stage, const Expr& kt, bool past_k) {
    const Expr k0 = kt * c_.block_k;
    const int64_t no_bound = std::numeric_limits<int32_t>::max();
    const int64_t k_bound = past_k ? g_.k : no_bound;
    const Expr a_base = stage * (a_rows_ * pitch_a_), b_base = stage * (b_rows_ * pitch_b_);
    std::vector<Stmt> copies;
    // A: rows m0.. and columns k0.. of the m x k matrix, or rows k0.. and columns m0.. of the k x m.
    if (a_row_)
      copies.push_back(copy_tile(a_, as_, a_base, true, a_rows_, a_cols_, m0_, k0, g_.m, k_bound, g_.k));
    else
      copies.push_back(copy_tile(a_, as_, a_base, true, a_rows_, a_cols_, k0, m0_, k_bound, g_.m, g_.m));
    // B: rows k0.. and columns n0.. of the k x n matrix, or rows n0.. and columns k0.. of the n x k.
    if (b_row_)
      copies.push_back(copy_tile(b_, bs_, b_base, false, b_rows_, b_cols_, k0, n0_, k_bound, g_.n, g_.n));
    else
      copies.push_back(copy_tile(b_, bs_, b_base, false, b_rows_, b_cols_, n0_, k0, g_.n, k_bound, g_.k));
    return SeqNode::make(copies);
  }

  /// rows x cols elements of `src` (row-major with `src_cols` columns) from (row0, col0) into `dst`
  /// at `dst_base`, laid out as A's tile (`a`) or B's; elements at or past row `row_bound` or
  /// column `col_bound` become 0 (a bound of 2^31 - 1 is no check).
  Stmt copy_tile(const Var& src, const Var& dst, const Expr& dst_base, bool a, int rows, int cols,
                 const Expr& row0, const Expr& col0, int64_t row_bound, int64_t col_bound, int64_t src_cols) {
    const int copy_bytes = a ? g_.a_copy_bytes : g_.b_copy_bytes;  // 0: element copies
    const bool async = copy_bytes > 0;
    const int per_copy = async ? copy_bytes / g_.input.bytes() : 1;  // elements per copy
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
    const Expr dst_index = tile_index(a, dst_base, {Expr(0), 0, r}, {Expr(0), 0, col});
    Stmt copy;
    if (async) {
      // The contiguous dimension (src_cols) is a multiple of a copy: a copy is wholly inside or
      // wholly outside, and inside one 16-byte chunk of the swizzled tile. Only 16-byte copies
      // may bypass L1 (.cg).
      copy = warp_intrinsic_call(ptx::cp_async(copy_bytes, copy_bytes == 16),
                                 {{dst, g_.input, dst_index},
                                  {src, g_.input, src_index},
                                  {Var(), i32, select(inside, Expr(copy_bytes), Expr(0))}});
    } else {
      const Expr value = if_then_else(inside, LoadNode::make(g_.input, src, src_index), make_zero(g_.input));
      copy = StoreNode::make(dst, value, dst_index);
    }
    if (copies % threads_ != 0) copy = IfThenElseNode::make(c < copies, copy);
    return ForNode::make(i, 0, per_thread, ForKind::Unrolled, copy);
  }

  /// The A fragment of m tile `mi` for k slice `kk` (mma_k deep) into a_frag.
  void load_a(std::vector<Stmt>& s, const Expr& base, int mi, int kk) {
    const int m = mi * 16, k = kk * mma_k_;  // the fragment's offsets in the warp tile
    const Expr frag = Expr(mi * a_elems_);
    if (a_scalar_) {
      // tf32, A stored k x m: a_i is element (m, k) = (g + 8 (i % 2), t + 4 (i / 2)) of the tile.
      const Expr g = lane_ / 4, t = lane_ % 4;
      for (int i = 0; i < 4; ++i) {
        const Expr index = tile_index(true, base, {Expr(0), k, t + i / 2 * 4}, {warp_row_, m, g + i % 2 * 8});
        s.push_back(StoreNode::make(af_, LoadNode::make(f32, as_, index), frag + i));
      }
      return;
    }
    // Lane l addresses row l % 8 of 8x8 (b16) matrix j = l / 8; matrix j is fragment register j:
    // its m half is j % 2, its k half j / 2 (16 bytes of k: 8 elements, 4 for tf32). Stored k x m
    // (16-bit only), the matrix's rows are 8 values of k, which .trans hands out as k pairs.
    const Expr m_half = lane_ / 8 % 2 * 8, k_half = lane_ / 16 * chunk_, r = lane_ % 8;
    Expr index;
    if (a_row_)  // rows m, k contiguous
      index = tile_index(true, base, {warp_row_, m, m_half + r}, {Expr(0), k, k_half});
    else  // rows k, m contiguous: .trans
      index = tile_index(true, base, {Expr(0), k, lane_ / 16 * 8 + r}, {warp_row_, m, m_half});
    s.push_back(
        warp_intrinsic_call(ptx::ldmatrix(4, !a_row_), {{af_, g_.input, frag}, {as_, g_.input, index}}));
  }

  /// The B fragments of n tiles `ni` and ni + 1 for k slice `kk` into b_frag.
  void load_b(std::vector<Stmt>& s, const Expr& base, int ni, int kk) {
    const int n = ni * 8, k = kk * mma_k_;  // the fragments' offsets in the warp tile
    if (b_scalar_) {
      // tf32, B stored k x n: b_i is element (k, n) = (t + 4 i, g) of each n tile.
      const Expr g = lane_ / 4, t = lane_ % 4;
      for (int tile = 0; tile < 2; ++tile)
        for (int i = 0; i < 2; ++i) {
          const Expr index = tile_index(false, base, {Expr(0), k, t + i * 4}, {warp_col_, n, tile * 8 + g});
          s.push_back(
              StoreNode::make(bf_, LoadNode::make(f32, bs_, index), Expr((ni + tile) * b_elems_ + i)));
        }
      return;
    }
    // Matrix j = l / 8 is register j: n tile ni + j / 2, k half j % 2 (16 bytes of k). B row-major
    // (rows k, n contiguous) needs .trans; column-major (rows n, k contiguous) does not.
    const Expr r = lane_ % 8, n_tile = lane_ / 16 * 8;
    Expr index;
    if (b_row_)
      index = tile_index(false, base, {Expr(0), k, lane_ / 8 % 2 * 8 + r}, {warp_col_, n, n_tile});
    else
      index = tile_index(false, base, {warp_col_, n, n_tile + r}, {Expr(0), k, lane_ / 8 % 2 * chunk_});
    s.push_back(warp_intrinsic_call(ptx::ldmatrix(4, b_row_),
                                    {{bf_, g_.input, Expr(ni * b_elems_)}, {bs_, g_.input, index}}));
  }

  /// The warp's mma over stage `stage`: for each mma_k-deep slice, the A fragments of its m tiles
  /// and the B fragments of its n tiles, then one mma per (m tile, n tile).
  Stmt multiply(const Expr& stage) {
    std::vector<Stmt> s;
    const Expr a_base = stage * (a_rows_ * pitch_a_), b_base = stage * (b_rows_ * pitch_b_);
    const char* mma = tf32_ ? ptx::mma_tf32 : g_.input == bf16 ? ptx::mma_bf16 : ptx::mma_f16;
    // f32 read as tf32: each fragment rounded to nearest once loaded (4 elements for A's m tile and
    // for B's pair of n tiles), else the tensor core would truncate.
    const bool round = tf32_ && c_.tf32_round;
    auto rounded = [&](const Var& frag, int first) {
      s.push_back(
          warp_intrinsic_call(ptx::cvt_rna_tf32(4), {{frag, f32, Expr(first)}, {frag, f32, Expr(first)}}));
    };
    for (int kk = 0; kk < c_.block_k / mma_k_; ++kk) {
      for (int mi = 0; mi < m_tiles_; ++mi) {
        load_a(s, a_base, mi, kk);
        if (round) rounded(af_, mi * a_elems_);
      }
      for (int ni = 0; ni < n_tiles_; ni += 2) {
        load_b(s, b_base, ni, kk);
        if (round) rounded(bf_, ni * b_elems_);
      }
      for (int mi = 0; mi < m_tiles_; ++mi)
        for (int ni = 0; ni < n_tiles_; ++ni) {
          const Expr acc = Expr((mi * n_tiles_ + ni) * 4);
          s.push_back(warp_intrinsic_call(mma, {{acc_, f32, acc},
                                                {af_, g_.input, Expr(mi * a_elems_)},
                                                {bf_, g_.input, Expr(ni * b_elems_)},
                                                {acc_, f32, acc}}));
        }
    }
    return SeqNode::make(s);
  }

  const GpuGemm& g_;
  const GpuGemmConfig& c_;
  bool tf32_ = false, a_row_ = true, b_row_ = true, a_scalar_ = false, b_scalar_ = false;
  bool a_swizzle_ = false, b_swizzle_ = false, any_async_ = false;
  int mma_k_ = 16, chunk_ = 8, a_elems_ = 8, b_elems_ = 4;
  int a_rows_ = 0, a_cols_ = 0, b_rows_ = 0, b_cols_ = 0;
  int warps_n_ = 0, threads_ = 0, pitch_a_ = 0, pitch_b_ = 0, m_tiles_ = 0, n_tiles_ = 0, k_tiles_ = 0;
  Var a_, b_, tx_, as_, bs_, acc_, af_, bf_, stage_;
  Expr lane_, warp_row_, warp_col_;
  Expr m0_, n0_;  // the corner of the tile tile_loop() builds
};

/// The widest cp.async (16, 8 or 4 bytes) whose elements every row of an operand with
/// `contiguous` elements per row splits into, so that each copy is aligned; 0 when not even one
/// element is 4 bytes (an odd count of 16-bit elements): element copies.
inline int copy_bytes(int64_t contiguous, DType input) {
  for (int bytes : {16, 8, 4})
    if (bytes % input.bytes() == 0 && contiguous % (bytes / input.bytes()) == 0) return bytes;
  return 0;
}

/// The problem and configuration of a tensor-core GEMM, checked (refusals start with `who` and
/// name the configuration's fields as `field`.block_k etc.), with block_k and the copy widths
/// resolved; no kernel yet (GpuGemm::func is empty).
inline GpuGemm gpu_gemm_problem(int64_t m, int64_t n, int64_t k, DType input, GpuGemmConfig config,
                                Layout a_layout, Layout b_layout, Layout c_layout, const std::string& who,
                                const std::string& field) {
  auto refuse = [&](const std::string& what) { throw Error(cat(who, ": ", what)); };
  if (input != f16 && input != bf16 && input != f32)
    refuse(cat("input type ", input.str(),
               " is not supported; the tensor-core GEMM takes float16, bfloat16 or float32 (multiplied as "
               "tf32)"));
  if (m < 1 || n < 1 || k < 1) refuse(cat("the shape ", m, "x", n, "x", k, " must be positive"));
  if (m >= (int64_t{1} << 31) / std::max<int64_t>(k, n) || n >= (int64_t{1} << 31) / k)
    refuse(
        cat("the shape ", m, "x", n, "x", k, " has 2^31 or more elements in A, B or C; 32-bit indices only"));
  const bool tf32 = input == f32;
  const int mma_k = tf32 ? 8 : 16;
  GpuGemmConfig& c = config;
  if (c.block_k == 0) c.block_k = tf32 ? 32 : 64;  // 128 bytes of K per row
  if (c.block_k % mma_k != 0 || c.block_k < mma_k)
    refuse(cat(field, ".block_k = ", c.block_k, " must be a multiple of ", mma_k,
               " (the k of one mma.sync for ", input.str(), " inputs), or 0 for the default"));
  if (c.warp_m % 16 != 0 || c.warp_m < 16)
    refuse(cat(field, ".warp_m = ", c.warp_m, " must be a multiple of 16"));
  if (c.warp_n % 16 != 0 || c.warp_n < 16)
    refuse(cat(field, ".warp_n = ", c.warp_n,
               " must be a multiple of 16 (a warp loads the B fragments of two n tiles of 8 at once)"));
  if (c.block_m % c.warp_m != 0 || c.block_n % c.warp_n != 0)
    refuse(cat(field, ".block_m x block_n = ", c.block_m, "x", c.block_n,
               " must be a multiple of the warp tile ", c.warp_m, "x", c.warp_n));
  const int threads = 32 * (c.block_m / c.warp_m) * (c.block_n / c.warp_n);
  if (threads > 1024) refuse(cat("the ", field, " has ", threads, " threads per block; CUDA allows 1024"));
  if (c.stages < 2 || c.stages > 8) refuse(cat(field, ".stages = ", c.stages, " must be 2 to 8"));
  GpuGemm g;
  g.m = m;
  g.n = n;
  g.k = k;
  g.input = input;
  g.a_layout = a_layout;
  g.b_layout = b_layout;
  g.c_layout = c_layout;
  g.config = config;
  // An N-byte copy needs every row of the operand, as stored, to start N-byte aligned: its
  // contiguous dimension a multiple of N bytes. (The tiles' contiguous dimensions, block_k,
  // block_m and block_n, are multiples of 8 elements by the checks above.)
  const int64_t a_contiguous = a_layout == Layout::RowMajor ? k : m;
  const int64_t b_contiguous = b_layout == Layout::RowMajor ? n : k;
  g.a_copy_bytes = copy_bytes(a_contiguous, input);
  g.b_copy_bytes = copy_bytes(b_contiguous, input);
  return g;
}

}  // namespace detail

}  // namespace loom::lib
