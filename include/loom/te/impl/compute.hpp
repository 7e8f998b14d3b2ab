// The definitions of te/compute.hpp: checking a compute's body and cloning its reduce axes.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/te/compute.hpp");

#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/ir/mutator.hpp"
#include "loom/ir/substitute.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/te/compute.hpp"

namespace loom {

LOOM_DECL std::vector<Tensor> ComputeOpNode::input_tensors() const {
  std::vector<Tensor> inputs;
  for (const Expr& b : body) {
    for_each_expr(b, [&](const Expr& e) {
      if (const ProducerLoadNode* load = e.as<ProducerLoadNode>()) {
        Tensor t = as_tensor(load->producer);
        bool seen = false;
        for (const Tensor& x : inputs) seen = seen || x == t;
        if (!seen) inputs.push_back(t);
      }
    });
  }
  return inputs;
}

LOOM_DECL IterVar Tensor::axis(int i) const {
  const auto* c = op()->kind == OpKind::Compute ? static_cast<const ComputeOpNode*>(op().get()) : nullptr;
  if (!c)
    throw Error(cat("tensor '", name(), "' is produced by a ", op_kind_name(op()->kind),
                    ", which has no compute axes"));
  if (i < 0 || i >= static_cast<int>(c->axis.size()))
    throw Error(
        cat("compute '", op()->name, "' has ", c->axis.size(), " axes; axis(", i, ") does not exist",
            c->axis.empty() ? std::string() : cat(" (use axis(0) to axis(", c->axis.size() - 1, "))")));
  return c->axis[static_cast<size_t>(i)];
}
LOOM_DECL IterVar Tensor::reduce_axis(int i) const {
  const auto* c = op()->kind == OpKind::Compute ? static_cast<const ComputeOpNode*>(op().get()) : nullptr;
  if (!c)
    throw Error(cat("tensor '", name(), "' is produced by a ", op_kind_name(op()->kind),
                    ", which has no reduce axes"));
  if (i < 0 || i >= static_cast<int>(c->reduce_axis.size()))
    throw Error(cat("compute '", op()->name, "' has ", c->reduce_axis.size(), " reduce axes; reduce_axis(", i,
                    ") does not exist",
                    c->reduce_axis.empty()
                        ? std::string()
                        : cat(" (use reduce_axis(0) to reduce_axis(", c->reduce_axis.size() - 1, "))")));
  return c->reduce_axis[static_cast<size_t>(i)];
}

namespace detail {

/// Checks the reductions of a compute body and clones its reduce axes for this compute.
class ReduceAxisCloner : public IRMutator {
 public:
  explicit ReduceAxisCloner(std::string op_name) : op_name_(std::move(op_name)) {}
  std::vector<IterVar> origin, clones;
  using IRMutator::mutate;

  /// Clones the axes of the reduction that forms the whole of `body`, if it is one.
  Expr mutate_body(const Expr& body) {
    top_level_ = body.as<ReduceNode>() != nullptr;
    return mutate(body);
  }

 protected:
  using IRMutator::visit;

  IterVar clone_of(const IterVar& iv) {
    for (size_t i = 0; i < origin.size(); ++i)
      if (origin[i].same_as(iv)) return clones[i];
    IterVar c(iv.dom(), iv.var().copy_with_name(iv.name()), IterVarKind::CommReduce);
    origin.push_back(iv);
    clones.push_back(c);
    map_[iv.var().get()] = c.var();
    return c;
  }

  Expr visit(const ReduceNode* op) override {
    if (!top_level_)
      throw Error(cat("compute '", op_name_, "': a reduction (", op->combiner->name,
                      ") must be the whole body of a compute, but one appears inside a larger expression; "
                      "compute the reduction in a compute of its own and combine the results in another"));
    top_level_ = false;
    std::vector<IterVar> axis;
    for (const IterVar& iv : op->axis) axis.push_back(clone_of(iv));
    active_.clear();
    for (const IterVar& iv : op->axis) active_.insert(iv.var().get());
    bool changed = false;
    std::vector<Expr> source = mutate_all(op->source, changed);
    Expr condition = mutate(op->condition);
    active_.clear();
    return ReduceNode::make(op->combiner, std::move(source), std::move(axis), condition, op->value_index);
  }

  Expr visit(const VarNode* op) override {
    if (!op->is_reduce_axis) return self(op);
    if (!active_.count(op))
      throw Error(cat("compute '", op_name_, "': reduce axis '", op->name,
                      "' is used outside of a reduction that lists it; wrap the expression that uses it in a "
                      "reducer with the axis listed, e.g. sum(expr, {",
                      op->name, "})"));
    return map_.at(op);
  }

 private:
  std::string op_name_;
  bool top_level_ = false;
  std::unordered_set<const VarNode*> active_;
  VarMap map_;
};

/// Gives the data axes in `vars` names that no reduce axis of `body` has (i, j, l for a 3-d
/// compute reducing over k), substituting the renamed variables into `body`.
inline void rename_axes_apart_from_reductions(std::vector<Var>& vars, std::vector<Expr>& body) {
  std::unordered_set<std::string> taken;
  for (const Expr& b : body)
    if (const ReduceNode* r = b.as<ReduceNode>())
      for (const IterVar& k : r->axis) taken.insert(k->var.name());
  bool clash = false;
  for (const Var& v : vars) clash = clash || taken.count(v.name());
  if (!clash) return;
  const std::vector<std::string> candidates = {"i", "j", "k", "l", "m", "n", "o", "p", "q", "r", "s", "t"};
  VarMap renamed;
  size_t next = 0;
  for (Var& v : vars) {
    while (next < candidates.size() && taken.count(candidates[next])) ++next;
    std::string fresh = next < candidates.size() ? candidates[next++] : cat("ax", &v - vars.data());
    taken.insert(fresh);
    Var replacement(fresh, v.dtype());
    renamed[v.get()] = replacement;
    v = replacement;
  }
  for (Expr& b : body) b = substitute(b, renamed);
}

LOOM_DECL std::vector<Tensor> build_compute(const std::vector<Expr>& shape, std::vector<Var> vars,
                                            std::vector<Expr> body, const std::string& name,
                                            const std::string& tag, bool default_names) {
  if (body.empty()) throw Error(cat("compute '", name, "': the lambda returned no values"));
  if (default_names) rename_axes_apart_from_reductions(vars, body);
  std::vector<IterVar> axis;
  for (size_t d = 0; d < shape.size(); ++d)
    axis.emplace_back(Range(make_zero(shape[d].dtype()), shape[d]), vars[d], IterVarKind::DataPar);

  bool reduction = body[0].defined() && body[0].as<ReduceNode>();
  for (size_t i = 0; i < body.size(); ++i) {
    if (!body[i].defined())
      throw Error(cat("compute '", name, "': output ", i, " of the lambda is undefined"));
    if (body[i].dtype().lanes != 1 || body[i].dtype().is_handle())
      throw Error(cat("compute '", name, "': output ", i, " has type ", body[i].dtype().str(),
                      "; a compute produces scalar elements"));
    const ReduceNode* r = body[i].as<ReduceNode>();
    if (static_cast<bool>(r) != reduction)
      throw Error(cat("compute '", name,
                      "': either every output of a multi-output compute is a reduction or none is"));
    if (r && i > 0) {
      const ReduceNode* r0 = body[0].as<ReduceNode>();
      bool same = r->combiner.same_as(r0->combiner) && r->source.size() == r0->source.size() &&
                  r->axis.size() == r0->axis.size() && r->condition.same_as(r0->condition);
      for (size_t k = 0; same && k < r->source.size(); ++k) same = r->source[k].same_as(r0->source[k]);
      for (size_t k = 0; same && k < r->axis.size(); ++k) same = r->axis[k].same_as(r0->axis[k]);
      if (!same || r->value_index != static_cast<int>(i))
        throw Error(
            cat("compute '", name,
                "': the outputs of a multi-output reduction must be the values of one tuple reducer, in "
                "order (write auto [a, b] = my_reducer({x, y}, {k}) and return {a, b})"));
    }
  }

  ReduceAxisCloner cloner(name);
  std::vector<Expr> new_body;
  for (const Expr& b : body) new_body.push_back(cloner.mutate_body(b));
  ComputeOpNode::share_tuple_source(new_body);
  Operation op(make_ref<ComputeOpNode>(name, tag, std::move(axis), cloner.clones, cloner.origin,
                                       std::move(new_body), shape));
  std::vector<Tensor> outputs;
  for (int i = 0; i < op->num_outputs(); ++i) outputs.push_back(op->output(i));
  return outputs;
}

}  // namespace detail

}  // namespace loom
