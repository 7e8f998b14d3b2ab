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

/// A group (create_group) has no operation, loops or buffer of its own: only compute_at,
/// compute_root and create_group's nesting apply to it. Checked first, since the primitives read
/// the stage's operation.
inline void check_not_group(const StageNode& s, const char* primitive) {
  if (s.is_group)
    throw ScheduleError(cat(primitive, ": '", s.name(),
                            "' is a group (create_group), which has no loops or buffer of its own; apply ",
                            primitive, " to its member stages, or place the whole group with compute_at"));
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

}  // namespace loom
