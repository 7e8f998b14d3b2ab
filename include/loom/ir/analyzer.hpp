// Analyzer: what lowering knows about integer variables (loop ranges, let values, sizes that
// are never negative) and the questions it asks under that knowledge: constant bounds,
// simplification, proofs. Passes bind a loop variable while they visit the loop's body.
#pragma once

#include <optional>
#include <unordered_map>
#include <utility>

#include "loom/ir/const_int_bound.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/iter_var.hpp"
#include "loom/ir/linear_form.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/reduce.hpp"
#include "loom/support/config.hpp"

namespace loom {

class Analyzer {
 public:
  /// What is known about one variable.
  struct VarInfo {
    Var var;  // holds the node alive while its address keys the map
    ConstIntBound bound;
    Range range;         // the symbolic [min, min + extent) when bound to a range
    Expr value;          // the variable's value when bound by a let
    uint64_t order = 0;  // when it was bound: inner loops are bound after outer ones
  };

  /// v ranges over [r.min, r.min + r.extent); min and extent may be symbolic.
  void bind(const Var& v, const Range& r) {
    ConstIntBound mn = const_int_bound(r.min), ext = const_int_bound(r.extent);
    ConstIntBound b{mn.min_value, mn.max_value};
    // An extent that may be <= 0 means the loop may not run; the bound only matters when it does.
    if (ext.max_value > 0) b.max_value = bound_detail::add_hi(mn.max_value, ext.max_value - 1);
    vars_[v.get()] = VarInfo{v, fit_to_type(b, v.dtype()), r, Expr(), ++binds_};
  }

  /// v equals value (a let binding).
  void bind(const Var& v, const Expr& value) {
    ConstIntBound b = v.dtype().is_integral() ? const_int_bound(value) : ConstIntBound::everything();
    vars_[v.get()] = VarInfo{v, b, Range(), value, ++binds_};
  }

  /// v is a size: it is never negative.
  void mark_non_negative(const Var& v) {
    auto it = vars_.find(v.get());
    ConstIntBound non_negative{0, ConstIntBound::kPosInf};
    if (it == vars_.end()) {
      vars_[v.get()] =
          VarInfo{v, bound_intersect(bound_of_type(v.dtype()), non_negative), Range(), Expr(), ++binds_};
    } else {
      it->second.bound = bound_intersect(it->second.bound, non_negative);
    }
  }

  /// Forgets what is known about v.
  void unbind(const Var& v) { vars_.erase(v.get()); }

  /// Restores what was known about one variable (or that nothing was) when it goes out of scope.
  class [[nodiscard]] BindingGuard {
   public:
    BindingGuard(Analyzer& analyzer, const Var& v) : analyzer_(&analyzer), var_(v) {
      auto it = analyzer.vars_.find(v.get());
      if (it != analyzer.vars_.end()) saved_ = it->second;
    }
    BindingGuard(BindingGuard&& other) noexcept
        : analyzer_(std::exchange(other.analyzer_, nullptr)),
          var_(std::move(other.var_)),
          saved_(std::move(other.saved_)) {}
    BindingGuard(const BindingGuard&) = delete;
    BindingGuard& operator=(const BindingGuard&) = delete;
    BindingGuard& operator=(BindingGuard&&) = delete;
    ~BindingGuard() {
      if (!analyzer_) return;
      if (saved_) {
        analyzer_->vars_[var_.get()] = *saved_;
      } else {
        analyzer_->vars_.erase(var_.get());
      }
    }

   private:
    Analyzer* analyzer_;
    Var var_;
    std::optional<VarInfo> saved_;
  };

  /// bind() for the lifetime of the returned guard: `auto g = an.scoped_bind(i, Range(0, n));`
  BindingGuard scoped_bind(const Var& v, const Range& r) {
    BindingGuard guard(*this, v);
    bind(v, r);
    return guard;
  }
  BindingGuard scoped_bind(const Var& v, const Expr& value) {
    BindingGuard guard(*this, v);
    bind(v, value);
    return guard;
  }

  /// Runs f and then forgets every binding f made (and restores any it overwrote).
  template <typename F>
  decltype(auto) with_scope(F&& f) {
    struct Restore {
      Analyzer& analyzer;
      std::unordered_map<const VarNode*, VarInfo> saved;
      ~Restore() { analyzer.vars_ = std::move(saved); }
    } restore{*this, vars_};
    return std::forward<F>(f)();
  }

  /// What is known about v, or null.
  const VarInfo* lookup(const VarNode* v) const {
    auto it = vars_.find(v);
    return it == vars_.end() ? nullptr : &it->second;
  }

  /// An interval holding every value of the integer expression e for every value of the bound
  /// variables (everything for non-integer expressions). Booleans are 0 or 1.
  ConstIntBound const_int_bound(const Expr& e) {
    if (!e.defined() || !e.dtype().is_integral()) return ConstIntBound::everything();
    return fit_to_type(compute_bound(e), e.dtype());
  }

  /// The bound of a linear form, term by term.
  ConstIntBound const_int_bound(const LinearForm& f) {
    ConstIntBound b = ConstIntBound::single(f.constant());
    for (const LinearTerm& t : f.terms()) {
      b = bound_add(b, bound_mul(const_int_bound(t.atom), ConstIntBound::single(t.coeff)));
    }
    return fit_to_type(b, f.dtype());
  }

  /// const_int_bound, sharpened for signed integers by symbolic reasoning: a variable bound to
  /// a range is replaced by its symbolic minimum or maximum (whichever makes the form smaller,
  /// or larger), the result re-canonicalised, and so on outwards. This is what proves
  /// `n - 1 - i >= 0` for i in [0, n) when nothing is known about n.
  ConstIntBound symbolic_bound(const Expr& e) {
    if (!e.defined() || !e.dtype().is_scalar() || !e.dtype().is_int()) return const_int_bound(e);
    return symbolic_bound(LinearForm::parse(e));
  }
  ConstIntBound symbolic_bound(const LinearForm& f) {
    ConstIntBound b = const_int_bound(f);
    if (!f.dtype().is_int() || b.is_single_point()) return b;
    b.min_value = refine(f, /*lower=*/true, b.min_value);
    b.max_value = refine(f, /*lower=*/false, b.max_value);
    return b;
  }

  /// e with everything known applied (see ir/rewrite_simplify.hpp for the rules).
  LOOM_DECL Expr simplify(const Expr& e);

  /// True only when cond holds for every value of the bound variables; false when unknown.
  bool can_prove(const Expr& cond) { return proven(simplify(cond)); }

  /// True only when a == b for every value of the bound variables.
  bool can_prove_equal(const Expr& a, const Expr& b) {
    Expr sa = simplify(a), sb = simplify(b);
    if (expr_deep_equal(sa, sb)) return true;
    if (sa.dtype() == sb.dtype() && sa.dtype().is_scalar() && sa.dtype().is_int()) {
      LinearForm d = LinearForm::parse(sa);
      d.add(LinearForm::parse(sb), -1);
      ConstIntBound db = symbolic_bound(d);
      return db.min_value == 0 && db.max_value == 0;
    }
    return can_prove(sa == sb);
  }

 private:
  std::unordered_map<const VarNode*, VarInfo> vars_;
  uint64_t binds_ = 0;

  static bool proven(const Expr& s) {
    if (const CallNode* call = s.as<CallNode>();
        call && call->name == intrinsic::likely && call->args.size() == 1) {
      return proven(call->args[0]);
    }
    if (const int64_t* v = as_const_int(s)) return *v != 0;
    if (const AndNode* a = s.as<AndNode>()) return proven(a->a) && proven(a->b);
    if (const OrNode* o = s.as<OrNode>()) return proven(o->a) || proven(o->b);
    return false;
  }

  // Substitutes bound variables by their extreme values, one at a time and innermost (most
  // recently bound) first, keeping the best bound seen. Each step is sound: a term c*v with c > 0
  // is at least c*min(v) whatever the other variables are. Going innermost first lets the outer
  // variables that min(v) mentions cancel against the form's own terms before they are replaced
  // in turn (j - i with j in [0, i) becomes -1, not 0 - i).
  int64_t refine(LinearForm f, bool lower, int64_t best) {
    constexpr int kMaxSteps = 16;  // deeper than any realistic loop nest
    for (int step = 0; step < kMaxSteps; ++step) {
      const LinearTerm* chosen = nullptr;
      const VarInfo* chosen_info = nullptr;
      for (const LinearTerm& t : f.terms()) {
        const VarNode* v = t.atom.as<VarNode>();
        const VarInfo* info = v ? lookup(v) : nullptr;
        if (!info || !(info->value.defined() || info->range.defined())) continue;
        if (!chosen_info || info->order > chosen_info->order) {
          chosen = &t;
          chosen_info = info;
        }
      }
      if (!chosen) break;
      Expr replacement;
      if (chosen_info->value.defined()) {
        replacement = chosen_info->value;
      } else {
        const Range& r = chosen_info->range;
        bool want_min = (chosen->coeff > 0) == lower;
        replacement = want_min ? r.min : r.min + r.extent - make_int_const(r.min.dtype(), 1);
      }
      if (replacement.dtype() != f.dtype()) break;
      LinearForm next(f.dtype());
      for (const LinearTerm& t : f.terms()) {
        if (&t != chosen) next.add_term(t.atom, t.coeff);
      }
      next.add_constant(f.constant());
      next.add(LinearForm::parse(replacement), chosen->coeff);
      f = std::move(next);
      ConstIntBound b = const_int_bound(f);
      best = lower ? std::max(best, b.min_value) : std::min(best, b.max_value);
      if (f.is_constant()) break;
    }
    return best;
  }

  template <typename Node>
  std::pair<ConstIntBound, ConstIntBound> operands(const Expr& e) {
    const Node* op = static_cast<const Node*>(e.get());
    return {const_int_bound(op->a), const_int_bound(op->b)};
  }

  ConstIntBound compute_bound(const Expr& e) {
    DType t = e.dtype();
    switch (e.kind()) {
      case IRNodeKind::IntImm: {
        int64_t v = e.as<IntImmNode>()->value;
        // A uint64 above INT64_MAX is stored as its (negative) bit pattern.
        if (t.code != TypeCode::Int && v < 0) return {ConstIntBound::kPosInf, ConstIntBound::kPosInf};
        return ConstIntBound::single(v);
      }
      case IRNodeKind::Var: {
        const VarInfo* info = lookup(e.as<VarNode>());
        return info ? info->bound : bound_of_type(t);
      }
      case IRNodeKind::Add: {
        auto [a, b] = operands<AddNode>(e);
        return bound_add(a, b);
      }
      case IRNodeKind::Sub: {
        auto [a, b] = operands<SubNode>(e);
        return bound_sub(a, b);
      }
      case IRNodeKind::Mul: {
        auto [a, b] = operands<MulNode>(e);
        return bound_mul(a, b);
      }
      case IRNodeKind::Div: {
        auto [a, b] = operands<DivNode>(e);
        return bound_truncdiv(a, b);
      }
      case IRNodeKind::Mod: {
        auto [a, b] = operands<ModNode>(e);
        return bound_truncmod(a, b);
      }
      case IRNodeKind::FloorDiv: {
        auto [a, b] = operands<FloorDivNode>(e);
        return bound_floordiv(a, b);
      }
      case IRNodeKind::FloorMod: {
        auto [a, b] = operands<FloorModNode>(e);
        return bound_floormod(a, b);
      }
      case IRNodeKind::Min: {
        auto [a, b] = operands<MinNode>(e);
        return bound_min(a, b);
      }
      case IRNodeKind::Max: {
        auto [a, b] = operands<MaxNode>(e);
        return bound_max(a, b);
      }
      case IRNodeKind::BitwiseAnd: {
        auto [a, b] = operands<BitwiseAndNode>(e);
        return bound_bitwise_and(a, b);
      }
      case IRNodeKind::BitwiseOr: {
        auto [a, b] = operands<BitwiseOrNode>(e);
        return bound_bitwise_or(a, b);
      }
      case IRNodeKind::BitwiseXor: {
        auto [a, b] = operands<BitwiseXorNode>(e);
        return bound_bitwise_xor(a, b);
      }
      case IRNodeKind::ShiftLeft: {
        auto [a, b] = operands<ShiftLeftNode>(e);
        return bound_shift_left(a, b, t.element_of());
      }
      case IRNodeKind::ShiftRight: {
        auto [a, b] = operands<ShiftRightNode>(e);
        return bound_shift_right(a, b, t.element_of());
      }
      case IRNodeKind::Select: {
        const SelectNode* op = e.as<SelectNode>();
        return bound_union(const_int_bound(op->true_value), const_int_bound(op->false_value));
      }
      case IRNodeKind::Cast: {
        const CastNode* op = e.as<CastNode>();
        if (!op->value.dtype().is_integral()) return bound_of_type(t);
        ConstIntBound b = const_int_bound(op->value);
        if (t.is_bool()) return {0, 1};
        // A cast that cannot hold every value wraps them: then nothing is known.
        ConstIntBound range = bound_of_type(t);
        return range.min_value <= b.min_value && b.max_value <= range.max_value ? b : range;
      }
      case IRNodeKind::Call: {
        const CallNode* op = e.as<CallNode>();
        if (op->name == intrinsic::likely && op->args.size() == 1) return const_int_bound(op->args[0]);
        if (op->name == intrinsic::if_then_else && op->args.size() == 3) {
          return bound_union(const_int_bound(op->args[1]), const_int_bound(op->args[2]));
        }
        if (op->name == intrinsic::lane_id) return ConstIntBound{0, 31};  // a lane of a warp
        return bound_of_type(t);
      }
      case IRNodeKind::Let: {
        const LetNode* op = e.as<LetNode>();
        BindingGuard guard = scoped_bind(op->var, op->value);
        return const_int_bound(op->body);
      }
      case IRNodeKind::Broadcast: return const_int_bound(e.as<BroadcastNode>()->value);
      case IRNodeKind::Ramp: {
        const RampNode* op = e.as<RampNode>();
        ConstIntBound steps{0, op->lanes - 1};
        return bound_add(const_int_bound(op->base), bound_mul(const_int_bound(op->stride), steps));
      }
      default: return bound_of_type(t);  // comparisons and logic are bool: [0, 1]
    }
  }
};

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/ir/impl/analyzer.hpp"
#endif
