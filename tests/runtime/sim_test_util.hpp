// Helpers for the GPU simulator tests: loops bound to blockIdx/threadIdx, shared and local
// allocations, loads, stores and barriers on buffer variables, written the way lowered CUDA looks.
#pragma once

#include <loom/ir/op.hpp>
#include <loom/runtime/simulator.hpp>

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

inline Stmt seq(const std::vector<Stmt>& stmts) { return SeqNode::make(stmts); }

/// Simulates with races recorded instead of thrown.
inline SimReport simulate_keep_races(const LoweredFunc& f, const std::vector<KernelArg>& args) {
  SimOptions options;
  options.races_are_errors = false;
  return simulate(f, args, options);
}

}  // namespace loom::test
