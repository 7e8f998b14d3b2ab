// A producer is anything that can be read element-wise before storage is flattened: a TE
// tensor. ProducerLoad reads one element by multi-dimensional index.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "loom/ir/expr.hpp"

namespace loom {

/// Something a computation reads element-wise before storage flattening: a TE tensor (TensorNode).
class ProducerNode : public Object {
 public:
  /// The producer's name, element type and shape (one extent per dimension).
  /// @{
  virtual const std::string& producer_name() const = 0;
  virtual DType producer_dtype() const = 0;
  virtual const std::vector<Expr>& producer_shape() const = 0;
  /// @}
};
/// A shared handle to a producer.
using Producer = Ref<const ProducerNode>;

/// producer(indices): a read of one element of a producer by multi-dimensional index, before flattening.
class ProducerLoadNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::ProducerLoad;  ///< The kind as<T>() looks for.
  /// Stores the operands; prefer make().
  ProducerLoadNode(Producer p, std::vector<Expr> idx)
      : ExprNode(node_kind, p->producer_dtype()), producer(std::move(p)), indices(std::move(idx)) {}
  /// The producer read and one index per dimension.
  /// @{
  const Producer producer;
  const std::vector<Expr> indices;
  /// @}
  /// A read of `producer` at `indices` (one per dimension), of the producer's element type.
  static Expr make(Producer producer, std::vector<Expr> indices) {
    return Expr(make_ref<ProducerLoadNode>(std::move(producer), std::move(indices)));
  }
};

}  // namespace loom
