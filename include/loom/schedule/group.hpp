// create_group (TVM semantics): a virtual stage over the stages between some inputs and some
// outputs. Placing the group (compute_at) places every member computed at the group's root;
// members attached to each other keep their places.
#pragma once

#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "loom/schedule/graph.hpp"

namespace loom {

/// The stages of a group.
inline std::vector<StageNode*> group_members(const ScheduleNode& sch, const StageNode* group) {
  std::vector<StageNode*> out;
  for (const Ref<StageNode>& s : sch.stages)
    if (s->group == group) out.push_back(s.get());
  return out;
}

/// Before lowering: members at the group's root take the group's placement.
inline void resolve_groups(ScheduleNode& sch) {
  for (const Ref<StageNode>& s : sch.stages) {
    if (s->attach_type != AttachType::GroupRoot) continue;
    const StageNode* g = s->group;
    while (g->attach_type == AttachType::GroupRoot && g->group) g = g->group;
    s->attach_type = g->attach_type == AttachType::Scope ? AttachType::Scope : AttachType::Root;
    s->attach_stage = g->attach_stage;
    s->attach_ivar = g->attach_ivar;
  }
}

}  // namespace loom
