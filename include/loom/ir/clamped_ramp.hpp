// A vector index that is a contiguous ramp wherever a condition holds: a ramp of stride 1 under the
// clamps and selects of a border (select(j < n, j, n - 1) in lib::gemm's pass over a padded product,
// min(x + 1, w - 1) and max(x - 1, 0) in a stencil's edges), plus a broadcast. Such an index is a
// gather as written, which x86 code generation scalarizes; but where the condition holds in every
// lane it is the ramp, and the code generator branches to one vector access there.
#pragma once

#include <optional>
#include <utility>

#include "loom/ir/expr.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/visitor.hpp"

namespace loom {

/// `index` == `ramp` (stride 1) in every lane where `condition` (a bool vector) holds.
struct ClampedRamp {
  Expr condition;
  Expr ramp;
};

namespace detail {
/// The ramp under `index`'s selects and clamps, and the condition under which `index` equals it
/// (undefined: always); nothing where `index` is neither.
inline std::optional<ClampedRamp> ramp_under(const Expr& index) {
  auto with = [](const std::optional<ClampedRamp>& inner, const Expr& condition) {
    std::optional<ClampedRamp> out = inner;
    if (out) out->condition = out->condition.defined() ? (out->condition && condition) : condition;
    return out;
  };
  if (const RampNode* ramp = index.as<RampNode>())
    return is_const_int(ramp->stride, 1) ? std::optional<ClampedRamp>(ClampedRamp{Expr(), index})
                                         : std::nullopt;
  if (const SelectNode* s = index.as<SelectNode>()) {
    // select(c, a, b) is a where c holds.
    if (s->condition.dtype().lanes != index.dtype().lanes) return std::nullopt;
    return with(ramp_under(s->true_value), s->condition);
  }
  // min(a, bound) is a where a <= bound, max(a, bound) where a >= bound (bound the same in every lane).
  auto clamp = [&](const Expr& a, const Expr& b, bool is_min) -> std::optional<ClampedRamp> {
    if (!b.as<BroadcastNode>()) return std::nullopt;
    std::optional<ClampedRamp> inner = ramp_under(a);
    if (!inner) return std::nullopt;
    return with(inner, is_min ? inner->ramp <= b : inner->ramp >= b);
  };
  if (const MinNode* m = index.as<MinNode>()) {
    if (auto r = clamp(m->a, m->b, true)) return r;
    return clamp(m->b, m->a, true);
  }
  if (const MaxNode* m = index.as<MaxNode>()) {
    if (auto r = clamp(m->a, m->b, false)) return r;
    return clamp(m->b, m->a, false);
  }
  // x + a with x the same in every lane: the ramp moves by x.
  if (const AddNode* add = index.as<AddNode>()) {
    for (auto [x, a] : {std::pair{add->a, add->b}, std::pair{add->b, add->a}}) {
      const BroadcastNode* shift = x.as<BroadcastNode>();
      std::optional<ClampedRamp> inner = shift ? ramp_under(a) : std::nullopt;
      if (!inner) continue;
      const RampNode* r = inner->ramp.as<RampNode>();
      return ClampedRamp{inner->condition, RampNode::make(shift->value + r->base, r->stride, r->lanes)};
    }
  }
  return std::nullopt;
}

/// Whether evaluating `e` can neither fail nor have an effect: no load, no call, no division (a
/// checked one fails on a zero divisor). The code generator evaluates such an index's condition
/// and then either the ramp or the whole index, so each part may be evaluated once, twice or not
/// at all.
inline bool plain_arithmetic(const Expr& e) {
  bool plain = true;
  for_each_expr(e, [&](const Expr& x) {
    if (x.as<LoadNode>() || x.as<ProducerLoadNode>() || x.as<CallNode>() || x.as<DivNode>() ||
        x.as<ModNode>() || x.as<FloorDivNode>() || x.as<FloorModNode>())
      plain = false;
  });
  return plain;
}
}  // namespace detail

/// `index` (an integer vector) as a ramp of stride 1 where a condition holds, when a select, min or
/// max stands between it and the ramp (see the file comment), and evaluating it can neither fail
/// nor have an effect; nothing for a plain ramp or any other index.
inline std::optional<ClampedRamp> clamped_ramp(const Expr& index) {
  if (index.dtype().lanes < 2 || !index.dtype().is_int() || !detail::plain_arithmetic(index))
    return std::nullopt;
  std::optional<ClampedRamp> found = detail::ramp_under(index);
  if (!found || !found->condition.defined()) return std::nullopt;
  return found;
}

}  // namespace loom
