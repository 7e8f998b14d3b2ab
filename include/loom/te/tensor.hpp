// Tensor and Operation: a Tensor is one output of an Operation (placeholder, compute, extern,
// scan); indexing a tensor, A(i, k), builds the expression that reads one of its elements.
#pragma once

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/ir/iter_var.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/printer.hpp"
#include "loom/ir/producer.hpp"

namespace loom {

class Tensor;

/// The kind of an OperationNode: placeholder (an input), compute, extern (a C function), scan.
enum class OpKind : uint8_t { Placeholder, Compute, Extern, Scan };

/// The name of an OpKind as messages print it ("placeholder", "compute", "extern", "scan").
inline const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Placeholder: return "placeholder";
    case OpKind::Compute: return "compute";
    case OpKind::Extern: return "extern";
    case OpKind::Scan: return "scan";
  }
  return "?";
}

/// What produces tensors. Concrete operations live in te/{placeholder,compute,extern,scan}.hpp.
class OperationNode : public Object {
 public:
  /// Called by the concrete operations; `n` is the operation's name, `t` a free-form tag (e.g. "gemm").
  OperationNode(OpKind k, std::string n, std::string t) : kind(k), name(std::move(n)), tag(std::move(t)) {}
  /// What kind of operation this is.
  const OpKind kind;
  /// The operation's name (its tensors' names derive from it).
  const std::string name;
  /// A free-form tag ("gemm", ...), or empty.
  const std::string tag;

  /// The number of outputs, and output i's element type and shape (one extent per dimension).
  /// @{
  virtual int num_outputs() const = 0;
  virtual DType output_dtype(int i) const = 0;
  virtual const std::vector<Expr>& output_shape(int i) const = 0;
  /// @}
  /// The tensors this operation reads, each once, in order of first use.
  virtual std::vector<Tensor> input_tensors() const = 0;
  /// The axes a schedule stage of this operation starts from (data-parallel, then reduce).
  virtual std::vector<IterVar> root_iter_vars() const = 0;
  /// Output `i` as a Tensor (0 for single-output operations).
  Tensor output(int i) const;
};
/// A shared handle to an operation; compare with same_as() (identity).
using Operation = Ref<const OperationNode>;

/// The node behind a Tensor: output `value_index` of `op`, with its name (the operation's, plus ".v<i>"
/// for outputs of multi-output operations), element type and shape.
class TensorNode : public ProducerNode {
 public:
  /// Output `index` of `o`; name, dtype and shape are taken from the operation.
  TensorNode(Operation o, int index)
      : op(std::move(o)),
        value_index(index),
        name(op->num_outputs() == 1 ? op->name : op->name + ".v" + std::to_string(index)),
        dtype(op->output_dtype(index)),
        shape(op->output_shape(index)) {}
  /// The operation that produces it.
  const Operation op;
  /// Which of the operation's outputs it is.
  const int value_index;
  /// Its name.
  const std::string name;
  /// Its element type.
  const DType dtype;
  /// Its extents.
  const std::vector<Expr> shape;

  /// The tensor as a Producer, the IR's view of something that is written and read (ProducerLoad, Provide).
  /// @{
  const std::string& producer_name() const override { return name; }
  DType producer_dtype() const override { return dtype; }
  const std::vector<Expr>& producer_shape() const override { return shape; }
  /// @}
};

/// A handle to one output of an operation. Two handles to the same output compare equal.
class Tensor {
 public:
  Tensor() = default;
  /// Wraps an existing node.
  explicit Tensor(Ref<const TensorNode> node) : node_(std::move(node)) {}
  /// Output `index` of `op`.
  Tensor(Operation op, int index) : node_(make_ref<TensorNode>(std::move(op), index)) {}

  /// Accessors: defined() is false for a default-constructed Tensor; op() and value_index() say which
  /// output this is; name(), dtype(), shape() and ndim() describe it; producer() is the IR's view of it.
  /// @{
  bool defined() const { return static_cast<bool>(node_); }
  const TensorNode* get() const { return node_.get(); }
  const TensorNode* operator->() const { return node_.get(); }
  const Operation& op() const { return node_->op; }
  int value_index() const { return node_->value_index; }
  const std::string& name() const { return node_->name; }
  DType dtype() const { return node_->dtype; }
  const std::vector<Expr>& shape() const { return node_->shape; }
  int ndim() const { return static_cast<int>(node_->shape.size()); }
  Producer producer() const { return Producer(node_.get()); }
  /// @}

  /// The data-parallel axis i of the compute operation that produces this tensor.
  IterVar axis(int i) const;
  /// The reduce axis i of the compute operation that produces this tensor.
  IterVar reduce_axis(int i) const;

  /// Reads one element: A(i, k). Every index must be an integer expression.
  Expr operator()(std::vector<Expr> indices) const {
    if (static_cast<int>(indices.size()) != ndim()) {
      std::string written = name() + "(";
      for (size_t i = 0; i < indices.size(); ++i) written += (i ? ", " : "") + to_text(indices[i]);
      written += ")";
      throw Error(cat("tensor '", name(), "' has ", ndim(), " dimension", ndim() == 1 ? "" : "s", " but ",
                      written, " indexes it with ", indices.size(), "; pass exactly ", ndim(), " index",
                      ndim() == 1 ? "" : "es"));
    }
    for (size_t i = 0; i < indices.size(); ++i) {
      if (!indices[i].defined() || !indices[i].dtype().is_integral() || indices[i].dtype().is_bool() ||
          indices[i].dtype().lanes != 1)
        throw Error(
            cat("index ", i, " of tensor '", name(), "' must be a scalar integer expression, got ",
                indices[i].defined() ? indices[i].dtype().str() : std::string("an undefined expression")));
    }
    return ProducerLoadNode::make(producer(), std::move(indices));
  }
  /// A(i, k): the indices as C++ integers, Vars or Exprs; the same checks as the vector form.
  template <typename... Idx,
            typename = std::enable_if_t<(std::is_convertible_v<Idx, Expr> && ...) && (sizeof...(Idx) > 0)>>
  Expr operator()(Idx... idx) const {
    return (*this)(std::vector<Expr>{Expr(idx)...});
  }

  /// Equal when both handles name the same output of the same operation.
  friend bool operator==(const Tensor& a, const Tensor& b) {
    return a.op().same_as(b.op()) && a.value_index() == b.value_index();
  }
  /// The negation of ==.
  friend bool operator!=(const Tensor& a, const Tensor& b) { return !(a == b); }

 private:
  static std::string to_text(const Expr& e) { return e.defined() ? to_string(e) : "?"; }
  Ref<const TensorNode> node_;
};

inline Tensor OperationNode::output(int i) const { return Tensor(Operation(this), i); }

/// The tensor a ProducerLoad/Provide/Realize refers to.
inline Tensor as_tensor(const Producer& p) {
  return Tensor(Ref<const TensorNode>(static_cast<const TensorNode*>(p.get())));
}

/// Identity of a tensor for maps: (operation, output index).
struct TensorKey {
  /// The operation, by address.
  const OperationNode* op = nullptr;
  /// The output index.
  int value_index = 0;
  TensorKey() = default;
  /// The key of a tensor or of the tensor behind a Producer.
  /// @{
  TensorKey(const Tensor& t) : op(t.op().get()), value_index(t.value_index()) {}
  TensorKey(const Producer& p) : TensorKey(as_tensor(p)) {}
  /// @}
  /// Equal when operation and output index agree.
  friend bool operator==(const TensorKey& a, const TensorKey& b) {
    return a.op == b.op && a.value_index == b.value_index;
  }
};
/// Hashes a TensorKey, for unordered containers keyed by tensor.
struct TensorKeyHash {
  /// A hash of the operation's address and the output index.
  std::size_t operator()(const TensorKey& k) const {
    return std::hash<const void*>()(k.op) * 31 + static_cast<std::size_t>(k.value_index);
  }
};

}  // namespace loom
