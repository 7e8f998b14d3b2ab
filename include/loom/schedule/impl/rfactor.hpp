// rfactor (TVM semantics): B = sum_k f(k) with k split into (k.outer, k.inner) becomes
// B.rf[k.inner] = sum_{k.outer} f(k) and B = sum_{k.inner.v} B.rf[k.inner.v], so that the
// partial reductions are independent (parallel, vectorizable, or bound to threads).
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/schedule/schedule.hpp");

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "loom/schedule/dataflow_rewrite.hpp"
#include "loom/schedule/impl/memory_primitives.hpp"
#include "loom/schedule/iter_values.hpp"

namespace loom {

LOOM_DECL std::vector<Tensor> Schedule::rfactor_all(const Tensor& tensor, const IterVar& axis_in,
                                                    int factor_axis) {
  ScheduleNode& sch = *node_;
  std::string where = cat("rfactor of '", tensor.defined() ? tensor.name() : "?", "'");
  StageNode* stage = sch.find(tensor.op().get());
  if (!stage) throw ScheduleError(cat(where, ": the tensor is not part of this schedule"));
  if (stage->op->kind != OpKind::Compute ||
      !static_cast<const ComputeOpNode*>(stage->op.get())->is_reduction())
    throw ScheduleError(cat(
        where, ": stage '", stage->name(),
        "' is not a reduction; rfactor applies to a compute whose body is a reducer such as sum(expr, {k})"));
  // Held: stage->op is replaced below while `c` is still read (it may be the op's only owner).
  const Operation held_op = stage->op;
  const auto* c = static_cast<const ComputeOpNode*>(held_op.get());
  IterVar axis = Stage(stage).resolve(axis_in, "rfactor");
  if (!axis.is_reduce())
    throw ScheduleError(cat(where, ": axis '", axis.name(), "' of stage '", stage->name(),
                            "' is data-parallel; rfactor takes one of its reduce loops"));
  if (factor_axis < 0 || factor_axis > static_cast<int>(c->axis.size()))
    throw ScheduleError(
        cat(where, ": factor_axis ", factor_axis, " is out of range [0, ", c->axis.size(), "]"));
  detail::check_no_prefetch(*stage, where, cat("the factored stage '", c->name, ".rf'"));

  // Ranges and values of the reduce loops, which (unlike data-parallel ones) do not depend on
  // bound inference: they come from the reduce axes' domains through the stage's splits/fuses.
  RangeMap ranges;
  for (const IterVar& iv : c->reduce_axis) ranges[iv.get()] = iv.dom();
  std::vector<IterVarRelation> reduce_relations, kept_relations;
  auto is_reduce_rel = [](const IterVarRelation& rel) {
    if (const auto* s = std::get_if<SplitRelation>(&rel)) return s->parent.is_reduce();
    if (const auto* f = std::get_if<FuseRelation>(&rel)) return f->outer.is_reduce();
    if (const auto* r = std::get_if<RebaseRelation>(&rel)) return r->parent.is_reduce();
    return false;
  };
  for (const IterVarRelation& rel : stage->relations)
    (is_reduce_rel(rel) ? reduce_relations : kept_relations).push_back(rel);
  StageNode reduce_only;
  reduce_only.relations = reduce_relations;
  pass_down_domain(reduce_only, ranges);

  // The factored stage: the data-parallel axes, the rfactor axis at factor_axis, and the
  // other reduce loops as its reduce axes.
  std::vector<IterVar> rf_axis;
  VarMap rf_map;
  for (const IterVar& iv : c->axis) {
    rf_axis.emplace_back(iv.dom(), iv.var().copy_with_name(iv.name()), IterVarKind::DataPar);
    rf_map[iv.var().get()] = rf_axis.back().var();
  }
  // The rfactor axis becomes a tensor dimension, so it counts from zero.
  const Range& axis_range = ranges.at(axis.get());
  Expr zero = make_zero(axis_range.extent.dtype());
  IterVar factor_iv(Range(zero, axis_range.extent), Var(axis.name(), axis.var().dtype()),
                    IterVarKind::DataPar);
  rf_axis.insert(rf_axis.begin() + factor_axis, factor_iv);
  std::vector<IterVar> rf_reduce;
  ValueMap counters;
  for (const IterVar& leaf : stage->leaf_iter_vars) {
    if (!leaf.is_reduce()) continue;
    reduce_only.leaf_iter_vars.push_back(leaf);
    if (leaf.same_as(axis)) {
      counters[leaf.get()] =
          is_zero(axis_range.min) ? Expr(factor_iv.var()) : factor_iv.var() + axis_range.min;
    } else {
      rf_reduce.emplace_back(ranges.at(leaf.get()), leaf.var().copy_with_name(leaf.name()),
                             IterVarKind::CommReduce);
      counters[leaf.get()] = rf_reduce.back().var();
    }
  }
  // Leaf loops iterate their whole range (their min is folded into the counter's domain).
  RangeMap zero_based = ranges;
  for (const IterVar& leaf : stage->leaf_iter_vars)
    if (leaf.is_reduce())
      zero_based[leaf.get()] =
          Range(make_zero(ranges.at(leaf.get()).extent.dtype()), ranges.at(leaf.get()).extent);
  ValueMap values = pass_up_index(reduce_only, zero_based, counters);
  Analyzer analyzer;
  for (const IterVar& iv : rf_reduce) analyzer.bind(iv.var(), iv.dom());
  analyzer.bind(factor_iv.var(), factor_iv.dom());
  std::vector<Expr> predicates;
  for (const IterVar& iv : c->reduce_axis) {
    Expr v = analyzer.simplify(values.at(iv.get()));
    rf_map[iv.var().get()] = v;
    Expr end = iv.dom().min + iv.dom().extent;
    if (!analyzer.can_prove(v < end)) predicates.push_back(v < end);
    if (!analyzer.can_prove(v >= iv.dom().min)) predicates.push_back(v >= iv.dom().min);
  }
  // A loop split again with an uneven factor overshoots its own range into the next points of
  // its parent; without this guard those points would be counted twice.
  for (const IterVarRelation& rel : reduce_relations) {
    const auto* split = std::get_if<SplitRelation>(&rel);
    if (!split || std::find_if(c->reduce_axis.begin(), c->reduce_axis.end(),
                               IterVarSameAsFn{split->parent}) != c->reduce_axis.end())
      continue;
    Expr v = analyzer.simplify(values.at(split->parent.get()));
    const Range& range = ranges.at(split->parent.get());
    Expr end = analyzer.simplify(range.min + range.extent);
    if (!analyzer.can_prove(v < end)) predicates.push_back(v < end);
  }
  const auto* r0 = c->body[0].as<ReduceNode>();
  std::vector<Expr> source;
  for (const Expr& e : r0->source) source.push_back(substitute(e, rf_map));
  Expr condition = substitute(r0->condition, rf_map);
  for (const Expr& p : predicates) condition = is_const_int(condition, 1) ? p : (condition && p);
  std::vector<Expr> shape;
  for (const IterVar& iv : rf_axis) shape.push_back(iv.dom().extent);
  std::vector<Expr> rf_body;
  for (int k = 0; k < c->num_outputs(); ++k)
    rf_body.push_back(ReduceNode::make(r0->combiner, source, rf_reduce, condition, k));
  std::string rf_name = c->name + ".rf";
  Operation rf_op(make_ref<ComputeOpNode>(rf_name, c->tag, rf_axis, rf_reduce, rf_reduce, rf_body, shape));
  // Every check is above, and nothing so far changed the schedule: a refused rfactor leaves it
  // as it was.
  insert_stage(sch, rf_op, stage, /*after=*/false);

  // The original stage now reduces the partial results over the rfactor axis.
  IterVar rv(Range(zero, axis_range.extent),
             Var(axis.name() + ".v", axis.var().dtype(), /*reduce_axis=*/true), IterVarKind::CommReduce);
  std::vector<Expr> final_source;
  for (int k = 0; k < c->num_outputs(); ++k) {
    std::vector<Expr> idx;
    for (const IterVar& iv : c->axis) idx.push_back(iv.var());
    idx.insert(idx.begin() + factor_axis, rv.var());
    final_source.push_back(rf_op->output(k)(idx));
  }
  std::vector<Expr> final_body;
  for (int k = 0; k < c->num_outputs(); ++k)
    final_body.push_back(ReduceNode::make(r0->combiner, final_source, {rv}, Expr(true), k));
  stage->op = Operation(make_ref<ComputeOpNode>(c->name, c->tag, c->axis, std::vector<IterVar>{rv},
                                                std::vector<IterVar>{rv}, final_body, c->shape));
  sch.stage_map[stage->op.get()] = stage;

  std::string moved = cat("was factored out by rfactor into stage '", rf_name, "'; '", stage->name(),
                          "' now reduces over '", rv.name(), "'");
  std::vector<IterVar> all, leaves;
  for (const IterVar& iv : stage->all_iter_vars) {
    if (iv.is_reduce()) {
      stage->retired[iv.get()] = moved;
      stage->iter_var_attrs.erase(iv.get());
    } else {
      all.push_back(iv);
    }
  }
  for (const IterVar& iv : c->reduce_axis_origin) stage->retired[iv.get()] = moved;
  for (const IterVar& iv : stage->leaf_iter_vars)
    if (!iv.is_reduce()) leaves.push_back(iv);
  all.push_back(rv);
  leaves.push_back(rv);
  stage->all_iter_vars = all;
  stage->leaf_iter_vars = leaves;
  stage->relations = kept_relations;

  std::vector<Tensor> out;
  for (int k = 0; k < rf_op->num_outputs(); ++k) out.push_back(rf_op->output(k));
  return out;
}

LOOM_DECL Tensor Schedule::rfactor(const Tensor& tensor, const IterVar& axis, int factor_axis) {
  std::vector<Tensor> out = rfactor_all(tensor, axis, factor_axis);
  return out.at(static_cast<size_t>(tensor.value_index()));
}

}  // namespace loom
