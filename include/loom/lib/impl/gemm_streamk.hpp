// lib::gemm's Stream-K mode on the CPU thread pool (Osama et al., PPoPP 2023): C in bm x bn tiles,
// the MAC-loop iterations (tile x kc-block of K) dealt out evenly to the workers of one parallel
// loop, each worker's partial tiles summed from a workspace after the loop. Built from Loom's TE.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/gemm.hpp");

#include <algorithm>
#include <cstdint>
#include <vector>

#include "loom/lib/gemm.hpp"
#include "loom/lib/impl/gemm_common.hpp"
#include "loom/lib/streamk_decomposition.hpp"
#include "loom/runtime/thread_pool.hpp"

namespace loom::lib {

namespace detail {

inline void check_streamk_config(const GemmProblem& p, const GemmConfig& cfg) {
  if (cfg.decomposition != Decomposition::DataParallel && cfg.decomposition != Decomposition::StreamK)
    throw Error(
        cat("lib::gemm: decomposition ", decomposition_name(cfg.decomposition),
            " is not available on the CPU; use Decomposition::DataParallel or Decomposition::StreamK"));
  if (cfg.decomposition != Decomposition::StreamK) return;
  if (!(p.dtype == f32 || p.dtype == f64))
    throw Error(cat("lib::gemm: the Stream-K decomposition computes float32 and float64 only, not ",
                    p.a_type().str(), " x ", p.b_type().str(), " -> ", p.c_type().str(),
                    "; use Decomposition::DataParallel"));
  if (cfg.workers < 0)
    throw Error(cat("lib::gemm: Stream-K workers = ", cfg.workers,
                    " must be at least 1, or 0 for the thread pool's threads"));
  if (p.batch > 0)
    throw Error(cat("lib::gemm: the Stream-K decomposition does not handle batched products (batch = ",
                    p.batch, "); use Decomposition::DataParallel, which spreads the batch over the threads"));
  if (!cfg.parallel)
    throw Error(
        "lib::gemm: the Stream-K decomposition is a way to share work among threads, but parallel = false; "
        "set parallel = true, or use Decomposition::DataParallel for a serial kernel");
}

/// Tile sizes and the work split of a row-major problem (m rows of C, n columns).
inline StreamKLayout streamk_layout(const GemmProblem& p, const GemmConfig& cfg, int64_t workers) {
  StreamKLayout l;
  const int64_t mr = cfg.mr, nr = cfg.nr;
  // A tile larger than C would only compute zeros.
  l.bm = std::min(std::max(mr, cfg.mc / mr * mr), round_up(p.m, mr));
  l.bn = std::min(std::max(nr, cfg.nc / nr * nr), round_up(p.n, nr));
  l.kc = std::min(cfg.kc, p.k);
  l.tiles_m = (p.m + l.bm - 1) / l.bm;
  l.tiles_n = (p.n + l.bn - 1) / l.bn;
  l.iterations_per_tile = (p.k + l.kc - 1) / l.kc;
  l.workers = std::clamp<int64_t>(workers, 1, l.iterations());
  l.plan = plan_decomposition(Decomposition::StreamK,
                              GemmShape{l.tiles_m * l.bm, l.tiles_n * l.bn, l.kc * l.iterations_per_tile},
                              GemmTile{l.bm, l.bn, l.kc}, static_cast<int>(l.workers));
  for (const auto& units : l.plan.workers)
    l.segments = std::max<int64_t>(l.segments, static_cast<int64_t>(units.size()));
  l.per_worker = l.iterations() / l.workers;
  l.extra = l.iterations() % l.workers;
  return l;
}

/// The row-major problem in Stream-K form:
///   packedA/packedB[w, s, kb, ...]: the kc-block kb of tile s of worker w, packed for the micro-kernel;
///   partial[w, s, i, j]: worker w's share of the sum of its s-th tile (its iterations only);
///   C[i, j]: the sum over the workers that share (i, j)'s tile, in worker order.
inline Gemm gemm_streamk_row_major(const GemmProblem& p, GemmConfig cfg) {
  cfg.stream_c = false;  // partial tiles are summed into C after the workers: C is not written once
  const int64_t M = p.m, N = p.n, K = p.k, mr = cfg.mr, nr = cfg.nr;
  const int64_t requested = cfg.workers > 0 ? cfg.workers : runtime::ThreadPool::global().num_threads();
  const StreamKLayout l = streamk_layout(p, cfg, requested);
  const int64_t bm = l.bm, bn = l.bn, kc = l.kc, ipt = l.iterations_per_tile, W = l.workers, S = l.segments;
  // The register tile divides the block tile; lanes divide nr (else a vector split would guard).
  const int64_t lanes = std::min<int64_t>(nr, cfg.lanes);
  cfg.mc = bm;
  cfg.nc = bn;
  cfg.kc = kc;
  cfg.workers = static_cast<int>(W);
  // Packed blocks carry the zero padding of the last tiles. B is always packed: its kc x nr
  // micro-panels, read in place, would be kc rows a row of B apart (cache-set conflicts); A is read
  // in place when no tile overhangs it, as in the data-parallel schedule.
  cfg.pack_b = true;
  cfg.pack_a = cfg.pack_a || M % bm != 0 || K % kc != 0;

  auto i32 = [](int64_t v) { return Expr(static_cast<int>(v)); };
  const Expr zero = make_const(p.dtype, 0);
  // The worker's first iteration, and the tile and iteration of the segment (w, s).
  auto first = [&](Expr w) { return w * i32(l.per_worker) + min(w, i32(l.extra)); };
  auto tile_of = [&](Expr w, Expr s) { return floordiv(first(w), i32(ipt)) + s; };

  Gemm g;
  g.problem = p;
  g.A = placeholder(p.transpose_a ? matrix_shape(0, K, M) : matrix_shape(0, M, K), p.dtype, "A");
  g.B = placeholder(p.transpose_b ? matrix_shape(0, N, K) : matrix_shape(0, K, N), p.dtype, "B");
  Tensor A = g.A, B = g.B;
  auto a = [&, A](Expr i, Expr k) { return p.transpose_a ? A(k, i) : A(i, k); };
  auto b = [&, B](Expr k, Expr j) { return p.transpose_b ? B(j, k) : B(k, j); };

  // Rows of A and columns of B past the matrix (padding of the last tiles, or a segment a worker
  // does not have) read as zeros; the predicates below skip the latter anyway.
  Tensor PA;
  if (cfg.pack_a)
    PA = compute(
        {i32(W), i32(S), i32(ipt), i32(bm / mr), i32(kc), i32(mr)},
        [&](const std::vector<Var>& v) {
          Expr t = tile_of(v[0], v[1]);
          Expr i = floordiv(t, i32(l.tiles_n)) * i32(bm) + v[3] * i32(mr) + v[5], k = v[2] * i32(kc) + v[4];
          return if_then_else(i < i32(M) && k < i32(K), a(i, k), zero);
        },
        "packedA");
  Tensor PB = compute(
      {i32(W), i32(S), i32(ipt), i32(bn / nr), i32(kc), i32(nr)},
      [&](const std::vector<Var>& v) {
        Expr t = tile_of(v[0], v[1]);
        Expr j = floormod(t, i32(l.tiles_n)) * i32(bn) + v[3] * i32(nr) + v[5], k = v[2] * i32(kc) + v[4];
        return if_then_else(j < i32(N) && k < i32(K), b(k, j), zero);
      },
      "packedB");

  IterVar kb = reduce_axis(0, static_cast<int>(ipt), "kb");
  IterVar kk = reduce_axis(0, static_cast<int>(kc), "k");
  Tensor partial = compute(
      {i32(W), i32(S), i32(bm), i32(bn)},
      [&](const std::vector<Var>& v) {
        Expr w = v[0], s = v[1], i = v[2], j = v[3];
        // The iteration (tile, kb) belongs to worker w when it lies in w's range.
        Expr it = tile_of(w, s) * i32(ipt) + kb->var;
        Expr mine = it >= first(w) && it < first(w + 1);
        Expr av = cfg.pack_a
                      ? PA(w, s, kb->var, floordiv(i, i32(mr)), kk->var, floormod(i, i32(mr)))
                      : a(floordiv(tile_of(w, s), i32(l.tiles_n)) * i32(bm) + i, kb->var * i32(kc) + kk->var);
        Expr bv = PB(w, s, kb->var, floordiv(j, i32(nr)), kk->var, floormod(j, i32(nr)));
        return sum(av * bv, {kb, kk}, mine);
      },
      "partial");

  // The fixup: the workers that share a tile are consecutive; each adds its partial, in order.
  g.C = compute(
      matrix_shape(0, M, N),
      [&](const std::vector<Var>& v) {
        Expr i = v[0], j = v[1];
        Expr t = floordiv(i, i32(bm)) * i32(l.tiles_n) + floordiv(j, i32(bn));
        Expr total;
        for (int64_t w = 0; w < W; ++w) {
          Expr we = i32(w);
          Expr shares = t * i32(ipt) < first(we + 1) && (t + 1) * i32(ipt) > first(we);
          Expr s = max(min(t - tile_of(we, 0), i32(S - 1)), 0);
          Expr term = select(shares, partial(we, s, floormod(i, i32(bm)), floormod(j, i32(bn))), zero);
          total = total.defined() ? total + term : term;
        }
        return total;
      },
      "C");
  Tensor C = g.C;
  Schedule sch = create_schedule(C);
  g.schedule = sch;

  // partial: one parallel iteration per worker; inside, BLIS's loops over its tiles' kc-blocks.
  Stage st = sch[partial];
  IterVar w = partial.axis(0), seg = partial.axis(1);
  auto [jr, j1] = st.split(partial.axis(3), nr);
  auto [jv, jl] = st.split(j1, lanes);
  auto [ir, ii] = st.split(partial.axis(2), mr);
  st.reorder({w, seg, partial.reduce_axis(0), jr, ir, partial.reduce_axis(1), ii, jv, jl});
  st.unroll(ii);
  st.unroll(jv);
  st.vectorize(jl);
  st.pragma(partial.reduce_axis(1), "fp_contract");
  st.parallel(w);
  // The iterations of other workers are skipped by one test per kc-block, not one per FMA.
  st.pragma(w, "hoist_guards");

  // Each worker packs the blocks of its own iterations only, at the kc-block that uses them.
  // (The compute's own copy of the reduce axis: its loop variable is the one in scope.)
  const IterVar kb_loop = partial.reduce_axis(0);
  // An axis of extent one has no loop (and no variable in scope): its value is 0.
  Expr wv = W > 1 ? Expr(w->var) : i32(0), sv = S > 1 ? Expr(seg->var) : i32(0),
       kv = ipt > 1 ? Expr(kb_loop->var) : i32(0);
  Expr it = tile_of(wv, sv) * i32(ipt) + kv;
  Expr mine = it >= first(wv) && it < first(wv + 1);
  Stage sb = sch[PB];
  sb.compute_at(st, kb_loop);
  sb.set_store_predicate(mine);
  if (nr % lanes == 0 && nr > lanes) {
    auto [pjo, pji] = sb.split(PB.axis(5), lanes);
    sb.unroll(pjo);
    sb.vectorize(pji);
  } else {
    sb.vectorize(PB.axis(5));
  }
  if (cfg.pack_a) {
    Stage sa = sch[PA];
    sa.compute_at(st, kb_loop);
    sa.set_store_predicate(mine);
    // Read A along its contiguous dimension (k unless transposed).
    if (!p.transpose_a) sa.reorder({PA.axis(3), PA.axis(5), PA.axis(4)});
    sa.unroll(PA.axis(5));
  }

  // The fixup after the parallel loop (its end is the barrier): rows in parallel.
  // Columns by tile, then vectors: the partials' index within a tile is then contiguous.
  Stage sc = sch[C];
  auto [cjt, cjj] = sc.split(C.axis(1), bn);
  auto [cjo, cji] = sc.split(cjj, lanes);
  (void)cjt;
  (void)cjo;
  sc.vectorize(cji);
  sc.parallel(C.axis(0));
  g.config = cfg;
  return g;
}

}  // namespace detail

LOOM_DECL StreamKLayout streamk_layout(const GemmProblem& problem, const GemmConfig& config) {
  GemmProblem p = problem;
  if (p.layout == Layout::ColMajor) std::swap(p.m, p.n);
  const int64_t requested = config.workers > 0 ? config.workers : runtime::ThreadPool::global().num_threads();
  return detail::streamk_layout(p, config, requested);
}

}  // namespace loom::lib
