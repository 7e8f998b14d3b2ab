// placeholder(): an input tensor of a computation, filled by the caller at run time.
// Its shape may use symbolic size variables, bound from the buffers passed at call time.
#pragma once

#include <string>
#include <vector>

#include "loom/te/tensor.hpp"

namespace loom {

/// The operation placeholder() makes: an input with a shape and element type and nothing to compute.
class PlaceholderOpNode : public OperationNode {
 public:
  /// Stores the fields; use placeholder(), which checks the shape.
  PlaceholderOpNode(std::string n, std::vector<Expr> s, DType t)
      : OperationNode(OpKind::Placeholder, std::move(n), ""), shape(std::move(s)), dtype(t) {}
  /// The extents (constants or size variables).
  const std::vector<Expr> shape;
  /// The element type.
  const DType dtype;

  /// The OperationNode interface: one output, no inputs, no axes to schedule.
  /// @{
  int num_outputs() const override { return 1; }
  DType output_dtype(int) const override { return dtype; }
  const std::vector<Expr>& output_shape(int) const override { return shape; }
  std::vector<Tensor> input_tensors() const override { return {}; }
  std::vector<IterVar> root_iter_vars() const override { return {}; }
  /// @}
};

namespace detail {
/// Checks that every extent is a scalar integer; `what` names the call for the message.
inline void check_shape(const std::vector<Expr>& shape, const std::string& what) {
  for (size_t i = 0; i < shape.size(); ++i) {
    const Expr& e = shape[i];
    if (!e.defined() || !e.dtype().is_integral() || e.dtype().is_bool() || e.dtype().lanes != 1)
      throw Error(
          cat(what, ": extent ", i, " of the shape must be a scalar integer (a constant or a size Var)"));
    if (const int64_t* v = as_const_int(e); v && *v < 0)
      throw Error(cat(what, ": extent ", i, " of the shape is ", *v, "; extents must not be negative"));
  }
}
}  // namespace detail

/// An input tensor of `shape` (integer constants or size_var()s) and `dtype` (float32 by default),
/// filled by the caller at run time; throws loom::Error for a negative or non-integer extent.
inline Tensor placeholder(std::vector<Expr> shape, DType dtype = f32, std::string name = "placeholder") {
  detail::check_shape(shape, "placeholder '" + name + "'");
  return Tensor(Operation(make_ref<PlaceholderOpNode>(std::move(name), std::move(shape), dtype)), 0);
}

/// A symbolic size (an extent known only at call time), e.g. `Var n = size_var("n");`.
inline Var size_var(std::string name, DType dtype = i32) { return Var(std::move(name), dtype); }

}  // namespace loom
