// hoist_guards: inside a loop annotated pragma(axis, "hoist_guards"), a guard that does not
// depend on a loop's variable moves out of that loop (conjunct by conjunct, as far out as it can),
// so that a loop nest whose work a condition on outer loops switches off costs one branch instead
// of a test in its innermost body. Opt-in: schedules that ask for it, e.g. lib::gemm's Stream-K mode.
#pragma once

#include <string>
#include <vector>

#include "loom/ir/mutator.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/substitute.hpp"
#include "loom/ir/visitor.hpp"

namespace loom {

namespace detail {

/// The top-level conjuncts of `c` (a && (b && d) -> a, b, d).
inline void conjuncts(const Expr& c, std::vector<Expr>& out) {
  if (const AndNode* a = c.as<AndNode>()) {
    conjuncts(a->a, out);
    conjuncts(a->b, out);
    return;
  }
  out.push_back(c);
}

/// True when evaluating `e` reads no memory and calls nothing impure: its value depends on its
/// variables only, so it may be evaluated once outside a loop that does not bind them.
inline bool reads_only_variables(const Expr& e) {
  bool pure = true;
  for_each_expr(e, [&](const Expr& x) {
    if (x.as<LoadNode>() || x.as<ProducerLoadNode>()) pure = false;
    if (const CallNode* call = x.as<CallNode>(); call && !call->is_pure()) pure = false;
  });
  return pure;
}

inline bool has_annotation(const ForNode* op, const std::string& key) {
  for (const LoopAnnotation& a : op->annotations)
    if ((a.key == key || a.key == "pragma_" + key) && !is_zero(a.value)) return true;
  return false;
}

class HoistGuards : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const ForNode* op) override {
    const bool annotated = has_annotation(op, "hoist_guards");
    inside_ += annotated ? 1 : 0;
    Stmt body = mutate(op->body);
    inside_ -= annotated ? 1 : 0;
    if (inside_ == 0 && !annotated)
      return body.same_as(op->body) ? self(op)
                                    : ForNode::make(op->loop_var, op->min, op->extent, op->kind, body,
                                                    op->thread_tag, op->annotations);
    // for x { if (invariant && rest) S }  ->  if (invariant) { for x { if (rest) S } }
    std::vector<Expr> invariant, rest;
    const auto* guard = body.as<IfThenElseNode>();
    // A thread-bound loop (a GPU thread or block index) is not a loop one may skip: barriers
    // inside it must be reached by every thread.
    if (guard && !guard->else_case.defined() && op->kind != ForKind::ThreadBinding) {
      std::vector<Expr> parts;
      conjuncts(guard->condition, parts);
      for (const Expr& c : parts)
        (uses_var(c, op->loop_var) || !reads_only_variables(c) ? rest : invariant).push_back(c);
    }
    if (invariant.empty())
      return body.same_as(op->body) ? self(op)
                                    : ForNode::make(op->loop_var, op->min, op->extent, op->kind, body,
                                                    op->thread_tag, op->annotations);
    Stmt inner = rest.empty() ? guard->then_case : IfThenElseNode::make(all(rest), guard->then_case);
    Stmt loop =
        ForNode::make(op->loop_var, op->min, op->extent, op->kind, inner, op->thread_tag, op->annotations);
    return IfThenElseNode::make(all(invariant), loop);
  }

 private:
  int inside_ = 0;
};

}  // namespace detail

/// Moves loop-invariant guards out of the loops inside loops annotated "hoist_guards".
inline Stmt hoist_guards(const Stmt& body) { return detail::HoistGuards().mutate(body); }

}  // namespace loom
