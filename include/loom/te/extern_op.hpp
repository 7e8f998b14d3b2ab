// extern_compute(): a stage whose outputs a user C++ function computes from its inputs.
// Loom schedules around it (it reads its inputs whole) and calls the function at run time.
#pragma once

#include <string>
#include <vector>

#include "loom/te/extern_registry.hpp"
#include "loom/te/placeholder.hpp"

namespace loom {

/// The operation extern_compute() makes: outputs computed by a registered C++ function (ExternRegistry).
class ExternOpNode : public OperationNode {
 public:
  /// Stores the fields unchecked; use extern_compute().
  ExternOpNode(std::string n, std::vector<Tensor> in, std::vector<std::vector<Expr>> shapes,
               std::vector<DType> types, int64_t id)
      : OperationNode(OpKind::Extern, std::move(n), ""),
        inputs(std::move(in)),
        output_shapes(std::move(shapes)),
        output_dtypes(std::move(types)),
        function_id(id) {}
  /// The tensors passed to the function as inputs.
  const std::vector<Tensor> inputs;
  /// The shape of each output.
  const std::vector<std::vector<Expr>> output_shapes;
  /// The element type of each output.
  const std::vector<DType> output_dtypes;
  const int64_t function_id;  ///< in ExternRegistry::global()

  /// The OperationNode interface: the declared outputs, the given inputs, no axes to schedule.
  /// @{
  int num_outputs() const override { return static_cast<int>(output_shapes.size()); }
  DType output_dtype(int i) const override { return output_dtypes.at(static_cast<size_t>(i)); }
  const std::vector<Expr>& output_shape(int i) const override {
    return output_shapes.at(static_cast<size_t>(i));
  }
  std::vector<Tensor> input_tensors() const override { return inputs; }
  std::vector<IterVar> root_iter_vars() const override { return {}; }
  /// @}
};

/// Several outputs computed by `fn(inputs, outputs)`; buffers arrive as BufferViews.
inline std::vector<Tensor> extern_compute(std::vector<std::vector<Expr>> output_shapes,
                                          std::vector<DType> output_dtypes, std::vector<Tensor> inputs,
                                          ExternFunction fn, std::string name = "extern") {
  if (output_shapes.empty() || output_shapes.size() != output_dtypes.size())
    throw Error(cat("extern_compute '", name, "': give one dtype per output shape (got ",
                    output_shapes.size(), " shapes and ", output_dtypes.size(), " dtypes)"));
  for (const std::vector<Expr>& s : output_shapes) detail::check_shape(s, "extern_compute '" + name + "'");
  for (const Tensor& t : inputs)
    if (!t.defined()) throw Error(cat("extern_compute '", name, "': an input tensor is undefined"));
  if (!fn) throw Error(cat("extern_compute '", name, "': the function is empty"));
  int64_t id = ExternRegistry::global().add(std::move(fn), name);
  Operation op(make_ref<ExternOpNode>(name, std::move(inputs), std::move(output_shapes),
                                      std::move(output_dtypes), id));
  std::vector<Tensor> out;
  for (int i = 0; i < op->num_outputs(); ++i) out.push_back(op->output(i));
  return out;
}

/// One output computed by `fn(inputs, outputs)`.
inline Tensor extern_compute(std::vector<Expr> shape, DType dtype, std::vector<Tensor> inputs,
                             ExternFunction fn, std::string name = "extern") {
  return extern_compute(std::vector<std::vector<Expr>>{std::move(shape)}, {dtype}, std::move(inputs),
                        std::move(fn), std::move(name))
      .at(0);
}

}  // namespace loom
