// compute(): a tensor defined element-wise by a lambda over its indices, possibly a
// reduction, possibly several outputs at once (a tuple). The ComputeOp owns its axes; reduce
// axes are cloned per compute so that one reduce_axis handle can serve several computes.
#pragma once

#include <string>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/ir/substitute.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/te/placeholder.hpp"
#include "loom/te/reduction.hpp"

namespace loom {

class ComputeOpNode : public OperationNode {
 public:
  ComputeOpNode(std::string n, std::string t, std::vector<IterVar> ax, std::vector<IterVar> rax,
                std::vector<IterVar> rax_origin, std::vector<Expr> b, std::vector<Expr> s)
      : OperationNode(OpKind::Compute, std::move(n), std::move(t)),
        axis(std::move(ax)),
        reduce_axis(std::move(rax)),
        reduce_axis_origin(std::move(rax_origin)),
        body(std::move(b)),
        shape(std::move(s)) {}
  const std::vector<IterVar> axis;
  const std::vector<IterVar> reduce_axis;
  /// The user's reduce_axis handles these were cloned from, in the same order.
  const std::vector<IterVar> reduce_axis_origin;
  const std::vector<Expr> body;  // one per output
  const std::vector<Expr> shape;

  int num_outputs() const override { return static_cast<int>(body.size()); }
  DType output_dtype(int i) const override { return body.at(static_cast<size_t>(i)).dtype(); }
  const std::vector<Expr>& output_shape(int) const override { return shape; }
  std::vector<Tensor> input_tensors() const override {
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
  std::vector<IterVar> root_iter_vars() const override {
    std::vector<IterVar> all = axis;
    all.insert(all.end(), reduce_axis.begin(), reduce_axis.end());
    return all;
  }
  /// Whether the body is a reduction (then every output's body is a Reduce).
  bool is_reduction() const { return body.at(0).as<ReduceNode>() != nullptr; }

  /// The same computation with another body (inlining rewrites bodies; the axes stay).
  Ref<ComputeOpNode> with_body(std::vector<Expr> new_body) const {
    return make_ref<ComputeOpNode>(name, tag, axis, reduce_axis, reduce_axis_origin, std::move(new_body),
                                   shape);
  }

  /// The same computation with `rewrite` applied to each output's body.
  template <typename F>
  Ref<ComputeOpNode> map_body(F&& rewrite) const {
    std::vector<Expr> out;
    for (const Expr& b : body) out.push_back(rewrite(b));
    share_tuple_source(out);
    return with_body(std::move(out));
  }

  /// The values of a tuple reduction must keep one shared source (and condition) after a
  /// rewrite of each value: every value is rebuilt from the first.
  static void share_tuple_source(std::vector<Expr>& bodies) {
    const auto* r0 = bodies.empty() ? nullptr : bodies[0].as<ReduceNode>();
    if (!r0 || bodies.size() < 2) return;
    for (size_t i = 1; i < bodies.size(); ++i)
      bodies[i] = ReduceNode::make(r0->combiner, r0->source, r0->axis, r0->condition, static_cast<int>(i));
  }
};

inline IterVar Tensor::axis(int i) const {
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
inline IterVar Tensor::reduce_axis(int i) const {
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

template <typename F, size_t... Is>
auto invoke_with_axes(F& f, const std::vector<Var>& v, std::index_sequence<Is...>)
    -> decltype(f(Expr(v[Is])...)) {
  return f(Expr(v[Is])...);
}

template <size_t, typename T>
using repeat_type = T;
template <typename F, typename Seq>
struct invocable_with_seq;
template <typename F, size_t... Is>
struct invocable_with_seq<F, std::index_sequence<Is...>> : std::is_invocable<F&, repeat_type<Is, Expr>...> {};
template <typename F, size_t N>
using invocable_with_n = invocable_with_seq<F, std::make_index_sequence<N>>;

/// The number of index arguments a compute lambda takes (0..8), or -1 when it takes a vector.
template <typename F>
constexpr int compute_arity() {
  if constexpr (std::is_invocable_v<F&, const std::vector<Var>&>)
    return -1;
  else if constexpr (invocable_with_n<F, 0>::value)
    return 0;
  else if constexpr (invocable_with_n<F, 1>::value)
    return 1;
  else if constexpr (invocable_with_n<F, 2>::value)
    return 2;
  else if constexpr (invocable_with_n<F, 3>::value)
    return 3;
  else if constexpr (invocable_with_n<F, 4>::value)
    return 4;
  else if constexpr (invocable_with_n<F, 5>::value)
    return 5;
  else if constexpr (invocable_with_n<F, 6>::value)
    return 6;
  else if constexpr (invocable_with_n<F, 7>::value)
    return 7;
  else if constexpr (invocable_with_n<F, 8>::value)
    return 8;
  else
    return -2;
}

template <typename F>
decltype(auto) call_compute_lambda(F& f, const std::vector<Var>& axes) {
  constexpr int arity = compute_arity<F>();
  static_assert(
      arity != -2,
      "compute(): the lambda must take one Expr per dimension (at most 8) or a const std::vector<Var>&");
  if constexpr (arity == -1) {
    return f(axes);
  } else {
    return invoke_with_axes(f, axes, std::make_index_sequence<static_cast<size_t>(arity)>());
  }
}

inline std::vector<std::string> default_axis_names(size_t rank) {
  static const char* names[] = {"i", "j", "k", "l", "m", "n", "o", "p"};
  std::vector<std::string> out;
  for (size_t d = 0; d < rank; ++d) out.push_back(rank <= 8 ? names[d] : "ax" + std::to_string(d));
  return out;
}

inline std::vector<Tensor> build_compute(const std::vector<Expr>& shape, std::vector<Var> vars,
                                         std::vector<Expr> body, const std::string& name,
                                         const std::string& tag) {
  if (body.empty()) throw Error(cat("compute '", name, "': the lambda returned no values"));
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

/// Defines a tensor element-wise: C = compute({n, m}, [&](Expr i, Expr j) { return A(i, j) + 1; }, "C").
/// The lambda takes one Expr per dimension, or a `const std::vector<Var>&`. Returning an Expr
/// gives a Tensor; returning a std::vector<Expr> gives a std::vector<Tensor> (several outputs
/// computed together). `axis_names` names the axes (default i, j, k, ...).
template <typename F>
auto compute(std::vector<Expr> shape, F fcompute, std::string name = "compute", std::string tag = "",
             std::vector<std::string> axis_names = {}) {
  detail::check_shape(shape, "compute '" + name + "'");
  constexpr int arity = detail::compute_arity<F>();
  if (arity >= 0 && static_cast<size_t>(arity) != shape.size())
    throw Error(cat("compute '", name, "': the shape has ", shape.size(), " dimension",
                    shape.size() == 1 ? "" : "s", " but the lambda takes ", arity, " index argument",
                    arity == 1 ? "" : "s",
                    "; give the lambda one index per dimension, or make it take a const std::vector<Var>&"));
  if (axis_names.empty()) axis_names = detail::default_axis_names(shape.size());
  if (axis_names.size() != shape.size())
    throw Error(cat("compute '", name, "': ", axis_names.size(), " axis names given for ", shape.size(),
                    " dimensions"));
  std::vector<Var> vars;
  for (size_t d = 0; d < shape.size(); ++d) vars.emplace_back(axis_names[d], shape[d].dtype());

  using Result = std::decay_t<decltype(detail::call_compute_lambda(fcompute, vars))>;
  if constexpr (std::is_convertible_v<Result, std::vector<Expr>> && !std::is_convertible_v<Result, Expr>) {
    std::vector<Expr> body = detail::call_compute_lambda(fcompute, vars);
    return detail::build_compute(shape, std::move(vars), std::move(body), name, tag);
  } else {
    static_assert(std::is_convertible_v<Result, Expr>,
                  "compute(): the lambda must return an Expr or a std::vector<Expr>");
    Expr body = detail::call_compute_lambda(fcompute, vars);
    return detail::build_compute(shape, std::move(vars), {std::move(body)}, name, tag).at(0);
  }
}

}  // namespace loom
