// Evaluates the integer expressions of buffer shapes and strides when a kernel is called, from the
// sizes the call's arguments bind (runtime/arg_check.hpp).
#pragma once

#include <algorithm>
#include <cstdint>
#include <unordered_map>

#include "loom/ir/int_eval.hpp"
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
  auto lookup = [&](const VarNode* v, int) -> const int64_t* {
    auto it = values.find(v);
    return it == values.end() ? nullptr : &it->second;
  };
  try {
    return IntEvaluator<decltype(lookup)>(lookup, /*wrap_casts=*/false)(e);
  } catch (const IntEvalFailure& failure) {
    switch (failure.kind) {
      case IntEvalFailure::Kind::UnboundVar: throw UnboundVariable{failure.var};
      case IntEvalFailure::Kind::DivisionByZero:
        throw ArgumentError(
            cat("the shape expression ", to_string(failure.expr), " divides by zero for these arguments"));
      case IntEvalFailure::Kind::NotInteger: break;
    }
    throw InternalError(
        cat("shape expression ", to_string(failure.expr), " cannot be evaluated when a kernel is called"));
  }
}

}  // namespace loom::detail
