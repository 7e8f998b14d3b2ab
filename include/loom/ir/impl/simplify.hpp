// The definitions of ir/simplify.hpp: expressions through the Analyzer's rewriter, statements
// through StmtSimplifier, which also drops loops that never run, lets nobody reads and branches
// the Analyzer can decide.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/ir/simplify.hpp");

#include "loom/ir/analyzer.hpp"
#include "loom/ir/mutator.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/ir/substitute.hpp"
#include "loom/ir/visitor.hpp"

namespace loom {

/// e simplified knowing nothing about its variables.
LOOM_DECL Expr simplify(const Expr& e) {
  Analyzer analyzer;
  return analyzer.simplify(e);
}

namespace simplify_detail {

/// Whether s mentions v anywhere: as a value, a buffer or an annotated node.
inline bool stmt_uses_var(const Stmt& s, const Var& v) {
  struct Finder : IRVisitor {
    const VarNode* target;
    bool found = false;
    explicit Finder(const VarNode* t) : target(t) {}
    using IRVisitor::visit;
    void visit(const VarNode* op) override { found = found || op == target; }
    void visit(const LoadNode* op) override {
      found = found || op->buffer.get() == target;
      IRVisitor::visit(op);
    }
    void visit(const StoreNode* op) override {
      found = found || op->buffer.get() == target;
      IRVisitor::visit(op);
    }
    void visit(const AttrStmtNode* op) override {
      visit_expr(op->node);
      IRVisitor::visit(op);
    }
  } finder(v.get());
  finder.visit_stmt(s);
  return finder.found;
}

/// Whether evaluating e may do something besides computing a value (an impure call).
inline bool has_side_effects(const Expr& e) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (const CallNode* call = x.as<CallNode>(); call && !call->is_pure()) found = true;
  });
  return found;
}

inline Expr strip_likely(const Expr& e) {
  const CallNode* call = e.as<CallNode>();
  return call && call->name == intrinsic::likely && call->args.size() == 1 ? call->args[0] : e;
}

}  // namespace simplify_detail

/// The statement simplifier. An undefined Stmt returned from a visit means "nothing left";
/// the enclosing Seq, loop or scope drops it (the IRMutator defaults do the same).
class StmtSimplifier : public IRMutator {
 public:
  explicit StmtSimplifier(Analyzer& analyzer) : an_(analyzer) {}
  using IRMutator::mutate;
  Expr mutate(const Expr& e) override { return e.defined() ? an_.simplify(e) : e; }

 protected:
  using IRMutator::visit;

  Stmt visit(const ForNode* op) override {
    Expr min = mutate(op->min), extent = mutate(op->extent);
    if (an_.const_int_bound(extent).max_value <= 0) return Stmt();  // the loop never runs
    // A serial loop that runs once is its body at min. Other kinds keep their loop: it carries
    // meaning beyond iteration (a thread index, a vector lane, a parallel task, a pragma).
    if (is_const_int(extent, 1) && op->kind == ForKind::Serial && op->annotations.empty()) {
      return mutate(substitute(op->body, op->loop_var, min));
    }
    Stmt body;
    {
      Analyzer::BindingGuard guard = an_.scoped_bind(op->loop_var, Range(min, extent));
      body = mutate(op->body);
    }
    if (!body.defined()) return body;
    if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) return self(op);
    return ForNode::make(op->loop_var, min, extent, op->kind, body, op->thread_tag, op->annotations);
  }

  Stmt visit(const LetStmtNode* op) override {
    Expr value = mutate(op->value);
    Stmt body;
    {
      Analyzer::BindingGuard guard = an_.scoped_bind(op->var, value);
      body = mutate(op->body);
    }
    bool pure = !simplify_detail::has_side_effects(value);
    if (pure && (!body.defined() || !simplify_detail::stmt_uses_var(body, op->var))) return body;
    if (!body.defined()) body = EvaluateNode::make(0);
    if (value.same_as(op->value) && body.same_as(op->body)) return self(op);
    return LetStmtNode::make(op->var, value, body);
  }

  Stmt visit(const IfThenElseNode* op) override {
    Expr condition = mutate(op->condition);
    Expr test = simplify_detail::strip_likely(condition);
    if (an_.can_prove(test)) return mutate(op->then_case);
    if (an_.can_prove(NotNode::make(test))) return mutate(op->else_case);
    Stmt then_case = mutate(op->then_case), else_case = mutate(op->else_case);
    if (!then_case.defined() && !else_case.defined()) return Stmt();  // conditions are pure
    if (!then_case.defined()) return IfThenElseNode::make(mutate(NotNode::make(test)), else_case);
    if (condition.same_as(op->condition) && then_case.same_as(op->then_case) &&
        else_case.same_as(op->else_case)) {
      return self(op);
    }
    return IfThenElseNode::make(condition, then_case, else_case);
  }

  Stmt visit(const AssertStmtNode* op) override {
    Expr condition = mutate(op->condition);
    if (an_.can_prove(condition)) return mutate(op->body);
    Stmt body = mutate(op->body);
    if (!body.defined()) body = EvaluateNode::make(0);  // the check itself must stay
    if (condition.same_as(op->condition) && body.same_as(op->body)) return self(op);
    return AssertStmtNode::make(condition, op->message, body);
  }

  Stmt visit(const StoreNode* op) override {
    Expr value = mutate(op->value), index = mutate(op->index), predicate = mutate(op->predicate);
    const int64_t* p = as_const_int(predicate);
    if (p && *p != 0) predicate = Expr();  // every lane stores
    if (value.same_as(op->value) && index.same_as(op->index) && predicate.same_as(op->predicate))
      return self(op);
    return StoreNode::make(op->buffer, value, index, predicate);
  }

 private:
  Analyzer& an_;
};

/// s simplified with what `analyzer` already knows (e.g. symbolic sizes marked non-negative).
/// Returns a no-op Evaluate(0) when nothing is left.
LOOM_DECL Stmt simplify(const Stmt& s, Analyzer& analyzer) {
  StmtSimplifier simplifier(analyzer);
  Stmt result = simplifier.mutate(s);
  return result.defined() ? result : EvaluateNode::make(0);
}

LOOM_DECL Stmt simplify(const Stmt& s) {
  Analyzer analyzer;
  return simplify(s, analyzer);
}

}  // namespace loom
