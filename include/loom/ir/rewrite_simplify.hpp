// RewriteSimplifier: the expression simplifier behind Analyzer::simplify. It rewrites bottom-up:
// constant folding, canonical linear forms for integer arithmetic, and rules for division,
// min/max, comparisons and logic that ask the Analyzer what the bound variables can be.
#pragma once

#include <optional>

#include "loom/ir/analyzer.hpp"
#include "loom/ir/bitwise_simplify.hpp"
#include "loom/ir/const_fold.hpp"
#include "loom/ir/mutator.hpp"
#include "loom/ir/substitute.hpp"

namespace loom {

/// Every rule keeps the value of the expression for every value of the bound variables. On
/// signed integers the rules that use bounds assume, as C does, that arithmetic does not
/// overflow; unsigned integers only get folding and ring identities (like-term combination),
/// floats only folding and x*1 (x+0 is not an identity for x = -0.0).
class RewriteSimplifier : public IRMutator {
 public:
  explicit RewriteSimplifier(Analyzer& analyzer) : an_(analyzer) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const VarNode* op) override {
    const Analyzer::VarInfo* info = an_.lookup(op);
    if (!info) return self(op);
    if (info->value.defined() && (info->value.as<IntImmNode>() || info->value.as<FloatImmNode>()))
      return info->value;
    if (op->dtype.is_integral() && info->bound.is_single_point())
      return IntImmNode::make(op->dtype, info->bound.min_value);
    if (info->range.defined() && is_const_int(info->range.extent, 1)) return mutate(info->range.min);
    return self(op);
  }

  // Arithmetic ---------------------------------------------------------------------------------

  Expr visit(const AddNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold_binary(IRNodeKind::Add, a, b); c.defined()) return c;
    if (LinearForm::applies_to(op->dtype)) {
      LinearForm f = LinearForm::parse(a);
      f.add(LinearForm::parse(b));
      return f.to_expr();
    }
    if (Expr r = shift_ramp(a, b, /*subtract=*/false); r.defined()) return r;
    return rebuild(op, a, b);
  }

  Expr visit(const SubNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold_binary(IRNodeKind::Sub, a, b); c.defined()) return c;
    if (LinearForm::applies_to(op->dtype)) {
      LinearForm f = LinearForm::parse(a);
      f.add(LinearForm::parse(b), -1);
      return f.to_expr();
    }
    if (Expr r = shift_ramp(a, b, /*subtract=*/true); r.defined()) return r;
    return rebuild(op, a, b);
  }

  Expr visit(const MulNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold_binary(IRNodeKind::Mul, a, b); c.defined()) return c;
    DType t = op->dtype;
    if (LinearForm::applies_to(t)) {
      const int64_t* kb = as_const_int(b);
      const int64_t* ka = as_const_int(a);
      if (kb || ka) {
        LinearForm f = LinearForm::parse(kb ? a : b);
        f.scale(kb ? *kb : *ka);
        return f.to_expr();
      }
      // A product of non-constants is an atom; constant factors move out of it so that
      // (x*2)*(y*3) and (x*y)*6 are recognised as like terms.
      LinearForm fa = LinearForm::parse(a), fb = LinearForm::parse(b);
      int64_t ka_coeff = 1, kb_coeff = 1;
      Expr x = a, y = b;
      if (fa.terms().size() == 1 && fa.constant() == 0) {
        ka_coeff = fa.terms()[0].coeff;
        x = fa.terms()[0].atom;
      }
      if (fb.terms().size() == 1 && fb.constant() == 0) {
        kb_coeff = fb.terms()[0].coeff;
        y = fb.terms()[0].atom;
      }
      if (ka_coeff == 1 && kb_coeff == 1) return rebuild(op, a, b);
      LinearForm r(t);
      r.add_term(MulNode::make(x, y), ka_coeff);
      r.scale(kb_coeff);
      return r.to_expr();
    }
    if (t.is_float() || t.is_vector()) {
      // x*1 is exact for floats (unlike x+0, which turns -0.0 into 0.0).
      if (is_one(b)) return a;
      if (is_one(a)) return b;
    }
    return rebuild(op, a, b);
  }

  Expr visit(const DivNode* op) override {
    return division(op, [this](const Expr& a, int64_t c) { return truncdiv_by_const(a, c); });
  }
  Expr visit(const ModNode* op) override {
    return division(op, [this](const Expr& a, int64_t c) { return truncmod_by_const(a, c); });
  }
  Expr visit(const FloorDivNode* op) override {
    return division(op, [this](const Expr& a, int64_t c) { return floordiv_by_const(a, c); });
  }
  Expr visit(const FloorModNode* op) override {
    return division(op, [this](const Expr& a, int64_t c) { return floormod_by_const(a, c); });
  }

  Expr visit(const MinNode* op) override { return min_max(op, /*is_min=*/true); }
  Expr visit(const MaxNode* op) override { return min_max(op, /*is_min=*/false); }

  // Bitwise operations: the rules live in ir/bitwise_simplify.hpp.
  Expr visit(const BitwiseAndNode* op) override { return bitwise(op); }
  Expr visit(const BitwiseOrNode* op) override { return bitwise(op); }
  Expr visit(const BitwiseXorNode* op) override { return bitwise(op); }
  Expr visit(const ShiftLeftNode* op) override { return bitwise(op); }
  Expr visit(const ShiftRightNode* op) override { return bitwise(op); }

  // Comparisons and logic -------------------------------------------------------------------------

  Expr visit(const EQNode* op) override { return compare(op); }
  Expr visit(const NENode* op) override { return compare(op); }
  Expr visit(const LTNode* op) override { return compare(op); }
  Expr visit(const LENode* op) override { return compare(op); }
  Expr visit(const GTNode* op) override { return compare(op); }
  Expr visit(const GENode* op) override { return compare(op); }

  Expr visit(const AndNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold_binary(IRNodeKind::And, a, b); c.defined()) return c;
    if (is_const_false(a)) return a;
    if (is_const_false(b)) return b;
    if (is_const_true(a)) return b;
    if (is_const_true(b)) return a;
    if (expr_deep_equal(a, b)) return a;
    return rebuild(op, a, b);
  }

  Expr visit(const OrNode* op) override {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold_binary(IRNodeKind::Or, a, b); c.defined()) return c;
    if (is_const_true(a)) return a;
    if (is_const_true(b)) return b;
    if (is_const_false(a)) return b;
    if (is_const_false(b)) return a;
    if (expr_deep_equal(a, b)) return a;
    return rebuild(op, a, b);
  }

  Expr visit(const NotNode* op) override {
    Expr a = mutate(op->a);
    if (Expr c = fold_not(a); c.defined()) return c;
    if (const NotNode* inner = a.as<NotNode>()) return inner->a;
    if (Expr inverted = invert_comparison(a); inverted.defined()) return inverted;
    return a.same_as(op->a) ? self(op) : NotNode::make(a);
  }

  // Selection -------------------------------------------------------------------------------------

  Expr visit(const SelectNode* op) override {
    Expr c = mutate(op->condition);
    if (const int64_t* v = as_const_int(c)) return mutate(*v ? op->true_value : op->false_value);
    Expr t = mutate(op->true_value), f = mutate(op->false_value);
    if (expr_deep_equal(t, f)) return t;
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self(op);
    return SelectNode::make(c, t, f);
  }

  Expr visit(const CallNode* op) override {
    if (op->name == intrinsic::likely && op->args.size() == 1) {
      Expr x = mutate(op->args[0]);
      if (as_const_int(x)) return x;  // likely(true) is true
      return x.same_as(op->args[0]) ? self(op) : CallNode::make(op->dtype, op->name, {x}, op->call_kind);
    }
    if (op->name == intrinsic::if_then_else && op->args.size() == 3) {
      // Only the branch taken is simplified: the other may be meaningless (an out-of-bounds read).
      Expr c = mutate(op->args[0]);
      if (const int64_t* v = as_const_int(c)) return mutate(*v ? op->args[1] : op->args[2]);
      Expr t = mutate(op->args[1]), f = mutate(op->args[2]);
      if (expr_deep_equal(t, f)) return t;
      if (c.same_as(op->args[0]) && t.same_as(op->args[1]) && f.same_as(op->args[2])) return self(op);
      return CallNode::make(op->dtype, op->name, {c, t, f}, op->call_kind);
    }
    return IRMutator::visit(op);
  }

  Expr visit(const CastNode* op) override {
    Expr v = mutate(op->value);
    if (Expr c = fold_cast(op->dtype, v); c.defined()) return c;
    if (v.dtype() == op->dtype) return v;
    return v.same_as(op->value) ? self(op) : CastNode::make(op->dtype, v);
  }

  // Binding -------------------------------------------------------------------------------------

  Expr visit(const LetNode* op) override {
    Expr value = mutate(op->value);
    // Constants and variables cost nothing to repeat: substitute them.
    if (value.as<IntImmNode>() || value.as<FloatImmNode>() || value.as<VarNode>()) {
      return mutate(substitute(op->body, op->var, value));
    }
    Expr body;
    {
      Analyzer::BindingGuard guard = an_.scoped_bind(op->var, value);
      body = mutate(op->body);
    }
    if (!op->var.dtype().is_handle() && !uses_var(body, op->var)) return body;
    if (value.same_as(op->value) && body.same_as(op->body)) return self(op);
    return LetNode::make(op->var, value, body);
  }

  Expr visit(const ReduceNode* op) override {
    return an_.with_scope([&] {
      for (const IterVar& axis : op->axis) {
        if (axis.dom().defined()) an_.bind(axis.var(), axis.dom());
      }
      return IRMutator::visit(op);
    });
  }

 private:
  Analyzer& an_;

  /// Signed scalar integers: where rules reason with bounds (no overflow, as in C).
  static bool is_index(DType t) { return t.is_scalar() && t.is_int(); }
  static bool is_const_true(const Expr& e) {
    const int64_t* v = as_const_int(e);
    return v && *v != 0;
  }
  static bool is_const_false(const Expr& e) {
    const int64_t* v = as_const_int(e);
    return v && *v == 0;
  }
  static Expr imm(DType t, int64_t v) { return IntImmNode::make(t, v); }
  /// v fits in type t without wrapping.
  static bool fits(DType t, int64_t v) { return int_math::wrap_to(t, static_cast<uint64_t>(v)) == v; }

  template <typename Node>
  Expr rebuild(const Node* op, const Expr& a, const Expr& b) {
    if (a.same_as(op->a) && b.same_as(op->b)) return self(op);
    return Node::make(a, b);
  }

  /// ramp(b, s, n) + broadcast(x) -> ramp(b + x, s, n), and the mirrored and subtracted forms.
  Expr shift_ramp(const Expr& a, const Expr& b, bool subtract) {
    const RampNode* ramp = a.as<RampNode>();
    const BroadcastNode* bc = b.as<BroadcastNode>();
    if (!ramp && !subtract) {
      ramp = b.as<RampNode>();
      bc = a.as<BroadcastNode>();
    }
    if (!ramp || !bc || ramp->lanes != bc->lanes) return Expr();
    Expr base = subtract ? SubNode::make(ramp->base, bc->value) : AddNode::make(ramp->base, bc->value);
    return RampNode::make(mutate(base), ramp->stride, ramp->lanes);
  }

  template <typename Node>
  Expr bitwise(const Node* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr r = simplify_bitwise(Node::node_kind, a, b, an_); r.defined()) {
      // A rule that moves an aligned term out of a bitwise node returns a sum of simplified parts:
      // simplified once more, it takes the canonical order of sums.
      return r.as<AddNode>() ? mutate(r) : r;
    }
    return rebuild(op, a, b);
  }

  // Division ------------------------------------------------------------------------------------

  /// Folds constants, divides by 1, and hands division of a signed integer by a positive
  /// constant to `by_const`, which returns an undefined Expr when no rule applies.
  template <typename Node, typename F>
  Expr division(const Node* op, F&& by_const) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold_binary(Node::node_kind, a, b); c.defined()) return c;
    const int64_t* c = as_const_int(b);
    if (c && *c == 1 && op->dtype.is_integral()) {
      bool is_div = Node::node_kind == IRNodeKind::Div || Node::node_kind == IRNodeKind::FloorDiv;
      return is_div ? a : make_zero(op->dtype);
    }
    if (c && *c > 0 && is_index(op->dtype)) {
      if (Expr r = by_const(a, *c); r.defined()) return r;
    }
    return rebuild(op, a, b);
  }

  /// a = c * quotient + rest, where quotient holds a's terms whose coefficients c divides
  /// (divided by c) and rest the other terms and the constant; g = gcd(c, rest's coefficients).
  struct DivParts {
    LinearForm quotient;
    LinearForm rest;
    int64_t g;
  };
  static DivParts split(const Expr& a, int64_t c) {
    LinearForm f = LinearForm::parse(a);
    DivParts p{LinearForm(a.dtype()), LinearForm(a.dtype()), c};
    for (const LinearTerm& t : f.terms()) {
      if (t.coeff % c == 0) {
        p.quotient.add_term(t.atom, t.coeff / c);
      } else {
        p.rest.add_term(t.atom, t.coeff);
        p.g = int_math::gcd(p.g, t.coeff);
      }
    }
    p.rest.add_constant(f.constant());
    p.g = int_math::gcd(p.g, f.constant());
    return p;
  }
  /// f / g for a g that divides every coefficient and the constant.
  static LinearForm divide_exact(const LinearForm& f, int64_t g) {
    LinearForm r(f.dtype());
    for (const LinearTerm& t : f.terms()) r.add_term(t.atom, t.coeff / g);
    r.add_constant(f.constant() / g);
    return r;
  }
  /// The floor quotient shared by every value in b, if there is one.
  static std::optional<int64_t> one_floor_bucket(const ConstIntBound& b, int64_t c) {
    if (!b.is_finite()) return std::nullopt;
    int64_t lo = int_math::floordiv(b.min_value, c), hi = int_math::floordiv(b.max_value, c);
    return lo == hi ? std::optional<int64_t>(lo) : std::nullopt;
  }
  /// A nested divisor c1 * c that still fits the type.
  static std::optional<int64_t> combined_divisor(const Expr& inner_divisor, int64_t c, DType t) {
    const int64_t* c1 = as_const_int(inner_divisor);
    int64_t cc = 0;
    if (!c1 || *c1 <= 0 || !int_math::checked_mul(*c1, c, &cc) || !fits(t, cc)) return std::nullopt;
    return cc;
  }

  /// The division (or modulo) of what is left, rest by c, through the rules again: rest may
  /// itself be a division that the nesting rules fold. This terminates: rest has no part that c
  /// divides and no factor in common with c any more.
  template <typename Node>
  Expr residual(const Expr& rest, int64_t c, Expr (RewriteSimplifier::*by_const)(const Expr&, int64_t)) {
    Expr r = (this->*by_const)(rest, c);
    return r.defined() ? r : Node::make(rest, imm(rest.dtype(), c));
  }

  // floordiv(a, c), c > 0. floordiv(c*q + r, c) == q + floordiv(r, c) holds for every r, so the
  // divisible part always comes out; floordiv(r, c) is a constant when r stays in one bucket.
  Expr floordiv_by_const(const Expr& a, int64_t c) {
    DType t = a.dtype();
    if (const FloorDivNode* inner = a.as<FloorDivNode>()) {
      if (auto cc = combined_divisor(inner->b, c, t)) {
        Expr r = floordiv_by_const(inner->a, *cc);
        return r.defined() ? r : FloorDivNode::make(inner->a, imm(t, *cc));
      }
    }
    if (auto q = one_floor_bucket(an_.symbolic_bound(a), c)) return imm(t, *q);
    DivParts p = split(a, c);
    if (auto m = one_floor_bucket(an_.symbolic_bound(p.rest), c)) {
      p.quotient.add_constant(*m);
      return p.quotient.to_expr();
    }
    if (p.quotient.is_constant() && p.g == 1) return Expr();
    // floordiv(g*r, g*c') == floordiv(r, c')
    Expr rest = divide_exact(p.rest, p.g).to_expr();
    p.quotient.add(
        LinearForm::parse(residual<FloorDivNode>(rest, c / p.g, &RewriteSimplifier::floordiv_by_const)));
    return p.quotient.to_expr();
  }

  Expr floormod_by_const(const Expr& a, int64_t c) {
    DType t = a.dtype();
    if (const FloorModNode* inner = a.as<FloorModNode>()) {
      // floormod(floormod(x, k*c), c) == floormod(x, c)
      const int64_t* c1 = as_const_int(inner->b);
      if (c1 && *c1 > 0 && *c1 % c == 0) {
        Expr r = floormod_by_const(inner->a, c);
        return r.defined() ? r : FloorModNode::make(inner->a, imm(t, c));
      }
    }
    if (auto q = one_floor_bucket(an_.symbolic_bound(a), c)) {
      LinearForm f = LinearForm::parse(a);
      f.add_constant(int_math::wrapping_neg(int_math::wrapping_mul(*q, c)));
      return f.to_expr();
    }
    DivParts p = split(a, c);
    if (auto m = one_floor_bucket(an_.symbolic_bound(p.rest), c)) {
      p.rest.add_constant(int_math::wrapping_neg(int_math::wrapping_mul(*m, c)));
      return p.rest.to_expr();
    }
    // Multiples of c in the constant do not change the remainder either.
    int64_t reduced = int_math::floormod(p.rest.constant(), c);
    if (p.quotient.is_constant() && p.g == 1 && reduced == p.rest.constant()) return Expr();
    p.rest.add_constant(int_math::wrapping_neg(p.rest.constant()));
    p.rest.add_constant(reduced);
    // floormod(g*r, g*c') == g*floormod(r, c')
    Expr rest = divide_exact(p.rest, p.g).to_expr();
    LinearForm out(t);
    out.add(LinearForm::parse(residual<FloorModNode>(rest, c / p.g, &RewriteSimplifier::floormod_by_const)),
            p.g);
    return out.to_expr();
  }

  // C division agrees with floor division when the dividend is non-negative, so the floor rules
  // apply then, as long as every Div/Mod they emit also has a non-negative dividend.
  Expr truncdiv_by_const(const Expr& a, int64_t c) {
    DType t = a.dtype();
    if (const DivNode* inner = a.as<DivNode>()) {
      // C division nests like floor division: (x / a) / b == x / (a*b) for a, b > 0.
      if (auto cc = combined_divisor(inner->b, c, t)) {
        Expr r = truncdiv_by_const(inner->a, *cc);
        return r.defined() ? r : DivNode::make(inner->a, imm(t, *cc));
      }
    }
    ConstIntBound ab = an_.symbolic_bound(a);
    // a / c never decreases as a grows, so equal quotients at both ends settle it.
    if (ab.is_finite() && ab.min_value / c == ab.max_value / c) return imm(t, ab.min_value / c);
    if (ab.min_value < 0) return Expr();
    DivParts p = split(a, c);
    ConstIntBound rb = an_.symbolic_bound(p.rest);
    if (auto m = one_floor_bucket(rb, c)) {
      p.quotient.add_constant(*m);
      return p.quotient.to_expr();
    }
    if ((p.quotient.is_constant() && p.g == 1) || rb.min_value < 0) return Expr();
    Expr rest = divide_exact(p.rest, p.g).to_expr();
    p.quotient.add(
        LinearForm::parse(residual<DivNode>(rest, c / p.g, &RewriteSimplifier::truncdiv_by_const)));
    return p.quotient.to_expr();
  }

  Expr truncmod_by_const(const Expr& a, int64_t c) {
    DType t = a.dtype();
    if (const ModNode* inner = a.as<ModNode>()) {
      // x % (k*c) has the sign of x and differs from x by a multiple of c: (x % kc) % c == x % c.
      const int64_t* c1 = as_const_int(inner->b);
      if (c1 && *c1 > 0 && *c1 % c == 0) {
        Expr r = truncmod_by_const(inner->a, c);
        return r.defined() ? r : ModNode::make(inner->a, imm(t, c));
      }
    }
    ConstIntBound ab = an_.symbolic_bound(a);
    if (ab.is_finite() && ab.min_value / c == ab.max_value / c) {
      LinearForm f = LinearForm::parse(a);
      f.add_constant(int_math::wrapping_neg(int_math::wrapping_mul(ab.min_value / c, c)));
      return f.to_expr();
    }
    if (ab.min_value < 0) return Expr();
    DivParts p = split(a, c);
    ConstIntBound rb = an_.symbolic_bound(p.rest);
    if (auto m = one_floor_bucket(rb, c)) {
      p.rest.add_constant(int_math::wrapping_neg(int_math::wrapping_mul(*m, c)));
      return p.rest.to_expr();
    }
    if ((p.quotient.is_constant() && p.g == 1) || rb.min_value < 0) return Expr();
    Expr rest = divide_exact(p.rest, p.g).to_expr();
    LinearForm out(t);
    out.add(LinearForm::parse(residual<ModNode>(rest, c / p.g, &RewriteSimplifier::truncmod_by_const)), p.g);
    return out.to_expr();
  }

  // Min and max ---------------------------------------------------------------------------------

  template <typename Node>
  Expr min_max(const Node* op, bool is_min) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold_binary(Node::node_kind, a, b); c.defined()) return c;
    if (expr_deep_equal(a, b)) return a;
    DType t = op->dtype;
    std::optional<bool> a_le_b;  // whether a <= b everywhere (true) or b <= a everywhere (false)
    if (is_index(t)) {
      LinearForm d = LinearForm::parse(b);
      d.add(LinearForm::parse(a), -1);
      ConstIntBound db = an_.symbolic_bound(d);  // b - a; this also settles min(x + c1, x + c2)
      if (db.min_value >= 0)
        a_le_b = true;
      else if (db.max_value <= 0)
        a_le_b = false;
    } else if (t.is_scalar() && t.is_integral()) {
      ConstIntBound ba = an_.const_int_bound(a), bb = an_.const_int_bound(b);
      if (ba.max_value <= bb.min_value)
        a_le_b = true;
      else if (bb.max_value <= ba.min_value)
        a_le_b = false;
    }
    if (a_le_b) return (*a_le_b == is_min) ? a : b;
    // min(min(x, c1), c2) -> min(x, min(c1, c2))
    if (const Node* inner = a.as<Node>();
        inner && t.is_integral() && as_const_int(inner->b) && as_const_int(b)) {
      Expr c = fold_binary(Node::node_kind, inner->b, b);
      if (c.defined()) return mutate(Node::make(inner->a, c));
    }
    return rebuild(op, a, b);
  }

  // Comparisons ---------------------------------------------------------------------------------

  /// The truth of `a kind b` given the bound of b - a, when the bound settles it.
  static std::optional<bool> decide(IRNodeKind kind, const ConstIntBound& d) {
    switch (kind) {
      case IRNodeKind::LT:
        if (d.min_value > 0) return true;
        if (d.max_value <= 0) return false;
        break;
      case IRNodeKind::LE:
        if (d.min_value >= 0) return true;
        if (d.max_value < 0) return false;
        break;
      case IRNodeKind::GT:
        if (d.max_value < 0) return true;
        if (d.min_value >= 0) return false;
        break;
      case IRNodeKind::GE:
        if (d.max_value <= 0) return true;
        if (d.min_value > 0) return false;
        break;
      case IRNodeKind::EQ:
      case IRNodeKind::NE: {
        std::optional<bool> eq;
        if (d.min_value == 0 && d.max_value == 0)
          eq = true;
        else if (d.min_value > 0 || d.max_value < 0)
          eq = false;
        if (eq && kind == IRNodeKind::NE) eq = !*eq;
        return eq;
      }
      default: break;
    }
    return std::nullopt;
  }

  template <typename Node>
  Expr compare(const Node* op) {
    Expr a = mutate(op->a), b = mutate(op->b);
    if (Expr c = fold_binary(Node::node_kind, a, b); c.defined()) return c;
    DType t = a.dtype();
    std::optional<bool> result;
    if (is_index(t)) {
      LinearForm d = LinearForm::parse(b);
      d.add(LinearForm::parse(a), -1);
      result = decide(Node::node_kind, an_.symbolic_bound(d));
    } else if (t.is_scalar() && t.is_integral()) {
      // Unsigned differences wrap: compare the operands' intervals instead.
      ConstIntBound d = expr_deep_equal(a, b) ? ConstIntBound::single(0)
                                              : bound_sub(an_.const_int_bound(b), an_.const_int_bound(a));
      result = decide(Node::node_kind, d);
    }
    if (result) return make_const(op->dtype, *result ? 1 : 0);
    return rebuild(op, a, b);
  }

  /// !(a < b) -> a >= b and the like; not for floats, where NaN makes both false.
  static Expr invert_comparison(const Expr& e) {
    auto non_float = [](const auto* n) { return n && !n->a.dtype().is_float(); };
    if (const auto* n = e.as<LTNode>(); non_float(n)) return GENode::make(n->a, n->b);
    if (const auto* n = e.as<LENode>(); non_float(n)) return GTNode::make(n->a, n->b);
    if (const auto* n = e.as<GTNode>(); non_float(n)) return LENode::make(n->a, n->b);
    if (const auto* n = e.as<GENode>(); non_float(n)) return LTNode::make(n->a, n->b);
    if (const auto* n = e.as<EQNode>(); non_float(n)) return NENode::make(n->a, n->b);
    if (const auto* n = e.as<NENode>(); non_float(n)) return EQNode::make(n->a, n->b);
    return Expr();
  }
};

}  // namespace loom
