// Where a stage is computed: compute_at (inside a loop of a consumer), compute_inline
// (substituted into its consumers) and compute_root (at the top of the function).
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/schedule/schedule.hpp");

#include "loom/schedule/axis_lookup.hpp"
#include "loom/schedule/graph.hpp"

namespace loom {

namespace detail {
inline void check_movable(const StageNode& s, const char* primitive) {
  if (s.is_placeholder())
    throw ScheduleError(cat(primitive, ": '", s.name(), "' is a placeholder (an input); it is not computed"));
  if (s.attach_type == AttachType::ScanInit || s.attach_type == AttachType::ScanUpdate)
    throw ScheduleError(cat(primitive, ": stage '", s.name(), "' is the ",
                            s.attach_type == AttachType::ScanInit ? "init" : "update", " of scan '",
                            s.attach_stage->name(), "' and is computed by it; its placement cannot change"));
}
/// The stages from `producer` to `consumer` along reads, each read by the next (empty when
/// `consumer` does not depend on `producer`).
inline std::vector<const StageNode*> read_chain(const ScheduleNode& sch, const StageNode* producer,
                                                const StageNode* consumer) {
  if (producer == consumer) return {consumer};
  for (const StageNode* r : readers_of(sch, producer)) {
    std::vector<const StageNode*> rest = read_chain(sch, r, consumer);
    if (rest.empty()) continue;
    rest.insert(rest.begin(), producer);
    return rest;
  }
  return {};
}
}  // namespace detail

LOOM_DECL Stage& Stage::compute_at(const Stage& parent, const IterVar& scope_in) {
  StageNode& s = *node_;
  detail::check_movable(s, "compute_at");
  if (!parent.defined())
    throw ScheduleError(cat("compute_at: stage '", s.name(), "' was given an undefined parent"));
  if (parent->schedule != s.schedule)
    throw ScheduleError(cat("compute_at: stage '", parent.name(),
                            "' belongs to another schedule than stage '", s.name(),
                            "'; use the stages of one schedule (s[", parent.name(), "] of the same s)"));
  if (parent->is_group)
    throw ScheduleError(cat("compute_at: stage '", s.name(), "' cannot be computed at '", parent.name(),
                            "', a group, which has no loops of its own; compute it at a loop of one of the "
                            "group's member stages"));
  if (parent.get() == &s)
    throw ScheduleError(cat("compute_at: stage '", s.name(), "' cannot be computed inside its own loops"));
  IterVar scope = parent.resolve(scope_in, "compute_at");
  std::vector<AttachPoint> legal = legal_attach_points(*s.schedule, &s);
  if (std::find(legal.begin(), legal.end(), AttachPoint{parent.get(), scope}) == legal.end()) {
    // Inside a stage that it feeds (directly or through other stages), it would have to be computed
    // before itself: name the chain of reads that closes the cycle.
    std::vector<const StageNode*> chain = detail::read_chain(*s.schedule, parent.get(), &s);
    if (!chain.empty()) {
      std::string through;
      if (chain.size() > 2)
        for (const StageNode* c : chain) through += (through.empty() ? " (through '" : "' -> '") + c->name();
      if (!through.empty()) through += "')";
      throw ScheduleError(cat("compute_at: stage '", s.name(), "' cannot be computed at loop '", scope.name(),
                              "' of stage '", parent.name(), "': '", s.name(), "' reads '", parent.name(),
                              "'", through, ", so '", parent.name(), "' is computed first and '", s.name(),
                              "' inside its loops would be a cycle. Compute the producer inside its consumer "
                              "instead (s[",
                              parent.name(), "].compute_at(s[", s.name(), "], axis)), or place '", s.name(),
                              "' at one of: ", describe_attach_points(legal)));
    }
    std::vector<StageNode*> readers =
        s.is_group ? readers_of_group(*s.schedule, &s) : readers_of(*s.schedule, &s);
    std::string reader_names;
    for (StageNode* r : readers) reader_names += (reader_names.empty() ? "" : ", ") + r->name();
    throw ScheduleError(cat("compute_at: stage '", s.name(), "' cannot be computed at loop '", scope.name(),
                            "' of stage '", parent.name(), "': that loop does not enclose every use of '",
                            s.name(), "' (it is read by ",
                            reader_names.empty() ? std::string("no stage") : reader_names,
                            "). Legal locations for '", s.name(), "' are: ", describe_attach_points(legal)));
  }
  s.attach_type = AttachType::Scope;
  s.attach_stage = parent.get();
  s.attach_ivar = scope;
  return *this;
}

LOOM_DECL Stage& Stage::compute_inline() {
  StageNode& s = *node_;
  if (s.is_group)
    throw ScheduleError(
        cat("compute_inline: '", s.name(), "' is a group; inline its member stages one by one"));
  detail::check_movable(s, "compute_inline");
  if (s.op->kind != OpKind::Compute)
    throw ScheduleError(cat("compute_inline: stage '", s.name(), "' is a ", op_kind_name(s.op->kind),
                            "; only compute stages can be inlined"));
  if (static_cast<const ComputeOpNode*>(s.op.get())->is_reduction())
    throw ScheduleError(cat("compute_inline: stage '", s.name(),
                            "' is a reduction, which cannot be inlined into its consumers; use compute_at to "
                            "compute it inside a consumer's loop instead"));
  if (s.is_output)
    throw ScheduleError(cat("compute_inline: stage '", s.name(),
                            "' is an output of the schedule; outputs must be stored, not inlined"));
  s.attach_type = AttachType::Inline;
  s.attach_stage = nullptr;
  s.attach_ivar = IterVar();
  return *this;
}

LOOM_DECL Stage& Stage::reverse_compute_at(const Stage& producer, const IterVar& scope_in) {
  StageNode& s = *node_;
  const char* what = "reverse_compute_at";
  detail::check_movable(s, what);
  if (s.is_group || s.op->kind != OpKind::Compute)
    throw ScheduleError(cat(what, ": stage '", s.name(), "' is not a compute stage"));
  if (!producer.defined() || producer->is_group || producer->is_placeholder())
    throw ScheduleError(
        cat(what, ": stage '", s.name(), "' must be placed inside a loop of a computed stage"));
  if (producer->schedule != s.schedule)
    throw ScheduleError(
        cat(what, ": stage '", producer.name(), "' belongs to another schedule than stage '", s.name(), "'"));
  if (!reads(s.op, producer->origin_op))
    throw ScheduleError(cat(what, ": stage '", s.name(), "' does not read '", producer.name(),
                            "'; reverse_compute_at places a consumer inside one of its producer's loops"));
  IterVar scope = producer.resolve(scope_in, what);
  if (scope.is_reduce())
    throw ScheduleError(cat(what, ": loop '", scope.name(), "' of stage '", producer.name(),
                            "' walks a reduction, so its tiles are not final until the loop ends; pick a "
                            "data-parallel loop outside every reduce loop"));
  for (const IterVar& leaf : producer->leaf_iter_vars) {
    if (leaf.same_as(scope)) break;
    if (leaf.is_reduce())
      throw ScheduleError(cat(what, ": loop '", scope.name(), "' of stage '", producer.name(),
                              "' is inside reduce loop '", leaf.name(),
                              "', where the producer's values are not final; pick an outer loop"));
  }
  s.attach_type = AttachType::ReverseScope;
  s.attach_stage = producer.get();
  s.attach_ivar = scope;
  return *this;
}

LOOM_DECL Stage& Stage::compute_root() {
  StageNode& s = *node_;
  detail::check_movable(s, "compute_root");
  s.attach_type = AttachType::Root;
  s.attach_stage = nullptr;
  s.attach_ivar = IterVar();
  return *this;
}

}  // namespace loom
