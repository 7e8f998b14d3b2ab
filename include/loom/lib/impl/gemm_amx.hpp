// lib::gemm with Intel AMX (GemmConfig::dot = DotInstruction::Amx): bfloat16 -> float32 and 8-bit
// integers (any signedness) -> int32. The register tile is a block of AMX tiles (mr / 16 x nr / 16
// of them, 16 x 16 accumulators each) tensorized with x86::amx_intrin, whose accumulators stay in
// tile registers over a block of K. B is packed "VNNI-style" (the group of one column side by
// side: [columns / nr][k / group][nr][group]); A is read in place when its rows hold K contiguously
// and nothing needs padding, else packed as [rows / mr][mr][k]. The tiles are stored to C. With an
// epilogue, padded rows or columns, or streaming stores, and K in one block, they are stored to an
// mr x nr block in L1 that C's own loops then copy to C a vector at a time, applying the epilogue
// and leaving out the padding (AMX stores tiles only to memory, and has no streaming store); with K
// in several blocks, C is a pass of its own over an m x n product. A batch is a leading dimension of
// every operand, shared by the threads when it has a share for each.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/gemm.hpp");

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "loom/lib/gemm.hpp"
#include "loom/lib/impl/gemm_common.hpp"
#include "loom/runtime/thread_pool.hpp"
#include "loom/te/x86_amx_intrinsics.hpp"

namespace loom::lib {

namespace detail {

/// Elements of A in one AMX k-step: a tile row of 64 bytes.
inline int64_t amx_step(DType a) { return 64 / a.bytes(); }

/// The row-major problem on AMX tiles (see the file comment).
inline Gemm gemm_amx_row_major(const GemmProblem& p, GemmConfig cfg) {
  const int64_t M = p.m, N = p.n, K = p.k, nb = p.batch;
  const int o = nb > 0 ? 1 : 0;  // the batch's leading dimension, when batched
  const DType a_type = p.a_type(), b_type = p.b_type(), c_type = p.c_type();
  const int64_t group = 4 / a_type.bytes(), step = amx_step(a_type);
  const int64_t mr = cfg.mr, nr = cfg.nr;
  // K in equal blocks of whole k-steps, as few as blocks of kc allow (K padded with zeros to whole
  // blocks: K = 1056 in blocks of at most 1024 is two of 544, not two of 1024).
  const int64_t kc_most = round_up(std::max<int64_t>(cfg.kc, 1), step);
  const int64_t blocks = (round_up(K, step) + kc_most - 1) / kc_most;
  cfg.kc = round_up((K + blocks - 1) / blocks, step);
  cfg.mc = dividing_block(round_up(M, mr), std::max(mr, cfg.mc / mr * mr), mr);
  cfg.nc = covering_block(round_up(N, nr), std::max(nr, cfg.nc / nr * nr), nr);
  const int64_t Mp = round_up(M, mr), Np = round_up(N, cfg.nc), Kp = round_up(K, cfg.kc);
  const bool pad_m = Mp != M, pad_n = Np != N;
  cfg.pack_b = true;
  cfg.pack_a = cfg.pack_a || pad_m || p.transpose_a || Kp != K;
  cfg.lanes = x86::kDotLanes;

  Gemm g;
  g.problem = p;
  g.A = placeholder(p.transpose_a ? matrix_shape(nb, K, M) : matrix_shape(nb, M, K), a_type, "A");
  g.B = placeholder(p.transpose_b ? matrix_shape(nb, N, K) : matrix_shape(nb, K, N), b_type, "B");
  const Tensor A = g.A, B = g.B;
  // `v`'s batch index (none when not batched) and the operands' elements in that batch.
  auto batch = [o](const std::vector<Var>& v) { return std::vector<Expr>(v.begin(), v.begin() + o); };
  auto a = [&](const std::vector<Expr>& b, Expr i, Expr k) {
    return p.transpose_a ? A(at(b, k, i)) : A(at(b, i, k));
  };
  auto bm = [&](const std::vector<Expr>& b, Expr k, Expr j) {
    return p.transpose_b ? B(at(b, j, k)) : B(at(b, k, j));
  };
  auto c32 = [](int64_t v) { return Expr(static_cast<int>(v)); };
  // A shape with the batch's extent first, when batched.
  auto batched = [&](std::vector<Expr> shape) {
    if (nb > 0) shape.insert(shape.begin(), c32(nb));
    return shape;
  };
  // `index` with the batch index of `v` first.
  auto in_batch = [&](const std::vector<Var>& v, std::vector<Expr> index) {
    std::vector<Expr> full = batch(v);
    full.insert(full.end(), index.begin(), index.end());
    return full;
  };

  // packedB[jo][kg][ji][t] = B[kg * group + t, jo * nr + ji], zero beyond the matrix.
  Tensor PB = compute(
      batched({c32(Np / nr), c32(Kp / group), c32(nr), c32(group)}),
      [&](const std::vector<Var>& v) {
        const Var &jo = v[o], &kg = v[o + 1], &ji = v[o + 2], &t = v[o + 3];
        Expr k = kg * static_cast<int>(group) + t, j = jo * static_cast<int>(nr) + ji;
        return zero_padded(bm(batch(v), k, j), j, N, Np, k, K, Kp);
      },
      "packedB");
  // packedA[io][ii][k] = A[io * mr + ii, k]: each row holds K contiguously, as the tiles read it.
  Tensor PA;
  if (cfg.pack_a) {
    PA = compute(
        batched({c32(Mp / mr), c32(mr), c32(Kp)}),
        [&](const std::vector<Var>& v) {
          const Var &io = v[o], &ii = v[o + 1], &k = v[o + 2];
          Expr i = io * static_cast<int>(mr) + ii;
          return zero_padded(a(batch(v), i, k), i, M, Mp, k, K, Kp);
        },
        "packedA");
  }

  // C a stage of its own: for the epilogue, to leave out the padding, or to stream C's stores (which
  // tilestored has no form of). With K in one block it copies each tile from a block in L1
  // (tile_store); else it is a pass over the m x n product the tiles accumulate in.
  const bool padded = pad_m || pad_n, epilogue = !p.epilogue.empty();
  const bool one_k_block = Kp == cfg.kc;
  const CWrite c_out = c_write(padded || epilogue, one_k_block, cfg.stream_c);
  const bool separate_c = c_out.separate, tile_store = c_out.tile_store;
  cfg.stream_c = c_out.stream;
  IterVar kk = reduce_axis(0, static_cast<int>(Kp / group), "k"),
          kt = reduce_axis(0, static_cast<int>(group), "t");
  Tensor acc = compute(
      batched({c32(padded ? Mp : M), c32(padded ? Np : N)}),
      [&](const std::vector<Var>& v) {
        const Var &i = v[o], &j = v[o + 1];
        const Expr mri = c32(mr), nri = c32(nr);
        const Expr k = kk->var * static_cast<int>(group) + kt->var;
        Expr av = cfg.pack_a ? PA(in_batch(v, {floordiv(i, mri), floormod(i, mri), k})) : a(batch(v), i, k);
        Expr bv = PB(in_batch(v, {floordiv(j, nri), kk->var, floormod(j, nri), kt->var}));
        return sum(cast(c_type, av) * cast(c_type, bv), {kk, kt});
      },
      padded       ? "C_padded"
      : separate_c ? "C_product"
                   : "C");
  Tensor C = acc;
  if (separate_c) {
    C = compute(
        batched({c32(M), c32(N)}),
        [&](const std::vector<Var>& v) {
          // In a pass of its own, the select (always its first value) widens the region bound
          // inference asks of acc to the whole padded domain, so that the tiles cover it without a
          // guard. Copying each tile, C's loops are acc's: its tile is the region.
          const Expr i =
              pad_m && !tile_store ? select(v[o] < static_cast<int>(M), v[o], c32(Mp - 1)) : Expr(v[o]);
          const Expr j = pad_n && !tile_store ? select(v[o + 1] < static_cast<int>(N), v[o + 1], c32(Np - 1))
                                              : Expr(v[o + 1]);
          const Expr product = acc(in_batch(v, {i, j}));
          return epilogue ? apply_epilogue(p, product, std::vector<Expr>(v.begin(), v.end())) : product;
        },
        "C");
  }
  g.C = C;
  Schedule s = create_schedule(C);
  g.schedule = s;

  // BLIS's loop order around the tile block: jc (nc columns), pc (kc of K), ic (mc rows), jr (nr),
  // ir (mr), then the block of tiles, tensorized over its rows, columns and the kc block of K. The
  // loops are C's where it copies each tile (the block of tiles computed inside them), else acc's.
  const Tensor nest = tile_store ? C : acc;
  Stage st = s[nest];
  auto [jc, j1] = st.split(nest.axis(o + 1), cfg.nc);
  auto [jr, ji] = st.split(j1, nr);
  auto [ic, i1] = st.split(nest.axis(o), cfg.mc);
  auto [ir, ii] = st.split(i1, mr);
  IterVar ko, ki = kk;
  if (!one_k_block) std::tie(ko, ki) = st.split(kk, cfg.kc / group);
  std::vector<IterVar> order;
  if (nb > 0) order.push_back(nest.axis(0));
  order.push_back(jc);
  if (!one_k_block) order.push_back(ko);
  order.insert(order.end(), {ic, jr, ir, ii, ji});
  if (!tile_store) order.insert(order.end(), {ki, kt});
  st.reorder(order);
  const TensorIntrin tiles = x86::amx_intrin(a_type, b_type, static_cast<int>(mr / 16),
                                             static_cast<int>(nr / 16), static_cast<int>(cfg.kc));
  if (tile_store) {
    // The block of tiles into an mr x nr block in L1, copied to C (through the epilogue) a row's 16
    // lanes at a time.
    Stage blk = s[acc];
    blk.compute_at(st, ir);
    std::vector<IterVar> block_order;
    if (nb > 0) block_order.push_back(acc.axis(0));
    block_order.insert(block_order.end(), {acc.axis(o), acc.axis(o + 1), kk, kt});
    blk.reorder(block_order);
    blk.tensorize(acc.axis(o), tiles);
    auto [jv, jl] = st.split(ji, x86::kDotLanes);
    (void)jv;
    st.vectorize(jl);
    if (cfg.stream_c)
      cfg.stream_c = stream_stores_under(st, {{jc, (Np + cfg.nc - 1) / cfg.nc},
                                              {ic, (Mp + cfg.mc - 1) / cfg.mc},
                                              {jr, (std::min(cfg.nc, Np) + nr - 1) / nr},
                                              {ir, (std::min(cfg.mc, Mp) + mr - 1) / mr}});
  } else {
    st.tensorize(ii, tiles);
  }
  if (cfg.parallel) {
    const int64_t threads = runtime::ThreadPool::global().num_threads();
    if (nb >= threads)
      st.parallel(nest.axis(0));
    else if (Mp / cfg.mc >= threads)
      st.parallel(ic);
    else
      st.parallel(jr);
  }

  // B's kc x nc block is packed per (jc, pc), A's mc x kc block per ic (or per pc when K has blocks).
  Stage sb = s[PB];
  sb.compute_at(st, one_k_block ? jc : ko);
  interleave_groups(sb, PB.axis(o + 2), PB.axis(o + 3), nr * group, b_type, p.transpose_b);
  if (cfg.parallel && nb < runtime::ThreadPool::global().num_threads()) sb.parallel(PB.axis(o));
  if (cfg.pack_a) {
    Stage sa = s[PA];
    sa.compute_at(st, ic);
    auto [ko_a, ki_a] = sa.split(PA.axis(o + 2), x86::kDotLanes * group);
    (void)ko_a;
    if (!p.transpose_a) sa.vectorize(ki_a);
  }
  if (separate_c && !tile_store) {
    Stage sc = s[C];
    auto [cjo, cji] = sc.split(C.axis(o + 1), x86::kDotLanes);
    (void)cjo;
    sc.vectorize(cji);
    if (cfg.parallel) sc.parallel(C.axis(0));
    if (cfg.stream_c) sc.pragma(C.axis(o), "nontemporal_stores");
  }
  g.config = cfg;
  return g;
}

}  // namespace detail

}  // namespace loom::lib
