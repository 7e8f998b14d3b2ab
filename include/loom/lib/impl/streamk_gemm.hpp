// The definitions of lib/streamk_gemm.hpp: the plan in closed form (StreamKParams) and the kernel
// built from it as loop IR (StreamKBuilder), then lowered by the recipe from phase loops on. The
// MAC loop of a unit is SIMT FMA, or gpu_gemm's tensor-core main loop (GpuGemmMainLoop) over the
// unit's k-steps; the decomposition, the partials and their fixup are the same for both.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/streamk_gemm.hpp");

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "loom/backend/cuda/driver.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/grid_flags.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/stmt.hpp"
#include "loom/lib/impl/gpu_gemm_main_loop.hpp"
#include "loom/lib/streamk_gemm.hpp"
#include "loom/lib/streamk_residency.hpp"
#include "loom/lower/lower.hpp"

namespace loom::lib {

namespace detail {

/// The decomposition as the kernel runs it, in closed form (all constants of the build): a
/// Stream-K phase over the first `sk_tiles` tiles on blocks [0, sk_workers), then whole or split
/// units dealt round-robin from block `first_unit_block` on.
struct StreamKParams {
  int64_t p = 0;  // blocks
  int64_t tiles_n = 0, tiles = 0, iters = 0;
  int64_t sk_tiles = 0, sk_workers = 0, sk_per = 0,
          sk_extra = 0;                     // Stream-K: iterations per block (+1 for the first sk_extra)
  int64_t parts = 1, chunk = 0, units = 0;  // unit phase: parts per tile of `chunk` iterations
  int64_t first_unit_block = 0;             // the block that runs unit 0

  int64_t sk_begin(int64_t w) const { return w * sk_per + std::min(w, sk_extra); }
  int64_t sk_end(int64_t w) const {
    return w < sk_workers ? sk_begin(w) + sk_per + (w < sk_extra ? 1 : 0) : sk_begin(w);
  }
  /// The first unit of block w: units w', w' + p, ... go to block (first_unit_block + w') % p.
  int64_t first_unit(int64_t w) const { return (w - first_unit_block + p) % p; }
  /// Workspace slots: one per Stream-K block, one per unit when tiles are split.
  int64_t sk_slots() const { return sk_tiles > 0 ? sk_workers : 0; }
  int64_t slots() const { return sk_slots() + (parts > 1 ? units : 0); }

  /// The work units of block w in the order the kernel runs them (checked against the plan): its
  /// Stream-K units from its last tile back to its first (it publishes before it waits), then
  /// its whole or split-K units.
  std::vector<WorkUnit> units_of(int64_t w) const {
    std::vector<WorkUnit> out;
    for (int64_t it = sk_begin(w), end = sk_end(w); sk_tiles > 0 && it < end;) {
      const int64_t t = it / iters, k0 = it % iters, k1 = std::min(iters, k0 + (end - it));
      out.push_back(WorkUnit{t, k0, k1});
      it += k1 - k0;
    }
    std::reverse(out.begin(), out.end());
    for (int64_t u = first_unit(w); u < units; u += p) {
      const int64_t k0 = (u % parts) * chunk;
      out.push_back(WorkUnit{sk_tiles + u / parts, k0, std::min(iters, k0 + chunk)});
    }
    return out;
  }
};

inline StreamKParams params_of(const DecompositionPlan& plan) {
  StreamKParams q;
  q.p = static_cast<int64_t>(plan.workers.size());
  q.tiles_n = plan.tiles_n;
  q.tiles = plan.tiles();
  q.iters = plan.iterations_per_tile;
  if (plan.kind == Decomposition::SplitK) {
    const WorkUnit& first = plan.workers.at(0).at(0);  // tile 0's first part
    q.chunk = first.k_end;
    q.parts = ceil_div(q.iters, q.chunk);
  }
  if (q.chunk == 0) q.chunk = q.iters;
  q.sk_tiles = plan.stream_k_tiles;
  q.sk_workers = plan.stream_k_workers;
  q.first_unit_block = q.sk_tiles > 0 ? q.sk_workers % q.p : 0;
  q.units = (q.tiles - q.sk_tiles) * q.parts;
  const int64_t sk_total = q.sk_tiles * q.iters;
  if (q.sk_workers > 0) {
    q.sk_per = sk_total / q.sk_workers;
    q.sk_extra = sk_total % q.sk_workers;
  }
  for (int64_t w = 0; w < q.p; ++w) {
    const std::vector<WorkUnit> mine = q.units_of(w);
    const std::vector<WorkUnit>& planned = plan.workers[static_cast<size_t>(w)];
    bool same = mine.size() == planned.size();
    for (size_t i = 0; same && i < mine.size(); ++i)
      same = mine[i].tile == planned[i].tile && mine[i].k_begin == planned[i].k_begin &&
             mine[i].k_end == planned[i].k_end;
    internal_check(same, "Stream-K kernel: the closed form of the ", decomposition_name(plan.kind),
                   " plan differs from plan_decomposition's for block ", w);
  }
  return q;
}

/// Builds the loop IR of the kernel: with `mma` (tensor cores), each unit runs its main loop;
/// without, the SIMT one.
class StreamKBuilder {
 public:
  StreamKBuilder(const StreamKGemm& g, const StreamKParams& q, GpuGemmMainLoop* mma)
      : g_(g), q_(q), mma_(mma), bm_(g.config.tile.bm), bn_(g.config.tile.bn), bk_(g.config.tile.bk) {
    tx_n_ = bn_ / g.config.thread_n;
    ty_n_ = bm_ / g.config.thread_m;
  }

  LoweredFunc build() {
    LoweredFunc f;
    f.name = mma_ ? cat("streamk_gemm_mma_", g_.input.str()) : "streamk_gemm";
    const Expr m = c(g_.shape.m), n = c(g_.shape.n), k = c(g_.shape.k);
    if (mma_) {
      mma_->add_operands(f);
    } else {
      add_param(f, "A", a_, g_.input, {m, k});
      add_param(f, "B", b_, g_.input, {k, n});
    }
    add_param(f, "C", c_, f32, {m, n});
    Stmt body;
    if (q_.slots() == 0) {
      body = main_kernel();
    } else {
      ws_ = Var("partials", handle_type);
      flags_ = Var("flags", handle_type);
      body = SeqNode::make({zero_flags_kernel(), main_kernel()});
      body = AllocateNode::make(flags_, i32, {c(q_.slots())}, scope::global, body);
      body = AllocateNode::make(ws_, f32, {workspace_index(c(q_.slots()), c(0))}, scope::global, body);
    }
    // The recipe from phase loops on: simplify folds the unrolled loops' constants ("0 + ty",
    // "u / 1"); the builder writes the barriers of its own phases, and the memory passes let the two
    // phases' tiles share shared memory and add the barriers that reuse needs, as for a schedule.
    f.body = body;
    return lower_from(std::move(f), Phase::Loops);
  }

 private:
  static Expr c(int64_t v) { return make_int_const(i32, v); }

  static void add_param(LoweredFunc& f, const std::string& name, Var& data, DType t,
                        std::vector<Expr> shape) {
    data = Var(name, handle_type);
    FuncParam p;
    p.kind = FuncParam::Kind::Buffer;
    p.buffer = BufferParam{name, data, t, shape, {shape[1], c(1)}};
    f.params.push_back(p);
  }

  static Stmt let(const Var& v, Expr value, Stmt body) {
    return LetStmtNode::make(v, std::move(value), std::move(body));
  }
  static Stmt seq(std::vector<Stmt> s) { return SeqNode::make(s); }
  static Stmt barrier() { return BarrierNode::make(scope::shared); }

  /// The flags start at 0 on every launch: a kernel of its own clears them first.
  Stmt zero_flags_kernel() {
    const int64_t threads = 128;
    Var bx("bx", i32), tx("tx", i32);
    Expr i = bx * c(threads) + tx;
    Stmt store = IfThenElseNode::make(i < c(q_.slots()), StoreNode::make(flags_, make_const(i32, 0.0), i));
    Stmt inner = ForNode::make(tx, c(0), c(threads), ForKind::ThreadBinding, store, thread_tag::threadIdx_x);
    return ForNode::make(bx, c(0), c(ceil_div(q_.slots(), threads)), ForKind::ThreadBinding, inner,
                         thread_tag::blockIdx_x);
  }

  Stmt main_kernel() {
    w_ = Var("cta", i32);
    ty_ = Var("ty", i32);
    tx_ = Var("tx", i32);
    acc_ = Var("acc", handle_type);
    if (mma_) {
      tx_ = mma_->thread();
      acc_ = mma_->accumulator_buffer();
    }
    std::vector<Stmt> phases;
    if (q_.sk_tiles > 0) phases.push_back(stream_k_phase());
    // A barrier every thread passes: the shared tiles of the two phases may then share memory.
    if (q_.sk_tiles > 0 && q_.units > 0) phases.push_back(barrier());
    if (q_.units > 0) phases.push_back(unit_phase());
    if (mma_) {
      // The main loop's shared stages and registers serve every unit of both phases.
      Stmt body = mma_->allocate(seq(phases));
      body =
          ForNode::make(tx_, c(0), c(mma_->threads()), ForKind::ThreadBinding, body, thread_tag::threadIdx_x);
      return ForNode::make(w_, c(0), c(q_.p), ForKind::ThreadBinding, body, thread_tag::blockIdx_x);
    }
    Stmt body = AllocateNode::make(acc_, f32, {c(tm() * tn())}, scope::local, seq(phases));
    body = ForNode::make(tx_, c(0), c(tx_n_), ForKind::ThreadBinding, body, thread_tag::threadIdx_x);
    body = ForNode::make(ty_, c(0), c(ty_n_), ForKind::ThreadBinding, body, thread_tag::threadIdx_y);
    return ForNode::make(w_, c(0), c(q_.p), ForKind::ThreadBinding, body, thread_tag::blockIdx_x);
  }

  /// Element `offset` (each_element's) of workspace slot `slot` (a bm x bn partial tile); the
  /// slots' total is workspace_index(slots, 0). In 64-bit arithmetic when the workspace has 2^31
  /// elements or more (split-K with many parts of a large C), as 32-bit products would wrap there.
  Expr workspace_index(const Expr& slot, const Expr& offset) const {
    if (q_.slots() * bm_ * bn_ < (int64_t{1} << 31)) return slot * c(bm_ * bn_) + offset;
    auto wide = [](const Expr& e) { return cast(i64, e); };
    return wide(slot) * make_const(i64, bm_ * bn_) + wide(offset);
  }

  int64_t tm() const { return g_.config.thread_m; }
  int64_t tn() const { return g_.config.thread_n; }

  /// Block w streams the MAC-loop iterations [begin, end) of the first sk_tiles tiles.
  Stmt stream_k_phase() {
    Var begin("sk_begin", i32), end("sk_end", i32), first("sk_first_tile", i32), count("sk_tiles", i32);
    Var ti("sk_tile", i32), t("tile", i32), k0("k_begin", i32), k1("k_end", i32);
    const Expr w = w_, iters = c(q_.iters);
    Var as("A_sk", handle_type), bs("B_sk", handle_type);
    // Last tile first: the block publishes its partial of the tile the next block finishes before
    // it waits, in its first tile, for the partials of the blocks before it.
    Stmt unit = let(t, first + count - c(1) - ti,
                    let(k0, max(begin - t * iters, c(0)),
                        let(k1, min(end - t * iters, iters), process_unit(t, k0, k1, as, bs, true, Expr()))));
    Stmt loop = ForNode::make(ti, c(0), count, ForKind::Serial, unit);
    Expr begin_value = w * c(q_.sk_per) + min(w, c(q_.sk_extra));
    Expr end_value = begin + c(q_.sk_per) + select(w < c(q_.sk_extra), c(1), c(0));
    if (q_.sk_workers < q_.p) end_value = select(w < c(q_.sk_workers), end_value, begin);  // no share
    Expr count_value = select(end > begin, floordiv(end + iters - c(1), iters) - first, c(0));
    Stmt body = let(begin, begin_value,
                    let(end, end_value, let(first, floordiv(begin, iters), let(count, count_value, loop))));
    return shared_tiles(as, bs, body);
  }

  /// Block w runs units w', w' + p, ... (w' = w, or w - first_unit_block mod p when the Stream-K
  /// phase leaves blocks without a share: they start): whole tiles (or split-K parts) after the
  /// Stream-K ones.
  Stmt unit_phase() {
    Var j("unit_round", i32), u("unit", i32), t("tile", i32), k0("k_begin", i32), k1("k_end", i32);
    const Expr p = c(q_.p);
    const Expr w = q_.first_unit_block == 0 ? Expr(w_) : floormod(w_ + c(q_.p - q_.first_unit_block), p);
    Var as("A_dp", handle_type), bs("B_dp", handle_type);
    Stmt unit =
        let(u, w + j * p,
            let(t, c(q_.sk_tiles) + floordiv(u, c(q_.parts)),
                let(k0, floormod(u, c(q_.parts)) * c(q_.chunk),
                    let(k1, min(k0 + c(q_.chunk), c(q_.iters)), process_unit(t, k0, k1, as, bs, false, u)))));
    Expr rounds = max(floordiv(c(q_.units) - w + p - c(1), p), c(0));
    return shared_tiles(as, bs, ForNode::make(j, c(0), rounds, ForKind::Serial, unit));
  }

  /// The SIMT loop's shared tiles of one phase (the tensor-core loop's stages are allocated once).
  Stmt shared_tiles(const Var& as, const Var& bs, Stmt body) {
    if (mma_) return body;
    body = AllocateNode::make(bs, g_.input, {c(bk_ * bn_)}, scope::shared, body);
    return AllocateNode::make(as, g_.input, {c(bm_ * bk_)}, scope::shared, body);
  }

  // Thread (ty, tx) owns rows i * ty_n + ty and columns j * tx_n + tx of the tile: neighbouring
  // lanes touch neighbouring words of the B tile and of C.
  Expr row(int64_t i) const { return c(i * ty_n_) + ty_; }
  Expr col(int64_t j) const { return c(j * tx_n_) + tx_; }

  /// For every accumulator of the thread: fn(index in acc, row, col in the tile, offset in a
  /// workspace slot). The SIMT slot is the tile row-major; the tensor-core one is accumulator-major
  /// (accumulator i of thread tx at i * threads + tx), so that a warp's partial-sum stores and
  /// loads are 128 contiguous bytes, where C's fragment layout would leave each 32-byte segment
  /// half used.
  template <typename Fn>
  Stmt each_element(Fn&& fn) const {
    if (mma_)
      return mma_->each_accumulator([&](int i, const Expr& r, const Expr& col) {
        return fn(c(i), r, col, c(int64_t{i} * mma_->threads()) + tx_);
      });
    std::vector<Stmt> out;
    for (int64_t i = 0; i < tm(); ++i)
      for (int64_t j = 0; j < tn(); ++j)
        out.push_back(fn(c(i * tn() + j), row(i), col(j), row(i) * c(bn_) + col(j)));
    return seq(out);
  }

  Expr acc(const Expr& index) const { return LoadNode::make(f32, acc_, index); }

  /// The thread that signals and waits for the block.
  Expr leader() const { return mma_ ? tx_ == c(0) : tx_ == c(0) && ty_ == c(0); }

  /// The cooperative copy of a rows x cols tile of `src` (at (r0, c0), `ld` elements per row,
  /// `src_rows` x `src_cols` in all) to shared `dst`; zeros outside the matrix.
  Stmt copy_tile(const Var& dst, const Var& src, int64_t rows, int64_t cols, Expr r0, Expr c0,
                 int64_t src_rows, int64_t src_cols) const {
    const int64_t threads = tx_n_ * ty_n_, elements = rows * cols;
    std::vector<Stmt> out;
    for (int64_t e = 0; e < ceil_div(elements, threads); ++e) {
      Expr idx = c(e * threads) + ty_ * c(tx_n_) + tx_;
      Expr r = r0 + floordiv(idx, c(cols)), col = c0 + floormod(idx, c(cols));
      Expr inside = r < c(src_rows) && col < c(src_cols);
      Expr value =
          if_then_else(inside, LoadNode::make(g_.input, src, r * c(src_cols) + col), make_zero(g_.input));
      Stmt store = StoreNode::make(dst, value, idx);
      out.push_back((e + 1) * threads > elements ? IfThenElseNode::make(idx < c(elements), store) : store);
    }
    return seq(out);
  }

  /// Iterations [k0, k1) of tile t, then the tile's epilogue: store C when the unit covers the
  /// whole K range; otherwise publish the partial sum, or (the block that runs the tile's last
  /// unit) wait for the others' partials, add them in a fixed order and store C.
  Stmt process_unit(const Var& t, const Var& k0, const Var& k1, const Var& as, const Var& bs, bool stream_k,
                    const Expr& unit) {
    Var tile_m("tile_m0", i32), tile_n("tile_n0", i32);
    const int64_t M = g_.shape.m, N = g_.shape.n;
    const Stmt main_loop =
        mma_ ? mma_->tile_loop(tile_m, tile_n, k0, k1) : simt_loop(tile_m, tile_n, k0, k1, as, bs);
    Stmt store_c = each_element([&](const Expr& i, const Expr& r, const Expr& col, const Expr&) {
      Expr gr = tile_m + r, gc = tile_n + col;
      return IfThenElseNode::make(gr < c(M) && gc < c(N), StoreNode::make(c_, acc(i), gr * c(N) + gc));
    });
    Stmt epilogue = store_c;
    if (q_.slots() > 0) {
      auto publish = [&](Expr slot) {
        Stmt save = each_element([&](const Expr& i, const Expr&, const Expr&, const Expr& offset) {
          return StoreNode::make(ws_, acc(i), workspace_index(slot, offset));
        });
        Stmt signal = IfThenElseNode::make(leader(), flag_signal(flags_, slot, c(1)));
        return seq({save, barrier(), signal});
      };
      auto gather = [&](Expr slot) {
        Stmt add = each_element([&](const Expr& i, const Expr&, const Expr&, const Expr& offset) {
          Expr partial = LoadNode::make(f32, ws_, workspace_index(slot, offset));
          return StoreNode::make(acc_, acc(i) + partial, i);
        });
        // One thread spins on the flag (as CUTLASS's Stream-K does), the block then passes a
        // barrier: 256 threads spinning on the same word would only steal issue slots and memory
        // bandwidth from the blocks still computing.
        Stmt wait = IfThenElseNode::make(leader(), flag_wait(flags_, slot, c(1)));
        return seq({wait, barrier(), add});
      };
      if (stream_k) {
        // The contributors of tile t are consecutive blocks; the one with the tile's last
        // iteration is the highest-numbered: it adds the partials of blocks owner(t*iters)..w-1.
        Var first("first_contributor", i32), other("contributor", i32);
        const Expr w = w_;
        Expr start = t * c(q_.iters);
        const int64_t big = q_.sk_extra * (q_.sk_per + 1);
        Expr owner = q_.sk_per == 0 ? start
                                    : select(start < c(big), floordiv(start, c(q_.sk_per + 1)),
                                             c(q_.sk_extra) + floordiv(start - c(big), c(q_.sk_per)));
        Stmt fixup =
            let(first, owner,
                seq({ForNode::make(other, first, w - first, ForKind::Serial, gather(other)), store_c}));
        epilogue = IfThenElseNode::make(k1 == c(q_.iters), IfThenElseNode::make(k0 == c(0), store_c, fixup),
                                        publish(w));
      } else if (q_.parts > 1) {
        // Split-K: the parts of tile t are units u0..u1-1, of blocks u % p (no Stream-K phase, so
        // unit 0 is block 0's). The fixup is the unit
        // that runs last: on the highest-numbered block among them, in its latest round.
        Var u0("first_unit", i32), finisher("fixup_unit", i32), q("part", i32);
        const Expr p = c(q_.p), parts = c(q_.parts);
        Expr last = u0 + parts - c(1);
        Expr top =
            q_.parts >= q_.p ? p - c(1) : select(floormod(u0, p) + parts >= p, p - c(1), floormod(last, p));
        Expr slot = c(q_.sk_slots()) + unit;
        Stmt gather_all =
            ForNode::make(q, c(0), parts, ForKind::Serial,
                          IfThenElseNode::make(u0 + q != unit, gather(c(q_.sk_slots()) + u0 + q)));
        epilogue =
            let(u0, (t - c(q_.sk_tiles)) * parts,
                let(finisher, last - floormod(last - top, p),
                    IfThenElseNode::make(unit == finisher, seq({gather_all, store_c}), publish(slot))));
      }
    }
    return let(tile_m, floordiv(t, c(q_.tiles_n)) * c(bm_),
               let(tile_n, floormod(t, c(q_.tiles_n)) * c(bn_), seq({main_loop, epilogue})));
  }

  /// The SIMT main loop: the accumulators of tile (tile_m, tile_n) over iterations [k0, k1), one
  /// bm x bk tile of A and bk x bn of B in shared memory (`as`, `bs`) at a time.
  Stmt simt_loop(const Var& tile_m, const Var& tile_n, const Var& k0, const Var& k1, const Var& as,
                 const Var& bs) const {
    Var kk("kk", i32), kb("kb", i32);
    const int64_t M = g_.shape.m, N = g_.shape.n, K = g_.shape.k;
    Stmt clear = each_element([&](const Expr& i, const Expr&, const Expr&, const Expr&) {
      return StoreNode::make(acc_, make_const(f32, 0.0), i);
    });
    Stmt mac = each_element([&](const Expr& i, const Expr& r, const Expr& col, const Expr&) {
      Expr a = cast(f32, LoadNode::make(g_.input, as, r * c(bk_) + kb));
      Expr b = cast(f32, LoadNode::make(g_.input, bs, kb * c(bn_) + col));
      return StoreNode::make(acc_, acc(i) + a * b, i);
    });
    Stmt step = seq({barrier(), copy_tile(as, a_, bm_, bk_, tile_m, kk * c(bk_), M, K),
                     copy_tile(bs, b_, bk_, bn_, kk * c(bk_), tile_n, K, N), barrier(),
                     // The MAC loop may fuse multiply-adds (fp_contract, as lib::gemm's micro-kernel).
                     ForNode::make(kb, c(0), c(bk_), ForKind::Serial, mac, "",
                                   {LoopAnnotation{"fp_contract", make_const(i32, 1)}})});
    return seq({clear, ForNode::make(kk, k0, k1 - k0, ForKind::Serial, step)});
  }

  const StreamKGemm& g_;
  const StreamKParams& q_;
  GpuGemmMainLoop* mma_;  // null: the SIMT main loop
  const int64_t bm_, bn_, bk_;
  int64_t tx_n_ = 0, ty_n_ = 0;
  Var a_, b_, c_, ws_, flags_, w_, ty_, tx_, acc_;
};

/// The SIMT main loop's tile and threads.
inline void check_simt_tile(const StreamKConfig& cfg) {
  auto fail = [](const std::string& what) { throw Error(cat("streamk_gemm: ", what)); };
  const GemmTile& t = cfg.tile;
  if (t.bm <= 0 || t.bn <= 0 || t.bk <= 0)
    fail(cat("tile parameters bm, bn, bk must be positive, got bm=", t.bm, ", bn=", t.bn, ", bk=", t.bk));
  if (cfg.thread_m <= 0 || cfg.thread_n <= 0)
    fail(cat("thread_m and thread_n must be positive, got thread_m=", cfg.thread_m,
             ", thread_n=", cfg.thread_n));
  if (t.bm % cfg.thread_m != 0)
    fail(cat("thread_m=", cfg.thread_m, " does not divide the tile's bm=", t.bm,
             "; each thread computes thread_m rows, so pick a divisor of bm"));
  if (t.bn % cfg.thread_n != 0)
    fail(cat("thread_n=", cfg.thread_n, " does not divide the tile's bn=", t.bn,
             "; each thread computes thread_n columns, so pick a divisor of bn"));
  const int64_t threads = (t.bm / cfg.thread_m) * (t.bn / cfg.thread_n);
  if (threads > 1024)
    fail(cat("bm/thread_m x bn/thread_n = ", t.bm / cfg.thread_m, " x ", t.bn / cfg.thread_n, " = ", threads,
             " threads per block, more than CUDA's 1024; raise thread_m or thread_n, or shrink the tile"));
  if (cfg.thread_m * cfg.thread_n > 64)
    fail(cat("thread_m x thread_n = ", cfg.thread_m * cfg.thread_n,
             " accumulators per thread; at most 64 fit in registers"));
}

inline void check_streamk_config(const GemmShape& s, const StreamKConfig& cfg) {
  auto fail = [](const std::string& what) { throw Error(cat("streamk_gemm: ", what)); };
  if (s.m <= 0 || s.n <= 0 || s.k <= 0)
    fail(cat("the GEMM shape must be positive, got m=", s.m, ", n=", s.n, ", k=", s.k));
  if (s.m * s.k >= (int64_t{1} << 31) || s.k * s.n >= (int64_t{1} << 31) || s.m * s.n >= (int64_t{1} << 31))
    fail("a matrix has 2^31 elements or more; the kernel indexes with 32-bit integers");
  // The tensor-core main loop's tile is checked with gpu_gemm's checks (gpu_gemm_problem).
  if (!cfg.tensor_cores) check_simt_tile(cfg);
  if (cfg.sms < 0 || cfg.sms > 65535)
    fail(cat("sms=", cfg.sms, " is out of range: give the number of SMs (1 to 65535), or 0 for the GPU's"));
  if (cfg.blocks_per_sm < 0 || cfg.blocks_per_sm > 64)
    fail(cat("blocks_per_sm=", cfg.blocks_per_sm,
             " is out of range: 1 to 64 blocks per SM, or 0 to size the grid by the kernel's occupancy"));
  if (cfg.split_k < 0 || cfg.split_k > 1024)
    fail(cat("split_k=", cfg.split_k, " is out of range: 0 (automatic) to 1024"));
  // Checked with or without a GPU (the driver's device then sizes the grid and `arch` is unused),
  // so that a config is refused the same way on every machine.
  if (!cfg.arch.empty() && cuda::arch_number(cfg.arch) < 70)
    fail(cat("arch='", cfg.arch, "' is not a CUDA architecture Loom models; name one as sm_70 ",
             "or newer, e.g. sm_80 or sm_90"));
}

/// The tensor-core main loop's problem (its config resolved and checked, with refusals that name
/// config.tensor_cores).
inline GpuGemm streamk_mma_problem(const GemmShape& s, DType input, const GpuGemmConfig& config,
                                   Layout a_layout, Layout b_layout) {
  return gpu_gemm_problem(s.m, s.n, s.k, input, config, a_layout, b_layout, Layout::RowMajor, "streamk_gemm",
                          "config.tensor_cores");
}

/// The kernel for a configuration whose `sms` and `blocks_per_sm` are resolved (and tile, with
/// tensor cores).
inline StreamKGemm build_streamk(const GemmShape& shape, DType input, const StreamKConfig& config,
                                 Layout a_layout, Layout b_layout) {
  StreamKGemm g;
  g.shape = shape;
  g.input = input;
  g.a_layout = a_layout;
  g.b_layout = b_layout;
  g.plan = plan_decomposition(config.decomposition, shape, config.tile,
                              static_cast<int>(int64_t{config.sms} * config.blocks_per_sm), config.split_k);
  g.config = config;
  const StreamKParams q = params_of(g.plan);
  g.flag_count = q.slots();
  g.workspace_floats = q.slots() * config.tile.bm * config.tile.bn;
  if (config.tensor_cores) {
    const GpuGemm problem = streamk_mma_problem(shape, input, *config.tensor_cores, a_layout, b_layout);
    GpuGemmMainLoop mma(problem);
    g.func = StreamKBuilder(g, q, &mma).build();
  } else {
    g.func = StreamKBuilder(g, q, nullptr).build();
  }
  return g;
}

}  // namespace detail

LOOM_DECL StreamKGemm streamk_gemm(int64_t m, int64_t n, int64_t k, DType input, const StreamKConfig& given,
                                   Layout a_layout, Layout b_layout) {
  StreamKConfig config = given;
  if (!config.tensor_cores && !(input == f32 || input == f16))
    throw Error(
        cat("streamk_gemm: input type ", input.str(),
            " is not supported by the SIMT main loop; use f32 or f16 (accumulated in f32), or set "
            "config.tensor_cores for the tensor-core main loop (float16, bfloat16, or float32 read as "
            "tf32)"));
  if (!config.tensor_cores && (a_layout != Layout::RowMajor || b_layout != Layout::RowMajor))
    throw Error(cat("streamk_gemm: a column-major ", a_layout != Layout::RowMajor ? "A" : "B",
                    " needs the tensor-core main loop: set config.tensor_cores (the SIMT main loop reads "
                    "row-major A and B only)"));
  GemmShape shape{m, n, k};
  detail::check_streamk_config(shape, config);
  if (config.tensor_cores) {
    // gpu_gemm's checks, and its tile as the decomposition's: one MAC-loop iteration is a block_k
    // step of the main loop.
    const GpuGemmConfig resolved =
        detail::streamk_mma_problem(shape, input, *config.tensor_cores, a_layout, b_layout).config;
    config.tensor_cores = resolved;
    config.tile = GemmTile{resolved.block_m, resolved.block_n, resolved.block_k};
  }
  if (config.sms == 0)
    config.sms = runtime::cuda::driver_available() && runtime::cuda::driver().multiprocessors > 0
                     ? runtime::cuda::driver().multiprocessors
                     : 132;
  if (config.blocks_per_sm > 0) {
    StreamKGemm g = detail::build_streamk(shape, input, config, a_layout, b_layout);
    g.residency.source = "config";
    g.residency.occupancy.blocks_per_sm = config.blocks_per_sm;
    return g;
  }
  // Registers depend on the kernel's code, not on the grid: measure them on the kernel with one
  // block per SM, then build the grid the SMs hold.
  StreamKConfig one_per_sm = config;
  one_per_sm.blocks_per_sm = 1;
  StreamKGemm first = detail::build_streamk(shape, input, one_per_sm, a_layout, b_layout);
  const StreamKResidency residency = detail::streamk_residency(first, detail::streamk_device(config));
  if (residency.occupancy.blocks_per_sm <= 0)
    throw Error(cat("streamk_gemm: one block of the kernel does not fit on an SM of ", residency.device, " (",
                    residency.occupancy.str(), ", ", residency.registers_per_thread,
                    " registers per thread, found by ", residency.source, "); ",
                    config.tensor_cores
                        ? "use a smaller block or warp tile, or fewer stages, in config.tensor_cores"
                        : "use a smaller tile or fewer accumulators per thread (thread_m x thread_n)"));
  config.blocks_per_sm = residency.occupancy.blocks_per_sm;
  StreamKGemm g = config.blocks_per_sm == 1 ? std::move(first)
                                            : detail::build_streamk(shape, input, config, a_layout, b_layout);
  g.config.blocks_per_sm = config.blocks_per_sm;
  g.residency = residency;
  return g;
}

LOOM_DECL StreamKGemm streamk_gemm(int64_t m, int64_t n, int64_t k, DType input) {
  return streamk_gemm(m, n, k, input, recorded_streamk_config(m, n, k, input));
}

LOOM_DECL std::string StreamKGemm::describe() const {
  std::ostringstream os;
  os << decomposition_name(plan.kind) << " on " << plan.workers.size() << " blocks (" << config.sms
     << " SMs x " << config.blocks_per_sm << " per SM, " << residency.source
     << (residency.source == "config" ? "" : cat(": ", residency.occupancy.str())) << "): " << plan.tiles()
     << " tiles (" << plan.tiles_m << " x " << plan.tiles_n << " of " << config.tile.bm << "x"
     << config.tile.bn << "), " << plan.iterations_per_tile << " MAC-loop iterations of k=" << config.tile.bk
     << " per tile; balance " << plan.balance_efficiency() << ", " << plan.split_tiles() << " split tiles, "
     << workspace_floats * 4 << " bytes of partials";
  if (config.tensor_cores)
    os << "; tensor cores (gpu_gemm's main loop): "
       << (input != f32                      ? input.str()
           : config.tensor_cores->tf32_round ? "float32 rounded to tf32"
                                             : "float32 truncated to tf32")
       << ", A " << (a_layout == Layout::RowMajor ? "row-major" : "column-major") << ", B "
       << (b_layout == Layout::RowMajor ? "row-major" : "column-major") << ", warp "
       << config.tensor_cores->warp_m << "x" << config.tensor_cores->warp_n << ", "
       << config.tensor_cores->stages << " stages";
  os << "\n";
  // The unit of a split tile that the kernel runs last fixes it up (see process_unit).
  std::vector<std::pair<int64_t, size_t>> last(static_cast<size_t>(plan.tiles()), {-1, 0});
  for (size_t w = 0; w < plan.workers.size(); ++w)
    for (size_t i = 0; i < plan.workers[w].size(); ++i)
      last[static_cast<size_t>(plan.workers[w][i].tile)] = {static_cast<int64_t>(w), i};
  for (size_t w = 0; w < plan.workers.size(); ++w) {
    os << "  block " << w << ":";
    if (plan.workers[w].empty()) os << " idle";
    for (size_t i = 0; i < plan.workers[w].size(); ++i) {
      const WorkUnit& u = plan.workers[w][i];
      os << (i ? ", " : " ") << "tile " << u.tile << " k[" << u.k_begin << "," << u.k_end << ")";
      if (u.k_begin == 0 && u.k_end == plan.iterations_per_tile) continue;
      const auto& [lw, li] = last[static_cast<size_t>(u.tile)];
      os << (lw == static_cast<int64_t>(w) && li == i ? " fixup" : " partial");
    }
    os << "\n";
  }
  return os.str();
}

}  // namespace loom::lib
