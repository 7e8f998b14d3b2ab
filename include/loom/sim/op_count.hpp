// The arithmetic instructions of a kernel statement's own expressions, counted once when the
// statement is compiled: the clock model (runtime/sim_clock_model.hpp) charges them per execution.
#pragma once

#include <initializer_list>

#include "loom/ir/expr.hpp"
#include "loom/ir/visitor.hpp"

namespace loom::sim {

/// Arithmetic, comparison, logic, select and cast nodes, each times its vector lanes. A float
/// multiply whose product feeds an add or subtract directly counts with it as one (an FMA). Loads
/// (costed by the memory they touch), variables, constants, ramps and broadcasts cost nothing; a
/// cast between integer types is free (a register's width, not an instruction); a call (a math
/// function) counts one.
inline int count_arith_ops(std::initializer_list<const Expr*> roots) {
  int ops = 0;
  auto visit = [&](const Expr& e) {
    const int lanes = e.dtype().lanes;
    switch (e.kind()) {
      case IRNodeKind::Add:
      case IRNodeKind::Sub: {
        ops += lanes;
        if (!e.dtype().is_float()) break;
        const Expr& a = e.kind() == IRNodeKind::Add ? e.as<AddNode>()->a : e.as<SubNode>()->a;
        const Expr& b = e.kind() == IRNodeKind::Add ? e.as<AddNode>()->b : e.as<SubNode>()->b;
        if (a.kind() == IRNodeKind::Mul || b.kind() == IRNodeKind::Mul) ops -= lanes;  // fused
        break;
      }
      case IRNodeKind::Cast: {
        const CastNode* c = e.as<CastNode>();
        if (c->dtype.is_float() || c->value.dtype().is_float()) ops += lanes;
        break;
      }
      case IRNodeKind::Mul:
      case IRNodeKind::Div:
      case IRNodeKind::Mod:
      case IRNodeKind::FloorDiv:
      case IRNodeKind::FloorMod:
      case IRNodeKind::Min:
      case IRNodeKind::Max:
      case IRNodeKind::EQ:
      case IRNodeKind::NE:
      case IRNodeKind::LT:
      case IRNodeKind::LE:
      case IRNodeKind::GT:
      case IRNodeKind::GE:
      case IRNodeKind::And:
      case IRNodeKind::Or:
      case IRNodeKind::Not:
      case IRNodeKind::Select:
      case IRNodeKind::Call: ops += lanes; break;
      default: break;
    }
  };
  for (const Expr* root : roots)
    if (root && root->defined()) for_each_expr(*root, visit);
  return ops;
}

}  // namespace loom::sim
