// Checks a schedule must pass before its loops are built, with errors that name the stages,
// loops and values involved: attachments that still make sense, consistent thread extents.
#pragma once

#include <string>
#include <unordered_map>

#include "loom/lower/bound_inference.hpp"
#include "loom/schedule/axis_lookup.hpp"

namespace loom {

/// Checks that every compute_at still names a loop that exists and encloses all readers.
inline void validate_attachments(const ScheduleNode& sch) {
  for (const Ref<StageNode>& s : sch.stages) {
    if (s->attach_type == AttachType::ReverseScope) {
      if (!s->attach_stage->is_leaf(s->attach_ivar))
        throw ScheduleError(cat("reverse_compute_at: stage '", s->name(), "' is computed inside loop '",
                                s->attach_ivar.name(), "' of stage '", s->attach_stage->name(),
                                "', which is no longer one of its loops (",
                                detail::loop_list(*s->attach_stage), ")"));
      for (const Ref<StageNode>& other : sch.stages)
        if (other->attach_type == AttachType::Scope && other->attach_stage == s.get())
          throw ScheduleError(
              cat("reverse_compute_at: stage '", other->name(), "' is computed at a loop of '", s->name(),
                  "', which is itself placed inside '", s->attach_stage->name(), "'; compute '",
                  other->name(), "' at the root or inside '", s->attach_stage->name(), "' instead"));
      continue;
    }
    if (s->attach_type != AttachType::Scope) continue;
    StageNode* parent = s->attach_stage;
    if (!parent->is_leaf(s->attach_ivar)) {
      std::string why = parent->owns(s->attach_ivar) ? detail::replaced_by(*parent, s->attach_ivar)
                                                     : std::string("is not a loop of that stage");
      throw ScheduleError(cat("compute_at: stage '", s->name(), "' is computed at loop '",
                              s->attach_ivar.name(), "' of stage '", parent->name(), "', but that loop ", why,
                              "; call compute_at again with one of the loops of '", parent->name(),
                              "': ", detail::loop_list(*parent)));
    }
    std::vector<AttachPoint> legal = legal_attach_points(sch, s.get());
    if (std::find(legal.begin(), legal.end(), AttachPoint{parent, s->attach_ivar}) == legal.end())
      throw ScheduleError(cat("compute_at: stage '", s->name(), "' is computed at loop '",
                              s->attach_ivar.name(), "' of stage '", parent->name(),
                              "', which no longer encloses every use of it; legal locations are: ",
                              describe_attach_points(legal)));
  }
}

/// Every loop bound to one thread tag must have the same extent (one launch dimension), and
/// the extent a thread axis was declared with.
inline void validate_thread_extents(const ScheduleNode& sch, const BoundResult& bounds) {
  struct Binding {
    const StageNode* stage;
    IterVar leaf;
    Expr extent;
  };
  std::unordered_map<std::string, Binding> seen;
  Analyzer analyzer;
  for (const Ref<StageNode>& s : sch.stages) {
    for (const IterVar& leaf : s->leaf_iter_vars) {
      const IterVarAttr* a = s->attr(leaf);
      if (!a || !a->bind_thread.defined()) continue;
      auto it = bounds.ranges.find(leaf.get());
      if (it == bounds.ranges.end()) continue;
      const IterVar& thread = a->bind_thread;
      Expr extent = it->second.extent;
      if (thread.dom().defined() && !analyzer.can_prove_equal(thread.dom().extent, extent))
        throw ScheduleError(cat("bind: loop '", leaf.name(), "' of stage '", s->name(), "' has extent ",
                                to_string(extent), " but thread axis '", thread->thread_tag,
                                "' was declared with extent ", to_string(thread.dom().extent),
                                "; split the loop by that extent before binding"));
      auto [prev, inserted] = seen.emplace(thread->thread_tag, Binding{s.get(), leaf, extent});
      if (!inserted && !analyzer.can_prove_equal(prev->second.extent, extent))
        throw ScheduleError(cat(
            "bind: thread tag '", thread->thread_tag, "' is bound with two different extents: ",
            to_string(prev->second.extent), " (loop '", prev->second.leaf.name(), "' of stage '",
            prev->second.stage->name(), "') and ", to_string(extent), " (loop '", leaf.name(), "' of stage '",
            s->name(), "'); a launch has one extent per thread tag, so split both loops to the same extent"));
    }
  }
}

}  // namespace loom
