// Helpers for the GPU simulator tests: loops bound to blockIdx/threadIdx, shared and local
// allocations, loads, stores and barriers on buffer variables, written the way lowered CUDA looks.
#pragma once

#include <loom/ir/op.hpp>
#include <loom/sim/simulator.hpp>

#include <string>
#include <vector>

#include "interp_test_util.hpp"

namespace loom::test {

/// A loop bound to a thread tag ("threadIdx.x", "blockIdx.y", "vthread") over [0, extent).
inline Stmt bind(const Var& v, const std::string& tag, Expr extent, Stmt body) {
  return ForNode::make(v, 0, std::move(extent), ForKind::ThreadBinding, std::move(body), tag);
}

/// `elements` elements of `t` in memory `scope`, live within body.
inline Stmt allocate(const Var& buffer, DType t, int elements, const std::string& scope, Stmt body) {
  return AllocateNode::make(buffer, t, {Expr(elements)}, scope, std::move(body));
}

inline Expr ld(const Var& buffer, DType t, Expr index) { return LoadNode::make(t, buffer, std::move(index)); }
inline Stmt st(const Var& buffer, Expr value, Expr index) {
  return StoreNode::make(buffer, std::move(value), std::move(index));
}

/// __syncthreads().
inline Stmt syncthreads() { return BarrierNode::make("shared"); }
/// __syncwarp().
inline Stmt syncwarp() { return BarrierNode::make("warp"); }

inline Stmt seq(const std::vector<Stmt>& stmts) { return SeqNode::make(stmts); }

/// B = A^T for n x n float32 (n a multiple of 32), one 32x32 tile per block of 32x32 threads,
/// through a shared tile whose rows are `row` floats long (32: conflicts; 33: padded).
inline LoweredFunc transpose_func(int n, int row) {
  BufferParam A = buffer_param("A", f32, {n, n}), B = buffer_param("B", f32, {n, n});
  Var bx("bx"), by("by"), tx("tx"), ty("ty"), tile("tile", handle_type);
  Stmt body = seq({
      st(tile, load(A, (by * 32 + ty) * n + bx * 32 + tx), ty * row + tx),
      syncthreads(),
      store(B, ld(tile, f32, tx * row + ty), (bx * 32 + ty) * n + by * 32 + tx),
  });
  body = allocate(tile, f32, 32 * row, "shared", body);
  body = bind(by, "blockIdx.y", n / 32,
              bind(bx, "blockIdx.x", n / 32, bind(ty, "threadIdx.y", 32, bind(tx, "threadIdx.x", 32, body))));
  return make_func("transpose", {param(A), param(B)}, body);
}

/// Simulates with races recorded instead of thrown.
inline SimReport simulate_keep_races(const LoweredFunc& f, const std::vector<KernelArg>& args) {
  SimOptions options;
  options.races_are_errors = false;
  return simulate(f, args, options);
}

/// The message of the loom::Error that simulating `f` throws, or "(no error)".
inline std::string simulate_error(const LoweredFunc& f, const std::vector<KernelArg>& args) {
  try {
    simulate(f, args);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace loom::test
