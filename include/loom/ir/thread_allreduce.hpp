// The cross-thread reduction construct: every thread of a block contributes values, and every
// thread receives the combination of the values of the threads that differ from it only in
// the listed thread indices. Lowered from a reduce axis bound to threadIdx; the simulator and
// the CUDA backend implement it (warp shuffles plus shared memory on a GPU).
#pragma once

#include <vector>

#include "loom/ir/expr.hpp"

namespace loom {

namespace intrinsic {
inline constexpr const char* thread_allreduce = "loom.thread_allreduce";
}  // namespace intrinsic

struct ThreadAllreduce {
  std::vector<Var> lhs, rhs;   // the combiner's parameters
  std::vector<Expr> combine;   // combine[k](lhs, rhs)
  std::vector<Expr> identity;  // identity[k]
  std::vector<Expr> values;    // this thread's contribution, one per value
  std::vector<Var> results;    // local buffers; element 0 receives the result
  std::vector<Var> threads;    // the thread index variables reduced over

  size_t size() const { return values.size(); }

  /// Arguments: n, then n lhs, n rhs, n combine, n identity, n values, n results, then threads.
  Expr encode() const {
    std::vector<Expr> args{IntImmNode::make(i32, static_cast<int64_t>(size()))};
    for (const Var& v : lhs) args.push_back(v);
    for (const Var& v : rhs) args.push_back(v);
    for (const Expr& e : combine) args.push_back(e);
    for (const Expr& e : identity) args.push_back(e);
    for (const Expr& e : values) args.push_back(e);
    for (const Var& v : results) args.push_back(v);
    for (const Var& v : threads) args.push_back(v);
    return CallNode::make(i32, intrinsic::thread_allreduce, std::move(args), CallKind::Intrinsic);
  }

  static ThreadAllreduce decode(const CallNode* call) {
    internal_check(call->name == intrinsic::thread_allreduce, "not a thread allreduce");
    const std::vector<Expr>& a = call->args;
    const auto* n_imm = a.at(0).as<IntImmNode>();
    internal_check(n_imm != nullptr, "malformed thread allreduce");
    size_t n = static_cast<size_t>(n_imm->value), pos = 1;
    auto var_at = [&](size_t i) { return Var(Ref<const ExprNode>(a.at(i).get())); };
    ThreadAllreduce r;
    for (size_t k = 0; k < n; ++k) r.lhs.push_back(var_at(pos++));
    for (size_t k = 0; k < n; ++k) r.rhs.push_back(var_at(pos++));
    for (size_t k = 0; k < n; ++k) r.combine.push_back(a.at(pos++));
    for (size_t k = 0; k < n; ++k) r.identity.push_back(a.at(pos++));
    for (size_t k = 0; k < n; ++k) r.values.push_back(a.at(pos++));
    for (size_t k = 0; k < n; ++k) r.results.push_back(var_at(pos++));
    // A thread loop of extent 1 is folded away and its variable replaced by a constant: there is
    // one thread along it, so reducing over it is a no-op and it is not listed.
    for (; pos < a.size(); ++pos)
      if (a[pos].as<VarNode>()) r.threads.push_back(var_at(pos));
    return r;
  }
};

}  // namespace loom
