// Questions about a schedule's dataflow and nesting: who reads a stage (looking through
// inlined stages), which loops enclose a stage's computation, and where it may be attached.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "loom/schedule/schedule.hpp"

namespace loom {

/// A loop of a stage: where another stage can be computed.
struct AttachPoint {
  StageNode* stage = nullptr;
  IterVar iv;
  friend bool operator==(const AttachPoint& a, const AttachPoint& b) {
    return a.stage == b.stage && a.iv.same_as(b.iv);
  }
};

inline bool reads(const Operation& reader, const Operation& producer) {
  for (const Tensor& t : reader->input_tensors())
    if (t.op().same_as(producer)) return true;
  return false;
}

/// Whether `reader`'s result depends on `producer`'s: it reads it, or a tensor computed from it.
inline bool depends_on(const Operation& reader, const Operation& producer) {
  std::vector<Operation> todo{reader};
  std::vector<const OperationNode*> seen;
  while (!todo.empty()) {
    const Operation op = todo.back();
    todo.pop_back();
    for (const Tensor& t : op->input_tensors()) {
      if (t.op().same_as(producer)) return true;
      if (std::find(seen.begin(), seen.end(), t.op().get()) != seen.end()) continue;
      seen.push_back(t.op().get());
      todo.push_back(t.op());
    }
  }
  return false;
}

/// The stages that read `s`'s outputs; a reader that is inlined is replaced by its readers.
/// Consumers always refer to a producer's original operation, even after inlining rewrote it.
inline std::vector<StageNode*> readers_of(const ScheduleNode& sch, const StageNode* s) {
  std::vector<StageNode*> out;
  for (const Ref<StageNode>& r : sch.stages) {
    if (r.get() == s || !reads(r->op, s->origin_op)) continue;
    if (r->attach_type == AttachType::Inline || r->attach_type == AttachType::InlinedAlready) {
      for (StageNode* rr : readers_of(sch, r.get()))
        if (std::find(out.begin(), out.end(), rr) == out.end()) out.push_back(rr);
    } else if (std::find(out.begin(), out.end(), r.get()) == out.end()) {
      out.push_back(r.get());
    }
  }
  return out;
}

/// The loops that enclose the computation of `s`, innermost first.
inline std::vector<AttachPoint> attach_path(const StageNode* s) {
  std::vector<AttachPoint> path;
  const StageNode* cur = s;
  while (cur) {
    StageNode* parent = cur->attach_stage;
    if (!parent || (cur->attach_type != AttachType::Scope && cur->attach_type != AttachType::ScanUpdate &&
                    cur->attach_type != AttachType::ScanInit))
      break;
    if (cur->attach_type != AttachType::ScanInit) {
      const std::vector<IterVar>& leaves = parent->leaf_iter_vars;
      auto pos = std::find_if(leaves.begin(), leaves.end(), IterVarSameAsFn{cur->attach_ivar});
      if (pos != leaves.end())
        for (auto idx = pos - leaves.begin(); idx >= 0; --idx)
          path.push_back(AttachPoint{parent, leaves[idx]});
    }
    cur = parent;
  }
  return path;
}

/// The stages that read a group's members from outside the group.
inline std::vector<StageNode*> readers_of_group(const ScheduleNode& sch, const StageNode* group) {
  std::vector<StageNode*> out;
  for (const Ref<StageNode>& m : sch.stages) {
    if (m->group != group) continue;
    for (StageNode* r : readers_of(sch, m.get()))
      if (r->group != group && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  }
  return out;
}

/// The loops in which `s` may be computed: those that enclose every reader of `s`,
/// innermost first. (Computing at the root is always legal too.)
inline std::vector<AttachPoint> legal_attach_points(const ScheduleNode& sch, const StageNode* s) {
  std::vector<StageNode*> readers = s->is_group ? readers_of_group(sch, s) : readers_of(sch, s);
  std::vector<AttachPoint> result;
  bool first = true;
  for (StageNode* r : readers) {
    std::vector<AttachPoint> enclosing;
    for (auto it = r->leaf_iter_vars.rbegin(); it != r->leaf_iter_vars.rend(); ++it)
      enclosing.push_back({r, *it});
    for (const AttachPoint& p : attach_path(r)) enclosing.push_back(p);
    if (first) {
      result = enclosing;
      first = false;
    } else {
      std::vector<AttachPoint> kept;
      for (const AttachPoint& p : result)
        if (std::find(enclosing.begin(), enclosing.end(), p) != enclosing.end()) kept.push_back(p);
      result = kept;
    }
  }
  // A loop of `s` itself, or of a stage computed inside `s`, can never hold `s`.
  result.erase(std::remove_if(result.begin(), result.end(),
                              [&](const AttachPoint& p) {
                                if (p.stage == s || (s->is_group && p.stage->group == s)) return true;
                                for (const AttachPoint& q : attach_path(p.stage))
                                  if (q.stage == s) return true;
                                return false;
                              }),
               result.end());
  return result;
}

inline std::string describe_attach_points(const std::vector<AttachPoint>& points) {
  std::string out;
  for (const AttachPoint& p : points) out += cat(out.empty() ? "" : ", ", p.stage->name(), ".", p.iv.name());
  return out.empty() ? "the root only (compute_root())" : out + ", or the root (compute_root())";
}

}  // namespace loom
