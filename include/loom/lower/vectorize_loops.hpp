// vectorize_loops: a loop the schedule marked vectorized, with a constant extent, becomes
// vector IR: its variable becomes ramp(min, 1, lanes), every operation is lifted to vectors,
// and a guard that varies across lanes becomes a predicate on the stores (and on the loads,
// so that masked lanes never read out of bounds). A body that cannot be expressed in vectors
// (a loop whose bounds vary per lane, an allocation, a side effect) is left as a loop that
// still says "vectorized", for the backend to vectorize or run as it can.
#pragma once

#include <unordered_map>

#include "loom/ir/analyzer.hpp"
#include "loom/ir/mutator.hpp"
#include "loom/ir/substitute.hpp"
#include "loom/lower/rewrite_loops.hpp"

namespace loom {

namespace detail {

struct CannotVectorize {};

class Vectorizer : public IRMutator {
 public:
  Vectorizer(const Var& var, Expr min, int lanes) : var_(var), lanes_(lanes) {
    ramp_ = RampNode::make(min, make_int_const(min.dtype(), 1), lanes);
  }
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr widen(const Expr& e) {
    if (e.dtype().lanes == lanes_) return e;
    internal_check(e.dtype().lanes == 1, "vectorize: mixed vector widths");
    return BroadcastNode::make(e, lanes_);
  }
  static bool is_vector(const Expr& e) { return e.dtype().lanes > 1; }

  Expr visit(const VarNode* op) override {
    if (op == var_.get()) return ramp_;
    auto it = lets_.find(op);
    return it == lets_.end() ? self(op) : it->second;
  }

  template <typename Node>
  Expr lift_binary(const Node* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (!is_vector(a) && !is_vector(b)) {
      if (a.same_as(op->a) && b.same_as(op->b)) return self(op);
      return Node::make(a, b);
    }
    return Node::make(widen(a), widen(b));
  }
#define LOOM_LIFT(name, node) \
  Expr visit(const node* op) override { return lift_binary(op); }
  LOOM_BINARY_EXPR_NODES(LOOM_LIFT)
#undef LOOM_LIFT

  Expr visit(const NotNode* op) override {
    Expr a = mutate(op->a);
    return a.same_as(op->a) ? self(op) : NotNode::make(a);
  }
  Expr visit(const SelectNode* op) override {
    Expr c = mutate(op->condition), t = mutate(op->true_value), f = mutate(op->false_value);
    if (!is_vector(c) && !is_vector(t) && !is_vector(f)) return SelectNode::make(c, t, f);
    return SelectNode::make(widen(c), widen(t), widen(f));
  }
  Expr visit(const CastNode* op) override {
    Expr v = mutate(op->value);
    return CastNode::make(op->dtype.with_lanes(v.dtype().lanes), v);
  }
  Expr visit(const LoadNode* op) override {
    Expr index = mutate(op->index);
    Expr predicate = op->predicate.defined() ? mutate(op->predicate) : Expr();
    if (!is_vector(index) && !(predicate.defined() && is_vector(predicate)) && !mask_.defined())
      return LoadNode::make(op->dtype, op->buffer, index, predicate);
    Expr p = combine(mask_, predicate.defined() ? widen(predicate) : Expr());
    return LoadNode::make(op->dtype.element_of(), op->buffer, widen(index), p);
  }
  Expr visit(const RampNode*) override { throw CannotVectorize{}; }
  Expr visit(const BroadcastNode*) override { throw CannotVectorize{}; }
  Expr visit(const CallNode* op) override {
    if (!op->is_pure()) {
      for (const Expr& a : op->args)
        if (uses_var(a, var_)) throw CannotVectorize{};
      return self(op);
    }
    if (op->name == intrinsic::if_then_else) {
      Expr c = mutate(op->args[0]);
      if (!is_vector(c)) {
        Expr t = mutate(op->args[1]), f = mutate(op->args[2]);
        if (!is_vector(t) && !is_vector(f)) return CallNode::make(op->dtype, op->name, {c, t, f});
        return CallNode::make(op->dtype.with_lanes(lanes_), op->name, {c, widen(t), widen(f)});
      }
      // Lazy per lane: each branch reads only where it is taken.
      Expr saved = mask_;
      mask_ = combine(saved, c);
      Expr t = widen(mutate(op->args[1]));
      mask_ = combine(saved, NotNode::make(c));
      Expr f = widen(mutate(op->args[2]));
      mask_ = saved;
      return SelectNode::make(c, t, f);
    }
    bool changed = false;
    std::vector<Expr> args = mutate_all(op->args, changed);
    bool vector = false;
    for (const Expr& a : args) vector = vector || is_vector(a);
    if (!vector) return changed ? CallNode::make(op->dtype, op->name, args, op->call_kind) : self(op);
    for (Expr& a : args) a = widen(a);
    return CallNode::make(op->dtype.with_lanes(lanes_), op->name, args, op->call_kind);
  }
  Expr visit(const LetNode* op) override {
    Expr value = mutate(op->value);
    if (!is_vector(value)) {
      Expr body = mutate(op->body);
      return LetNode::make(op->var, value, body);
    }
    Var v(op->var.name(), value.dtype());
    lets_[op->var.get()] = v;
    Expr body = mutate(op->body);
    lets_.erase(op->var.get());
    return LetNode::make(v, value, body);
  }

  Stmt visit(const StoreNode* op) override {
    Expr value = mutate(op->value), index = mutate(op->index);
    Expr predicate = op->predicate.defined() ? mutate(op->predicate) : Expr();
    if (!is_vector(value) && !is_vector(index) && !mask_.defined()) {
      if (predicate.defined() && is_vector(predicate)) throw CannotVectorize{};
      return StoreNode::make(op->buffer, value, index, predicate);
    }
    // A scalar index with a varying value would make the lanes race on one element.
    if (!is_vector(index)) throw CannotVectorize{};
    Expr p = combine(mask_, predicate.defined() ? widen(predicate) : Expr());
    return StoreNode::make(op->buffer, widen(value), index, p);
  }
  Stmt visit(const ForNode* op) override {
    if (uses_var(op->min, var_) || uses_var(op->extent, var_) || op->kind == ForKind::Vectorized ||
        op->kind == ForKind::Parallel || op->kind == ForKind::ThreadBinding)
      throw CannotVectorize{};
    return IRMutator::visit(op);
  }
  Stmt visit(const IfThenElseNode* op) override {
    Expr c = mutate(op->condition);
    if (!is_vector(c)) {
      Stmt t = mutate(op->then_case), e = mutate(op->else_case);
      return IfThenElseNode::make(c, t, e);
    }
    // A lane-varying guard: run both sides under complementary masks.
    Expr saved = mask_;
    mask_ = combine(saved, strip_likely(c));
    Stmt t = mutate(op->then_case);
    Stmt e;
    if (op->else_case.defined()) {
      mask_ = combine(saved, NotNode::make(strip_likely(c)));
      e = mutate(op->else_case);
    }
    mask_ = saved;
    return SeqNode::make({t, e});
  }
  Stmt visit(const LetStmtNode* op) override {
    Expr value = mutate(op->value);
    if (!is_vector(value)) return LetStmtNode::make(op->var, value, mutate(op->body));
    Var v(op->var.name(), value.dtype());
    lets_[op->var.get()] = v;
    Stmt body = mutate(op->body);
    lets_.erase(op->var.get());
    return LetStmtNode::make(v, value, body);
  }
  Stmt visit(const AllocateNode*) override { throw CannotVectorize{}; }
  Stmt visit(const AssertStmtNode*) override { throw CannotVectorize{}; }
  Stmt visit(const EvaluateNode* op) override {
    if (uses_var(op->value, var_)) throw CannotVectorize{};
    return self(op);
  }
  Stmt visit(const PrefetchNode* op) override {
    if (uses_var(op->location, var_)) throw CannotVectorize{};
    return self(op);
  }
  Stmt visit(const BarrierNode*) override { throw CannotVectorize{}; }

 private:
  static Expr strip_likely(const Expr& e) {
    const CallNode* call = e.as<CallNode>();
    return call && call->name == intrinsic::likely ? call->args[0] : e;
  }
  Expr combine(const Expr& a, const Expr& b) {
    if (!a.defined()) return b.defined() ? widen(b) : b;
    if (!b.defined()) return a;
    return AndNode::make(widen(a), widen(b));
  }

  Var var_;
  int lanes_;
  Expr ramp_;
  Expr mask_;  // lanes that are active here, when some are not
  std::unordered_map<const VarNode*, Expr> lets_;
};

/// The vector IR of one vectorized loop, or undefined to keep the loop (its extent is not a
/// constant in [2, 4096], or its body cannot be vectorized).
inline Stmt vectorize_loop(const ForNode* loop) {
  const int64_t* extent = as_const_int(loop->extent);
  if (!extent || *extent < 2 || *extent > 4096) return Stmt();
  try {
    Vectorizer vectorizer(loop->loop_var, loop->min, static_cast<int>(*extent));
    return vectorizer.mutate(loop->body);
  } catch (const CannotVectorize&) {
    return Stmt();  // the backend sees a vectorized loop with a scalar body
  }
}

}  // namespace detail

/// Turns vectorized loops of constant extent into vector IR (see the file comment).
inline Stmt vectorize_loops(const Stmt& body) {
  return rewrite_loops(body, ForKind::Vectorized, detail::vectorize_loop);
}

}  // namespace loom
