// LinearForm: an integer expression as sum(coeff * atom) + constant, the canonical form in
// which the simplifier combines like terms and compares expressions through their difference.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/ir/expr_deep_equal.hpp"
#include "loom/ir/int_math.hpp"
#include "loom/ir/op.hpp"

namespace loom {

/// coeff * atom, where the atom is anything that is not itself linear: a variable, a load,
/// floordiv(...), a product of non-constants.
struct LinearTerm {
  Expr atom;
  int64_t coeff;
};

/// Coefficients and the constant are kept reduced to the type's width, so the arithmetic is that
/// of the type's ring (wrap-around): the form stays exact for unsigned and narrow types too.
class LinearForm {
 public:
  explicit LinearForm(DType t) : dtype_(t) {}

  /// Scalar integers other than bool: the types parse() looks inside.
  static bool applies_to(DType t) { return t.is_scalar() && (t.is_int() || t.is_uint()); }

  /// Reads Add, Sub, multiplication by a constant and integer immediates; every other node is an
  /// atom, taken as it is (callers pass simplified expressions, so atoms are already simplified).
  static LinearForm parse(const Expr& e) {
    LinearForm f(e.dtype());
    if (applies_to(e.dtype())) {
      f.accumulate(e, 1);
    } else {
      f.terms_.push_back({e, 1});
    }
    return f;
  }

  DType dtype() const { return dtype_; }
  const std::vector<LinearTerm>& terms() const { return terms_; }
  int64_t constant() const { return constant_; }
  bool is_constant() const { return terms_.empty(); }
  /// The single atom when the form is exactly `1 * atom`.
  const Expr* as_atom() const {
    return terms_.size() == 1 && terms_[0].coeff == 1 && constant_ == 0 ? &terms_[0].atom : nullptr;
  }

  void add_constant(int64_t c) {
    constant_ = wrap(static_cast<uint64_t>(constant_) + static_cast<uint64_t>(c));
  }

  /// Adds coeff * atom, merging it into the term of an equal atom (which keeps its place).
  void add_term(const Expr& atom, int64_t coeff) {
    coeff = wrap(static_cast<uint64_t>(coeff));
    if (coeff == 0) return;
    for (auto it = terms_.begin(); it != terms_.end(); ++it) {
      if (same_atom(it->atom, atom)) {
        it->coeff = wrap(static_cast<uint64_t>(it->coeff) + static_cast<uint64_t>(coeff));
        if (it->coeff == 0) terms_.erase(it);
        return;
      }
    }
    terms_.push_back({atom, coeff});
  }

  /// this += scale * other
  void add(const LinearForm& other, int64_t scale = 1) {
    for (const LinearTerm& t : other.terms_) add_term(t.atom, mul(t.coeff, scale));
    add_constant(mul(other.constant_, scale));
    merge_div_mod();
  }

  /// k*c*floordiv(x, c) + k*floormod(x, c) is k*x (and likewise for truncating division):
  /// what fusing two loops and using both halves again produces.
  void merge_div_mod() {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t i = 0; i < terms_.size() && !changed; ++i) {
        Expr x, divisor;
        if (!split_div(terms_[i].atom, x, divisor, /*mod=*/false)) continue;
        const int64_t* c = as_const_int(divisor);
        if (!c || *c == 0) continue;
        for (size_t j = 0; j < terms_.size() && !changed; ++j) {
          Expr y, divisor2;
          if (j == i || !split_div(terms_[j].atom, y, divisor2, /*mod=*/true)) continue;
          if (terms_[i].atom.kind() == IRNodeKind::FloorDiv && terms_[j].atom.kind() != IRNodeKind::FloorMod)
            continue;
          if (terms_[i].atom.kind() == IRNodeKind::Div && terms_[j].atom.kind() != IRNodeKind::Mod) continue;
          const int64_t* c2 = as_const_int(divisor2);
          if (!c2 || *c2 != *c || terms_[i].coeff != mul(terms_[j].coeff, *c) || !expr_deep_equal(x, y))
            continue;
          int64_t k = terms_[j].coeff;
          terms_.erase(terms_.begin() + static_cast<std::ptrdiff_t>(std::max(i, j)));
          terms_.erase(terms_.begin() + static_cast<std::ptrdiff_t>(std::min(i, j)));
          LinearForm fx = parse(x);
          for (const LinearTerm& t : fx.terms_) add_term(t.atom, mul(t.coeff, k));
          add_constant(mul(fx.constant_, k));
          changed = true;
        }
      }
    }
  }

  /// this *= k
  void scale(int64_t k) {
    std::vector<LinearTerm> scaled;
    for (const LinearTerm& t : terms_) {
      int64_t c = mul(t.coeff, k);
      if (c != 0) scaled.push_back({t.atom, c});
    }
    terms_ = std::move(scaled);
    constant_ = mul(constant_, k);
  }

  /// Rebuilds the expression in a deterministic, readable order: terms by descending
  /// coefficient (ties keep their order of first appearance), the constant last, subtraction
  /// for negative coefficients, `atom` alone for a coefficient of 1. `10 - x` when every
  /// coefficient is negative and the constant positive.
  Expr to_expr() const {
    std::vector<LinearTerm> sorted = terms_;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const LinearTerm& a, const LinearTerm& b) { return a.coeff > b.coeff; });
    Expr acc;
    bool constant_done = false;
    if (!sorted.empty() && sorted[0].coeff < 0 && constant_ > 0) {
      acc = imm(constant_);
      constant_done = true;
    }
    for (const LinearTerm& t : sorted) {
      if (!acc.defined()) {
        acc = scaled(t.atom, t.coeff);
      } else if (t.coeff < 0 && negatable(t.coeff)) {
        acc = SubNode::make(acc, scaled(t.atom, -t.coeff));
      } else {
        acc = AddNode::make(acc, scaled(t.atom, t.coeff));
      }
    }
    if (!constant_done && constant_ != 0) {
      if (!acc.defined()) return imm(constant_);
      acc = constant_ < 0 && negatable(constant_) ? SubNode::make(acc, imm(-constant_))
                                                  : AddNode::make(acc, imm(constant_));
    }
    return acc.defined() ? acc : imm(0);
  }

 private:
  static bool split_div(const Expr& e, Expr& x, Expr& divisor, bool mod) {
    if (mod) {
      if (const auto* m = e.as<FloorModNode>()) return x = m->a, divisor = m->b, true;
      if (const auto* m = e.as<ModNode>()) return x = m->a, divisor = m->b, true;
    } else {
      if (const auto* d = e.as<FloorDivNode>()) return x = d->a, divisor = d->b, true;
      if (const auto* d = e.as<DivNode>()) return x = d->a, divisor = d->b, true;
    }
    return false;
  }

  DType dtype_;
  std::vector<LinearTerm> terms_;
  int64_t constant_ = 0;

  int64_t wrap(uint64_t v) const { return int_math::wrap_signed(v, dtype_.bits); }
  int64_t mul(int64_t a, int64_t b) const {
    return wrap(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
  }
  /// -v is representable at the type's width (not its most negative value).
  bool negatable(int64_t v) const { return wrap(0 - static_cast<uint64_t>(v)) != v; }
  Expr imm(int64_t v) const { return IntImmNode::make(dtype_, v); }
  Expr scaled(const Expr& atom, int64_t coeff) const {
    return coeff == 1 ? atom : MulNode::make(atom, imm(coeff));
  }

  /// Equal atoms, also when a product (or min, max) has its operands the other way round:
  /// x*y and y*x are one term.
  static bool same_atom(const Expr& a, const Expr& b) {
    if (expr_deep_equal(a, b)) return true;
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    auto swapped = [&](const auto* x) {
      const auto* y = b.as<std::remove_cvref_t<decltype(*x)>>();
      return expr_deep_equal(x->a, y->b) && expr_deep_equal(x->b, y->a);
    };
    if (const MulNode* m = a.as<MulNode>()) return swapped(m);
    if (const MinNode* m = a.as<MinNode>()) return swapped(m);
    if (const MaxNode* m = a.as<MaxNode>()) return swapped(m);
    return false;
  }

  void accumulate(const Expr& e, int64_t scale) {
    if (const IntImmNode* imm = e.as<IntImmNode>()) {
      add_constant(mul(imm->value, scale));
    } else if (const AddNode* add = e.as<AddNode>()) {
      accumulate(add->a, scale);
      accumulate(add->b, scale);
    } else if (const SubNode* sub = e.as<SubNode>()) {
      accumulate(sub->a, scale);
      accumulate(sub->b, wrap(0 - static_cast<uint64_t>(scale)));
    } else if (const MulNode* m = e.as<MulNode>(); m && m->b.as<IntImmNode>()) {
      accumulate(m->a, mul(scale, m->b.as<IntImmNode>()->value));
    } else if (m && m->a.as<IntImmNode>()) {
      accumulate(m->b, mul(scale, m->a.as<IntImmNode>()->value));
    } else {
      add_term(e, scale);
    }
  }
};

}  // namespace loom
