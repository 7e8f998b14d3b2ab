// Liveness-based shared-memory planning, a pass of the memory phase: in each GPU kernel, shared
// buffers whose live ranges do not overlap are given overlapping places in one block of shared
// memory, recorded as a `shared_memory_offset` attribute around each Allocate. Live ranges come
// from the accesses themselves, widened to a whole loop only when the buffer outlives one
// iteration of it: unlike TVM's MergeSharedMemoryAllocations (apache/tvm#17375), which records
// accesses at the allocation's scope and so misses reuse inside batched and Stream-K loops.
// The barriers that make the reuse safe (all threads done with one buffer before any thread
// writes the next into the same bytes) are placed by insert_thread_sync, which runs after this
// pass and treats buffers with overlapping places as one memory.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/mutator.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/shared_memory_layout.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/ir/substitute.hpp"
#include "loom/ir/thread_allreduce.hpp"
#include "loom/ir/visitor.hpp"

namespace loom {

/// Where each shared buffer of a kernel lives in one block of shared memory.
struct SharedMemoryPlan {
  struct Buffer {
    const AllocateNode* alloc = nullptr;
    std::string name;
    int64_t bytes = 0;
    int64_t offset = 0;
    int64_t first = 0, last = 0;  // live range, in statement order
  };
  std::vector<Buffer> buffers;
  int64_t total_bytes = 0;  // the planned block
  int64_t naive_bytes = 0;  // every buffer in memory of its own (16-byte aligned)
  int64_t saved_bytes() const { return naive_bytes - total_bytes; }
  /// Whether every shared buffer has a constant size and the scope "shared" (the plan covers only
  /// those; "shared.dyn" buffers are placed by the backend).
  bool complete = true;

  const Buffer* find(const std::string& name) const {
    for (const Buffer& b : buffers)
      if (b.name == name) return &b;
    return nullptr;
  }
};

namespace detail {

/// Numbers the statements of a kernel in execution order and records, for every shared buffer,
/// the first and last position that touches it, and for every position whether it lies inside
/// thread-dependent control flow (where no barrier can be placed).
class Liveness : public IRVisitor {
 public:
  struct Loop {
    int64_t start = 0, end = 0;
  };
  struct Buf {
    const AllocateNode* alloc = nullptr;
    std::vector<int> alloc_loops;
    int64_t first = INT64_MAX, last = -1;
  };

  std::vector<Loop> loops;
  std::vector<Buf> bufs;

  /// The thread-dependent statement (an if or a loop) that position `p` lies in, or -1.
  int divergent_region(int64_t p) const { return region_at_[static_cast<size_t>(p)]; }

 protected:
  using IRVisitor::visit;

  int64_t tick() {
    ++now_;
    region_at_.push_back(region_);
    return now_;
  }

  bool uses_thread(const Expr& e) const {
    return e.defined() && uses_var_if(e, [&](const VarNode* v) { return thread_vars_.count(v) > 0; });
  }

  /// Runs `f` inside a new divergent region, unless already inside one.
  template <typename F>
  void divergent(F&& f) {
    const int outer = region_;
    if (region_ < 0) region_ = next_region_++;
    f();
    region_ = outer;
  }

  void touch(const Var& buffer) {
    auto it = buf_of_.find(buffer.get());
    if (it == buf_of_.end()) return;
    Buf& b = bufs[static_cast<size_t>(it->second)];
    int64_t first = now_, last = now_;
    // Loops entered since the allocation: the buffer keeps its contents from one iteration to
    // the next, so it is live over the whole of the outermost of them.
    if (loop_stack_.size() > b.alloc_loops.size()) {
      const Loop& outer = loops[static_cast<size_t>(loop_stack_[b.alloc_loops.size()])];
      first = outer.start;
      last = -1;  // the loop's end is not known yet: fixed when the loop closes
      pending_.push_back({it->second, loop_stack_[b.alloc_loops.size()]});
    }
    b.first = std::min(b.first, first);
    if (last >= 0) b.last = std::max(b.last, last);
  }

  void visit(const LoadNode* op) override {
    touch(op->buffer);
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    tick();
    IRVisitor::visit(op);
    touch(op->buffer);
  }
  void visit(const EvaluateNode* op) override {
    tick();
    if (const CallNode* c = op->value.as<CallNode>(); c && c->name == loom::intrinsic::thread_allreduce) {
      ThreadAllreduce r = ThreadAllreduce::decode(c);
      for (const Var& v : r.results) touch(v);
    }
    IRVisitor::visit(op);
  }
  void visit(const LetStmtNode* op) override {
    tick();
    if (uses_thread(op->value)) thread_vars_.insert(op->var.get());
    IRVisitor::visit(op);
  }
  void visit(const BarrierNode*) override { tick(); }
  void visit(const IfThenElseNode* op) override {
    auto body = [&] {
      tick();
      visit_expr(op->condition);
      visit_stmt(op->then_case);
      visit_stmt(op->else_case);
    };
    if (uses_thread(op->condition)) {
      divergent(body);
    } else {
      body();
    }
  }
  void visit(const ForNode* op) override {
    if (op->kind == ForKind::ThreadBinding && is_gpu_thread_tag(op->thread_tag)) {
      // A launch index, not a loop: nothing is carried between its "iterations".
      thread_vars_.insert(op->loop_var.get());
      IRVisitor::visit(op);
      return;
    }
    auto loop = [&] {
      const int id = static_cast<int>(loops.size());
      loops.push_back({tick(), 0});
      loop_stack_.push_back(id);
      IRVisitor::visit(op);
      loop_stack_.pop_back();
      loops[static_cast<size_t>(id)].end = tick();
      for (const auto& [buf, l] : pending_)
        if (l == id)
          bufs[static_cast<size_t>(buf)].last = std::max(bufs[static_cast<size_t>(buf)].last, now_);
    };
    if (uses_thread(op->min) || uses_thread(op->extent)) {
      divergent(loop);
    } else {
      loop();
    }
  }
  void visit(const AllocateNode* op) override {
    if (is_shared_scope(op->scope)) {
      buf_of_[op->buffer.get()] = static_cast<int>(bufs.size());
      bufs.push_back({op, loop_stack_, INT64_MAX, -1});
    }
    IRVisitor::visit(op);
  }

 private:
  int64_t now_ = 0;
  std::vector<int> region_at_{-1};  // by position
  int region_ = -1, next_region_ = 0;
  std::unordered_set<const VarNode*> thread_vars_;
  std::vector<int> loop_stack_;
  std::unordered_map<const VarNode*, int> buf_of_;
  std::vector<std::pair<int, int>> pending_;  // (buffer, loop) whose end extends its range
};

}  // namespace detail

/// Plans the shared buffers of one kernel body. Two buffers may share bytes when their live ranges
/// do not overlap and a barrier can separate them: the last access to the earlier one and the
/// first access to the later one are not inside one thread-dependent if or loop. Buffers of
/// non-constant size or of scope "shared.dyn" are left out and make the plan incomplete.
inline SharedMemoryPlan plan_shared_memory(const Stmt& kernel) {
  detail::Liveness live;
  live.visit_stmt(kernel);
  SharedMemoryPlan plan;
  for (const detail::Liveness::Buf& b : live.bufs) {
    const std::optional<int64_t> bytes = detail::constant_allocation_bytes(b.alloc);
    if (!bytes || b.alloc->scope != scope::shared) {
      plan.complete = false;
      continue;
    }
    SharedMemoryPlan::Buffer out;
    out.alloc = b.alloc;
    out.name = b.alloc->buffer.name();
    out.bytes = *bytes;
    out.first = b.first == INT64_MAX ? 0 : b.first;
    out.last = b.last < 0 ? out.first : b.last;
    plan.buffers.push_back(out);
    plan.naive_bytes += detail::align16(out.bytes);
  }

  auto interfere = [&](const SharedMemoryPlan::Buffer& a, const SharedMemoryPlan::Buffer& b) {
    if (!(a.last < b.first || b.last < a.first)) return true;
    const SharedMemoryPlan::Buffer& early = a.last < b.first ? a : b;
    const SharedMemoryPlan::Buffer& late = a.last < b.first ? b : a;
    // insert_thread_sync puts the barrier before the thread-dependent statement that holds the
    // later buffer's first access; it comes too late if that statement also holds the earlier
    // buffer's last access. (Reuse across iterations of a loop around both needs a barrier in the
    // loop body between the later buffer's last access and the earlier one's first: there is
    // always a statement boundary outside any thread-dependent statement there, or the two
    // ranges would already share one.)
    const int region = live.divergent_region(late.first);
    return region >= 0 && region == live.divergent_region(early.last);
  };

  // Largest first, each at the lowest 16-byte aligned offset free of the buffers it interferes with.
  std::vector<size_t> order(plan.buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return plan.buffers[a].bytes > plan.buffers[b].bytes; });
  std::vector<size_t> placed;
  for (size_t i : order) {
    std::vector<std::pair<int64_t, int64_t>> taken;
    for (size_t j : placed)
      if (interfere(plan.buffers[i], plan.buffers[j]))
        taken.push_back(
            {plan.buffers[j].offset, plan.buffers[j].offset + detail::align16(plan.buffers[j].bytes)});
    std::sort(taken.begin(), taken.end());
    int64_t offset = 0;
    for (const auto& [lo, hi] : taken) {
      if (offset + plan.buffers[i].bytes <= lo) break;
      offset = std::max(offset, hi);
    }
    plan.buffers[i].offset = offset;
    plan.total_bytes = std::max(plan.total_bytes, offset + detail::align16(plan.buffers[i].bytes));
    placed.push_back(i);
  }
  return plan;
}

/// The memory pass: plans the shared buffers of every kernel region (an outermost loop bound to
/// blockIdx/threadIdx) and records the places where that saves memory.
inline Stmt merge_shared_memory(const Stmt& body) {
  struct Annotate : IRMutator {
    std::unordered_map<const AllocateNode*, int64_t> offsets;
    using IRMutator::visit;
    Stmt visit(const AllocateNode* op) override {
      Stmt out = IRMutator::visit(op);
      auto it = offsets.find(op);
      if (it == offsets.end()) return out;
      return AttrStmtNode::make(attr::shared_memory_offset, op->buffer, make_const(i64, it->second), out);
    }
  };
  struct Kernels : IRMutator {
    using IRMutator::visit;
    Stmt visit(const ForNode* op) override {
      if (op->kind != ForKind::ThreadBinding || !is_gpu_thread_tag(op->thread_tag))
        return IRMutator::visit(op);
      Stmt kernel = IRMutator::self(op);
      const SharedMemoryPlan plan = plan_shared_memory(kernel);
      if (!plan.complete || plan.buffers.size() < 2 || plan.saved_bytes() <= 0) return kernel;
      Annotate annotate;
      for (const SharedMemoryPlan::Buffer& b : plan.buffers) annotate.offsets[b.alloc] = b.offset;
      return annotate.mutate(kernel);
    }
  } kernels;
  return kernels.mutate(body);
}

}  // namespace loom
