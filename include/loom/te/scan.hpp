// scan(): a recurrence over the first axis (TVM semantics). `init` gives the first rows,
// `update` computes row t from the state placeholder at earlier rows; the result holds all rows.
#pragma once

#include <string>
#include <vector>

#include "loom/support/config.hpp"
#include "loom/te/compute.hpp"

namespace loom {

/// The operation scan() makes: a recurrence over `scan_axis` with init, update and state tensors, one of
/// each per output.
class ScanOpNode : public OperationNode {
 public:
  /// Stores the fields unchecked; use scan(), which checks them.
  ScanOpNode(std::string n, IterVar axis, std::vector<Tensor> i, std::vector<Tensor> u, std::vector<Tensor> s,
             std::vector<Tensor> in)
      : OperationNode(OpKind::Scan, std::move(n), ""),
        scan_axis(std::move(axis)),
        init(std::move(i)),
        update(std::move(u)),
        state_placeholder(std::move(s)),
        inputs(std::move(in)) {}
  /// The time axis, over [rows of init, rows of update).
  const IterVar scan_axis;
  /// The first rows of each output.
  const std::vector<Tensor> init;
  /// Each output's later rows, computed from the state.
  const std::vector<Tensor> update;
  /// The placeholders that stand for the outputs inside `update`.
  const std::vector<Tensor> state_placeholder;
  /// Other tensors `update` reads.
  const std::vector<Tensor> inputs;

  /// The OperationNode interface: one output per update tensor, shaped like it; reads init and update.
  /// @{
  int num_outputs() const override { return static_cast<int>(update.size()); }
  DType output_dtype(int i) const override { return update.at(static_cast<size_t>(i)).dtype(); }
  const std::vector<Expr>& output_shape(int i) const override {
    return update.at(static_cast<size_t>(i)).shape();
  }
  std::vector<Tensor> input_tensors() const override {
    std::vector<Tensor> all = init;
    all.insert(all.end(), update.begin(), update.end());
    return all;
  }
  std::vector<IterVar> root_iter_vars() const override { return {scan_axis}; }
  /// @}
};

/// A scan over the first axis of `update`: rows [0, rows of init) are `init`, each later row t is
/// `update`, which may read rows before t of `state_placeholder` (the scan's own result).
LOOM_DECL std::vector<Tensor> scan(std::vector<Tensor> init, std::vector<Tensor> update,
                                   std::vector<Tensor> state_placeholder, std::vector<Tensor> inputs = {},
                                   std::string name = "scan");

/// The single-output scan.
inline Tensor scan(Tensor init, Tensor update, Tensor state_placeholder, std::vector<Tensor> inputs = {},
                   std::string name = "scan") {
  return scan(std::vector<Tensor>{init}, {update}, {state_placeholder}, std::move(inputs), std::move(name))
      .at(0);
}

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/te/impl/scan.hpp"
#endif
