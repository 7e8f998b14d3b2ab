// The rewrite rules of the bitwise nodes (& | ^ << >>) for RewriteSimplifier: constant folding,
// identities (x ^ 0, x & 0, x | 0, x << 0, x & x, x ^ x, ...), masks and shifts that bounds make
// redundant, nested constant shifts, and broadcasts, so that a vector of equal lanes stays one.
#pragma once

#include "loom/ir/analyzer.hpp"
#include "loom/ir/const_fold.hpp"
#include "loom/ir/expr_deep_equal.hpp"

namespace loom {
namespace bitwise_detail {

inline bool is_commutative(IRNodeKind k) {
  return k == IRNodeKind::BitwiseAnd || k == IRNodeKind::BitwiseOr || k == IRNodeKind::BitwiseXor;
}

/// Whether e is the constant with every bit of its type set (-1 signed, the maximum unsigned).
inline bool is_all_ones(const Expr& e) {
  const int64_t* v = as_const_int(e);
  return v && *v == int_math::wrap_to(e.dtype().element_of(), ~uint64_t{0});
}

inline Expr make_node(IRNodeKind k, Expr a, Expr b) {
  switch (k) {
    case IRNodeKind::BitwiseAnd: return BitwiseAndNode::make(std::move(a), std::move(b));
    case IRNodeKind::BitwiseOr: return BitwiseOrNode::make(std::move(a), std::move(b));
    case IRNodeKind::BitwiseXor: return BitwiseXorNode::make(std::move(a), std::move(b));
    case IRNodeKind::ShiftLeft: return ShiftLeftNode::make(std::move(a), std::move(b));
    case IRNodeKind::ShiftRight: return ShiftRightNode::make(std::move(a), std::move(b));
    default: break;
  }
  throw InternalError(cat("bitwise simplifier: ", kind_name(k), " is not a bitwise node"));
}

/// The constant amount of a shift when it is a valid one, else -1.
inline int64_t const_amount(const Expr& b) {
  const int64_t* c = as_const_int(b);
  if (!c || *c < 0 || *c >= b.dtype().bits) return -1;
  return *c;
}

}  // namespace bitwise_detail

/// `a kind b` for simplified operands a, b of one integer type, simplified; undefined when no
/// rule applies. Every rule holds for every value of the operands (shift amounts modulo the
/// width, as ir/int_math.hpp defines them); bounds come from `an`.
inline Expr simplify_bitwise(IRNodeKind kind, const Expr& a, const Expr& b, Analyzer& an) {
  using namespace bitwise_detail;
  if (Expr c = fold_binary(kind, a, b); c.defined()) return c;
  const DType t = a.dtype();
  // op(broadcast(x), broadcast(y)) is broadcast(op(x, y)): equal lanes stay one value.
  const BroadcastNode* ba = a.as<BroadcastNode>();
  const BroadcastNode* bb = b.as<BroadcastNode>();
  if (ba && bb && ba->lanes == bb->lanes) {
    Expr scalar = simplify_bitwise(kind, ba->value, bb->value, an);
    if (!scalar.defined()) scalar = make_node(kind, ba->value, bb->value);
    return BroadcastNode::make(scalar, ba->lanes);
  }
  // Constants go to the right of a commutative operation, so the rules below see them there.
  if (is_commutative(kind) && as_const_int(a) && !as_const_int(b)) {
    Expr r = simplify_bitwise(kind, b, a, an);
    return r.defined() ? r : make_node(kind, b, a);
  }
  const bool scalar = t.is_scalar();
  switch (kind) {
    case IRNodeKind::BitwiseAnd: {
      if (is_zero(b)) return b;
      if (is_all_ones(b)) return a;
      if (expr_deep_equal(a, b)) return a;
      // x & (2^k - 1) is x when x is already in [0, 2^k - 1].
      const int64_t* c = as_const_int(b);
      if (scalar && c && *c >= 0 && (*c & (*c + 1)) == 0) {
        ConstIntBound xb = an.symbolic_bound(a);
        if (xb.min_value >= 0 && xb.max_value <= *c) return a;
      }
      return Expr();
    }
    case IRNodeKind::BitwiseOr: {
      if (is_zero(b)) return a;
      if (is_all_ones(b)) return b;
      if (expr_deep_equal(a, b)) return a;
      return Expr();
    }
    case IRNodeKind::BitwiseXor: {
      if (is_zero(b)) return a;
      if (expr_deep_equal(a, b)) return make_zero(t);
      return Expr();
    }
    case IRNodeKind::ShiftLeft:
    case IRNodeKind::ShiftRight: {
      if (is_zero(b) || is_zero(a)) return a;
      const int64_t c = const_amount(b);
      if (c < 0) return Expr();
      // (x >> c1) >> c2 == x >> (c1 + c2) while the sum is a valid amount (likewise <<).
      const Expr* inner = nullptr;
      Expr inner_amount;
      if (kind == IRNodeKind::ShiftRight) {
        if (const ShiftRightNode* n = a.as<ShiftRightNode>()) inner = &n->a, inner_amount = n->b;
      } else if (const ShiftLeftNode* n = a.as<ShiftLeftNode>()) {
        inner = &n->a, inner_amount = n->b;
      }
      if (inner) {
        const int64_t c1 = const_amount(inner_amount);
        if (c1 >= 0 && c1 + c < t.bits) {
          const Expr amount = make_int_const(t, c1 + c);
          Expr r = simplify_bitwise(kind, *inner, amount, an);  // the merged shift may go further
          return r.defined() ? r : make_node(kind, *inner, amount);
        }
      }
      // x >> c is 0 when x is in [0, 2^c).
      if (kind == IRNodeKind::ShiftRight && scalar) {
        ConstIntBound xb = an.symbolic_bound(a);
        if (xb.min_value >= 0 && c < 63 && xb.max_value < (int64_t{1} << c)) return make_zero(t);
      }
      return Expr();
    }
    default: break;
  }
  return Expr();
}

}  // namespace loom
