// The loop primitives of a Stage: split, fuse, reorder, tile, and the loop annotations
// parallel, vectorize, unroll, bind and pragma. They edit the stage's IterVar relations.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/schedule/schedule.hpp");

#include <algorithm>
#include <string>
#include <unordered_set>

#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/schedule/axis_lookup.hpp"
#include "loom/te/thread_axis.hpp"

namespace loom {

namespace detail {

inline void check_positive(const Expr& value, const char* primitive, const char* what, const StageNode& s,
                           const IterVar& iv) {
  if (!value.defined() || !value.dtype().is_integral() || value.dtype().is_bool() || value.dtype().lanes != 1)
    throw ScheduleError(cat(primitive, ": the ", what, " for axis '", iv.name(), "' of stage '", s.name(),
                            "' must be a scalar integer"));
  if (const int64_t* v = as_const_int(value); v && *v <= 0)
    throw ScheduleError(cat(primitive, ": the ", what, " for axis '", iv.name(), "' of stage '", s.name(),
                            "' must be positive, got ", *v));
}

inline void replace_leaf(StageNode& s, const IterVar& old_iv, const std::vector<IterVar>& with) {
  auto it = std::find_if(s.leaf_iter_vars.begin(), s.leaf_iter_vars.end(), IterVarSameAsFn{old_iv});
  internal_check(it != s.leaf_iter_vars.end(), "replace_leaf: not a leaf");
  it = s.leaf_iter_vars.erase(it);
  s.leaf_iter_vars.insert(it, with.begin(), with.end());
  s.all_iter_vars.insert(s.all_iter_vars.end(), with.begin(), with.end());
}

/// What split refuses about the axis itself; checked before anything changes, so that a refused
/// split (or tile, which splits two axes) leaves the stage as it was.
inline void check_splittable(const StageNode& s, const IterVar& parent, const char* primitive) {
  // The annotation belongs to the replaced loop, which is no longer emitted: TVM drops it
  // silently; Loom says so, since which part should inherit it is the user's choice.
  if (const IterVarAttr* a = s.attr(parent);
      a && (a->bind_thread.defined() || a->for_kind != ForKind::Serial)) {
    std::string what = a->bind_thread.defined() ? cat("bound to '", a->bind_thread->thread_tag, "'")
                                                : cat("marked ", for_kind_name(a->for_kind));
    throw ScheduleError(cat(primitive, ": axis '", parent.name(), "' of stage '", s.name(), "' is already ",
                            what, ", which its split parts would not inherit; ", primitive,
                            " it first, then annotate the outer or inner part"));
  }
  // The scan's update stage is computed once per step of this very loop (its attach point).
  if (parent.kind() == IterVarKind::Ordered)
    throw ScheduleError(cat(primitive, ": axis '", parent.name(), "' of stage '", s.name(),
                            "' is the time axis of a scan, whose update is computed once per step of it; it "
                            "cannot be split. Schedule the loops of the scan's update stage instead"));
}

/// Splits a leaf axis that check_splittable accepted.
inline std::pair<IterVar, IterVar> split_impl(StageNode& s, const IterVar& parent, Expr factor, Expr nparts) {
  IterVarKind kind = parent.kind() == IterVarKind::ThreadIndex ? IterVarKind::DataPar : parent.kind();
  bool reduce = parent.var()->is_reduce_axis;
  DType t = parent.var().dtype();
  IterVar outer(Range(), Var(parent.name() + ".outer", t, reduce), kind);
  IterVar inner(Range(), Var(parent.name() + ".inner", t, reduce), kind);
  if (factor.defined()) factor = cast(t, factor);
  if (nparts.defined()) nparts = cast(t, nparts);
  s.relations.push_back(SplitRelation{parent, outer, inner, factor, nparts});
  replace_leaf(s, parent, {outer, inner});
  return {outer, inner};
}

}  // namespace detail

LOOM_DECL std::pair<IterVar, IterVar> Stage::split(const IterVar& parent_in, Factor factor) {
  IterVar parent = resolve(parent_in, "split");
  detail::check_positive(factor.value, "split", "factor", *node_, parent);
  detail::check_splittable(*node_, parent, "split");
  return detail::split_impl(*node_, parent, factor.value, Expr());
}

LOOM_DECL std::pair<IterVar, IterVar> Stage::split(const IterVar& parent_in, NParts nparts) {
  IterVar parent = resolve(parent_in, "split");
  detail::check_positive(nparts.value, "split", "nparts", *node_, parent);
  detail::check_splittable(*node_, parent, "split");
  return detail::split_impl(*node_, parent, Expr(), nparts.value);
}

namespace detail {

/// What fuse(outer, inner) refuses, judged on the loop order as it is now; checked before
/// anything changes.
inline void check_fusable(const StageNode& s, const IterVar& outer, const IterVar& inner) {
  if (outer.same_as(inner))
    throw ScheduleError(
        cat("fuse: stage '", s.name(), "' was asked to fuse axis '", outer.name(), "' with itself"));
  const auto& leaves = s.leaf_iter_vars;
  auto po = std::find_if(leaves.begin(), leaves.end(), IterVarSameAsFn{outer}) - leaves.begin();
  auto pi = std::find_if(leaves.begin(), leaves.end(), IterVarSameAsFn{inner}) - leaves.begin();
  if (pi == po - 1)
    throw ScheduleError(cat("fuse: in stage '", s.name(), "', '", inner.name(), "' is outside '",
                            outer.name(), "'; pass the outer loop first: fuse(", inner.name(), ", ",
                            outer.name(), ")"));
  if (pi != po + 1)
    throw ScheduleError(cat("fuse: axes '", outer.name(), "' and '", inner.name(), "' of stage '", s.name(),
                            "' are not adjacent (loop order: ", detail::loop_list(s),
                            "); reorder them so that '", inner.name(), "' directly follows '", outer.name(),
                            "' before fusing"));
  if (outer.is_reduce() != inner.is_reduce())
    throw ScheduleError(
        cat("fuse: stage '", s.name(), "' cannot fuse the ", outer.is_reduce() ? "reduce" : "data-parallel",
            " axis '", outer.name(), "' with the ", inner.is_reduce() ? "reduce" : "data-parallel", " axis '",
            inner.name(), "'; fuse data-parallel axes with each other and reduce axes with each other"));
}

/// Fuses two adjacent leaves that check_fusable accepted.
inline IterVar fuse_impl(StageNode& s, const IterVar& outer, const IterVar& inner) {
  auto& leaves = s.leaf_iter_vars;
  auto po = std::find_if(leaves.begin(), leaves.end(), IterVarSameAsFn{outer}) - leaves.begin();
  IterVar fused(Range(),
                Var(outer.name() + "." + inner.name() + ".fused", outer.var().dtype(), outer.is_reduce()),
                outer.kind());
  s.relations.push_back(FuseRelation{outer, inner, fused});
  leaves[static_cast<size_t>(po)] = fused;
  leaves.erase(leaves.begin() + po + 1);
  s.all_iter_vars.push_back(fused);
  return fused;
}

}  // namespace detail

LOOM_DECL IterVar Stage::fuse(const IterVar& outer_in, const IterVar& inner_in) {
  IterVar outer = resolve(outer_in, "fuse"), inner = resolve(inner_in, "fuse");
  detail::check_fusable(*node_, outer, inner);
  return detail::fuse_impl(*node_, outer, inner);
}

LOOM_DECL IterVar Stage::fuse(const std::vector<IterVar>& axes) {
  if (axes.empty()) {
    detail::check_not_group(*node_, "fuse");
    IterVar single(Range(), Var("singleton"), IterVarKind::DataPar);
    node_->relations.push_back(SingletonRelation{single});
    node_->all_iter_vars.push_back(single);
    node_->leaf_iter_vars.insert(node_->leaf_iter_vars.begin(), single);
    return single;
  }
  // Every check first, on the loop order as it is now: a refused list fuses nothing (fusing
  // pair by pair and stopping at the first bad axis would leave the first axes fused). The list
  // fuses in one go exactly when each axis directly follows the one before it and all are of one
  // kind, since the fused loop takes the place of the first.
  std::vector<IterVar> resolved;
  std::unordered_set<const IterVarNode*> seen;
  for (const IterVar& iv_in : axes) {
    IterVar iv = resolve(iv_in, "fuse");
    if (!seen.insert(iv.get()).second)
      throw ScheduleError(cat("fuse: axis '", iv.name(), "' of stage '", name(),
                              "' is listed twice; list each loop once, outermost first"));
    resolved.push_back(iv);
  }
  for (size_t i = 1; i < resolved.size(); ++i) detail::check_fusable(*node_, resolved[i - 1], resolved[i]);
  IterVar fused = resolved[0];
  for (size_t i = 1; i < resolved.size(); ++i) fused = detail::fuse_impl(*node_, fused, resolved[i]);
  return fused;
}

LOOM_DECL Stage& Stage::reorder(const std::vector<IterVar>& order_in) {
  StageNode& s = *node_;
  std::vector<IterVar> order;
  std::unordered_set<const IterVarNode*> seen;
  for (const IterVar& iv_in : order_in) {
    IterVar iv = resolve(iv_in, "reorder");
    if (!seen.insert(iv.get()).second)
      throw ScheduleError(cat("reorder: axis '", iv.name(), "' of stage '", s.name(),
                              "' is listed twice; list each loop once"));
    order.push_back(iv);
  }
  // The listed loops take the positions they occupy now, in the order given (TVM semantics).
  std::vector<size_t> positions;
  for (const IterVar& iv : order)
    positions.push_back(static_cast<size_t>(
        std::find_if(s.leaf_iter_vars.begin(), s.leaf_iter_vars.end(), IterVarSameAsFn{iv}) -
        s.leaf_iter_vars.begin()));
  std::sort(positions.begin(), positions.end());
  for (size_t i = 0; i < order.size(); ++i) s.leaf_iter_vars[positions[i]] = order[i];
  return *this;
}

LOOM_DECL std::tuple<IterVar, IterVar, IterVar, IterVar> Stage::tile(const IterVar& x, const IterVar& y,
                                                                     Expr x_factor, Expr y_factor) {
  // Every check first: a refused tile leaves the stage as it was (not with x already split).
  const IterVar px = resolve(x, "tile"), py = resolve(y, "tile");
  StageNode& s = *node_;
  if (px.same_as(py))
    throw ScheduleError(cat("tile: stage '", s.name(), "' was asked to tile axis '", px.name(),
                            "' with itself; pass two different axes"));
  detail::check_positive(x_factor, "tile", "factor", s, px);
  detail::check_positive(y_factor, "tile", "factor", s, py);
  detail::check_splittable(s, px, "tile");
  detail::check_splittable(s, py, "tile");
  auto [xo, xi] = detail::split_impl(s, px, x_factor, Expr());
  auto [yo, yi] = detail::split_impl(s, py, y_factor, Expr());
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

namespace detail {
/// A scan's time axis is ordered: step t reads what step t - 1 wrote, so running its iterations
/// at once (threads or vector lanes) reads stale rows.
inline void check_not_ordered(const StageNode& s, const IterVar& iv, const char* primitive) {
  if (iv.kind() != IterVarKind::Ordered) return;
  throw ScheduleError(cat(primitive, ": axis '", iv.name(), "' of stage '", s.name(),
                          "' is the ordered time axis of a scan: each step reads what the previous step "
                          "wrote, so its iterations cannot run at once. ",
                          primitive == std::string("parallel") ? "Parallelize" : "Vectorize",
                          " a data-parallel axis of the scan's update stage instead"));
}

inline void set_for_kind(StageNode& s, const IterVar& iv, ForKind kind, const char* primitive) {
  IterVarAttr& a = s.attr_mut(iv);
  if (a.bind_thread.defined())
    throw ScheduleError(cat(primitive, ": axis '", iv.name(), "' of stage '", s.name(), "' is bound to '",
                            a.bind_thread->thread_tag, "'; a bound loop cannot also be ",
                            for_kind_name(kind)));
  a.for_kind = kind;
}
}  // namespace detail

LOOM_DECL Stage& Stage::parallel(const IterVar& iv_in) {
  IterVar iv = resolve(iv_in, "parallel");
  // TVM accepts this and lets the iterations race on the accumulator; Loom refuses.
  if (iv.is_reduce())
    throw ScheduleError(
        cat("parallel: axis '", iv.name(), "' of stage '", name(),
            "' is a reduction axis; parallel iterations would race on one accumulator. "
            "Parallelize a data-parallel axis, or rfactor the reduction and parallelize the factored "
            "axis"));
  detail::check_not_ordered(*node_, iv, "parallel");
  detail::set_for_kind(*node_, iv, ForKind::Parallel, "parallel");
  return *this;
}

LOOM_DECL Stage& Stage::vectorize(const IterVar& iv_in) {
  IterVar iv = resolve(iv_in, "vectorize");
  if (iv.is_reduce())
    throw ScheduleError(
        cat("vectorize: axis '", iv.name(), "' of stage '", name(),
            "' is a reduction axis; vectorizing it would make the lanes race on one accumulator. "
            "Vectorize a data-parallel axis, or rfactor the reduction first"));
  detail::check_not_ordered(*node_, iv, "vectorize");
  detail::set_for_kind(*node_, iv, ForKind::Vectorized, "vectorize");
  return *this;
}

LOOM_DECL Stage& Stage::unroll(const IterVar& iv_in) {
  detail::set_for_kind(*node_, resolve(iv_in, "unroll"), ForKind::Unrolled, "unroll");
  return *this;
}

LOOM_DECL Stage& Stage::bind(const IterVar& iv_in, const IterVar& thread) {
  IterVar iv = resolve(iv_in, "bind");
  if (!thread.defined() || thread.kind() != IterVarKind::ThreadIndex)
    throw ScheduleError(
        cat("bind: axis '", iv.name(), "' of stage '", name(),
            "' must be bound to a thread axis made by thread_axis(\"threadIdx.x\") (or blockIdx.*, "
            "vthread)"));
  if (iv.is_reduce() && !is_thread_index_tag(thread->thread_tag))
    throw ScheduleError(
        cat("bind: reduce axis '", iv.name(), "' of stage '", name(), "' cannot be bound to '",
            thread->thread_tag,
            "': only the threads of one block can combine partial results. "
            "Bind it to threadIdx.*, or rfactor the reduction and bind the factored axis instead"));
  // attr(), not attr_mut(), until every check passed: a refused bind adds no attribute entry.
  if (const IterVarAttr* a = node_->attr(iv); a && a->for_kind != ForKind::Serial)
    throw ScheduleError(cat("bind: axis '", iv.name(), "' of stage '", name(), "' is already ",
                            for_kind_name(a->for_kind),
                            "; a loop is either bound to a thread or annotated, not both"));
  for (const auto& [other_iv, other_attr] : node_->iter_var_attrs) {
    if (other_iv != iv.get() && other_attr.bind_thread.defined() &&
        other_attr.bind_thread->thread_tag == thread->thread_tag)
      throw ScheduleError(cat("bind: stage '", name(), "' already binds another loop to '",
                              thread->thread_tag, "'; each thread tag can be bound once per stage"));
  }
  node_->attr_mut(iv).bind_thread = thread;
  return *this;
}

LOOM_DECL Stage& Stage::pragma(const IterVar& iv_in, const std::string& key, Expr value) {
  IterVar iv = resolve(iv_in, "pragma");
  // As in TVM, the unroll and vectorize pragmas are the primitives of the same name.
  if (key == "unroll") return unroll(iv);
  if (key == "vectorize") return vectorize(iv);
  if (key.empty()) throw ScheduleError(cat("pragma: stage '", name(), "': the pragma key is empty"));
  node_->attr_mut(iv).pragmas.push_back(LoopAnnotation{"pragma_" + key, value});
  return *this;
}

}  // namespace loom
