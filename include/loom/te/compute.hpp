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

#include "loom/support/config.hpp"
#include "loom/te/placeholder.hpp"
#include "loom/te/reduction.hpp"

namespace loom {

/// The operation compute() makes: one body expression per output over the data-parallel `axis`,
/// and the reduce axes the bodies reduce over (cloned per compute from the user's reduce_axis handles).
class ComputeOpNode : public OperationNode {
 public:
  /// Stores the fields unchecked; use compute(), which builds the axes and checks the body.
  ComputeOpNode(std::string n, std::string t, std::vector<IterVar> ax, std::vector<IterVar> rax,
                std::vector<IterVar> rax_origin, std::vector<Expr> b, std::vector<Expr> s)
      : OperationNode(OpKind::Compute, std::move(n), std::move(t)),
        axis(std::move(ax)),
        reduce_axis(std::move(rax)),
        reduce_axis_origin(std::move(rax_origin)),
        body(std::move(b)),
        shape(std::move(s)) {}
  /// The data-parallel axes, one per output dimension.
  const std::vector<IterVar> axis;
  /// The reduce axes of this compute (its own copies).
  const std::vector<IterVar> reduce_axis;
  /// The user's reduce_axis handles these were cloned from, in the same order.
  const std::vector<IterVar> reduce_axis_origin;
  const std::vector<Expr> body;  ///< one per output
  /// The output shape, the extents of `axis`.
  const std::vector<Expr> shape;

  /// The OperationNode interface: one output per body, all of `shape`; the tensors the bodies read;
  /// the axes, data-parallel then reduce.
  /// @{
  int num_outputs() const override { return static_cast<int>(body.size()); }
  DType output_dtype(int i) const override { return body.at(static_cast<size_t>(i)).dtype(); }
  const std::vector<Expr>& output_shape(int) const override { return shape; }
  LOOM_DECL std::vector<Tensor> input_tensors() const override;
  std::vector<IterVar> root_iter_vars() const override {
    std::vector<IterVar> all = axis;
    all.insert(all.end(), reduce_axis.begin(), reduce_axis.end());
    return all;
  }
  /// @}
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

namespace detail {

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

/// The compute operation of `body` over axes `vars` of `shape` (after the lambda ran): checks the
/// outputs and reductions, clones the reduce axes for this compute. With `default_names`, a data
/// axis whose default name a reduce axis also has (k, in a 3-d compute reducing over k) takes the
/// next free name instead, so that the printed loops stay apart.
LOOM_DECL std::vector<Tensor> build_compute(const std::vector<Expr>& shape, std::vector<Var> vars,
                                            std::vector<Expr> body, const std::string& name,
                                            const std::string& tag, bool default_names = false);

}  // namespace detail

/// Defines a tensor element-wise: C = compute({n, m}, [&](Expr i, Expr j) { return A(i, j) + 1; }, "C").
/// The lambda takes one Expr per dimension, or a `const std::vector<Var>&`. Returning an Expr
/// gives a Tensor; returning a std::vector<Expr> gives a std::vector<Tensor> (several outputs
/// computed together). `axis_names` names the axes (default i, j, k, ..., skipping the
/// names of the compute's reduce axes).
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
  const bool default_names = axis_names.empty();
  if (default_names) axis_names = detail::default_axis_names(shape.size());
  if (axis_names.size() != shape.size())
    throw Error(cat("compute '", name, "': ", axis_names.size(), " axis names given for ", shape.size(),
                    " dimensions"));
  std::vector<Var> vars;
  for (size_t d = 0; d < shape.size(); ++d) vars.emplace_back(axis_names[d], shape[d].dtype());

  using Result = std::decay_t<decltype(detail::call_compute_lambda(fcompute, vars))>;
  if constexpr (std::is_convertible_v<Result, std::vector<Expr>> && !std::is_convertible_v<Result, Expr>) {
    std::vector<Expr> body = detail::call_compute_lambda(fcompute, vars);
    return detail::build_compute(shape, std::move(vars), std::move(body), name, tag, default_names);
  } else {
    static_assert(std::is_convertible_v<Result, Expr>,
                  "compute(): the lambda must return an Expr or a std::vector<Expr>");
    Expr body = detail::call_compute_lambda(fcompute, vars);
    return detail::build_compute(shape, std::move(vars), {std::move(body)}, name, tag, default_names).at(0);
  }
}

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/te/impl/compute.hpp"
#endif
