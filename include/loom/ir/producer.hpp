// A producer is anything that can be read element-wise before storage is flattened: a TE
// tensor. ProducerLoad reads one element by multi-dimensional index.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "loom/ir/expr.hpp"

namespace loom {

class ProducerNode : public Object {
 public:
  virtual const std::string& producer_name() const = 0;
  virtual DType producer_dtype() const = 0;
  virtual const std::vector<Expr>& producer_shape() const = 0;
};
using Producer = Ref<const ProducerNode>;

class ProducerLoadNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::ProducerLoad;
  ProducerLoadNode(Producer p, std::vector<Expr> idx)
      : ExprNode(node_kind, p->producer_dtype()), producer(std::move(p)), indices(std::move(idx)) {}
  const Producer producer;
  const std::vector<Expr> indices;
  static Expr make(Producer producer, std::vector<Expr> indices) {
    return Expr(make_ref<ProducerLoadNode>(std::move(producer), std::move(indices)));
  }
};

}  // namespace loom
