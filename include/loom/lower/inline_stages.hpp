// compute_inline, carried out: every read of an inlined stage is replaced by the stage's
// body with its axes substituted by the read's indices. Runs on the lowering's copy.
#pragma once

#include "loom/schedule/graph.hpp"

namespace loom {

namespace detail {

class InlineReads : public IRMutator {
 public:
  InlineReads(const Operation& origin, const ComputeOpNode& body_op) : origin_(origin), body_op_(body_op) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Expr visit(const ProducerLoadNode* op) override {
    Expr e = IRMutator::visit(op);
    const auto* load = e.as<ProducerLoadNode>();
    Tensor t = as_tensor(load->producer);
    if (!t.op().same_as(origin_)) return e;
    VarMap map;
    for (size_t d = 0; d < body_op_.axis.size(); ++d) map[body_op_.axis[d].var().get()] = load->indices[d];
    return substitute(body_op_.body.at(static_cast<size_t>(t.value_index())), map);
  }

 private:
  const Operation& origin_;
  const ComputeOpNode& body_op_;
};

}  // namespace detail

/// Substitutes every stage marked Inline into its readers (in dependency order).
inline void inline_stages(ScheduleNode& sch) {
  for (const Ref<StageNode>& s : sch.stages) {
    if (s->attach_type != AttachType::Inline) continue;
    const auto* body_op = static_cast<const ComputeOpNode*>(s->op.get());
    for (const Ref<StageNode>& r : sch.stages) {
      if (r.get() == s.get() || !reads(r->op, s->origin_op)) continue;
      if (r->op->kind != OpKind::Compute)
        throw ScheduleError(cat("compute_inline: stage '", s->name(), "' is read by ",
                                op_kind_name(r->op->kind), " stage '", r->name(),
                                "', which needs it stored in memory; keep '", s->name(),
                                "' computed (compute_root or compute_at)"));
      const auto* reader = static_cast<const ComputeOpNode*>(r->op.get());
      detail::InlineReads inliner(s->origin_op, *body_op);
      r->op = Operation(reader->map_body([&](const Expr& b) { return inliner.mutate(b); }));
      sch.stage_map[r->op.get()] = r.get();
    }
    s->attach_type = AttachType::InlinedAlready;
  }
}

}  // namespace loom
