// Liveness-based shared-memory planning for a CUDA kernel: shared buffers whose live ranges do
// not overlap (and between which every thread passes a barrier) share memory. Live ranges come
// from the accesses themselves, widened to a whole loop only when the buffer outlives one
// iteration of it: unlike TVM's MergeSharedMemoryAllocations (apache/tvm#17375), which records
// accesses at the allocation's scope and so misses reuse inside batched and Stream-K loops.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/codegen/cuda/host_device_split.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/ir/thread_allreduce.hpp"
#include "loom/ir/visitor.hpp"

namespace loom::cuda {

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
  /// Whether every shared buffer has a constant size (the plan covers only those).
  bool complete = true;

  const Buffer* find(const std::string& name) const {
    for (const Buffer& b : buffers)
      if (b.name == name) return &b;
    return nullptr;
  }
};

namespace detail {

inline int64_t align16(int64_t v) { return (v + 15) / 16 * 16; }

class Liveness : public IRVisitor {
 public:
  struct Loop {
    int64_t start = 0, end = 0;
    bool runs = false;  // a constant extent > 0: its body certainly executes
  };
  struct Barrier {
    int64_t at = 0;
    bool conditional = false;
    std::vector<int> loops;  // enclosing loops, outermost first
  };
  struct Buf {
    const AllocateNode* alloc = nullptr;
    std::vector<int> alloc_loops;
    int64_t first = INT64_MAX, last = -1;
  };

  std::vector<Loop> loops;
  std::vector<Barrier> barriers;
  std::vector<Buf> bufs;

 protected:
  using IRVisitor::visit;

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
    ++now_;
    IRVisitor::visit(op);
    touch(op->buffer);
  }
  void visit(const EvaluateNode* op) override {
    ++now_;
    if (const CallNode* c = op->value.as<CallNode>(); c && c->name == loom::intrinsic::thread_allreduce) {
      ThreadAllreduce r = ThreadAllreduce::decode(c);
      for (const Var& v : r.results) touch(v);
    }
    IRVisitor::visit(op);
  }
  void visit(const LetStmtNode* op) override {
    ++now_;
    IRVisitor::visit(op);
  }
  void visit(const BarrierNode*) override {
    ++now_;
    barriers.push_back({now_, if_depth_ > 0, loop_stack_});
    ++now_;
  }
  void visit(const IfThenElseNode* op) override {
    ++now_;
    visit_expr(op->condition);
    ++if_depth_;
    visit_stmt(op->then_case);
    visit_stmt(op->else_case);
    --if_depth_;
  }
  void visit(const ForNode* op) override {
    if (op->kind == ForKind::ThreadBinding && launch_index(op->thread_tag) >= 0) {
      IRVisitor::visit(op);  // a launch index, not a loop: nothing is carried between its "iterations"
      return;
    }
    ++now_;
    const int id = static_cast<int>(loops.size());
    const int64_t* extent = as_const_int(op->extent);
    loops.push_back({now_, 0, extent && *extent > 0});
    loop_stack_.push_back(id);
    IRVisitor::visit(op);
    loop_stack_.pop_back();
    loops[static_cast<size_t>(id)].end = ++now_;
    for (const auto& [buf, loop] : pending_)
      if (loop == id)
        bufs[static_cast<size_t>(buf)].last = std::max(bufs[static_cast<size_t>(buf)].last, now_);
  }
  void visit(const AllocateNode* op) override {
    if (op->scope == "shared" || op->scope == "shared.dyn") {
      buf_of_[op->buffer.get()] = static_cast<int>(bufs.size());
      bufs.push_back({op, loop_stack_, INT64_MAX, -1});
    }
    IRVisitor::visit(op);
  }

 private:
  int64_t now_ = 0;
  int if_depth_ = 0;
  std::vector<int> loop_stack_;
  std::unordered_map<const VarNode*, int> buf_of_;
  std::vector<std::pair<int, int>> pending_;  // (buffer, loop) whose end extends its range
};

}  // namespace detail

/// Plans the shared buffers of one kernel body (the buffers of non-constant size are left out
/// and make the plan incomplete).
inline SharedMemoryPlan plan_shared_memory(const Stmt& kernel) {
  detail::Liveness live;
  live.visit_stmt(kernel);
  SharedMemoryPlan plan;
  std::vector<size_t> planned;  // index in live.bufs
  for (size_t i = 0; i < live.bufs.size(); ++i) {
    const detail::Liveness::Buf& b = live.bufs[i];
    Expr elements = make_const(i64, 1);
    for (const Expr& e : b.alloc->extents) elements = elements * cast(i64, e);
    const Expr simplified = simplify(elements);  // as_const_int points into it
    const int64_t* n = as_const_int(simplified);
    if (!n) {
      plan.complete = false;
      continue;
    }
    SharedMemoryPlan::Buffer out;
    out.alloc = b.alloc;
    out.name = b.alloc->buffer.name();
    out.bytes = *n * b.alloc->dtype.bytes();
    out.first = b.first == INT64_MAX ? 0 : b.first;
    out.last = b.last < 0 ? out.first : b.last;
    plan.buffers.push_back(out);
    planned.push_back(i);
    plan.naive_bytes += detail::align16(out.bytes);
  }

  // A barrier every thread passes between positions p < q: outside any branch, and inside only
  // loops that certainly run or that hold p and q as well.
  auto separated = [&](int64_t p, int64_t q) {
    for (const detail::Liveness::Barrier& bar : live.barriers) {
      if (bar.at <= p || bar.at >= q || bar.conditional) continue;
      bool ok = true;
      for (int l : bar.loops) {
        const detail::Liveness::Loop& loop = live.loops[static_cast<size_t>(l)];
        if (!loop.runs && !(loop.start <= p && q <= loop.end)) ok = false;
      }
      if (ok) return true;
    }
    return false;
  };
  auto interfere = [&](size_t x, size_t y) {
    const SharedMemoryPlan::Buffer& a = plan.buffers[x];
    const SharedMemoryPlan::Buffer& b = plan.buffers[y];
    if (!(a.last < b.first || b.last < a.first)) return true;
    const bool a_first = a.last < b.first;
    const SharedMemoryPlan::Buffer& early = a_first ? a : b;
    const SharedMemoryPlan::Buffer& late = a_first ? b : a;
    if (!separated(early.last, late.first)) return true;
    // Both allocated inside a loop: the next iteration's `early` follows this one's `late`.
    const auto& la = live.bufs[planned[x]].alloc_loops;
    const auto& lb = live.bufs[planned[y]].alloc_loops;
    size_t common = 0;
    while (common < la.size() && common < lb.size() && la[common] == lb[common]) ++common;
    if (common > 0) {
      const detail::Liveness::Loop& loop = live.loops[static_cast<size_t>(la[common - 1])];
      if (!separated(late.last, loop.end) && !separated(loop.start, early.first)) return true;
    }
    return false;
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
      if (interfere(i, j))
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

}  // namespace loom::cuda
