// Three GPU schedules with a shared-memory tile whose accesses conflict, the cases of the
// bank-conflict tests and example: a transpose, an fp16 GEMM A tile read as mma fragments, and
// float4 rows read down a column of lanes. Each is scheduled for Target::cuda_sim() or CUDA.
#pragma once

#include <string>
#include <vector>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/lower/lower.hpp"
#include "loom/schedule/schedule.hpp"
#include "loom/sim/simulator.hpp"
#include "loom/te/compute.hpp"
#include "loom/te/placeholder.hpp"
#include "loom/te/reduction.hpp"
#include "loom/te/thread_axis.hpp"

namespace loom::lib {

struct SharedTileCase {
  std::string name;
  Schedule schedule;
  Tensor input, output;
  Tensor tile;  // the shared-memory stage (cache_read of input)
  std::vector<LowerArg> args() const { return {input, output}; }
};

/// B = A^T (n x n, f32) through a tile x tile shared tile: tile x tile threads copy a tile of A
/// row by row (threadIdx.x along a row), then write B reading the tile down a column, so with
/// 32-float rows the 32 lanes of a warp read one bank: 32-way conflicts.
inline SharedTileCase transpose_case(int n, int tile = 32) {
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = compute(
      {n, n}, [&](Expr i, Expr j) { return A(j, i); }, "B");
  Schedule s = create_schedule(B);
  Tensor AS = s.cache_read(A, scope::shared, {B});
  auto [by, bx, ty, tx] = s[B].tile(B.axis(0), B.axis(1), tile, tile);
  s[B].bind(by, thread_axis(thread_tag::blockIdx_y));
  s[B].bind(bx, thread_axis(thread_tag::blockIdx_x));
  s[B].bind(ty, thread_axis(thread_tag::threadIdx_y));
  s[B].bind(tx, thread_axis(thread_tag::threadIdx_x));
  s[AS].compute_at(s[B], bx);
  s[AS].bind(AS.axis(0), thread_axis(thread_tag::threadIdx_y));
  s[AS].bind(AS.axis(1), thread_axis(thread_tag::threadIdx_x));
  return {cat("transpose", tile), s, A, B, AS};
}

/// The A operand of an fp16 GEMM: per block a 128 x 32 tile of A (m x 32, f16) is copied to
/// shared memory with 128-bit stores (8 halves per thread, one warp), then read the way
/// mma.m16n8k16 reads its A fragments: F[b][mt][kk][lane][p][e] = A(row, col) with
/// row = b*128 + mt*16 + lane/4 + 8*(p%2), col = kk*16 + 2*(lane%4) + e + 8*(p/2); e is a
/// vectorized pair, so each fragment register is one 32-bit load. Rows past m read as 0.
inline SharedTileCase mma_a_tile_case(int m) {
  const int k = 32, blocks = (m + 127) / 128;
  Tensor A = placeholder({m, k}, f16, "A");
  Tensor F = compute(
      {blocks, 8, 2, 32, 4, 2},
      [&](Expr b, Expr mt, Expr kk, Expr lane, Expr p, Expr e) {
        Expr row = b * 128 + mt * 16 + floordiv(lane, 4) + floormod(p, 2) * 8;
        Expr col = kk * 16 + floormod(lane, 4) * 2 + e + floordiv(p, 2) * 8;
        return if_then_else(row < m, A(row, col), make_const(f16, 0.0));
      },
      "F");
  Schedule s = create_schedule(F);
  Tensor AS = s.cache_read(A, scope::shared, {F});
  s[F].reorder({F.axis(0), F.axis(3), F.axis(1), F.axis(2), F.axis(4), F.axis(5)});
  s[F].bind(F.axis(0), thread_axis(thread_tag::blockIdx_x));
  s[F].bind(F.axis(3), thread_axis(thread_tag::threadIdx_x));
  s[F].vectorize(F.axis(5));
  s[AS].compute_at(s[F], F.axis(0));
  auto [jo, ji] = s[AS].split(AS.axis(1), 8);
  IterVar rows = s[AS].fuse(AS.axis(0), jo);
  auto [step, lane] = s[AS].split(rows, 32);
  s[AS].bind(lane, thread_axis(thread_tag::threadIdx_x));
  s[AS].vectorize(ji);
  return {"mma_a_tile", s, A, F, AS};
}

/// C = 2 A (n x n, f32) with float4 accesses: a 32 x 32 shared tile is filled with float4 stores
/// along its rows, then lane l of a warp reads a float4 of row l, so the 8 lanes of a quarter-warp
/// read 8 rows at the same column: 8-way conflicts with 32-float rows.
inline SharedTileCase float4_case(int n) {
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return A(i, j) * make_const(f32, 2.0); }, "C");
  Schedule s = create_schedule(C);
  Tensor AS = s.cache_read(A, scope::shared, {C});
  auto [bi, bj, ii, jj] = s[C].tile(C.axis(0), C.axis(1), 32, 32);
  auto [jo, ji] = s[C].split(jj, 4);
  s[C].reorder({bi, bj, jo, ii, ji});
  s[C].bind(bi, thread_axis(thread_tag::blockIdx_y));
  s[C].bind(bj, thread_axis(thread_tag::blockIdx_x));
  s[C].bind(jo, thread_axis(thread_tag::threadIdx_y));
  s[C].bind(ii, thread_axis(thread_tag::threadIdx_x));
  s[C].vectorize(ji);
  s[AS].compute_at(s[C], bj);
  auto [ajo, aji] = s[AS].split(AS.axis(1), 4);
  IterVar fused = s[AS].fuse(AS.axis(0), ajo);
  auto [ty, tx] = s[AS].split(fused, 32);
  s[AS].bind(ty, thread_axis(thread_tag::threadIdx_y));
  s[AS].bind(tx, thread_axis(thread_tag::threadIdx_x));
  s[AS].vectorize(aji);
  return {"float4", s, A, C, AS};
}

}  // namespace loom::lib
