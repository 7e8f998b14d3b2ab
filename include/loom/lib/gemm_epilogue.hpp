// What lib::gemm applies to each element of the product before it stores C: a bias, a scale, a
// residual, an activation, any expression of the product and of extra input tensors. It is part of
// the GEMM's own kernel (the pass that writes C), not a second kernel over C.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loom/ir/op.hpp"
#include "loom/te/tensor.hpp"

namespace loom::lib {

/// C[index] = apply(product, index), where `index` is C's element as the user indexes C: the batch
/// (when batched), then row i of the m x n product, then column j, whatever the storage layout.
struct GemmEpilogue {
  /// Maps the product's value at C index `index` to the value stored; empty for no epilogue.
  std::function<Expr(const Expr& product, const std::vector<Expr>& index)> apply;
  /// The tensors `apply` reads (placeholders: bias vectors, scales, a residual matrix). They become
  /// the kernel's arguments after A and B, in this order, before C.
  std::vector<Tensor> inputs;
  std::string name = "custom";  ///< for descriptions and bench lines

  /// True when there is no epilogue (C is the product).
  bool empty() const { return !apply; }
};

/// max(x, 0).
inline Expr relu(const Expr& x) { return max(x, make_zero(x.dtype())); }

/// x * (1 + erf(x / sqrt(2))) / 2: GELU as its definition, not the tanh approximation.
inline Expr gelu(const Expr& x) {
  const DType t = x.dtype();
  return make_const(t, 0.5) * x * (make_const(t, 1.0) + erf(x * make_const(t, 0.7071067811865476)));
}

/// C = product + bias[j], then `activation` ("none", "relu", "gelu", "tanh" or "sigmoid"); bias is
/// a placeholder of n elements, C's element type.
inline GemmEpilogue bias_activation(const Tensor& bias, const std::string& activation = "none") {
  std::function<Expr(const Expr&)> act;
  if (activation == "none")
    act = [](const Expr& x) { return x; };
  else if (activation == "relu")
    act = [](const Expr& x) { return relu(x); };
  else if (activation == "gelu")
    act = [](const Expr& x) { return gelu(x); };
  else if (activation == "tanh")
    act = [](const Expr& x) { return tanh(x); };
  else if (activation == "sigmoid")
    act = [](const Expr& x) { return sigmoid(x); };
  else
    throw Error(cat("lib::bias_activation: activation '", activation,
                    "' is not one of none, relu, gelu, tanh, sigmoid; write a GemmEpilogue for others"));
  GemmEpilogue e;
  e.inputs = {bias};
  e.name = activation == "none" ? "bias" : "bias_" + activation;
  e.apply = [bias, act](const Expr& product, const std::vector<Expr>& index) {
    return act(product + bias(index.back()));
  };
  return e;
}

}  // namespace loom::lib
