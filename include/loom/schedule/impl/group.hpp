// Schedule::create_group: a group stage that places several stages together (TVM's create_group).
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/schedule/schedule.hpp");

#include <vector>

#include "loom/schedule/graph.hpp"
#include "loom/schedule/group.hpp"

namespace loom {

LOOM_DECL Stage Schedule::create_group(const std::vector<Tensor>& outputs, const std::vector<Tensor>& inputs,
                                       bool include_inputs) {
  ScheduleNode& sch = *node_;
  if (outputs.empty()) throw ScheduleError("create_group: give at least one output tensor");
  std::unordered_set<const OperationNode*> stop;
  for (const Tensor& t : inputs) {
    if (!sch.find(t.op().get()))
      throw ScheduleError(cat("create_group: input '", t.name(), "' is not part of this schedule"));
    stop.insert(t.op().get());
  }
  std::vector<StageNode*> members;
  std::unordered_set<const OperationNode*> visited;
  std::function<void(const Operation&)> walk = [&](const Operation& op) {
    if (!visited.insert(op.get()).second) return;
    StageNode* s = sch.find(op.get());
    if (!s) return;
    bool is_input = stop.count(op.get()) > 0;
    if (!is_input || include_inputs) {
      if (!s->is_placeholder()) members.push_back(s);
    }
    if (is_input) return;
    for (const Tensor& t : s->op->input_tensors()) walk(t.op());
  };
  for (const Tensor& t : outputs) {
    if (!sch.find(t.op().get()))
      throw ScheduleError(cat("create_group: output '", t.name(), "' is not part of this schedule"));
    walk(t.op());
  }
  if (members.empty()) throw ScheduleError("create_group: the group would contain no computed stage");
  auto group = make_ref<StageNode>();
  group->is_group = true;
  group->schedule = &sch;
  std::string names;
  for (StageNode* m : members) {
    if (m->group)
      throw ScheduleError(cat("create_group: stage '", m->name(), "' already belongs to group '",
                              m->group->name(), "'; a stage can be in one group"));
    names += (names.empty() ? "" : ",") + m->name();
  }
  group->group_name = "group(" + names + ")";
  // Every check is above: a refused create_group changes no stage.
  for (StageNode* m : members) {
    m->group = group.get();
    if (m->attach_type == AttachType::Root) m->attach_type = AttachType::GroupRoot;
  }
  sch.groups.push_back(group);
  return Stage(group.get());
}

}  // namespace loom
