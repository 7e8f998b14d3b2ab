// cache_read and cache_write: stages that copy a tensor into (or compute it in) another
// memory scope, as in TVM. The cached stage keeps its identity; its readers or its own body
// are rewritten to go through the cache.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/schedule/schedule.hpp");

#include <string>
#include <vector>

#include "loom/schedule/dataflow_rewrite.hpp"
#include "loom/schedule/graph.hpp"
#include "loom/schedule/impl/memory_primitives.hpp"

namespace loom {

LOOM_DECL Tensor Schedule::cache_read(const Tensor& tensor, const std::string& scope,
                                      const std::vector<Tensor>& readers) {
  ScheduleNode& sch = *node_;
  std::string where = cat("cache_read of '", tensor.defined() ? tensor.name() : "?", "'");
  detail::check_scope(scope, where);
  StageNode* producer = sch.find(tensor.op().get());
  if (!producer) throw ScheduleError(cat(where, ": the tensor is not part of this schedule"));
  if (readers.empty()) throw ScheduleError(cat(where, ": give the stages that should read the cache"));
  std::vector<StageNode*> reader_stages;
  for (const Tensor& r : readers) {
    StageNode* rs = sch.find(r.op().get());
    if (!rs) throw ScheduleError(cat(where, ": reader '", r.name(), "' is not part of this schedule"));
    if (rs->op->kind != OpKind::Compute)
      throw ScheduleError(cat(where, ": reader '", r.name(), "' is a ", op_kind_name(rs->op->kind),
                              "; only compute stages can be redirected to a cache"));
    if (!reads(rs->op, tensor.op()))
      throw ScheduleError(cat(where, ": stage '", rs->name(), "' does not read '", tensor.name(),
                              "'; list only stages that read it"));
    reader_stages.push_back(rs);
  }
  std::vector<std::string> names;
  for (int d = 0; d < tensor.ndim(); ++d) names.push_back("ax" + std::to_string(d));
  Tensor cache = compute(
      tensor.shape(),
      [&](const std::vector<Var>& ax) { return tensor(std::vector<Expr>(ax.begin(), ax.end())); },
      tensor.name() + "." + scope, "", names);
  // Every check is above: a refused cache_read leaves the schedule as it was.
  StageNode* cache_stage = insert_stage(sch, cache.op(), producer, /*after=*/true);
  cache_stage->scope = scope;
  TensorReplaceMap map{{TensorKey(tensor), cache}};
  for (StageNode* rs : reader_stages) replace_reads(sch, *rs, map);
  return cache;
}

LOOM_DECL std::vector<Tensor> Schedule::cache_write(const std::vector<Tensor>& tensors,
                                                    const std::string& scope) {
  ScheduleNode& sch = *node_;
  if (tensors.empty()) throw ScheduleError("cache_write: give the tensor(s) to cache");
  const Tensor& t0 = tensors[0];
  std::string where = cat("cache_write of '", t0.name(), "'");
  detail::check_scope(scope, where);
  StageNode* stage = sch.find(t0.op().get());
  if (!stage) throw ScheduleError(cat(where, ": the tensor is not part of this schedule"));
  if (stage->op->kind != OpKind::Compute)
    throw ScheduleError(cat(where, ": '", t0.name(), "' is a ", op_kind_name(stage->op->kind),
                            "; only computes can write through a cache"));
  // Held: cache_read may already have replaced the op, so stage->op can be its only owner, and
  // it is replaced below while `c` is still read.
  const Operation old_op = stage->op;
  const auto* c = static_cast<const ComputeOpNode*>(old_op.get());
  if (static_cast<int>(tensors.size()) != c->num_outputs())
    throw ScheduleError(cat(where, ": '", c->name, "' has ", c->num_outputs(),
                            " outputs; pass all of them together to cache_write"));
  for (const Tensor& t : tensors)
    if (!t.op().same_as(t0.op()))
      throw ScheduleError(cat(where, ": all tensors must be outputs of one compute"));
  if (!stage->relations.empty() || stage->attach_type != AttachType::Root)
    throw ScheduleError(
        cat(where, ": stage '", stage->name(),
            "' was already scheduled (split, fuse, reorder or compute_at); call cache_write first, "
            "since it replaces how '",
            stage->name(), "' is computed"));
  detail::check_no_prefetch(*stage, where, "the cache stage");

  // The cache computes what the stage computed, over fresh axes named like TVM's (i.c).
  std::vector<IterVar> axis, reduce;
  VarMap map;
  for (const IterVar& iv : c->axis) {
    axis.emplace_back(iv.dom(), iv.var().copy_with_name(iv.name() + ".c"), IterVarKind::DataPar);
    map[iv.var().get()] = axis.back().var();
  }
  for (const IterVar& iv : c->reduce_axis) {
    reduce.emplace_back(iv.dom(), iv.var().copy_with_name(iv.name()), IterVarKind::CommReduce);
    map[iv.var().get()] = reduce.back().var();
  }
  std::vector<Expr> body;
  for (const Expr& b : c->body) {
    if (const auto* r = b.as<ReduceNode>()) {
      std::vector<Expr> source;
      for (const Expr& e : r->source) source.push_back(substitute(e, map));
      body.push_back(
          ReduceNode::make(r->combiner, source, reduce, substitute(r->condition, map), r->value_index));
    } else {
      body.push_back(substitute(b, map));
    }
  }
  Operation cache_op(make_ref<ComputeOpNode>(c->name + "." + scope, c->tag, axis, reduce,
                                             c->reduce_axis_origin, body, c->shape));
  // Every check is above: a refused cache_write leaves the schedule as it was.
  StageNode* cache_stage = insert_stage(sch, cache_op, stage, /*after=*/false);
  cache_stage->scope = scope;
  for (size_t i = 0; i < c->reduce_axis.size(); ++i)
    cache_stage->axis_alias[c->reduce_axis[i].get()] = reduce[i];

  // The stage itself now copies the cache out, over its original axes.
  std::vector<Expr> index;
  for (const IterVar& iv : c->axis) index.push_back(iv.var());
  std::vector<Expr> copy;
  for (int k = 0; k < c->num_outputs(); ++k) copy.push_back(cache_op->output(k)(index));
  stage->op = Operation(make_ref<ComputeOpNode>(c->name, c->tag, c->axis, std::vector<IterVar>{},
                                                std::vector<IterVar>{}, copy, c->shape));
  sch.stage_map[stage->op.get()] = stage;
  stage->all_iter_vars = c->axis;
  stage->leaf_iter_vars = c->axis;
  std::string moved =
      cat("moved into the cache stage '", cache_op->name, "' by cache_write; schedule it there");
  for (const IterVar& iv : c->reduce_axis) {
    stage->retired[iv.get()] = moved;
    stage->iter_var_attrs.erase(iv.get());
  }
  for (const IterVar& iv : c->reduce_axis_origin) stage->retired[iv.get()] = moved;
  std::vector<Tensor> out;
  for (int k = 0; k < cache_op->num_outputs(); ++k) out.push_back(cache_op->output(k));
  return out;
}

LOOM_DECL Tensor Schedule::cache_write(const Tensor& tensor, const std::string& scope) {
  return cache_write(std::vector<Tensor>{tensor}, scope).at(0);
}

}  // namespace loom
