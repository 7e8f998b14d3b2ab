// Commutative reducers (sum, min, max, prod, user-defined, multi-value like argmax) and the
// Reduce expression that a compute's body uses to reduce over its reduce axes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "loom/ir/iter_var.hpp"

namespace loom {

/// combiner(lhs, rhs) -> result, applied element-wise over a tuple of values, with identity.
class CommReducerNode : public Object {
 public:
  /// Stores the fields: `l` and `r` are the combiner's parameters, `res` the combined values, `id` the
  /// identities.
  CommReducerNode(std::vector<Var> l, std::vector<Var> r, std::vector<Expr> res, std::vector<Expr> id,
                  std::string n)
      : lhs(std::move(l)),
        rhs(std::move(r)),
        result(std::move(res)),
        identity(std::move(id)),
        name(std::move(n)) {}
  /// The parameters of the combiner: the accumulated values (lhs) and the incoming ones (rhs).
  /// @{
  const std::vector<Var> lhs, rhs;
  /// @}
  /// The combined values, in terms of lhs and rhs.
  const std::vector<Expr> result;
  /// The identity of each value (0 for sum).
  const std::vector<Expr> identity;
  /// The reducer's name, for printing.
  const std::string name;
  /// The number of values the reducer combines (1 but for tuple reducers like argmax).
  std::size_t size() const { return result.size(); }
};
/// A shared handle to a reducer.
using CommReducer = Ref<const CommReducerNode>;

/// Reduce `source` over `axis` with `combiner`, keeping only points where `condition` holds.
/// A multi-value reducer produces one Reduce per value, told apart by value_index.
class ReduceNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Reduce;  ///< The kind as<T>() looks for.
  /// Stores the operands; prefer make().
  ReduceNode(DType t, CommReducer c, std::vector<Expr> s, std::vector<IterVar> a, Expr cond, int vi)
      : ExprNode(node_kind, t),
        combiner(std::move(c)),
        source(std::move(s)),
        axis(std::move(a)),
        condition(std::move(cond)),
        value_index(vi) {}
  /// How values are combined.
  const CommReducer combiner;
  /// The values reduced (several for a tuple reducer).
  const std::vector<Expr> source;
  /// The reduce axes.
  const std::vector<IterVar> axis;
  /// Only points where this bool holds take part.
  const Expr condition;
  /// Which of the tuple's values this node gives.
  const int value_index;
  /// Value `value_index` of the reduction of `source` over `axis` (reduce axes) where `condition` holds.
  static Expr make(CommReducer combiner, std::vector<Expr> source, std::vector<IterVar> axis, Expr condition,
                   int value_index) {
    DType t = source.at(value_index).dtype();
    return Expr(make_ref<ReduceNode>(t, std::move(combiner), std::move(source), std::move(axis),
                                     std::move(condition), value_index));
  }
};

}  // namespace loom
