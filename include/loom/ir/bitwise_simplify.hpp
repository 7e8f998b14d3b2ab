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

/// Whether `e` is a multiple of `modulus` (a power of 2) for every value: a constant, a product
/// with such a constant, a left shift by at least log2(modulus).
inline bool is_aligned_term(const Expr& e, int64_t modulus) {
  if (const int64_t* c = as_const_int(e)) return *c % modulus == 0;
  if (const MulNode* m = e.as<MulNode>()) {
    const int64_t* c = as_const_int(m->b);
    if (!c) c = as_const_int(m->a);
    return c && *c % modulus == 0;
  }
  if (const ShiftLeftNode* s = e.as<ShiftLeftNode>()) {
    const int64_t c = const_amount(s->b);
    return c >= 0 && c < 62 && (int64_t{1} << c) % modulus == 0;
  }
  return false;
}

/// Splits `a` into aligned + rest with `aligned` an is_aligned_term of `modulus`: a itself (rest
/// 0) or one operand of a sum. False when neither is.
inline bool split_aligned(const Expr& a, int64_t modulus, Expr* aligned, Expr* rest) {
  if (is_aligned_term(a, modulus)) {
    *aligned = a;
    *rest = make_zero(a.dtype());
    return true;
  }
  const AddNode* sum = a.as<AddNode>();
  if (!sum) return false;
  for (int side = 0; side < 2; ++side) {
    const Expr& x = side == 0 ? sum->a : sum->b;
    if (is_aligned_term(x, modulus)) {
      *aligned = x;
      *rest = side == 0 ? sum->b : sum->a;
      return true;
    }
  }
  return false;
}

/// Whether every value `e` can take (by the analyzer's bounds) lies strictly inside its type's
/// range: then sums and products in it did not wrap. (A bound that reaches the type's limits may
/// be one clamped there, as an unbounded variable's is, so it proves nothing.)
inline bool fits_type(const Expr& e, Analyzer& an) {
  const ConstIntBound b = an.symbolic_bound(e);
  const DType t = e.dtype();
  if (!b.is_finite() || t.bits > 62) return false;
  const int64_t lo = t.is_uint() ? 0 : -(int64_t{1} << (t.bits - 1));
  const int64_t hi = t.is_uint() ? (int64_t{1} << t.bits) - 1 : (int64_t{1} << (t.bits - 1)) - 1;
  return b.min_value > lo && b.max_value < hi;
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
        // (m + y) & (2^k - 1) is y & (2^k - 1) when m is a multiple of 2^k (its low bits are 0,
        // wrapped or not): a swizzle's unit index loses the loop's part.
        Expr aligned, rest;
        if (*c < (int64_t{1} << 62) && split_aligned(a, *c + 1, &aligned, &rest)) {
          if (is_zero(rest)) return make_zero(t);
          Expr r = simplify_bitwise(kind, rest, b, an);
          return r.defined() ? r : make_node(kind, rest, b);
        }
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
      // (m + y) ^ z is m + (y ^ z) when y and z are in [0, 2^k) and m is a multiple of 2^k: the
      // xor changes only bits below k, where m has none. A swizzle's loop part leaves the xor.
      for (int side = 0; side < 2 && scalar; ++side) {
        const Expr& sum = side == 0 ? a : b;
        const Expr& z = side == 0 ? b : a;
        const ConstIntBound zb = an.symbolic_bound(z);
        if (zb.min_value < 0 || zb.max_value >= (int64_t{1} << 30)) continue;
        int64_t modulus = 1;
        while (modulus <= zb.max_value) modulus *= 2;
        Expr aligned, y;
        if (!split_aligned(sum, modulus, &aligned, &y) || is_zero(aligned)) continue;
        const ConstIntBound yb = an.symbolic_bound(y);
        // y may need a larger power of 2 than z; m must be a multiple of that one.
        if (yb.min_value < 0 || yb.max_value >= (int64_t{1} << 30)) continue;
        while (modulus <= yb.max_value) modulus *= 2;
        if (!is_aligned_term(aligned, modulus)) continue;
        Expr low = simplify_bitwise(kind, y, z, an);
        if (!low.defined()) low = make_node(kind, y, z);
        return as_const_int(aligned) ? AddNode::make(low, aligned) : AddNode::make(aligned, low);
      }
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
        // (x * C + y) >> c is x * (C >> c) + (y >> c) when 2^c divides C and nothing wraps: the
        // shift is a floor division, and x * C is a whole multiple of 2^c.
        Expr aligned, rest;
        const int64_t modulus = int64_t{1} << c;
        if (c < 62 && split_aligned(a, modulus, &aligned, &rest) && fits_type(a, an) &&
            fits_type(aligned, an)) {
          Expr high;
          if (const int64_t* k = as_const_int(aligned)) {
            high = make_int_const(t, *k >> c);
          } else if (const MulNode* m = aligned.as<MulNode>()) {
            const bool right = as_const_int(m->b) != nullptr;
            const Expr& x = right ? m->a : m->b;
            const int64_t k = *as_const_int(right ? m->b : m->a);
            high = k == modulus ? x : MulNode::make(x, make_int_const(t, k / modulus));
          }
          if (high.defined()) {
            if (is_zero(rest)) return high;
            Expr low = simplify_bitwise(kind, rest, b, an);
            if (!low.defined()) low = make_node(kind, rest, b);
            return as_const_int(high) ? AddNode::make(low, high) : AddNode::make(high, low);
          }
        }
      }
      return Expr();
    }
    default: break;
  }
  return Expr();
}

}  // namespace loom
