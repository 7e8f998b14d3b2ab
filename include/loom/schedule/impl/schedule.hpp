// The definitions of schedule/schedule.hpp: creating and copying schedules, finding a stage, and
// resolving an axis handle to a stage's leaf loop (Stage::resolve, shared by every primitive).
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/schedule/schedule.hpp");

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "loom/schedule/axis_lookup.hpp"
#include "loom/schedule/schedule.hpp"

namespace loom {

LOOM_DECL Schedule Schedule::copy() const {
  auto fresh = make_ref<ScheduleNode>();
  fresh->outputs = node_->outputs;
  std::unordered_map<const StageNode*, StageNode*> remap;
  auto clone = [&](const Ref<StageNode>& s) {
    auto c = make_ref<StageNode>(*s);
    c->schedule = fresh.get();
    remap[s.get()] = c.get();
    return c;
  };
  for (const Ref<StageNode>& s : node_->stages) fresh->stages.push_back(clone(s));
  for (const Ref<StageNode>& g : node_->groups) fresh->groups.push_back(clone(g));
  auto fix = [&](StageNode* s) {
    if (s->attach_stage) s->attach_stage = remap.at(s->attach_stage);
    if (s->group) s->group = remap.at(s->group);
  };
  for (const Ref<StageNode>& s : fresh->stages) {
    fix(s.get());
    fresh->stage_map[s->op.get()] = s.get();
    if (s->origin_op.get() != s->op.get()) fresh->stage_map[s->origin_op.get()] = s.get();
  }
  for (const Ref<StageNode>& g : fresh->groups) fix(g.get());
  return Schedule(fresh);
}

LOOM_DECL Stage Schedule::operator[](const Operation& op) const {
  StageNode* s = node_->find(op.get());
  if (!s) {
    std::string names;
    for (const Ref<StageNode>& st : node_->stages) names += (names.empty() ? "" : ", ") + st->name();
    throw ScheduleError(cat("'", op->name, "' is not part of this schedule; its stages are: ", names,
                            ". Create the schedule from the outputs that depend on it"));
  }
  return Stage(s);
}

/// The schedule of everything `outputs` depend on, every stage at its default: computed at
/// the root, in order, with one loop per axis.
LOOM_DECL Schedule create_schedule(const std::vector<Tensor>& outputs) {
  if (outputs.empty()) throw ScheduleError("create_schedule: give at least one output tensor");
  auto sch = make_ref<ScheduleNode>();
  std::unordered_map<const OperationNode*, bool> visited;
  // Post-order depth-first walk: every stage comes after the stages it reads.
  std::function<void(const Operation&)> visit = [&](const Operation& op) {
    if (visited.count(op.get())) return;
    visited[op.get()] = true;
    for (const Tensor& t : op->input_tensors()) visit(t.op());
    Ref<StageNode> stage = detail::make_stage(op, sch.get());
    sch->stage_map[op.get()] = stage.get();
    sch->stages.push_back(stage);
  };
  for (const Tensor& t : outputs) {
    if (!t.defined()) throw ScheduleError("create_schedule: an output tensor is undefined");
    bool seen = false;
    for (const Operation& o : sch->outputs) seen = seen || o.same_as(t.op());
    if (!seen) sch->outputs.push_back(t.op());
    visit(t.op());
  }
  for (const Operation& o : sch->outputs) sch->stage_map.at(o.get())->is_output = true;
  // A scan computes its init rows before, and its update inside, its time loop.
  for (const Ref<StageNode>& s : sch->stages) {
    if (s->op->kind != OpKind::Scan) continue;
    const auto* scan = static_cast<const ScanOpNode*>(s->op.get());
    for (const Tensor& t : scan->init) {
      StageNode* init = sch->stage_map.at(t.op().get());
      init->attach_type = AttachType::ScanInit;
      init->attach_stage = s.get();
    }
    for (const Tensor& t : scan->update) {
      StageNode* update = sch->stage_map.at(t.op().get());
      update->attach_type = AttachType::ScanUpdate;
      update->attach_stage = s.get();
      update->attach_ivar = scan->scan_axis;
    }
  }
  return Schedule(sch);
}
LOOM_DECL Schedule create_schedule(const Tensor& output) {
  return create_schedule(std::vector<Tensor>{output});
}

LOOM_DECL IterVar Stage::resolve(const IterVar& iv_in, const char* primitive) const {
  const StageNode& s = *node_;
  detail::check_not_group(s, primitive);
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
