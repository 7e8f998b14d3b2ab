// The classic shared-memory GEMM schedule for GPU targets: tile x tile threads per block, one
// tile of A and one of B staged in shared memory per step of k.outer, a local accumulator.
#pragma once

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/schedule/schedule.hpp"
#include "loom/te/compute.hpp"
#include "loom/te/placeholder.hpp"
#include "loom/te/reduction.hpp"
#include "loom/te/thread_axis.hpp"

namespace loom::lib {

/// What gpu_tiled_gemm() returns: the input and output tensors and their schedule, to lower or build.
struct TiledGemm {
  /// The inputs A and B and the output C, n x n each.
  /// @{
  Tensor A, B, C;
  /// @}
  /// C's schedule for the GPU, ready to lower or build.
  Schedule schedule;
};

/// C = A x B for n x n matrices of `dtype`, scheduled for blockIdx/threadIdx (CUDA or the
/// simulator). Each k.outer step the block's threads copy the tiles cooperatively, one element
/// per thread, so `tile` x `tile` threads cover a tile exactly. 16-bit inputs (f16, bf16) are
/// multiplied and summed in f32, and C is f32: a 16-bit sum of n products loses most of its bits.
inline TiledGemm gpu_tiled_gemm(int n, int tile = 16, DType dtype = f32) {
  TiledGemm g;
  g.A = placeholder({n, n}, dtype, "A");
  g.B = placeholder({n, n}, dtype, "B");
  IterVar k = reduce_axis(0, n, "k");
  const Tensor A = g.A, B = g.B;
  const bool widen = dtype.bits == 16 && dtype.is_float();
  auto element = [&](const Tensor& t, Expr r, Expr c) { return widen ? cast(f32, t(r, c)) : t(r, c); };
  g.C = compute(
      {n, n}, [&](Expr i, Expr j) { return sum(element(A, i, k) * element(B, k, j), {k}); }, "C");
  const Tensor C = g.C;
  Schedule s = create_schedule(C);
  Tensor AS = s.cache_read(A, scope::shared, {C});
  Tensor BS = s.cache_read(B, scope::shared, {C});
  Tensor CL = s.cache_write(C, scope::local);
  auto [by, bx, ty, tx] = s[C].tile(C.axis(0), C.axis(1), tile, tile);
  s[C].bind(by, thread_axis(thread_tag::blockIdx_y));
  s[C].bind(bx, thread_axis(thread_tag::blockIdx_x));
  s[C].bind(ty, thread_axis(thread_tag::threadIdx_y));
  s[C].bind(tx, thread_axis(thread_tag::threadIdx_x));
  s[CL].compute_at(s[C], tx);
  auto [ko, ki] = s[CL].split(CL.reduce_axis(0), tile);
  s[CL].pragma(ki, "fp_contract");  // the MAC loop runs fused multiply-adds
  for (const Tensor& cached : {AS, BS}) {
    s[cached].compute_at(s[CL], ko);
    s[cached].bind(cached.axis(0), thread_axis(thread_tag::threadIdx_y));
    s[cached].bind(cached.axis(1), thread_axis(thread_tag::threadIdx_x));
  }
  g.schedule = s;
  return g;
}

}  // namespace loom::lib
