// pipeline(stages), carried out: buffers filled at the start of each iteration of a serial loop and
// read later in it get `stages` slots; iteration i fills the slot of iteration i + stages - 1 while
// it reads its own, so stages - 1 tiles are in flight. Copies from global to shared memory become
// cp.async (4, 8 or 16 bytes, from ir/vector_access.hpp's rule), committed as one group per
// iteration and awaited with wait_group(stages - 2) at the top of the next one, followed by a
// barrier (other threads' copies); other copies stay plain stores, which the same barrier orders.
#pragma once

#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "loom/ir/free_vars.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/mutator.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/substitute.hpp"
#include "loom/ir/vector_access.hpp"
#include "loom/lower/inject_double_buffer.hpp"
#include "loom/lower/rewrite_loops.hpp"
#include "loom/te/ptx_intrinsics.hpp"

namespace loom {

namespace attr {
/// On an Allocate: the buffer is pipelined (Stage::pipeline) with this many slots (the value).
inline constexpr const char* pipeline_stages = "pipeline_stages";
}  // namespace attr

namespace detail {

/// Lane 0 of a vector expression, or undefined where it cannot be written as a scalar: enough for
/// the conditions whose lanes agree (lanes_agree), where lane 0 stands for all of them.
inline Expr lane_zero(const Expr& e) {
  if (e.dtype().lanes == 1) return e;
  if (const auto* r = e.as<RampNode>()) return r->base;
  if (const auto* b = e.as<BroadcastNode>()) return b->value;
  auto binary = [](const auto* op, auto make) -> Expr {
    Expr a = lane_zero(op->a), b = lane_zero(op->b);
    return a.defined() && b.defined() ? make(a, b) : Expr();
  };
  if (const auto* o = e.as<AndNode>()) return binary(o, [](Expr a, Expr b) { return a && b; });
  if (const auto* o = e.as<OrNode>()) return binary(o, [](Expr a, Expr b) { return a || b; });
  if (const auto* o = e.as<LTNode>()) return binary(o, [](Expr a, Expr b) { return a < b; });
  if (const auto* o = e.as<LENode>()) return binary(o, [](Expr a, Expr b) { return a <= b; });
  if (const auto* o = e.as<GTNode>()) return binary(o, [](Expr a, Expr b) { return a > b; });
  if (const auto* o = e.as<GENode>()) return binary(o, [](Expr a, Expr b) { return a >= b; });
  if (const auto* o = e.as<NotNode>()) {
    Expr a = lane_zero(o->a);
    return a.defined() ? !a : Expr();
  }
  if (const auto* c = e.as<CallNode>(); c && c->name == intrinsic::likely && c->args.size() == 1) {
    Expr a = lane_zero(c->args[0]);
    return a.defined() ? likely(a) : Expr();
  }
  return Expr();
}

/// Turns the stores of a producer into a shared buffer that copy from global memory into cp.async:
/// `shared[i] = global[j]` (and `= if_then_else(c, global[j], 0)` or a load masked by c, zero-filled
/// where c fails), scalar or a whole vector per ir/vector_access.hpp, of 4, 8 or 16 bytes, where
/// every condition is the same for all lanes. Other stores are left as they are.
class AsyncCopies : public IRMutator {
 public:
  /// `shared`: the pipelined shared buffers with the bytes of one slot (a copy must keep its
  /// alignment in every slot); `local`: buffers allocated in the function in a scope other than
  /// global (not a source cp.async can read).
  AsyncCopies(std::unordered_map<const VarNode*, int64_t> shared, std::unordered_set<const VarNode*> local)
      : shared_(std::move(shared)), local_(std::move(local)) {}
  using IRMutator::mutate;
  /// Stores turned into cp.async so far.
  int converted = 0;

 protected:
  using IRMutator::visit;
  Stmt visit(const StoreNode* op) override {
    const auto slot = shared_.find(op->buffer.get());
    if (slot == shared_.end()) return IRMutator::visit(op);
    const DType t = op->value.dtype();
    Expr value = op->value, zero_fill;
    if (const auto* c = value.as<CallNode>();
        c && c->name == intrinsic::if_then_else && c->args.size() == 3) {
      if (!is_zero(c->args[2])) return IRMutator::visit(op);
      zero_fill = lane_zero(c->args[0]);
      if (!zero_fill.defined() || !lanes_agree(c->args[0])) return IRMutator::visit(op);
      value = c->args[1];
    }
    const auto* load = value.as<LoadNode>();
    if (!load || load->dtype != t || local_.count(load->buffer.get())) return IRMutator::visit(op);
    if (load->predicate.defined()) {  // a masked load reads zeros where its mask is off
      const Expr mask = lane_zero(load->predicate);
      if (!mask.defined() || !lanes_agree(load->predicate)) return IRMutator::visit(op);
      zero_fill = zero_fill.defined() ? zero_fill && mask : mask;
    }
    int bytes = t.bytes();
    Expr dst = op->index, src = load->index, guard = op->predicate;
    if (t.lanes > 1) {
      const VectorAccess d = vector_access(t, op->index, op->predicate),
                         s = vector_access(t, load->index, Expr());
      if (!d.vector || !s.vector || d.pieces != 1 || s.pieces != 1 || d.bytes != s.bytes)
        return IRMutator::visit(op);
      bytes = d.bytes;
      dst = op->index.as<RampNode>()->base;
      src = load->index.as<RampNode>()->base;
      if (guard.defined()) guard = lane_zero(guard);
      if (op->predicate.defined() && !guard.defined()) return IRMutator::visit(op);
    }
    if ((bytes != 4 && bytes != 8 && bytes != 16) || slot->second % bytes != 0) return IRMutator::visit(op);
    Expr src_bytes = make_const(i32, bytes);
    if (zero_fill.defined()) {  // nothing read where the condition fails; the address stays inside
      src_bytes = select(zero_fill, src_bytes, make_const(i32, 0));
      src = select(zero_fill, src, make_zero(src.dtype()));
    }
    const DType element = t.element_of();
    Stmt copy = warp_intrinsic_call(
        ptx::cp_async(bytes, bytes == 16),
        {{op->buffer, element, dst}, {load->buffer, element, src}, {Var(), i32, src_bytes}});
    ++converted;
    return guard.defined() ? IfThenElseNode::make(guard, copy) : copy;
  }

 private:
  std::unordered_map<const VarNode*, int64_t> shared_;
  std::unordered_set<const VarNode*> local_;
};

/// One pipelined buffer of a loop: its allocation and the statement that fills it.
struct PipelinedBuffer {
  const AllocateNode* alloc = nullptr;
  Stmt producer;
  int marker = 0;  // the producer's place in the loop body while it is rewritten
};

inline constexpr const char* pipeline_marker = "loom.pipeline_producer";

/// Pipelines one serial loop whose iterations fill pipelined buffers first.
class PipelineInjector {
 public:
  explicit PipelineInjector(std::unordered_set<const VarNode*> local) : local_(std::move(local)) {}

  /// The pipelined loop, or undefined when it fills no pipelined buffer.
  Stmt rewrite(const ForNode* loop) {
    buffers_.clear();
    stages_ = 0;
    Stmt body = find(loop->body);
    if (buffers_.empty()) return Stmt();
    // The producers must run ahead of the rest of the iteration: they may not read what it
    // writes, and nothing but its producer may write a buffer. Else the loop stays as it was
    // (one slot each, the same results).
    BufferAccess rest;
    rest.visit_stmt(body);
    for (const PipelinedBuffer& b : buffers_) {
      BufferAccess p;
      p.visit_stmt(b.producer);
      if (!p.writes.count(b.alloc->buffer.get())) return unmarked(loop);
      for (const VarNode* w : rest.writes)
        if (p.reads.count(w) || p.writes.count(w)) return unmarked(loop);
      for (const PipelinedBuffer& other : buffers_)
        if (other.alloc != b.alloc &&
            (p.reads.count(other.alloc->buffer.get()) || p.writes.count(other.alloc->buffer.get())))
          return unmarked(loop);
      // The prologue runs before the loop: a producer may use no variable bound inside it (the
      // pipelined buffers move out of it).
      for (const Var& v : free_vars(b.producer))
        if (v.get() != loop->loop_var.get() && bound_inside(body, v)) return unmarked(loop);
    }
    const DType it = loop->loop_var.dtype();
    // Iterations in the loop variable's type (a loop's bounds may be wider than its variable).
    auto iteration_of = [&](const Expr& e) { return e.dtype() == it ? e : cast(it, e); };
    const Expr first = iteration_of(loop->min), n = make_int_const(it, stages_),
               end = iteration_of(loop->min + loop->extent);
    auto slot = [&](const PipelinedBuffer& b, const Expr& iteration) {
      const Expr size = b.alloc->extents[0];
      return cast(size.dtype(), floormod(iteration - first, n)) * size;
    };
    std::unordered_map<const VarNode*, int64_t> shared;  // with the bytes of a slot, when constant
    bool any_shared = false;
    for (const PipelinedBuffer& b : buffers_) {
      const int64_t* size = as_const_int(b.alloc->extents[0]);
      if (b.alloc->scope == scope::shared && size)
        shared[b.alloc->buffer.get()] = *size * b.alloc->dtype.bytes();
      any_shared = any_shared || b.alloc->scope == scope::shared;
    }
    // Fill `iteration`'s slots (where it exists), as cp.async where the copies allow.
    int async = 0;
    auto produce = [&](const PipelinedBuffer& b, const Expr& iteration) {
      AsyncCopies copies(shared, local_);
      Stmt s = copies.mutate(substitute(b.producer, loop->loop_var, iteration));
      async += copies.converted;
      return IfThenElseNode::make(iteration < end,
                                  OffsetBuffer(b.alloc->buffer, slot(b, iteration)).mutate(s));
    };
    // Every reference to a buffer outside its producer reads the slot of this iteration.
    for (const PipelinedBuffer& b : buffers_)
      body = OffsetBuffer(b.alloc->buffer, slot(b, loop->loop_var)).mutate(body);
    const Expr ahead = loop->loop_var + make_int_const(it, stages_ - 1);
    std::unordered_map<int, Stmt> next;
    for (const PipelinedBuffer& b : buffers_) next[b.marker] = produce(b, ahead);
    body = ReplaceMarkers(next).mutate(body);
    // The prologue's copies may land while other threads still read the slots from an earlier
    // run of this loop (an enclosing loop's previous iteration): a barrier first, which the
    // barrier pass would not place for cp.async.
    std::vector<Stmt> prologue;
    if (any_shared) prologue.push_back(BarrierNode::make(scope::shared));
    for (int j = 0; j < stages_ - 1; ++j) {
      for (const PipelinedBuffer& b : buffers_) prologue.push_back(produce(b, first + make_int_const(it, j)));
      prologue.push_back(commit_placeholder());
    }
    // With cp.async: one group per iteration (the tiles of iteration i + stages - 1), and at the
    // top of each iteration all but the newest stages - 2 groups complete (those of iteration i
    // and before), then a barrier makes every thread's copies visible and ends every read of the
    // slot that this iteration refills (last read in iteration i - 1). Without: the barrier alone.
    std::vector<Stmt> iteration;
    if (async > 0) iteration.push_back(warp_intrinsic_call(ptx::cp_async_wait(stages_ - 2), {}));
    if (any_shared) iteration.push_back(BarrierNode::make(scope::shared));
    iteration.push_back(body);
    iteration.push_back(commit_placeholder());
    Stmt new_loop = ForNode::make(loop->loop_var, loop->min, loop->extent, loop->kind,
                                  SeqNode::make(iteration), loop->thread_tag, loop->annotations);
    std::vector<Stmt> all = prologue;
    all.push_back(new_loop);
    if (async > 0) all.push_back(warp_intrinsic_call(ptx::cp_async_wait(0), {}));  // none in flight after
    Stmt out = CommitGroups(async > 0).mutate(SeqNode::make(all));
    for (auto b = buffers_.rbegin(); b != buffers_.rend(); ++b) {
      const Expr size = b->alloc->extents[0];
      out = AllocateNode::make(b->alloc->buffer, b->alloc->dtype,
                               {size * make_int_const(size.dtype(), stages_)}, b->alloc->scope, out);
    }
    return out;
  }

 private:
  /// Stands for a cp.async commit until it is known whether the loop has cp.async at all.
  static Stmt commit_placeholder() {
    return EvaluateNode::make(CallNode::make(i32, "loom.pipeline_commit", {}));
  }

  struct CommitGroups : IRMutator {
    explicit CommitGroups(bool async) : async(async) {}
    bool async;
    using IRMutator::visit;
    Stmt visit(const EvaluateNode* op) override {
      const auto* c = op->value.as<CallNode>();
      if (!c || c->name != "loom.pipeline_commit") return IRMutator::visit(op);
      return async ? warp_intrinsic_call(ptx::cp_async_commit, {}) : EvaluateNode::make(make_const(i32, 0));
    }
  };

  struct ReplaceMarkers : IRMutator {
    explicit ReplaceMarkers(std::unordered_map<int, Stmt> by) : by(std::move(by)) {}
    std::unordered_map<int, Stmt> by;
    using IRMutator::visit;
    Stmt visit(const EvaluateNode* op) override {
      const auto* c = op->value.as<CallNode>();
      if (!c || c->name != pipeline_marker) return IRMutator::visit(op);
      return by.at(static_cast<int>(*as_const_int(c->args.at(0))));
    }
  };

  /// The loop left with one slot per buffer: its pipeline marks removed.
  static Stmt unmarked(const ForNode* loop) {
    return ForNode::make(loop->loop_var, loop->min, loop->extent, loop->kind,
                         StripMarks(attr::pipeline_stages).mutate(loop->body), loop->thread_tag,
                         loop->annotations);
  }

  /// Whether `v` is bound (let, loop of any kind, allocation) somewhere inside `s`.
  static bool bound_inside(const Stmt& s, const Var& v) {
    struct Finder : IRVisitor {
      const VarNode* v = nullptr;
      bool found = false;
      using IRVisitor::visit;
      void visit(const LetStmtNode* op) override {
        found = found || op->var.get() == v;
        IRVisitor::visit(op);
      }
      void visit(const ForNode* op) override {
        found = found || op->loop_var.get() == v;
        IRVisitor::visit(op);
      }
      void visit(const AllocateNode* op) override {
        found = found || op->buffer.get() == v;
        IRVisitor::visit(op);
      }
    } f;
    f.v = v.get();
    f.visit_stmt(s);
    return f.found;
  }

  /// Finds the pipelined allocations among the statements the loop runs directly (through
  /// sequences and attributes, not loops, then into each such allocation's body), removes
  /// them (they move outside the loop) and marks where each producer was.
  Stmt find(const Stmt& s) {
    if (!s.defined()) return s;
    if (const auto* seq = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      for (const Stmt& x : seq->seq) out.push_back(find(x));
      return SeqNode::make(out);
    }
    const auto* at = s.as<AttrStmtNode>();
    if (!at) return s;
    if (at->key != attr::pipeline_stages)
      return AttrStmtNode::make(at->key, at->node, at->value, find(at->body));
    const auto* alloc = at->body.as<AllocateNode>();
    const auto* seq = alloc ? alloc->body.as<SeqNode>() : nullptr;
    const int64_t* n = as_const_int(at->value);
    if (!alloc || !seq || alloc->extents.size() != 1 || !n || (stages_ != 0 && *n != stages_))
      return at->body;
    stages_ = static_cast<int>(*n);
    PipelinedBuffer b;
    b.alloc = alloc;
    // The producer is every leading statement that writes the buffer: a copy loop that was
    // unrolled is one statement per copy.
    std::vector<Stmt> producer{seq->seq[0]};
    size_t rest = 1;
    for (; rest < seq->seq.size(); ++rest) {
      BufferAccess access;
      access.visit_stmt(seq->seq[rest]);
      if (!access.writes.count(alloc->buffer.get())) break;
      producer.push_back(seq->seq[rest]);
    }
    b.producer = producer.size() == 1 ? producer[0] : SeqNode::make(producer);
    b.marker = static_cast<int>(buffers_.size());
    buffers_.push_back(b);
    std::vector<Stmt> body{
        EvaluateNode::make(CallNode::make(i32, pipeline_marker, {make_const(i32, b.marker)}))};
    for (size_t i = rest; i < seq->seq.size(); ++i) body.push_back(find(seq->seq[i]));
    return SeqNode::make(body);
  }

  std::unordered_set<const VarNode*> local_;
  std::vector<PipelinedBuffer> buffers_;
  int stages_ = 0;
};

}  // namespace detail

/// Applies every pipeline request it can; a buffer not filled at the start of a loop iteration
/// and read after it keeps one slot (same results).
inline Stmt inject_pipeline(const Stmt& body) {
  std::unordered_set<const VarNode*> local;  // buffers cp.async cannot read from
  struct Allocs : IRVisitor {
    std::unordered_set<const VarNode*>* out = nullptr;
    using IRVisitor::visit;
    void visit(const AllocateNode* op) override {
      if (op->scope != scope::global) out->insert(op->buffer.get());
      IRVisitor::visit(op);
    }
  } allocs;
  allocs.out = &local;
  allocs.visit_stmt(body);
  detail::PipelineInjector injector(local);
  Stmt out =
      rewrite_loops(body, ForKind::Serial, [&](const ForNode* loop) { return injector.rewrite(loop); });
  return detail::StripMarks(attr::pipeline_stages).mutate(out);
}

}  // namespace loom
