// The cross-thread reduction construct: every thread of a block contributes values, and every
// thread receives the combination of the values of the threads that differ from it only in
// the listed thread indices. Lowered from a reduce axis bound to threadIdx; the simulator and
// the CUDA backend implement it (warp shuffles plus shared memory on a GPU), after one plan
// (AllreducePlan below).
#pragma once

#include <array>
#include <cstdint>
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

/// How a GPU block implements one allreduce, from the block's dimensions and which of
/// threadIdx.x/y/z it reduces over: the CUDA code generator emits this plan
/// (codegen/cuda/cuda_allreduce.hpp), and barrier insertion (lower/thread_sync.hpp) and the
/// simulator (sim/allreduce.hpp) follow it, so all three agree on whether it synchronizes the block.
struct AllreducePlan {
  enum class Kind {
    WarpShuffle,     // groups of `group` consecutive lanes (a power of two <= 32): shuffles only
    WarpsAndShared,  // groups of 32*W consecutive threads: shuffles, W partials in shared, shuffles
    SharedTree,      // anything else: every value in shared memory, a tree of halvings
  };
  Kind kind = Kind::SharedTree;
  int64_t threads = 1;  // threads per block
  int64_t group = 1;    // threads combined into one result
  int64_t groups = 1;   // threads / group
  std::array<int64_t, 3> block{1, 1, 1};
  std::array<bool, 3> reduced{false, false, false};

  /// Whether the whole block waits at the allreduce (a __syncthreads): not for warp shuffles,
  /// where each warp combines its own lanes and the other warps go on.
  bool synchronizes_block() const { return kind != Kind::WarpShuffle; }

  /// Shared memory the plan needs for one value of `bytes` bytes.
  int64_t shared_bytes(int64_t bytes) const {
    switch (kind) {
      case Kind::WarpShuffle: return 0;
      case Kind::WarpsAndShared: return groups * (group / 32) * bytes;
      case Kind::SharedTree: return threads * bytes;
    }
    return 0;
  }
};

inline AllreducePlan plan_allreduce(std::array<int64_t, 3> block, std::array<bool, 3> reduced) {
  AllreducePlan p;
  p.block = block;
  p.reduced = reduced;
  p.threads = block[0] * block[1] * block[2];
  for (int d = 0; d < 3; ++d)
    if (reduced[d]) p.group *= block[d];
  p.groups = p.threads / p.group;
  // The reduced threads are consecutive (in CUDA's x-fastest numbering) when the reduced
  // dimensions are a prefix of x, y, z, ignoring dimensions of extent 1.
  bool contiguous = true, seen_kept = false;
  for (int d = 0; d < 3; ++d) {
    if (block[d] == 1) continue;
    if (reduced[d] && seen_kept) contiguous = false;
    if (!reduced[d]) seen_kept = true;
  }
  if (contiguous && (p.group & (p.group - 1)) == 0 && p.group <= 32) {  // a power of two
    p.kind = AllreducePlan::Kind::WarpShuffle;
  } else if (contiguous && p.group % 32 == 0) {
    p.kind = AllreducePlan::Kind::WarpsAndShared;
  }
  return p;
}

}  // namespace loom
