// Symbolic interval arithmetic for bound inference: the set of values an index expression
// takes when some variables range over intervals, as [min, max] with expression endpoints.
#pragma once

#include <algorithm>
#include <unordered_map>

#include "loom/ir/analyzer.hpp"
#include "loom/ir/bitwise_simplify.hpp"
#include "loom/ir/op.hpp"

namespace loom {

/// An inclusive interval [min, max]; an undefined endpoint means unbounded on that side.
struct IntervalSet {
  Expr min, max;
  static IntervalSet point(const Expr& e) { return IntervalSet{e, e}; }
  static IntervalSet everything() { return IntervalSet{}; }
  bool bounded() const { return min.defined() && max.defined(); }
  bool is_point() const { return bounded() && min.same_as(max); }
};

using IntervalMap = std::unordered_map<const VarNode*, IntervalSet>;

/// Evaluates an integer expression over intervals of its variables. Sound: the result always
/// contains every value the expression can take; it may be larger.
class IntervalEvaluator {
 public:
  IntervalEvaluator(const IntervalMap& vars, Analyzer& analyzer) : vars_(vars), analyzer_(analyzer) {}

  IntervalSet eval(const Expr& e) {
    if (const int64_t* c = as_const_int(e)) return IntervalSet::point(make_int_const(e.dtype(), *c));
    if (const VarNode* v = e.as<VarNode>()) {
      auto it = vars_.find(v);
      if (it != vars_.end()) return it->second;
      auto lt = lets_.find(v);
      return lt != lets_.end() ? lt->second : IntervalSet::point(e);
    }
    if (const AddNode* op = e.as<AddNode>()) return add(eval(op->a), eval(op->b));
    if (const SubNode* op = e.as<SubNode>()) return sub(eval(op->a), eval(op->b));
    if (const MulNode* op = e.as<MulNode>()) return mul(eval(op->a), eval(op->b));
    if (const FloorDivNode* op = e.as<FloorDivNode>()) return div(eval(op->a), eval(op->b), true);
    if (const DivNode* op = e.as<DivNode>()) return div(eval(op->a), eval(op->b), false);
    if (const FloorModNode* op = e.as<FloorModNode>()) return mod(eval(op->a), eval(op->b), true);
    if (const ModNode* op = e.as<ModNode>()) return mod(eval(op->a), eval(op->b), false);
    if (const MinNode* op = e.as<MinNode>()) {
      IntervalSet a = eval(op->a), b = eval(op->b);
      return IntervalSet{a.min.defined() && b.min.defined() ? simplify(loom::min(a.min, b.min)) : Expr(),
                         !a.max.defined()   ? b.max
                         : !b.max.defined() ? a.max
                                            : simplify(loom::min(a.max, b.max))};
    }
    if (const MaxNode* op = e.as<MaxNode>()) {
      IntervalSet a = eval(op->a), b = eval(op->b);
      return IntervalSet{!a.min.defined()   ? b.min
                         : !b.min.defined() ? a.min
                                            : simplify(loom::max(a.min, b.min)),
                         a.max.defined() && b.max.defined() ? simplify(loom::max(a.max, b.max)) : Expr()};
    }
    if (const BitwiseAndNode* op = e.as<BitwiseAndNode>()) return bitwise(e, eval(op->a), eval(op->b));
    if (const BitwiseOrNode* op = e.as<BitwiseOrNode>()) return bitwise(e, eval(op->a), eval(op->b));
    if (const BitwiseXorNode* op = e.as<BitwiseXorNode>()) return bitwise(e, eval(op->a), eval(op->b));
    if (const ShiftLeftNode* op = e.as<ShiftLeftNode>()) return bitwise(e, eval(op->a), eval(op->b));
    if (const ShiftRightNode* op = e.as<ShiftRightNode>()) return bitwise(e, eval(op->a), eval(op->b));
    if (const SelectNode* op = e.as<SelectNode>()) return unite(eval(op->true_value), eval(op->false_value));
    if (const CallNode* op = e.as<CallNode>()) {
      if (op->name == intrinsic::if_then_else) return unite(eval(op->args[1]), eval(op->args[2]));
      if (op->name == intrinsic::likely) return eval(op->args[0]);
      return IntervalSet::everything();
    }
    if (const CastNode* op = e.as<CastNode>()) {
      DType from = op->value.dtype(), to = op->dtype;
      if (from.is_integral() && to.is_integral() && to.bits >= from.bits && from.is_int() == to.is_int()) {
        IntervalSet s = eval(op->value);
        return IntervalSet{s.min.defined() ? cast(to, s.min) : Expr(),
                           s.max.defined() ? cast(to, s.max) : Expr()};
      }
      return IntervalSet::everything();
    }
    if (const LetNode* op = e.as<LetNode>()) {
      lets_[op->var.get()] = eval(op->value);
      return eval(op->body);
    }
    if (e.dtype().is_bool()) return IntervalSet{make_zero(e.dtype()), make_int_const(e.dtype(), 1)};
    return IntervalSet::everything();
  }

  /// The smallest interval containing both.
  IntervalSet unite(const IntervalSet& a, const IntervalSet& b) {
    return IntervalSet{a.min.defined() && b.min.defined() ? simplify(loom::min(a.min, b.min)) : Expr(),
                       a.max.defined() && b.max.defined() ? simplify(loom::max(a.max, b.max)) : Expr()};
  }

 private:
  Expr simplify(const Expr& e) { return analyzer_.simplify(e); }
  bool non_negative(const Expr& e) { return analyzer_.can_prove(e >= make_zero(e.dtype())); }
  bool non_positive(const Expr& e) { return analyzer_.can_prove(e <= make_zero(e.dtype())); }

  IntervalSet add(const IntervalSet& a, const IntervalSet& b) {
    return IntervalSet{a.min.defined() && b.min.defined() ? simplify(a.min + b.min) : Expr(),
                       a.max.defined() && b.max.defined() ? simplify(a.max + b.max) : Expr()};
  }
  IntervalSet sub(const IntervalSet& a, const IntervalSet& b) {
    return IntervalSet{a.min.defined() && b.max.defined() ? simplify(a.min - b.max) : Expr(),
                       a.max.defined() && b.min.defined() ? simplify(a.max - b.min) : Expr()};
  }
  /// Scales an interval by a single value k of known sign.
  IntervalSet scale(const IntervalSet& a, const Expr& k) {
    if (is_zero(k)) return IntervalSet::point(k);
    auto times = [&](const Expr& x) { return x.defined() ? simplify(x * k) : Expr(); };
    if (non_negative(k)) return IntervalSet{times(a.min), times(a.max)};
    if (non_positive(k)) return IntervalSet{times(a.max), times(a.min)};
    return IntervalSet::everything();
  }
  IntervalSet mul(const IntervalSet& a, const IntervalSet& b) {
    if (a.is_point() && b.is_point()) return IntervalSet::point(simplify(a.min * b.min));
    if (b.is_point()) return scale(a, b.min);
    if (a.is_point()) return scale(b, a.min);
    const int64_t *a0 = as_const_int(a.min), *a1 = as_const_int(a.max);
    const int64_t *b0 = as_const_int(b.min), *b1 = as_const_int(b.max);
    if (a0 && a1 && b0 && b1) {
      int64_t c[] = {*a0 * *b0, *a0 * *b1, *a1 * *b0, *a1 * *b1};
      DType t = a.min.dtype();
      return IntervalSet{make_int_const(t, *std::min_element(c, c + 4)),
                         make_int_const(t, *std::max_element(c, c + 4))};
    }
    return IntervalSet::everything();
  }
  IntervalSet div(const IntervalSet& a, const IntervalSet& b, bool floor) {
    if (!b.is_point()) return IntervalSet::everything();
    const Expr& d = b.min;
    if (a.is_point()) return IntervalSet::point(simplify(floor ? floordiv(a.min, d) : truncdiv(a.min, d)));
    auto q = [&](const Expr& x) {
      return x.defined() ? simplify(floor ? floordiv(x, d) : truncdiv(x, d)) : Expr();
    };
    // Both floor and truncating division are monotone in the dividend for a fixed divisor.
    if (analyzer_.can_prove(d > make_zero(d.dtype()))) return IntervalSet{q(a.min), q(a.max)};
    if (analyzer_.can_prove(d < make_zero(d.dtype()))) return IntervalSet{q(a.max), q(a.min)};
    return IntervalSet::everything();
  }
  /// & | ^ << >> (node e) of intervals a and b: exact for points; x & c in [0, c] for c >= 0;
  /// x >> c and x << c for a constant c move the ends (<< as a product, assuming no overflow
  /// as for *); x | y and x ^ y of non-negative intervals with constant maxima stay below the
  /// next power of two.
  IntervalSet bitwise(const Expr& e, const IntervalSet& a, const IntervalSet& b) {
    const IRNodeKind k = e.kind();
    const DType t = e.dtype();
    if (a.is_point() && b.is_point())
      return IntervalSet::point(simplify(bitwise_detail::make_node(k, a.min, b.min)));
    const int64_t* c = b.is_point() ? as_const_int(b.min) : nullptr;
    const bool amount = c && *c >= 0 && *c < t.bits && *c < 62;
    auto ends = [&](auto f) {
      return IntervalSet{a.min.defined() ? simplify(f(a.min)) : Expr(),
                         a.max.defined() ? simplify(f(a.max)) : Expr()};
    };
    switch (k) {
      case IRNodeKind::BitwiseAnd: {
        const int64_t* ca = a.is_point() ? as_const_int(a.min) : nullptr;
        const int64_t* mask = c && *c >= 0 ? c : ca && *ca >= 0 ? ca : nullptr;
        if (mask) return IntervalSet{make_zero(t), make_int_const(t, *mask)};
        break;
      }
      case IRNodeKind::ShiftRight:
        if (amount) return ends([&](const Expr& x) { return bitwise_detail::make_node(k, x, b.min); });
        break;
      case IRNodeKind::ShiftLeft:
        if (amount && a.min.defined() && non_negative(a.min))
          return ends([&](const Expr& x) { return x * make_int_const(t, int64_t{1} << *c); });
        break;
      default: {  // | and ^
        const int64_t* a1 = a.max.defined() ? as_const_int(a.max) : nullptr;
        const int64_t* b1 = b.max.defined() ? as_const_int(b.max) : nullptr;
        if (a1 && b1 && *a1 >= 0 && *b1 >= 0 && a.min.defined() && b.min.defined() && non_negative(a.min) &&
            non_negative(b.min))
          return IntervalSet{make_zero(t),
                             make_int_const(t, bound_detail::fill_low_bits(std::max(*a1, *b1)))};
        break;
      }
    }
    return IntervalSet::everything();
  }
  IntervalSet mod(const IntervalSet& a, const IntervalSet& b, bool floor) {
    if (!b.is_point()) return IntervalSet::everything();
    const Expr& d = b.min;
    if (a.is_point()) return IntervalSet::point(simplify(floor ? floormod(a.min, d) : truncmod(a.min, d)));
    if (!analyzer_.can_prove(d > make_zero(d.dtype()))) return IntervalSet::everything();
    bool dividend_non_negative = a.min.defined() && non_negative(a.min);
    if (!floor && !dividend_non_negative) {
      Expr bound = simplify(d - make_int_const(d.dtype(), 1));
      return IntervalSet{simplify(-bound), bound};
    }
    // Within one period the remainder is monotone too.
    if (a.bounded() && analyzer_.can_prove_equal(floordiv(a.min, d), floordiv(a.max, d)))
      return IntervalSet{simplify(floormod(a.min, d)), simplify(floormod(a.max, d))};
    return IntervalSet{make_zero(d.dtype()), simplify(d - make_int_const(d.dtype(), 1))};
  }

  const IntervalMap& vars_;
  IntervalMap lets_;
  Analyzer& analyzer_;
};

}  // namespace loom
