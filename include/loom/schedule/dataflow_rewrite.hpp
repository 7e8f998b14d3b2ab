// Rewriting who reads what: after cache_read or rfactor, a stage reads a new tensor instead
// of an old one. The stage keeps its identity (and its loops); only its body changes.
#pragma once

#include <unordered_map>

#include "loom/schedule/schedule.hpp"

namespace loom {

using TensorReplaceMap = std::unordered_map<TensorKey, Tensor, TensorKeyHash>;

namespace detail {
class ReplaceReads : public IRMutator {
 public:
  explicit ReplaceReads(const TensorReplaceMap& map) : map_(map) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const ProducerLoadNode* op) override {
    Expr e = IRMutator::visit(op);
    const auto* load = e.as<ProducerLoadNode>();
    auto it = map_.find(TensorKey(load->producer));
    return it == map_.end() ? e : ProducerLoadNode::make(it->second.producer(), load->indices);
  }

 private:
  const TensorReplaceMap& map_;
};
}  // namespace detail

/// Makes `stage` read the replacement of each tensor in `map` (the stage must be a compute).
inline void replace_reads(ScheduleNode& sch, StageNode& stage, const TensorReplaceMap& map) {
  const auto* c = static_cast<const ComputeOpNode*>(stage.op.get());
  detail::ReplaceReads rewriter(map);
  stage.op = Operation(c->map_body([&](const Expr& b) { return rewriter.mutate(b); }));
  sch.stage_map[stage.op.get()] = &stage;
}

/// Inserts a new stage for `op` before or after `anchor` in the schedule's stage order.
inline StageNode* insert_stage(ScheduleNode& sch, const Operation& op, const StageNode* anchor, bool after) {
  auto it = sch.stages.begin();
  while (it != sch.stages.end() && it->get() != anchor) ++it;
  internal_check(it != sch.stages.end(), "insert_stage: anchor stage not found");
  if (after) ++it;
  Ref<StageNode> s = detail::make_stage(op, &sch);
  StageNode* raw = s.get();
  sch.stages.insert(it, s);
  sch.stage_map[op.get()] = raw;
  return raw;
}

}  // namespace loom
