// Barrier insertion for GPU kernels (TVM's ThreadSync for shared memory): inside a kernel
// region, a __syncthreads() goes before an access to a shared buffer that another thread may
// have accessed since the last barrier in a conflicting way (read after write, write after
// read or write), including across iterations of a loop. No barrier is placed where each
// thread only reads back the very element it wrote, or inside thread-dependent control flow
// (CUDA requires barriers to be reached by every thread of the block). Buffers that the
// shared-memory planner placed in overlapping bytes count as one memory.
#pragma once

#include <array>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/ir/expr_deep_equal.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/mutator.hpp"
#include "loom/ir/substitute.hpp"
#include "loom/ir/thread_allreduce.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/lower/index_overlap.hpp"
#include "loom/lower/plan_shared_memory.hpp"

namespace loom {

namespace detail {

struct SharedAccess {
  const VarNode* buffer;
  Expr index;
  bool write;
};

/// Accesses made since the last barrier, each once: a loop body is analysed twice and its states
/// merged into the enclosing one, so without this the list would double with every loop level.
struct SyncState {
  std::vector<SharedAccess> pending;

  void add(const SharedAccess& a) {
    if (seen_.insert(Key{a.buffer, a.index.get(), a.write}).second) pending.push_back(a);
  }
  void add(const std::vector<SharedAccess>& accesses) {
    for (const SharedAccess& a : accesses) add(a);
  }
  void merge(const SyncState& other) { add(other.pending); }
  void clear() {
    pending.clear();
    seen_.clear();
  }

 private:
  struct Key {
    const VarNode* buffer;
    const void* index;  // the same index node: the same access, seen again
    bool write;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<const void*>()(k.buffer) * 31 + std::hash<const void*>()(k.index) * 2 + k.write;
    }
  };
  std::unordered_set<Key, KeyHash> seen_;
};

class ThreadSyncInserter {
 public:
  Stmt run(const Stmt& s) { return visit_host(s); }

 private:
  // Host code: find kernel regions.
  Stmt visit_host(const Stmt& s) {
    struct Host : IRMutator {
      ThreadSyncInserter& self_;
      explicit Host(ThreadSyncInserter& s) : self_(s) {}
      using IRMutator::visit;
      Stmt visit(const ForNode* op) override {
        if (op->kind == ForKind::ThreadBinding && is_gpu_thread_tag(op->thread_tag)) {
          SyncState state;
          self_.thread_vars_.clear();
          self_.shared_.clear();
          self_.placed_.clear();
          for (const PlacedSharedBuffer& b : placed_shared_buffers(IRMutator::self(op)))
            self_.placed_[b.alloc->buffer.get()] = {b.offset, b.offset + b.bytes};
          self_.overlap_.learn_kernel(IRMutator::self(op));
          self_.learn_block(IRMutator::self(op));
          return self_.kernel(IRMutator::self(op), state);
        }
        return IRMutator::visit(op);
      }
    } host(*this);
    return host.mutate(s);
  }

  bool uses_thread(const Expr& e) const {
    return e.defined() && uses_var_if(e, [&](const VarNode* v) { return thread_vars_.count(v) > 0; });
  }

  /// The shared-memory accesses of the expressions and stores directly in `s` (all of it).
  std::vector<SharedAccess> accesses(const Stmt& s) const {
    struct Collector : IRVisitor {
      const ThreadSyncInserter& owner;
      std::vector<SharedAccess> out;
      explicit Collector(const ThreadSyncInserter& o) : owner(o) {}
      using IRVisitor::visit;
      void visit(const LoadNode* op) override {
        if (owner.shared_.count(op->buffer.get())) out.push_back({op->buffer.get(), op->index, false});
        IRVisitor::visit(op);
      }
      void visit(const StoreNode* op) override {
        if (owner.shared_.count(op->buffer.get())) out.push_back({op->buffer.get(), op->index, true});
        IRVisitor::visit(op);
      }
    } c(*this);
    c.visit_stmt(s);
    return c.out;
  }

  /// Whether the planner placed two different buffers in overlapping bytes.
  bool overlap(const VarNode* a, const VarNode* b) const {
    auto x = placed_.find(a), y = placed_.find(b);
    return x != placed_.end() && y != placed_.end() && x->second.first < y->second.second &&
           y->second.first < x->second.second;
  }

  /// The accesses of `s` that may come before its first barrier: those of the statements up to
  /// the first synchronisation point that every thread reaches.
  std::vector<SharedAccess> leading_accesses(const Stmt& s) const {
    std::vector<SharedAccess> out;
    walk_until_sync(s, out);
    return out;
  }
  /// Adds the accesses of `s` to `out` up to its first synchronisation point; true if it has one.
  bool walk_until_sync(const Stmt& s, std::vector<SharedAccess>& out) const {
    if (!s.defined()) return false;
    if (is_sync_point(s)) {
      std::vector<SharedAccess> mine = accesses(s);  // an allreduce reads its operands first
      out.insert(out.end(), mine.begin(), mine.end());
      return true;
    }
    if (const auto* seq = s.as<SeqNode>()) {
      for (const Stmt& x : seq->seq)
        if (walk_until_sync(x, out)) return true;
      return false;
    }
    if (const auto* op = s.as<AllocateNode>()) return walk_until_sync(op->body, out);
    if (const auto* op = s.as<AttrStmtNode>()) return walk_until_sync(op->body, out);
    if (const auto* op = s.as<LetStmtNode>()) {
      std::vector<SharedAccess> mine = accesses(EvaluateNode::make(op->value));
      out.insert(out.end(), mine.begin(), mine.end());
      return walk_until_sync(op->body, out);
    }
    std::vector<SharedAccess> mine = accesses(s);  // loops and branches: all of it, maybe no barrier
    out.insert(out.end(), mine.begin(), mine.end());
    return false;
  }

  /// Would `a` (earlier) and `b` (now) need a barrier between them?
  bool conflict(const SharedAccess& a, const SharedAccess& b) const {
    if (!a.write && !b.write) return false;
    if (a.buffer != b.buffer) return overlap(a.buffer, b.buffer);
    // The same thread-dependent index: each thread touches only its own element.
    if (uses_thread(a.index) && expr_deep_equal(a.index, b.index)) return false;
    return overlap_.may_overlap(a.index, b.index);
  }

  /// Runs one statement that cannot hold a barrier inside: a barrier goes before it if needed.
  Stmt leaf(const Stmt& s, SyncState& state) {
    std::vector<SharedAccess> mine = accesses(s);
    bool need = false;
    for (const SharedAccess& b : mine)
      for (const SharedAccess& a : state.pending) need = need || conflict(a, b);
    if (need) state.clear();
    state.add(mine);
    return need ? SeqNode::make({BarrierNode::make(scope::shared), s}) : s;
  }

  /// The block's dimensions (constant extents of the loops bound to threadIdx.x/y/z, 1 where none
  /// is bound; -1 when an extent is not a constant) and which dimension each thread variable is.
  void learn_block(const Stmt& kernel) {
    struct Finder : IRVisitor {
      ThreadSyncInserter& self;
      explicit Finder(ThreadSyncInserter& s) : self(s) {}
      using IRVisitor::visit;
      void visit(const ForNode* op) override {
        const int d = op->kind == ForKind::ThreadBinding ? launch_index_of_tag(op->thread_tag) : -1;
        if (d >= 0 && d < kFirstBlockIndex) {
          self.thread_dim_[op->loop_var.get()] = d;
          const int64_t* extent = as_const_int(op->extent);
          self.block_[static_cast<size_t>(d)] = extent ? *extent : -1;
        }
        IRVisitor::visit(op);
      }
    } finder(*this);
    block_ = {1, 1, 1};
    thread_dim_.clear();
    finder.visit_stmt(kernel);
  }

  /// Where every thread of the block waits for the others: a barrier, or an allreduce whose plan
  /// synchronizes the block. An allreduce of warp shuffles (AllreducePlan) does not: warps read
  /// their operands and go on while other warps still run, so the accesses before it stay
  /// pending. Without constant block dimensions the plan is unknown, and the allreduce is not
  /// counted as a barrier (an extra barrier is only slower; a missing one is a race).
  bool is_sync_point(const Stmt& s) const {
    if (s.as<BarrierNode>()) return true;
    const auto* ev = s.as<EvaluateNode>();
    const auto* call = ev ? ev->value.as<CallNode>() : nullptr;
    if (!call || call->name != intrinsic::thread_allreduce) return false;
    std::array<bool, 3> reduced{false, false, false};
    for (const Var& v : ThreadAllreduce::decode(call).threads) {
      auto it = thread_dim_.find(v.get());
      if (it == thread_dim_.end()) return false;
      reduced[static_cast<size_t>(it->second)] = true;
    }
    for (int64_t extent : block_)
      if (extent < 0) return false;
    return plan_allreduce(block_, reduced).synchronizes_block();
  }

  /// Statements in block-uniform control flow, where barriers may be placed.
  Stmt kernel(const Stmt& s, SyncState& state) {
    if (!s.defined()) return s;
    if (is_sync_point(s)) {
      // An allreduce that synchronizes the block reads its operands first.
      Stmt out = leaf(s, state);
      state.clear();
      return out;
    }
    if (const auto* seq = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      for (const Stmt& x : seq->seq) out.push_back(kernel(x, state));
      return SeqNode::make(out);
    }
    if (const auto* op = s.as<ForNode>()) {
      if (op->kind == ForKind::ThreadBinding && is_gpu_thread_tag(op->thread_tag)) {
        thread_vars_.insert(op->loop_var.get());
        return ForNode::make(op->loop_var, op->min, op->extent, op->kind, kernel(op->body, state),
                             op->thread_tag, op->annotations);
      }
      if (uses_thread(op->min) || uses_thread(op->extent)) return leaf(s, state);
      // A conflict with what came before the loop gets one barrier before the loop rather than
      // one per iteration (none when the body passes a barrier before any conflicting access).
      bool before = false;
      for (const SharedAccess& b : leading_accesses(op->body))
        for (const SharedAccess& a : state.pending) before = before || conflict(a, b);
      if (before) state.clear();
      // Two passes: the second starts with what the first iteration leaves pending, so that
      // conflicts between consecutive iterations get their barrier too.
      SyncState first = state;
      kernel(op->body, first);
      SyncState second = state;
      second.merge(first);
      Stmt body = kernel(op->body, second);
      state.merge(second);
      Stmt loop =
          ForNode::make(op->loop_var, op->min, op->extent, op->kind, body, op->thread_tag, op->annotations);
      return before ? SeqNode::make({BarrierNode::make(scope::shared), loop}) : loop;
    }
    if (const auto* op = s.as<IfThenElseNode>()) {
      if (uses_thread(op->condition)) return leaf(s, state);
      Stmt cond_check = leaf(EvaluateNode::make(op->condition), state);
      SyncState else_state = state;
      Stmt then_case = kernel(op->then_case, state);
      Stmt else_case = kernel(op->else_case, else_state);
      state.merge(else_state);
      Stmt out = IfThenElseNode::make(op->condition, then_case, else_case);
      return cond_check.as<SeqNode>() ? SeqNode::make({BarrierNode::make(scope::shared), out}) : out;
    }
    if (const auto* op = s.as<AllocateNode>()) {
      if (is_shared_scope(op->scope)) shared_.insert(op->buffer.get());
      return AllocateNode::make(op->buffer, op->dtype, op->extents, op->scope, kernel(op->body, state));
    }
    if (const auto* op = s.as<LetStmtNode>()) {
      if (uses_thread(op->value)) thread_vars_.insert(op->var.get());  // a thread-dependent value
      Stmt value = leaf(EvaluateNode::make(op->value), state);
      Stmt body = kernel(op->body, state);
      Stmt out = LetStmtNode::make(op->var, op->value, body);
      return value.as<SeqNode>() ? SeqNode::make({BarrierNode::make(scope::shared), out}) : out;
    }
    if (const auto* op = s.as<AttrStmtNode>())
      return AttrStmtNode::make(op->key, op->node, op->value, kernel(op->body, state));
    return leaf(s, state);
  }

  std::array<int64_t, 3> block_{1, 1, 1};               // the kernel's threadIdx.x/y/z extents
  std::unordered_map<const VarNode*, int> thread_dim_;  // threadIdx loop variable -> 0, 1, 2
  std::unordered_set<const VarNode*> thread_vars_;
  std::unordered_set<const VarNode*> shared_;
  std::unordered_map<const VarNode*, std::pair<int64_t, int64_t>> placed_;  // planned byte ranges
  IndexOverlap overlap_;
};

}  // namespace detail

/// Inserts the barriers every kernel region needs for its shared-memory accesses.
inline Stmt insert_thread_sync(const Stmt& body) { return detail::ThreadSyncInserter().run(body); }

}  // namespace loom
