// Stage::resolve: maps an axis handle to the stage's leaf loop, or explains precisely why it
// cannot (already split or fused and into what, another stage's axis, another schedule's).
#pragma once

#include <algorithm>
#include <string>
#include <variant>

#include "loom/schedule/schedule.hpp"

namespace loom {

namespace detail {

inline std::string loop_list(const StageNode& s) {
  std::string out;
  for (const IterVar& iv : s.leaf_iter_vars) out += (out.empty() ? "" : ", ") + iv.name();
  return out.empty() ? "(none)" : out;
}

/// Why `iv`, an axis of `s` that is no longer a leaf, was replaced, and by what.
inline std::string replaced_by(const StageNode& s, const IterVar& iv) {
  for (const IterVarRelation& rel : s.relations) {
    if (const auto* sp = std::get_if<SplitRelation>(&rel); sp && sp->parent.same_as(iv))
      return cat("was already split into '", sp->outer.name(), "' and '", sp->inner.name(),
                 "'; use those instead");
    if (const auto* fu = std::get_if<FuseRelation>(&rel);
        fu && (fu->outer.same_as(iv) || fu->inner.same_as(iv)))
      return cat("was already fused with '", (fu->outer.same_as(iv) ? fu->inner : fu->outer).name(),
                 "' into '", fu->fused.name(), "'; use '", fu->fused.name(), "' instead");
    if (const auto* rb = std::get_if<RebaseRelation>(&rel); rb && rb->parent.same_as(iv))
      return cat("was rebased into '", rb->rebased.name(), "'; use that instead");
  }
  return "is no longer a loop of the stage";
}

}  // namespace detail

inline IterVar Stage::resolve(const IterVar& iv_in, const char* primitive) const {
  const StageNode& s = *node_;
  if (!iv_in.defined())
    throw ScheduleError(cat(primitive, ": stage '", s.name(), "' was given an undefined axis"));
  IterVar iv = iv_in;
  if (s.op->kind == OpKind::Compute) {
    const auto* c = static_cast<const ComputeOpNode*>(s.op.get());
    for (size_t i = 0; i < c->reduce_axis_origin.size(); ++i)
      if (c->reduce_axis_origin[i].same_as(iv)) iv = c->reduce_axis[i];
  }
  if (auto alias = s.axis_alias.find(iv.get()); alias != s.axis_alias.end()) iv = alias->second;
  if (s.is_leaf(iv)) return iv;
  if (auto gone = s.retired.find(iv.get()); gone != s.retired.end())
    throw ScheduleError(cat(primitive, ": axis '", iv.name(), "' of stage '", s.name(), "' ", gone->second,
                            " (the loops of '", s.name(), "' are now: ", detail::loop_list(s), ")"));
  if (s.owns(iv))
    throw ScheduleError(cat(primitive, ": axis '", iv.name(), "' of stage '", s.name(), "' ",
                            detail::replaced_by(s, iv), " (the loops of '", s.name(),
                            "' are now: ", detail::loop_list(s), ")"));
  if (iv.kind() == IterVarKind::ThreadIndex)
    throw ScheduleError(cat(primitive, ": '", iv.name(), "' is a thread axis, not a loop of stage '",
                            s.name(), "'; pass one of its loops: ", detail::loop_list(s)));
  // A reduce_axis handle is copied into each compute that uses it, so another stage "owns" the
  // user's handle through its copy (reduce_axis_origin), not the handle itself.
  auto owns_handle = [&iv](const StageNode& other) {
    if (other.owns(iv)) return true;
    if (other.is_group || other.op->kind != OpKind::Compute) return false;
    const auto* c = static_cast<const ComputeOpNode*>(other.op.get());
    return std::find_if(c->reduce_axis_origin.begin(), c->reduce_axis_origin.end(), IterVarSameAsFn{iv}) !=
           c->reduce_axis_origin.end();
  };
  for (const Ref<StageNode>& other : s.schedule->stages) {
    if (other.get() != &s && owns_handle(*other))
      throw ScheduleError(cat(primitive, ": axis '", iv.name(), "' belongs to stage '", other->name(),
                              "', not to stage '", s.name(), "'; the loops of '", s.name(),
                              "' are: ", detail::loop_list(s)));
  }
  throw ScheduleError(
      cat(primitive, ": axis '", iv.name(), "' is not an axis of stage '", s.name(),
          "' in this schedule (was it created by a primitive on another schedule?); the loops of '", s.name(),
          "' are: ", detail::loop_list(s)));
}

}  // namespace loom
