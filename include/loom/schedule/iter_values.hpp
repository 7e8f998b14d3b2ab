// How the IterVars of one stage relate numerically once bounds are known: ranges flow down
// from the root axes to the loops (split, fuse), values flow up from loop counters to axes.
#pragma once

#include <unordered_map>
#include <variant>

#include "loom/ir/simplify.hpp"
#include "loom/schedule/stage.hpp"

namespace loom {

using RangeMap = std::unordered_map<const IterVarNode*, Range>;
using ValueMap = std::unordered_map<const IterVarNode*, Expr>;

inline Expr ceil_div(const Expr& a, const Expr& b) {
  return floordiv(a + b - make_int_const(b.dtype(), 1), b);
}

/// Fills `ranges` for every IterVar derived from the stage's root axes (whose ranges must
/// already be there). Derived loops always start at zero.
inline void pass_down_domain(const StageNode& stage, RangeMap& ranges) {
  Analyzer analyzer;
  auto zero = [](const IterVar& iv) { return make_zero(iv.var().dtype()); };
  for (const IterVarRelation& rel : stage.relations) {
    if (const auto* s = std::get_if<SplitRelation>(&rel)) {
      const Range& parent = ranges.at(s->parent.get());
      if (s->factor.defined()) {
        ranges[s->outer.get()] = Range(zero(s->outer), analyzer.simplify(ceil_div(parent.extent, s->factor)));
        ranges[s->inner.get()] = Range(zero(s->inner), s->factor);
      } else {
        ranges[s->outer.get()] = Range(zero(s->outer), s->nparts);
        ranges[s->inner.get()] = Range(zero(s->inner), analyzer.simplify(ceil_div(parent.extent, s->nparts)));
      }
    } else if (const auto* f = std::get_if<FuseRelation>(&rel)) {
      const Range& o = ranges.at(f->outer.get());
      const Range& i = ranges.at(f->inner.get());
      ranges[f->fused.get()] = Range(zero(f->fused), analyzer.simplify(o.extent * i.extent));
    } else if (const auto* r = std::get_if<RebaseRelation>(&rel)) {
      ranges[r->rebased.get()] = Range(zero(r->rebased), ranges.at(r->parent.get()).extent);
    } else if (const auto* g = std::get_if<SingletonRelation>(&rel)) {
      ranges[g->iv.get()] = Range(zero(g->iv), make_int_const(g->iv.var().dtype(), 1));
    }
  }
}

/// The variable that counts a leaf loop: the bound thread's variable, or the IterVar's own.
inline Var loop_var_of(const StageNode& stage, const IterVar& leaf) {
  if (const IterVarAttr* a = stage.attr(leaf); a && a->bind_thread.defined()) return a->bind_thread.var();
  return leaf.var();
}

/// The counter of a leaf loop as the loop nest will have it: zero for a serial loop of one
/// iteration (no loop is emitted for it), the loop variable otherwise.
inline Expr leaf_counter(const StageNode& stage, const IterVar& leaf, const RangeMap& ranges) {
  const IterVarAttr* a = stage.attr(leaf);
  bool bound = a && a->bind_thread.defined();
  if (!bound && is_one(ranges.at(leaf.get()).extent)) return make_zero(leaf.var().dtype());
  return loop_var_of(stage, leaf);
}

/// The value of every IterVar of the stage in terms of the leaf loop counters (which count
/// from zero): value(leaf) = min + counter, and parents are rebuilt from their children.
inline ValueMap pass_up_index(const StageNode& stage, const RangeMap& ranges, const ValueMap& leaf_counters) {
  ValueMap values;
  for (const IterVar& leaf : stage.leaf_iter_vars) {
    const Range& r = ranges.at(leaf.get());
    Expr counter = leaf_counters.at(leaf.get());
    values[leaf.get()] = is_zero(r.min) ? counter : r.min + counter;
  }
  for (auto it = stage.relations.rbegin(); it != stage.relations.rend(); ++it) {
    if (const auto* s = std::get_if<SplitRelation>(&*it)) {
      Expr factor = s->factor.defined() ? s->factor : ranges.at(s->inner.get()).extent;
      Expr v = values.at(s->outer.get()) * factor + values.at(s->inner.get());
      const Range& p = ranges.at(s->parent.get());
      values[s->parent.get()] = is_zero(p.min) ? v : p.min + v;
    } else if (const auto* f = std::get_if<FuseRelation>(&*it)) {
      Expr fused = values.at(f->fused.get());
      const Range& o = ranges.at(f->outer.get());
      const Range& i = ranges.at(f->inner.get());
      Expr ov = floordiv(fused, i.extent), iv = floormod(fused, i.extent);
      values[f->outer.get()] = is_zero(o.min) ? ov : o.min + ov;
      values[f->inner.get()] = is_zero(i.min) ? iv : i.min + iv;
    } else if (const auto* r = std::get_if<RebaseRelation>(&*it)) {
      const Range& p = ranges.at(r->parent.get());
      Expr v = values.at(r->rebased.get());
      values[r->parent.get()] = is_zero(p.min) ? v : p.min + v;
    }
  }
  return values;
}

}  // namespace loom
