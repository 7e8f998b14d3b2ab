// IRMutator: rewrites expressions and statements bottom-up. Each default `visit` mutates the
// children and rebuilds the node only when a child changed, so untouched trees stay shared.
#pragma once

#include "loom/ir/reduce.hpp"
#include "loom/ir/stmt.hpp"

namespace loom {

class IRMutator {
 public:
  virtual ~IRMutator() = default;

  virtual Expr mutate(const Expr& e) {
    if (!e.defined()) return e;
    switch (e.kind()) {
#define LOOM_DISPATCH(name, node) \
  case IRNodeKind::name: return visit(static_cast<const node*>(e.get()));
      LOOM_EXPR_NODES(LOOM_DISPATCH)
#undef LOOM_DISPATCH
      default: break;
    }
    return e;
  }

  virtual Stmt mutate(const Stmt& s) {
    if (!s.defined()) return s;
    switch (s.kind()) {
#define LOOM_DISPATCH(name, node) \
  case IRNodeKind::name: return visit(static_cast<const node*>(s.get()));
      LOOM_STMT_NODES(LOOM_DISPATCH)
#undef LOOM_DISPATCH
      default: break;
    }
    return s;
  }

 protected:
  static Expr self(const ExprNode* op) { return Expr(Ref<const ExprNode>(op)); }
  static Stmt self(const StmtNode* op) { return Stmt(Ref<const StmtNode>(op)); }

  /// Mutates every element; `changed` is set when any element is a different node.
  std::vector<Expr> mutate_all(const std::vector<Expr>& v, bool& changed) {
    std::vector<Expr> out;
    out.reserve(v.size());
    for (const Expr& e : v) {
      out.push_back(mutate(e));
      if (!out.back().same_as(e)) changed = true;
    }
    return out;
  }

  virtual Expr visit(const IntImmNode* op) { return self(op); }
  virtual Expr visit(const FloatImmNode* op) { return self(op); }
  virtual Expr visit(const StringImmNode* op) { return self(op); }
  virtual Expr visit(const VarNode* op) { return self(op); }
#define LOOM_MUTATE_BINARY(name, node)                         \
  virtual Expr visit(const node* op) {                         \
    Expr a = mutate(op->a), b = mutate(op->b);                 \
    if (a.same_as(op->a) && b.same_as(op->b)) return self(op); \
    return node::make(std::move(a), std::move(b));             \
  }
  LOOM_BINARY_EXPR_NODES(LOOM_MUTATE_BINARY)
#undef LOOM_MUTATE_BINARY
  virtual Expr visit(const NotNode* op) {
    Expr a = mutate(op->a);
    return a.same_as(op->a) ? self(op) : NotNode::make(a);
  }
  virtual Expr visit(const SelectNode* op) {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self(op);
    return SelectNode::make(c, t, f);
  }
  virtual Expr visit(const CastNode* op) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? self(op) : CastNode::make(op->dtype, v);
  }
  virtual Expr visit(const LoadNode* op) {
    Expr i = mutate(op->index), p = mutate(op->predicate);
    if (i.same_as(op->index) && p.same_as(op->predicate)) return self(op);
    return LoadNode::make(op->dtype.element_of(), op->buffer, i, p);
  }
  virtual Expr visit(const RampNode* op) {
    Expr b = mutate(op->base), s = mutate(op->stride);
    if (b.same_as(op->base) && s.same_as(op->stride)) return self(op);
    return RampNode::make(b, s, op->lanes);
  }
  virtual Expr visit(const BroadcastNode* op) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? self(op) : BroadcastNode::make(v, op->lanes);
  }
  virtual Expr visit(const CallNode* op) {
    bool changed = false;
    std::vector<Expr> args = mutate_all(op->args, changed);
    return changed ? CallNode::make(op->dtype, op->name, std::move(args), op->call_kind) : self(op);
  }
  virtual Expr visit(const LetNode* op) {
    Expr v = mutate(op->value), b = mutate(op->body);
    if (v.same_as(op->value) && b.same_as(op->body)) return self(op);
    return LetNode::make(op->var, v, b);
  }
  virtual Expr visit(const ReduceNode* op) {
    bool changed = false;
    std::vector<Expr> source = mutate_all(op->source, changed);
    Expr cond = mutate(op->condition);
    if (!changed && cond.same_as(op->condition)) return self(op);
    return ReduceNode::make(op->combiner, std::move(source), op->axis, cond, op->value_index);
  }
  virtual Expr visit(const ProducerLoadNode* op) {
    bool changed = false;
    std::vector<Expr> idx = mutate_all(op->indices, changed);
    return changed ? ProducerLoadNode::make(op->producer, std::move(idx)) : self(op);
  }

  virtual Stmt visit(const LetStmtNode* op) {
    Expr v = mutate(op->value);
    Stmt b = mutate(op->body);
    if (v.same_as(op->value) && b.same_as(op->body)) return self(op);
    if (!b.defined()) return b;
    return LetStmtNode::make(op->var, v, b);
  }
  virtual Stmt visit(const AttrStmtNode* op) {
    Expr v = mutate(op->value);
    Stmt b = mutate(op->body);
    if (v.same_as(op->value) && b.same_as(op->body)) return self(op);
    if (!b.defined()) return b;
    return AttrStmtNode::make(op->key, op->node, v, b);
  }
  virtual Stmt visit(const AssertStmtNode* op) {
    Expr c = mutate(op->condition);
    Stmt b = mutate(op->body);
    if (c.same_as(op->condition) && b.same_as(op->body)) return self(op);
    return AssertStmtNode::make(c, op->message, b);
  }
  virtual Stmt visit(const StoreNode* op) {
    Expr v = mutate(op->value), i = mutate(op->index), p = mutate(op->predicate);
    if (v.same_as(op->value) && i.same_as(op->index) && p.same_as(op->predicate)) return self(op);
    return StoreNode::make(op->buffer, v, i, p);
  }
  virtual Stmt visit(const ProvideNode* op) {
    bool changed = false;
    std::vector<Expr> idx = mutate_all(op->indices, changed);
    Expr v = mutate(op->value);
    if (!changed && v.same_as(op->value)) return self(op);
    return ProvideNode::make(op->producer, std::move(idx), v);
  }
  virtual Stmt visit(const AllocateNode* op) {
    bool changed = false;
    std::vector<Expr> ext = mutate_all(op->extents, changed);
    Stmt b = mutate(op->body);
    if (!changed && b.same_as(op->body)) return self(op);
    if (!b.defined()) return b;
    return AllocateNode::make(op->buffer, op->dtype, std::move(ext), op->scope, b);
  }
  virtual Stmt visit(const RealizeNode* op) {
    bool changed = false;
    std::vector<Range> bounds;
    for (const Range& r : op->bounds) {
      Range m(mutate(r.min), mutate(r.extent));
      if (!m.min.same_as(r.min) || !m.extent.same_as(r.extent)) changed = true;
      bounds.push_back(m);
    }
    Stmt b = mutate(op->body);
    if (!changed && b.same_as(op->body)) return self(op);
    if (!b.defined()) return b;
    return RealizeNode::make(op->producer, std::move(bounds), op->scope, b);
  }
  virtual Stmt visit(const ForNode* op) {
    Expr mn = mutate(op->min), ext = mutate(op->extent);
    Stmt b = mutate(op->body);
    if (mn.same_as(op->min) && ext.same_as(op->extent) && b.same_as(op->body)) return self(op);
    if (!b.defined()) return b;
    return ForNode::make(op->loop_var, mn, ext, op->kind, b, op->thread_tag, op->annotations);
  }
  virtual Stmt visit(const IfThenElseNode* op) {
    Expr c = mutate(op->condition);
    Stmt t = mutate(op->then_case), e = mutate(op->else_case);
    if (c.same_as(op->condition) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self(op);
    if (!t.defined() && !e.defined()) return Stmt();
    if (!t.defined()) return IfThenElseNode::make(NotNode::make(c), e);
    return IfThenElseNode::make(c, t, e);
  }
  virtual Stmt visit(const SeqNode* op) {
    bool changed = false;
    std::vector<Stmt> seq;
    seq.reserve(op->seq.size());
    for (const Stmt& s : op->seq) {
      seq.push_back(mutate(s));
      if (!seq.back().same_as(s)) changed = true;
    }
    return changed ? SeqNode::make(seq) : self(op);
  }
  virtual Stmt visit(const EvaluateNode* op) {
    Expr v = mutate(op->value);
    return v.same_as(op->value) ? self(op) : EvaluateNode::make(v);
  }
  virtual Stmt visit(const BarrierNode* op) { return self(op); }
  virtual Stmt visit(const PrefetchNode* op) {
    Expr loc = mutate(op->location);
    return loc.same_as(op->location) ? self(op) : PrefetchNode::make(loc, op->read_write, op->locality);
  }
};

}  // namespace loom
