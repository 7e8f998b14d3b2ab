// IntEvaluator: the one evaluator of integer expressions outside compiled code. The CUDA host
// program (sizes, launch extents), a kernel call's shape checks and the bank-conflict analysis
// (indices, guards, loop bounds, lane by lane) all evaluate with it and differ only in where
// variables get their values and in how they report what cannot be evaluated.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "loom/ir/int_math.hpp"
#include "loom/ir/node_kinds.hpp"
#include "loom/ir/op.hpp"

namespace loom {

/// Why an expression has no integer value: `expr` is the node where evaluation stopped.
struct IntEvalFailure {
  enum class Kind {
    UnboundVar,      // `var` has no value
    DivisionByZero,  // `expr` is a division, modulo or floor division by zero
    NotInteger,      // `expr` is not integer arithmetic (a float, a load, a call)
  };
  Kind kind;
  Expr expr;
  const VarNode* var = nullptr;
};

/// Evaluates integer and boolean expressions in int64: + - * / % floordiv floormod min max,
/// & | ^ << >> (at the width of their type), comparisons, && || !, select, casts between integer types
/// (wrapped to the target width unless `wrap_casts` is false, as exact shape arithmetic wants), let, likely()
/// and if_then_else() (only the branch taken), and ramp/broadcast lanes. `lookup(var, lane)` gives a
/// variable's value as `const int64_t*`, null when it has none. Throws IntEvalFailure.
template <typename Lookup>
class IntEvaluator {
 public:
  explicit IntEvaluator(Lookup lookup, bool wrap_casts = true)
      : lookup_(std::move(lookup)), wrap_casts_(wrap_casts) {}

  /// Lane `lane` of `e` (0 for a scalar).
  int64_t operator()(const Expr& e, int lane = 0) { return eval(e, lane); }

 private:
  /// A scalar operand of a vector expression has one value for every lane.
  static int lane_of(const Expr& e, int lane) { return e.dtype().lanes == 1 ? 0 : lane; }

  [[noreturn]] static void fail(IntEvalFailure::Kind kind, const Expr& e, const VarNode* var = nullptr) {
    throw IntEvalFailure{kind, e, var};
  }

  static DType element(const Expr& e) { return e.dtype().element_of(); }

  static int64_t divisor(int64_t b, const Expr& e) {
    if (b == 0) fail(IntEvalFailure::Kind::DivisionByZero, e);
    return b;
  }

  int64_t var(const Expr& e, int lane) {
    const VarNode* v = e.as<VarNode>();
    // Let-bound variables first, innermost first; their values are evaluated when used.
    for (auto it = lets_.rbegin(); it != lets_.rend(); ++it)
      if (it->first == v) return eval(*it->second, lane_of(*it->second, lane));
    const int64_t* value = lookup_(v, lane);
    if (!value) fail(IntEvalFailure::Kind::UnboundVar, e, v);
    return *value;
  }

  int64_t eval(const Expr& e, int lane) {
    switch (e.kind()) {
      case IRNodeKind::IntImm: return e.as<IntImmNode>()->value;
      case IRNodeKind::Var: return var(e, lane);
#define LOOM_INT_EVAL_BINARY(kind, node, expr)           \
  case IRNodeKind::kind: {                               \
    const node* op = e.as<node>();                       \
    const int64_t a = eval(op->a, lane_of(op->a, lane)); \
    const int64_t b = eval(op->b, lane_of(op->b, lane)); \
    return expr;                                         \
  }
        LOOM_INT_EVAL_BINARY(Add, AddNode, a + b)
        LOOM_INT_EVAL_BINARY(Sub, SubNode, a - b)
        LOOM_INT_EVAL_BINARY(Mul, MulNode, a * b)
        LOOM_INT_EVAL_BINARY(Min, MinNode, std::min(a, b))
        LOOM_INT_EVAL_BINARY(Max, MaxNode, std::max(a, b))
        LOOM_INT_EVAL_BINARY(EQ, EQNode, a == b)
        LOOM_INT_EVAL_BINARY(NE, NENode, a != b)
        LOOM_INT_EVAL_BINARY(LT, LTNode, a < b)
        LOOM_INT_EVAL_BINARY(LE, LENode, a <= b)
        LOOM_INT_EVAL_BINARY(GT, GTNode, a > b)
        LOOM_INT_EVAL_BINARY(GE, GENode, a >= b)
        LOOM_INT_EVAL_BINARY(Div, DivNode, a / divisor(b, e))
        LOOM_INT_EVAL_BINARY(Mod, ModNode, a % divisor(b, e))
        LOOM_INT_EVAL_BINARY(FloorDiv, FloorDivNode, int_math::floordiv(a, divisor(b, e)))
        LOOM_INT_EVAL_BINARY(FloorMod, FloorModNode, int_math::floormod(a, divisor(b, e)))
        // Bitwise operations see the bits the generated code has: operands wrapped to the type.
        LOOM_INT_EVAL_BINARY(BitwiseAnd, BitwiseAndNode, int_math::bitwise_and(element(e), a, b))
        LOOM_INT_EVAL_BINARY(BitwiseOr, BitwiseOrNode, int_math::bitwise_or(element(e), a, b))
        LOOM_INT_EVAL_BINARY(BitwiseXor, BitwiseXorNode, int_math::bitwise_xor(element(e), a, b))
        LOOM_INT_EVAL_BINARY(ShiftLeft, ShiftLeftNode, int_math::shift_left(element(e), a, b))
        LOOM_INT_EVAL_BINARY(ShiftRight, ShiftRightNode, int_math::shift_right(element(e), a, b))
#undef LOOM_INT_EVAL_BINARY
      case IRNodeKind::And: {
        const AndNode* op = e.as<AndNode>();
        return eval(op->a, lane_of(op->a, lane)) && eval(op->b, lane_of(op->b, lane));
      }
      case IRNodeKind::Or: {
        const OrNode* op = e.as<OrNode>();
        return eval(op->a, lane_of(op->a, lane)) || eval(op->b, lane_of(op->b, lane));
      }
      case IRNodeKind::Not: return !eval(e.as<NotNode>()->a, lane);
      case IRNodeKind::Select: {
        const SelectNode* op = e.as<SelectNode>();
        return eval(op->condition, lane_of(op->condition, lane)) ? eval(op->true_value, lane)
                                                                 : eval(op->false_value, lane);
      }
      case IRNodeKind::Cast: {
        const CastNode* op = e.as<CastNode>();
        const bool integral = op->dtype.is_integral() || op->dtype.is_bool();
        const bool from_integral = op->value.dtype().is_integral() || op->value.dtype().is_bool();
        if (!integral || !from_integral) fail(IntEvalFailure::Kind::NotInteger, e);
        const int64_t v = eval(op->value, lane);
        if (op->dtype.is_bool()) return v != 0;
        return wrap_casts_ ? int_math::wrap_to(op->dtype.element_of(), static_cast<uint64_t>(v)) : v;
      }
      case IRNodeKind::Ramp: {
        const RampNode* op = e.as<RampNode>();
        return eval(op->base, 0) + eval(op->stride, 0) * lane;
      }
      case IRNodeKind::Broadcast: return eval(e.as<BroadcastNode>()->value, 0);
      case IRNodeKind::Let: {
        const LetNode* op = e.as<LetNode>();
        lets_.emplace_back(op->var.get(), &op->value);
        struct Pop {
          std::vector<std::pair<const VarNode*, const Expr*>>& lets;
          ~Pop() { lets.pop_back(); }
        } pop{lets_};
        return eval(op->body, lane);
      }
      case IRNodeKind::Call: {
        const CallNode* op = e.as<CallNode>();
        if (op->name == intrinsic::likely) return eval(op->args.at(0), lane);
        if (op->name == intrinsic::if_then_else)
          return eval(op->args.at(0), lane_of(op->args.at(0), lane)) ? eval(op->args.at(1), lane)
                                                                     : eval(op->args.at(2), lane);
        break;
      }
      default: break;
    }
    fail(IntEvalFailure::Kind::NotInteger, e);
  }

  Lookup lookup_;
  bool wrap_casts_;
  std::vector<std::pair<const VarNode*, const Expr*>> lets_;  // the lets around the expression
};

}  // namespace loom
