// double_buffer, carried out (TVM's InjectDoubleBuffer): a buffer produced at the start of each
// iteration of a loop and consumed later in it gets two halves; iteration i+1's production
// into one half is issued before iteration i consumes the other, so the two can overlap.
#pragma once

#include <string>
#include <unordered_set>

#include "loom/ir/mutator.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/substitute.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/lower/rewrite_loops.hpp"

namespace loom {

namespace attr {
/// On an Allocate: the buffer is double buffered (value 1). `node` is the buffer variable.
inline constexpr const char* double_buffer_scope = "double_buffer_scope";
}  // namespace attr

namespace detail {

/// Buffers a statement reads and writes.
struct BufferAccess : IRVisitor {
  std::unordered_set<const VarNode*> reads, writes;
  using IRVisitor::visit;
  void visit(const LoadNode* op) override {
    reads.insert(op->buffer.get());
    IRVisitor::visit(op);
  }
  void visit(const StoreNode* op) override {
    writes.insert(op->buffer.get());
    IRVisitor::visit(op);
  }
  void visit(const CallNode* op) override {
    // An opaque call may touch any buffer it is handed.
    if (!op->is_pure())
      for (const Expr& a : op->args)
        if (const VarNode* v = a.as<VarNode>(); v && v->dtype.is_handle()) writes.insert(v);
    IRVisitor::visit(op);
  }
};

/// Adds `offset` to every index into `buffer`.
class OffsetBuffer : public IRMutator {
 public:
  OffsetBuffer(const Var& buffer, Expr offset) : buffer_(buffer), offset_(std::move(offset)) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr shift(const Expr& index) {
    Expr off = index.dtype().lanes > 1 ? BroadcastNode::make(offset_, index.dtype().lanes) : offset_;
    return AddNode::make(index, off);
  }
  Expr visit(const LoadNode* op) override {
    Expr e = IRMutator::visit(op);
    if (op->buffer.get() != buffer_.get()) return e;
    const auto* load = e.as<LoadNode>();
    return LoadNode::make(load->dtype.element_of(), load->buffer, shift(load->index), load->predicate);
  }
  Stmt visit(const StoreNode* op) override {
    Stmt s = IRMutator::visit(op);
    if (op->buffer.get() != buffer_.get()) return s;
    const auto* store = s.as<StoreNode>();
    return StoreNode::make(store->buffer, store->value, shift(store->index), store->predicate);
  }

 private:
  Var buffer_;
  Expr offset_;
};

/// Pipelines one serial loop whose iterations produce a double-buffered stage first.
class DoubleBufferInjector {
 public:
  /// The loop with its producer one iteration ahead, or undefined when it has no such stage.
  Stmt rewrite(const ForNode* loop) {
    loop_ = loop;
    found_ = nullptr;
    Stmt body = rewrite_scope(loop->body);
    if (!found_) return Stmt();
    // Allocate both halves outside the loop and produce the first iteration's half up front.
    const AllocateNode* alloc = found_;
    Expr size = alloc->extents.at(0);
    Stmt prologue = OffsetBuffer(alloc->buffer, make_zero(size.dtype()))
                        .mutate(substitute(producer_, loop->loop_var, loop->min));
    Stmt new_loop = ForNode::make(loop->loop_var, loop->min, loop->extent, loop->kind, body, loop->thread_tag,
                                  loop->annotations);
    return AllocateNode::make(alloc->buffer, alloc->dtype, {size * make_int_const(size.dtype(), 2)},
                              alloc->scope, SeqNode::make({prologue, new_loop}));
  }

 private:
  /// Finds the double-buffered allocation among the statements the loop runs directly
  /// (through sequences, lets and annotations, not through nested loops or branches) and
  /// replaces it by the pipelined body.
  Stmt rewrite_scope(const Stmt& s) {
    if (found_ || !s.defined()) return s;
    if (const auto* seq = s.as<SeqNode>()) {
      std::vector<Stmt> out;
      for (const Stmt& x : seq->seq) out.push_back(rewrite_scope(x));
      return SeqNode::make(out);
    }
    if (const auto* let = s.as<LetStmtNode>())
      return LetStmtNode::make(let->var, let->value, rewrite_scope(let->body));
    const auto* at = s.as<AttrStmtNode>();
    if (!at) return s;
    if (at->key != attr::double_buffer_scope)
      return AttrStmtNode::make(at->key, at->node, at->value, rewrite_scope(at->body));
    const auto* alloc = at->body.as<AllocateNode>();
    const auto* seq = alloc ? alloc->body.as<SeqNode>() : nullptr;
    if (!alloc || !seq || alloc->extents.size() != 1) return at->body;
    // The producer must only depend on data the rest of the iteration does not write.
    Stmt producer = seq->seq[0];
    std::vector<Stmt> rest_list(seq->seq.begin() + 1, seq->seq.end());
    Stmt rest = SeqNode::make(rest_list);
    BufferAccess p, r;
    p.visit_stmt(producer);
    r.visit_stmt(rest);
    for (const VarNode* w : r.writes)
      if (p.reads.count(w) || p.writes.count(w)) return at->body;
    if (r.writes.count(alloc->buffer.get()) || !p.writes.count(alloc->buffer.get())) return at->body;
    found_ = alloc;
    producer_ = producer;
    const ForNode* loop = loop_;
    Expr size = alloc->extents[0];
    Expr one = make_int_const(loop->loop_var.dtype(), 1), two = make_int_const(loop->loop_var.dtype(), 2);
    Expr next = loop->loop_var + one;
    Expr half_next = cast(size.dtype(), floormod(next - loop->min, two)) * size;
    Expr half_now = cast(size.dtype(), floormod(loop->loop_var - loop->min, two)) * size;
    Stmt produce_next = IfThenElseNode::make(
        next < loop->min + loop->extent,
        OffsetBuffer(alloc->buffer, half_next).mutate(substitute(producer, loop->loop_var, next)));
    Stmt consume = OffsetBuffer(alloc->buffer, half_now).mutate(rest);
    return SeqNode::make({produce_next, consume});
  }

  const ForNode* loop_ = nullptr;
  const AllocateNode* found_ = nullptr;
  Stmt producer_;
};

/// Removes the markers of one attribute key that were not applied (double_buffer_scope and
/// pipeline_stages where no loop suited them).
class StripMarks : public IRMutator {
 public:
  explicit StripMarks(const char* key) : key_(key) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const AttrStmtNode* op) override {
    if (op->key == key_) return mutate(op->body);
    return IRMutator::visit(op);
  }

 private:
  std::string key_;
};

}  // namespace detail

/// Applies every double_buffer request it can; a request whose buffer is not produced at the
/// start of a loop iteration and consumed after it is left single-buffered (same results).
inline Stmt inject_double_buffer(const Stmt& body) {
  detail::DoubleBufferInjector injector;
  Stmt out =
      rewrite_loops(body, ForKind::Serial, [&](const ForNode* loop) { return injector.rewrite(loop); });
  return detail::StripMarks(attr::double_buffer_scope).mutate(out);
}

}  // namespace loom
