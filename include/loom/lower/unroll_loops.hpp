// unroll_loops: a loop the schedule marked unrolled, with a constant extent, becomes that many
// copies of its body, each with the loop variable replaced by its value. Variables bound
// inside the body get fresh names per copy (j, j_1, ...), as in TVM's output.
#pragma once

#include "loom/ir/mutator.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/substitute.hpp"
#include "loom/lower/rewrite_loops.hpp"

namespace loom {

namespace detail {

/// Copies a statement giving every variable it binds a fresh Var (same name and type).
class FreshBinders : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const VarNode* op) override {
    auto it = map_.find(op);
    return it == map_.end() ? self(op) : it->second;
  }
  Var rebind(const Var& v) {
    Var fresh = v.copy_with_name(v.name());
    map_[v.get()] = fresh;
    return fresh;
  }
  Stmt visit(const ForNode* op) override {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    Var v = rebind(op->loop_var);
    return ForNode::make(v, mn, ext, op->kind, mutate(op->body), op->thread_tag, op->annotations);
  }
  Stmt visit(const LetStmtNode* op) override {
    Expr value = mutate(op->value);
    Var v = rebind(op->var);
    return LetStmtNode::make(v, value, mutate(op->body));
  }
  Expr visit(const LetNode* op) override {
    Expr value = mutate(op->value);
    Var v = rebind(op->var);
    return LetNode::make(v, value, mutate(op->body));
  }
  Stmt visit(const AllocateNode* op) override {
    bool changed = false;
    std::vector<Expr> extents = mutate_all(op->extents, changed);
    Var v = rebind(op->buffer);
    return AllocateNode::make(v, op->dtype, extents, op->scope, mutate(op->body));
  }
  Expr visit(const LoadNode* op) override {
    Expr e = IRMutator::visit(op);
    auto it = map_.find(op->buffer.get());
    if (it == map_.end()) return e;
    const auto* load = e.as<LoadNode>();
    return LoadNode::make(load->dtype.element_of(), Var(Ref<const ExprNode>(it->second.get())), load->index,
                          load->predicate);
  }
  Stmt visit(const StoreNode* op) override {
    Stmt s = IRMutator::visit(op);
    auto it = map_.find(op->buffer.get());
    if (it == map_.end()) return s;
    const auto* store = s.as<StoreNode>();
    return StoreNode::make(Var(Ref<const ExprNode>(it->second.get())), store->value, store->index,
                           store->predicate);
  }

 private:
  VarMap map_;
};

/// The copies of one unrolled loop's body, or undefined when its extent is not a constant.
inline Stmt unroll_loop(const ForNode* loop) {
  const int64_t* extent = as_const_int(loop->extent);
  if (!extent) return Stmt();  // the backend unrolls what it can
  std::vector<Stmt> copies;
  for (int64_t i = 0; i < *extent; ++i) {
    Expr value = loop->min + make_int_const(loop->loop_var.dtype(), i);
    copies.push_back(FreshBinders().mutate(substitute(loop->body, loop->loop_var, value)));
  }
  return SeqNode::make(copies);
}

}  // namespace detail

/// Replaces unrolled loops of constant extent by copies of their bodies.
inline Stmt unroll_loops(const Stmt& body) {
  return rewrite_loops(body, ForKind::Unrolled, detail::unroll_loop);
}

}  // namespace loom
