// Evaluates the integer expressions of buffer shapes and strides when a kernel is called, from the
// sizes the call's arguments bind (runtime/arg_check.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "loom/ir/op.hpp"
#include "loom/ir/printer.hpp"
#include "loom/support/error.hpp"

namespace loom::detail {

/// Thrown inside the shape evaluator when an expression reads a variable nobody bound.
struct UnboundVariable {
  const VarNode* var;
};

/// Evaluates an integer shape or stride expression with the sizes bound so far. Shape arithmetic
/// is exact int64 arithmetic (no wrap at the expression's width).
inline int64_t eval_shape_expr(const Expr& e, const std::unordered_map<const VarNode*, int64_t>& values) {
  auto rec = [&](const Expr& x) { return eval_shape_expr(x, values); };
  auto divisor = [&](const Expr& x) {
    int64_t d = rec(x);
    if (d == 0)
      throw ArgumentError(cat("the shape expression ", to_string(e), " divides by zero for these arguments"));
    return d;
  };
  switch (e.kind()) {
    case IRNodeKind::IntImm: return e.as<IntImmNode>()->value;
    case IRNodeKind::Var: {
      auto it = values.find(e.as<VarNode>());
      if (it == values.end()) throw UnboundVariable{e.as<VarNode>()};
      return it->second;
    }
    case IRNodeKind::Add: return rec(e.as<AddNode>()->a) + rec(e.as<AddNode>()->b);
    case IRNodeKind::Sub: return rec(e.as<SubNode>()->a) - rec(e.as<SubNode>()->b);
    case IRNodeKind::Mul: return rec(e.as<MulNode>()->a) * rec(e.as<MulNode>()->b);
    case IRNodeKind::Div: {
      int64_t a = rec(e.as<DivNode>()->a);
      return a / divisor(e.as<DivNode>()->b);
    }
    case IRNodeKind::Mod: {
      int64_t a = rec(e.as<ModNode>()->a);
      return a % divisor(e.as<ModNode>()->b);
    }
    case IRNodeKind::FloorDiv: {
      int64_t a = rec(e.as<FloorDivNode>()->a), b = divisor(e.as<FloorDivNode>()->b);
      int64_t q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
    case IRNodeKind::FloorMod: {
      int64_t a = rec(e.as<FloorModNode>()->a), b = divisor(e.as<FloorModNode>()->b);
      int64_t r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case IRNodeKind::Min: return std::min(rec(e.as<MinNode>()->a), rec(e.as<MinNode>()->b));
    case IRNodeKind::Max: return std::max(rec(e.as<MaxNode>()->a), rec(e.as<MaxNode>()->b));
    case IRNodeKind::Cast:
      if (e.dtype().is_integral() && e.as<CastNode>()->value.dtype().is_integral())
        return rec(e.as<CastNode>()->value);
      break;
    case IRNodeKind::Call:
      if (e.as<CallNode>()->name == intrinsic::likely) return rec(e.as<CallNode>()->args.at(0));
      break;
    default: break;
  }
  throw InternalError(cat("shape expression ", to_string(e), " cannot be evaluated when a kernel is called"));
}

}  // namespace loom::detail
