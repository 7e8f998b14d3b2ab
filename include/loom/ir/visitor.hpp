// IRVisitor: a read-only walk over expressions and statements. Override `visit` for the
// node kinds you care about and call the base version to keep recursing into children.
#pragma once

#include "loom/ir/reduce.hpp"
#include "loom/ir/stmt.hpp"

namespace loom {

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;

  virtual void visit_expr(const Expr& e) {
    if (!e.defined()) return;
    switch (e.kind()) {
#define LOOM_DISPATCH(name, node) \
  case IRNodeKind::name: return visit(static_cast<const node*>(e.get()));
      LOOM_EXPR_NODES(LOOM_DISPATCH)
#undef LOOM_DISPATCH
      default: break;
    }
  }

  virtual void visit_stmt(const Stmt& s) {
    if (!s.defined()) return;
    switch (s.kind()) {
#define LOOM_DISPATCH(name, node) \
  case IRNodeKind::name: return visit(static_cast<const node*>(s.get()));
      LOOM_STMT_NODES(LOOM_DISPATCH)
#undef LOOM_DISPATCH
      default: break;
    }
  }

 protected:
  virtual void visit(const IntImmNode*) {}
  virtual void visit(const FloatImmNode*) {}
  virtual void visit(const StringImmNode*) {}
  virtual void visit(const VarNode*) {}
#define LOOM_VISIT_BINARY(name, node)  \
  virtual void visit(const node* op) { \
    visit_expr(op->a);                 \
    visit_expr(op->b);                 \
  }
  LOOM_BINARY_EXPR_NODES(LOOM_VISIT_BINARY)
#undef LOOM_VISIT_BINARY
  virtual void visit(const NotNode* op) { visit_expr(op->a); }
  virtual void visit(const SelectNode* op) {
    visit_expr(op->condition);
    visit_expr(op->true_value);
    visit_expr(op->false_value);
  }
  virtual void visit(const CastNode* op) { visit_expr(op->value); }
  virtual void visit(const LoadNode* op) {
    visit_expr(op->index);
    visit_expr(op->predicate);
  }
  virtual void visit(const RampNode* op) {
    visit_expr(op->base);
    visit_expr(op->stride);
  }
  virtual void visit(const BroadcastNode* op) { visit_expr(op->value); }
  virtual void visit(const CallNode* op) {
    for (const Expr& a : op->args) visit_expr(a);
  }
  virtual void visit(const LetNode* op) {
    visit_expr(op->value);
    visit_expr(op->body);
  }
  virtual void visit(const ReduceNode* op) {
    for (const Expr& s : op->source) visit_expr(s);
    visit_expr(op->condition);
  }
  virtual void visit(const ProducerLoadNode* op) {
    for (const Expr& i : op->indices) visit_expr(i);
  }

  virtual void visit(const LetStmtNode* op) {
    visit_expr(op->value);
    visit_stmt(op->body);
  }
  virtual void visit(const AttrStmtNode* op) {
    visit_expr(op->value);
    visit_stmt(op->body);
  }
  virtual void visit(const AssertStmtNode* op) {
    visit_expr(op->condition);
    visit_stmt(op->body);
  }
  virtual void visit(const StoreNode* op) {
    visit_expr(op->value);
    visit_expr(op->index);
    visit_expr(op->predicate);
  }
  virtual void visit(const ProvideNode* op) {
    for (const Expr& i : op->indices) visit_expr(i);
    visit_expr(op->value);
  }
  virtual void visit(const AllocateNode* op) {
    for (const Expr& e : op->extents) visit_expr(e);
    visit_stmt(op->body);
  }
  virtual void visit(const RealizeNode* op) {
    for (const Range& r : op->bounds) {
      visit_expr(r.min);
      visit_expr(r.extent);
    }
    visit_stmt(op->body);
  }
  virtual void visit(const ForNode* op) {
    visit_expr(op->min);
    visit_expr(op->extent);
    visit_stmt(op->body);
  }
  virtual void visit(const IfThenElseNode* op) {
    visit_expr(op->condition);
    visit_stmt(op->then_case);
    visit_stmt(op->else_case);
  }
  virtual void visit(const SeqNode* op) {
    for (const Stmt& s : op->seq) visit_stmt(s);
  }
  virtual void visit(const EvaluateNode* op) { visit_expr(op->value); }
  virtual void visit(const BarrierNode*) {}
  virtual void visit(const PrefetchNode* op) { visit_expr(op->location); }
};

/// Calls `f` on every expression node under `root` (statement or expression), pre-order.
template <typename F>
void for_each_expr(const Stmt& root, F&& f) {
  struct Walker : IRVisitor {
    F& fn;
    explicit Walker(F& g) : fn(g) {}
    void visit_expr(const Expr& e) override {
      if (!e.defined()) return;
      fn(e);
      IRVisitor::visit_expr(e);
    }
  } walker(f);
  walker.visit_stmt(root);
}

template <typename F>
void for_each_expr(const Expr& root, F&& f) {
  struct Walker : IRVisitor {
    F& fn;
    explicit Walker(F& g) : fn(g) {}
    void visit_expr(const Expr& e) override {
      if (!e.defined()) return;
      fn(e);
      IRVisitor::visit_expr(e);
    }
  } walker(f);
  walker.visit_expr(root);
}

/// Whether a loop is nested anywhere in `body`.
inline bool contains_loop(const Stmt& body) {
  struct Finder : IRVisitor {
    bool found = false;
    using IRVisitor::visit;
    void visit(const ForNode*) override { found = true; }
  } finder;
  finder.visit_stmt(body);
  return finder.found;
}

}  // namespace loom
