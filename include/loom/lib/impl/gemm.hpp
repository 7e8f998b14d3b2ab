// The definitions of lib/gemm.hpp: the data-parallel schedule (packed panels, register tile,
// cache blocks, parallel rows) and the checks and transposition around both schedules.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lib/gemm.hpp");

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "loom/lib/gemm.hpp"
#include "loom/lib/gemm_tuning.hpp"
#include "loom/lib/impl/gemm_amx.hpp"
#include "loom/lib/impl/gemm_common.hpp"
#include "loom/lib/impl/gemm_streamk.hpp"
#include "loom/runtime/thread_pool.hpp"
#include "loom/schedule/schedule.hpp"
#include "loom/te/x86_dot_intrinsics.hpp"

namespace loom::lib {

namespace detail {

/// The row-major problem: C[m, n] row-major, A read as a(i, k), B as b(k, j).
inline Gemm gemm_row_major(const GemmProblem& p, GemmConfig cfg) {
  const int64_t M = p.m, N = p.n, K = p.k, nb = p.batch;
  const bool batched = nb > 0;
  const int64_t mr = cfg.mr, nr = cfg.nr;
  const DType a_type = p.a_type(), b_type = p.b_type(), c_type = p.c_type();
  // The dot instructions reduce K in groups (pairs of bfloat16, quads of bytes) held side by side:
  // B is packed so, and A's rows already are, so A is read in place unless it is transposed or K is
  // not a whole number of groups (the packed panels pad K with zeros).
  const int64_t group = cfg.dot == DotInstruction::Vdpbf16ps  ? 2
                        : cfg.dot == DotInstruction::Vpdpbusd ? 4
                                                              : 1;
  if (group > 1) {
    cfg.pack_b = true;
    cfg.pack_a = cfg.pack_a || p.transpose_a || K % group != 0;
    cfg.kc = round_up(cfg.kc, group);
  }
  // vpdpbusd multiplies unsigned by signed bytes. Same-signed bytes flip the sign bit of B's bytes
  // as they are packed, which makes B' = B + 128 as uint8 (int8 B) or B - 128 as int8 (uint8 B);
  // the products A x B' are mixed-signed, and C takes back 128 x each row's sum of A:
  // sum A B = sum A B' -+ 128 sum A (exact in int32's wrap-around, like the products themselves).
  const bool flip_b = cfg.dot == DotInstruction::Vpdpbusd && a_type == b_type;
  // Without a dot instruction, narrow inputs (bfloat16, bytes) are widened to C's type as they are
  // packed: the micro-kernel is then float32's or int32's, one load or broadcast per element. Widened
  // in the kernel, each of A's elements took four instructions (a 16-bit load, a shift, a move to a
  // vector register, a broadcast) and each vector of B three. One Zen 3 core (AVX2), bfloat16 1024^3:
  // 39 -> 76 GFLOP/s (float32: 74-79), 8-bit 38 -> 60 GOP/s.
  const DType packed_a_type = group == 1 ? c_type : a_type;
  const DType packed_b_type = flip_b ? (b_type == i8 ? u8 : i8) : group == 1 ? c_type : b_type;

  // The cache blocks divide the padded rows and columns: a block that does not puts a guard on
  // every row of the micro-kernel (mr = 12, mc = 96 over 1032 padded rows: 10 GFLOP/s instead of
  // 100), and a tensorized micro-kernel takes no guard at all. Where only small blocks divide the
  // columns, they are padded to whole blocks of the requested size instead (covering_block).
  cfg.mc = std::max(mr, cfg.mc / mr * mr);
  cfg.nc = std::max(nr, cfg.nc / nr * nr);
  const int64_t Mp = round_up(M, mr);
  cfg.mc = dividing_block(Mp, cfg.mc, mr);
  cfg.nc = covering_block(round_up(N, nr), cfg.nc, nr);
  const int64_t Np = round_up(N, cfg.nc);
  // Operands whose block reuse is low are read in place; a padded dimension needs a packed copy
  // (its zeros stand in for the rows/columns beyond the matrix, so the micro-kernel needs no guard).
  const bool pad_m = M % mr != 0, pad_n = Np != N;
  cfg.pack_a = cfg.pack_a || pad_m;
  cfg.pack_b = cfg.pack_b || pad_n;
  if (K % cfg.kc != 0 && !(cfg.pack_a && cfg.pack_b)) {
    // K is padded in the packed panels only; an operand read in place bounds it.
    cfg.kc = K;
  }
  const int64_t Kp = round_up(K, cfg.kc);

  Gemm g;
  g.problem = p;
  g.A = placeholder(p.transpose_a ? matrix_shape(nb, K, M) : matrix_shape(nb, M, K), a_type, "A");
  g.B = placeholder(p.transpose_b ? matrix_shape(nb, N, K) : matrix_shape(nb, K, N), b_type, "B");
  Tensor A = g.A, B = g.B;
  auto a = [&, A](const std::vector<Expr>& b, Expr i, Expr k) {
    return p.transpose_a ? A(at(b, k, i)) : A(at(b, i, k));
  };
  auto bm = [&, B](const std::vector<Expr>& b, Expr k, Expr j) {
    return p.transpose_b ? B(at(b, j, k)) : B(at(b, k, j));
  };

  // Packed panels: packedB[jo][k][ji] = B[k, jo * nr + ji], packedA[io][k][ii] = A[io * mr + ii, k],
  // zero beyond the matrix. Consecutive k of one panel are contiguous for the micro-kernel. With a
  // dot instruction k is a group index and a last dimension holds the group:
  // packedB[jo][kg][ji][t] = B[kg * group + t, jo * nr + ji], likewise packedA.
  std::vector<Expr> pb_shape, pa_shape;
  auto i32 = [](int64_t v) { return Expr(static_cast<int>(v)); };
  if (batched) pb_shape.push_back(i32(nb)), pa_shape.push_back(i32(nb));
  pb_shape.insert(pb_shape.end(), {i32(Np / nr), i32(Kp / group), i32(nr)});
  pa_shape.insert(pa_shape.end(), {i32(Mp / mr), i32(Kp / group), i32(mr)});
  if (group > 1) pb_shape.push_back(i32(group)), pa_shape.push_back(i32(group));
  // The k of a packed element: its group index and place in the group.
  auto packed_k = [group](const std::vector<Var>& v, int o) {
    return group > 1 ? v[o + 1] * static_cast<int>(group) + v[o + 3] : Expr(v[o + 1]);
  };
  auto split_batch = [batched](const std::vector<Var>& v, std::vector<Expr>& b) {
    b.clear();
    if (batched) b.push_back(v[0]);
    return batched ? 1 : 0;
  };
  Tensor PB, PA;
  if (cfg.pack_b) {
    PB = compute(
        pb_shape,
        [&](const std::vector<Var>& v) {
          std::vector<Expr> b;
          const int o = split_batch(v, b);
          Expr jo = v[o], k = packed_k(v, o), ji = v[o + 2];
          Expr j = jo * static_cast<int>(nr) + ji;
          Expr value = bm(b, k, j);
          if (flip_b)
            value = cast(packed_b_type, cast(c_type, value) + (b_type == i8 ? 128 : -128));
          else if (packed_b_type != b_type)
            value = cast(packed_b_type, value);
          return zero_padded(value, j, N, Np, k, K, Kp);
        },
        "packedB");
  }
  if (cfg.pack_a) {
    PA = compute(
        pa_shape,
        [&](const std::vector<Var>& v) {
          std::vector<Expr> b;
          const int o = split_batch(v, b);
          Expr io = v[o], k = packed_k(v, o), ii = v[o + 2];
          Expr i = io * static_cast<int>(mr) + ii;
          Expr value = a(b, i, k);
          if (packed_a_type != a_type) value = cast(packed_a_type, value);
          return zero_padded(value, i, M, Mp, k, K, Kp);
        },
        "packedA");
  }

  // The accumulation, over the padded domain when M or N is padded; C is then a stage of its own
  // that stores the valid corner. With an epilogue C is a stage of its own as well: it applies the
  // epilogue as it writes each element.
  const bool padded = pad_m || pad_n, epilogue = !p.epilogue.empty();
  const bool one_k_block = Kp == cfg.kc;
  // A flipped B (flip_b) makes C a stage of its own as well: it adds the row sums' correction to
  // each element (with K in several blocks, as a pass of its own over an m x n temporary).
  // Streaming C's stores (cfg.stream_c) needs a store of each element's final value (c_write). The
  // accumulation straight into C updates C in memory at every k step (LLVM keeps the tile in
  // registers and stores it after the k loop, but only its own store, which no pragma reaches).
  // With K in one block and C a stage of its own, the register tile goes straight from registers
  // to C: C's stage carries the loop nest, and the accumulation is an mr x nr tile computed at C's
  // register-tile loop, whose store applies the epilogue and leaves out the padding.
  const CWrite c_out = c_write(padded || epilogue || flip_b, one_k_block, cfg.stream_c);
  const bool separate_c = c_out.separate, tile_store = c_out.tile_store;
  cfg.stream_c = c_out.stream;
  IterVar kk = reduce_axis(0, static_cast<int>(Kp / group), "k");
  IterVar kt = reduce_axis(0, static_cast<int>(group), "t");  // a group's place (group > 1 only)
  std::vector<Expr> acc_shape = matrix_shape(nb, padded ? Mp : M, padded ? Np : N);
  Tensor acc = compute(
      acc_shape,
      [&](const std::vector<Var>& v) {
        std::vector<Expr> b;
        const int o = split_batch(v, b);
        Expr i = v[o], j = v[o + 1];
        const Expr mri(static_cast<int>(mr)), nri(static_cast<int>(nr));
        std::vector<Expr> pa_idx = b, pb_idx = b;
        pa_idx.insert(pa_idx.end(), {floordiv(i, mri), Expr(kk->var), floormod(i, mri)});
        pb_idx.insert(pb_idx.end(), {floordiv(j, nri), Expr(kk->var), floormod(j, nri)});
        if (group > 1) pa_idx.push_back(kt->var), pb_idx.push_back(kt->var);
        const Expr k = group > 1 ? kk->var * static_cast<int>(group) + kt->var : Expr(kk->var);
        Expr av = cfg.pack_a ? PA(pa_idx) : a(b, i, k);
        Expr bv = cfg.pack_b ? PB(pb_idx) : bm(b, kk->var, j);
        // Narrow inputs widen to C's type (bfloat16 -> float32, 8-bit -> int32) before they multiply.
        Expr product = cast(c_type, av) * cast(c_type, bv);
        return group > 1 ? sum(product, {kk, kt}) : sum(product, {kk});
      },
      padded       ? "C_padded"
      : separate_c ? "C_product"
                   : "C");
  const int o = batched ? 1 : 0;
  // The sums of A's rows that a flipped B's products take back (flip_b above).
  Tensor row_sums;
  if (flip_b) {
    IterVar kr = reduce_axis(0, static_cast<int>(K), "k");
    row_sums = compute(
        batched ? std::vector<Expr>{i32(nb), i32(M)} : std::vector<Expr>{i32(M)},
        [&](const std::vector<Var>& v) {
          std::vector<Expr> b;
          split_batch(v, b);  // the row is v[o], o as above
          return sum(cast(c_type, a(b, v[o], kr->var)), {kr});
        },
        "A_row_sums");
  }
  Tensor C = acc;
  if (separate_c) {
    C = compute(
        matrix_shape(nb, M, N),
        [&](const std::vector<Var>& v) {
          // In a pass of its own, the select (always its first value) widens the region bound
          // inference asks of acc to the whole padded domain, so that acc's loops divide into tiles
          // and carry no guard. Storing the tile, C's loops are acc's: its tile is the region.
          std::vector<Expr> idx(v.begin(), v.end());
          Expr &i = idx[o], &j = idx[o + 1];
          if (pad_m && !tile_store) i = select(i < static_cast<int>(M), i, Expr(static_cast<int>(Mp - 1)));
          if (pad_n && !tile_store) j = select(j < static_cast<int>(N), j, Expr(static_cast<int>(Np - 1)));
          Expr product = acc(idx);
          if (flip_b) {
            std::vector<Expr> row(v.begin(), v.begin() + o + 1);  // [batch,] row: v's own, not clamped
            product = product + Expr(b_type == i8 ? -128 : 128) * row_sums(row);
          }
          return epilogue ? apply_epilogue(p, product, std::vector<Expr>(v.begin(), v.end())) : product;
        },
        "C");
  }
  g.C = C;
  Schedule s = create_schedule(C);
  g.schedule = s;

  // The accumulation's loop nest, BLIS's order: jc (nc columns), pc (kc of K), ic (mc rows),
  // jr (nr), ir (mr), then the micro-kernel: k inside kc, mr rows unrolled, nr columns as
  // nr / lanes vectors. C's mr x nr tile is loop-invariant in k, so LLVM keeps it in registers.
  // With K in a single kc block there is no pc loop: k runs inside the register tile, so the
  // reduction's zero initialisation is emitted per register tile, right before its k loop, where
  // LLVM keeps it in registers, instead of as a pass of its own over C (which made C cross memory
  // three times, the largest cost when K is short).
  // The stage whose loops are the cache blocks and register tiles, and its tensor.
  const Tensor nest = tile_store ? C : acc;
  Stage st = s[nest];
  IterVar i_axis = nest.axis(o), j_axis = nest.axis(o + 1);
  auto [jc, j1] = st.split(j_axis, cfg.nc);
  auto [jr, ji] = st.split(j1, nr);
  auto [jv, jl] = st.split(ji, std::min<int64_t>(nr, cfg.lanes));
  auto [ic, i1] = st.split(i_axis, cfg.mc);
  auto [ir, ii] = st.split(i1, mr);
  // All rows in one block (few rows, or all of A in L2 with several threads: gemm_config.hpp): B's
  // micro-panels are packed where they are used, and the threads share the columns.
  const bool one_row_block = Mp <= cfg.mc;
  // The loop the threads share: the batch when it has a share for every thread, else blocks of
  // rows, else (C has too few rows for that: a skinny product) blocks of columns or the
  // register-tile columns.
  enum class Shared { None, Batch, RowBlocks, ColumnBlocks, Panels };
  Shared shared = Shared::None;
  const int64_t threads = runtime::ThreadPool::global().num_threads();
  if (cfg.parallel) {
    if (batched && nb >= threads)
      shared = Shared::Batch;
    else if ((Mp + cfg.mc - 1) / cfg.mc >= threads)
      shared = Shared::RowBlocks;
    // Few rows in K blocks: each thread its columns, all K blocks in one region.
    else if (!one_k_block && one_row_block && (Np + cfg.nc - 1) / cfg.nc >= threads)
      shared = Shared::ColumnBlocks;
    else
      shared = Shared::Panels;
  }
  // One block of rows packs B's micro-panels where they are used (below), a few side by side: a row
  // of B is then read 1 KB at a time instead of one panel's nr elements (f32: 16 cache lines
  // instead of 2, which the prefetchers follow). One Zen 4 core, 64 x 4096 x 4096: f32 27.4 -> 25.3
  // ms, f64 57-65 -> 51 ms; two cores f32 13.7 -> 12.8 ms. A dot instruction's copy reads `group`
  // rows of B at once, 1 KB in all (panels_per_b_copy): 1 KB of each of them made a copy of 1 MB
  // with kc 1024, which the register tiles read back from beyond L2. Zen 5, x 4096 x 4096, best of
  // 3 interleaved rounds, 1 KB of each row -> 1 KB in all, one core: 8-bit 8 rows 1.28 -> 0.71 ms,
  // 32 rows 2.00 -> 1.48, 64 rows 3.14 -> 2.62, 128 rows 5.27 -> 4.90; bfloat16 16 rows 2.39 ->
  // 2.03, 64 rows 5.47 -> 4.96; two cores 8-bit 64 rows 1.67 -> 1.37; 256 rows within the noise.
  // Where the threads share the panels of a dot instruction (a group-innermost copy) and C has at
  // most 16 tiles of rows, each thread copies panels of its own side by side, as many copies for
  // each thread, and prefetches the next copy's rows: few rows reuse each copy, so the copy is much
  // of the time. Two Zen 5 cores, x 4096 x 4096, interleaved, one panel per thread -> copies: 8-bit
  // 32 rows 1.40 -> 1.09 ms, 64 rows 1.92 -> 1.60, 128 rows 3.11 -> 2.81; bfloat16 32 rows 2.12 ->
  // 1.79, 64 rows 3.13 -> 2.82, 128 rows 5.58 -> 5.01; 256 rows the same. Not for float32, whose
  // few-row products mostly share blocks of columns instead, and where copies lost elsewhere (100 x
  // 1000 x 1000 0.48 -> 0.51 ms; 256^3 0.066 -> 0.079 ms with all its rows).
  const bool own_copies =
      shared == Shared::Panels && group > 1 && (cfg.nc / nr) % threads == 0 && Mp <= 16 * mr;
  IterVar jp;
  int64_t panels_in_copy = 1;  // B's micro-panels one copy packs side by side (the extent of jr in jp)
  if (cfg.pack_b && one_row_block && (shared != Shared::Panels || own_copies)) {
    panels_in_copy =
        panels_per_b_copy(own_copies ? cfg.nc / threads : cfg.nc, nr, packed_b_type.bytes(), group);
    if (panels_in_copy > 1) std::tie(jp, jr) = st.split(jr, panels_in_copy);
  }
  std::vector<IterVar> order;
  if (batched) order.push_back(nest.axis(0));
  IterVar ko, ki = kk;
  if (!one_k_block) std::tie(ko, ki) = st.split(kk, cfg.kc / group);
  order.push_back(jc);
  if (!one_k_block) order.push_back(ko);
  order.push_back(ic);
  if (jp.defined()) order.push_back(jp);
  order.insert(order.end(), {jr, ir});
  if (!tile_store) order.push_back(ki);  // else k is the tile's own loop (below)
  order.insert(order.end(), {ii, jv, jl});
  if (!tile_store && group > 1) order.push_back(kt);
  st.reorder(order);
  st.unroll(ii);
  st.unroll(jv);
  // The micro-kernel: the stage with the k loop (the nest, or the tile computed inside it).
  Stage mk = st;
  IterVar mk_l = jl;
  if (tile_store) {
    // C stores the tile a vector of a row at a time; the tile's rows and vectors are unrolled too.
    st.vectorize(jl);
    mk = s[acc];
    mk.compute_at(st, ir);
    std::vector<IterVar> tile_order;
    if (batched) tile_order.push_back(acc.axis(0));
    auto [tv, tl] = mk.split(acc.axis(o + 1), std::min<int64_t>(nr, cfg.lanes));
    tile_order.insert(tile_order.end(), {kk, acc.axis(o), tv, tl});
    if (group > 1) tile_order.push_back(kt);
    mk.reorder(tile_order);
    mk.unroll(acc.axis(o));
    mk.unroll(tv);
    mk_l = tl;
  }
  // One vector of C's row per instruction: 16 lanes of a group's products (the dot instructions'
  // tensor intrinsics), or the multiply-add of each lane.
  if (cfg.dot == DotInstruction::Vdpbf16ps)
    mk.tensorize(mk_l, x86::dot_bf16_intrin());
  else if (cfg.dot == DotInstruction::Vpdpbusd)
    mk.tensorize(mk_l, x86::dot_8bit_intrin(a_type, packed_b_type));
  else
    mk.vectorize(mk_l);
  // acc + a * b as one FMA per lane (more accurate, and what the FMA units execute).
  mk.pragma(ki, "fp_contract");
  // The outermost of C's block and tile loops that survives (a loop of one iteration is dropped with
  // its pragma): its stores stream, and a fence follows it (in each thread, where threads share it).
  if (cfg.stream_c && tile_store) {
    const int64_t panels = (std::min(cfg.nc, Np) + nr - 1) / nr,
                  side_by_side = jp.defined() ? panels_in_copy : 1;
    std::vector<std::pair<IterVar, int64_t>> loops{{jc, (Np + cfg.nc - 1) / cfg.nc},
                                                   {ic, (Mp + cfg.mc - 1) / cfg.mc}};
    if (jp.defined()) loops.emplace_back(jp, panels / side_by_side);
    loops.emplace_back(jr, side_by_side == 1 ? panels : side_by_side);
    loops.emplace_back(ir, (std::min(cfg.mc, Mp) + mr - 1) / mr);
    cfg.stream_c = stream_stores_under(st, loops);
  }
  switch (shared) {
    case Shared::None: break;
    case Shared::Batch: st.parallel(nest.axis(0)); break;
    case Shared::RowBlocks: st.parallel(ic); break;
    case Shared::ColumnBlocks: st.parallel(jc); break;
    case Shared::Panels: st.parallel(jp.defined() ? jp : jr); break;
  }

  // Packed B block (kc x nc) per (jc, pc) (per jc with one kc block), packed A block (mc x kc)
  // per ic: in cache when used.
  if (cfg.pack_b) {
    Stage sb = s[PB];
    if (one_row_block) {
      // One block of rows: each micro-panel (or the few side by side) is packed right before the
      // register tiles that use it, while it is in L1/L2, instead of the whole kc x nc block first
      // (written out to L3 and read back). Side by side, the copy walks B's rows outermost.
      sb.compute_at(st, jp.defined() ? jp : jr);
      if (jp.defined()) sb.reorder({PB.axis(o + 1), PB.axis(o)});
      // The copy waits for B's rows from memory while no multiply-add runs. So while the tiles of
      // this block compute, their k loop prefetches the rows the next copy reads, a line every few
      // iterations. Interleaved runs, one Zen 5 core, f32: 64 x 4096 x 4096 11.2-11.3 -> 9.8-10.1
      // ms (two cores 5.8 -> 5.2), 32 x 4096 x 4096 6.6-6.8 -> 5.5-5.6, 128 x 4096 x 4096 20.0-20.8
      // -> 19.0-19.1, 64 x 2048 x 2048 2.8-3.4 -> 2.5-2.7.
      if (jp.defined() && !tile_store) st.prefetch(g.B, jp, Expr(1), ki);
    } else {
      sb.compute_at(st, one_k_block ? jc : ko);
      if (cfg.parallel) sb.parallel(PB.axis(o));
    }
    IterVar pj = PB.axis(o + 2);
    if (group > 1) {
      interleave_groups(sb, pj, PB.axis(o + 3), nr * group, p.b_type(), p.transpose_b);
    } else if (nr % cfg.lanes == 0 && nr > cfg.lanes) {
      auto [pjo, pji] = sb.split(pj, cfg.lanes);
      sb.unroll(pjo);
      sb.vectorize(pji);
    } else {
      sb.vectorize(pj);
    }
  }
  if (cfg.pack_a) {
    Stage sa = s[PA];
    sa.compute_at(st, ic);
    // Read A along its contiguous dimension (k unless transposed), write the panel with stride mr.
    if (!p.transpose_a) sa.reorder({PA.axis(o), PA.axis(o + 2), PA.axis(o + 1)});
    sa.unroll(PA.axis(o + 2));
    if (group > 1) sa.unroll(PA.axis(o + 3));
  }
  if (separate_c && !tile_store) {
    // The copy of the valid corner (and the epilogue): rows in parallel, columns as vectors.
    Stage sc = s[C];
    auto [cjo, cji] = sc.split(C.axis(o + 1), cfg.lanes);
    sc.vectorize(cji);
    (void)cjo;
    if (cfg.parallel) sc.parallel(C.axis(o));
    if (cfg.stream_c) sc.pragma(C.axis(o), "nontemporal_stores");
  }
  if (flip_b) {
    // One pass over A before the product, rows in parallel. Rows of A in memory: 16 partial sums
    // per row (rfactor; the last 16 of K masked where 16 does not divide it), combined once. A
    // transposed (k-major): 16 rows at a time, as vectors along its contiguous rows.
    Stage sr = s[row_sums];
    const IterVar kr = row_sums.reduce_axis(0);
    if (!p.transpose_a) {
      auto [kro, kri] = sr.split(kr, x86::kDotLanes);
      (void)kro;
      Tensor partial = s.rfactor(row_sums, kri, o + 1);  // partial[[batch,] i, kri]
      s[partial].compute_at(sr, row_sums.axis(o));
      s[partial].reorder({partial.axis(o), partial.reduce_axis(0), partial.axis(o + 1)});
      s[partial].vectorize(partial.axis(o + 1));
      if (cfg.parallel) sr.parallel(row_sums.axis(o));
    } else {
      auto [ro, ri] = sr.split(row_sums.axis(o), x86::kDotLanes);
      sr.reorder({ro, kr, ri});
      sr.vectorize(ri);
      if (cfg.parallel) sr.parallel(ro);
    }
  }
  g.config = cfg;
  return g;
}

}  // namespace detail

LOOM_DECL Gemm gemm(const GemmProblem& problem, const GemmConfig& config) {
  detail::check_problem(problem);
  if (config.mr < 1 || config.nr < 1 || config.kc < 1 || config.mc < 1 || config.nc < 1 || config.lanes < 1)
    throw Error(cat("lib::gemm: every tile size must be at least 1, got ", config.str()));
  detail::check_streamk_config(problem, config);
  detail::check_dot_config(problem, config);
  const bool stream_k = config.decomposition == Decomposition::StreamK;
  detail::check_epilogue(problem, stream_k);
  auto row_major = [&](const GemmProblem& p) {
    return stream_k                            ? detail::gemm_streamk_row_major(p, config)
           : config.dot == DotInstruction::Amx ? detail::gemm_amx_row_major(p, config)
                                               : detail::gemm_row_major(p, config);
  };
  if (problem.layout == Layout::RowMajor) return row_major(problem);
  // Column-major C = op(A) op(B) is row-major C^T = op(B)^T op(A)^T: the same storage, with the
  // roles of A and B (and m and n) exchanged.
  GemmProblem t = problem;
  t.layout = Layout::RowMajor;
  std::swap(t.m, t.n);
  std::swap(t.transpose_a, t.transpose_b);
  t.dtype = problem.b_type();
  t.b_dtype = problem.a_type();
  t.c_dtype = problem.c_type();
  if (!problem.epilogue.empty())  // the epilogue still sees the user's (i, j)
    t.epilogue.apply = [apply = problem.epilogue.apply](const Expr& product, const std::vector<Expr>& index) {
      std::vector<Expr> user = index;
      std::swap(user[user.size() - 2], user[user.size() - 1]);
      return apply(product, user);
    };
  Gemm g = row_major(t);
  std::swap(g.A, g.B);
  g.problem = problem;
  return g;
}

namespace detail {
/// The configuration the cache-size model picks for `problem` on this machine.
inline GemmConfig heuristic_gemm_config(const GemmProblem& problem, bool allow_amx) {
  const bool col = problem.layout == Layout::ColMajor;
  // Batches are spread over the threads when there are enough of them; else blocks of rows are.
  const int threads = runtime::ThreadPool::global().num_threads();
  const int row_threads = problem.batch >= threads ? 1 : threads;
  // This CPU's dot instruction for the input types, when it has one (the row-major problem's A is
  // the column-major one's B: vpdpbusd takes either order of signedness). The dot instructions need
  // B packed group-innermost; with one to three rows of C that copy of B costs more than the product
  // (gemm_config.hpp), so such products widen and multiply-add.
  const CpuCacheInfo& cpu = CpuCacheInfo::host();
  const DType a = problem.a_type(), b = problem.b_type();
  const DotInstruction dot = vector_dot_for(a, b, cpu);
  GemmConfig c = gemm_config_model(col ? problem.n : problem.m, col ? problem.m : problem.n, problem.k,
                                   problem.dtype, row_threads, cpu, dot != DotInstruction::MultiplyAdd);
  const bool packs_b = c.pack_b || (col ? problem.m : problem.n) % c.nr != 0;  // padded columns: packed
  if (packs_b) c.dot = dot;
  // A C written once (K in one block) and as large as the L3 (counted as 4 to 32 MiB: some VMs
  // report a whole host's L3, or more, or none) leaves the caches anyway: streaming stores write it without
  // reading each line first. One Zen 5 core, 4096 x 4096 x 64: int8 6.2 -> 2.6 ms, bfloat16 6.1 ->
  // 4.1, float32 8.7 -> 8.0, float64 17.9 -> 16.5 (two cores: int8 3.3 -> 1.6 ms).
  const int64_t c_bytes =
      std::max<int64_t>(problem.batch, 1) * problem.m * problem.n * problem.c_type().bytes();
  auto streams_c = [&](int64_t kc) {
    return kc >= problem.k &&
           c_bytes >= std::clamp<int64_t>(cpu.l3_bytes, int64_t{4} << 20, int64_t{32} << 20);
  };
  // AMX where the CPU has it for the input types: 2 x 2 tiles of 16 x 16 (7 of the 8 tile
  // registers), and K in blocks of 2 KiB of A's rows. Not for products with fewer rows or columns
  // than a tile. Chosen from the instructions' throughput, not yet measured on a CPU with AMX:
  // tdpbf16ps does 16 x 16 x 32 multiply-adds in 16 cycles (512 a cycle), two vdpbf16ps a cycle 64.
  const bool bytes = (a == i8 || a == u8) && (b == i8 || b == u8);
  if (allow_amx && ((a == bf16 && b == bf16 && cpu.amx_bf16) || (bytes && cpu.amx_int8)) &&
      std::min(problem.m, problem.n) >= 16) {
    c.dot = DotInstruction::Amx;
    c.mr = c.nr = 32;
    c.kc = 2048 / a.bytes();
    c.stream_c = streams_c(c.kc);  // from each tile's block in L1 (gemm_amx.hpp); not measured
    return c;
  }
  // A dot instruction needs A's groups side by side, so a transposed A is packed (before the
  // threads share B's panels, by one thread): its rows then go in blocks per thread again.
  const bool a_transposed = col ? problem.transpose_b : problem.transpose_a;
  const int64_t rows = round_up(col ? problem.n : problem.m, c.mr);
  if (c.dot != DotInstruction::MultiplyAdd && a_transposed && row_threads > 1 && c.mc >= rows)
    c.mc = row_block(rows, c.mr, c.kc, problem.a_type().bytes(), true, row_threads, cpu);
  c.stream_c = streams_c(c.kc);
  return c;
}
}  // namespace detail

LOOM_DECL Gemm gemm(const GemmProblem& problem) {
  detail::check_problem(problem);
  // A measured configuration from the tuning database beats the model (lib/gemm_tuning.hpp).
  return gemm(problem, tuned_gemm_config(problem, detail::heuristic_gemm_config(problem, true)));
}

}  // namespace loom::lib
