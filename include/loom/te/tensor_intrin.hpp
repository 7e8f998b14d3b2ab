// Tensor intrinsics for tensorize: a small compute says what a hardware instruction or a
// library routine computes, and a body builder emits the code that does it (a call to an
// extern C function, inline IR, or anything the user writes) for the operands it is given.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "loom/te/compute.hpp"

namespace loom {

/// One operand of a tensorized region: a window into a flat buffer, as the body sees it.
struct BufferRegion {
  Var data;                   ///< the flat buffer
  DType dtype;                ///< element type
  Expr elem_offset;           ///< elements from the buffer's start to the window's first element
  std::vector<Expr> shape;    ///< the window's shape: the intrinsic operand's shape
  std::vector<Expr> strides;  ///< element strides of the window's dimensions in the buffer
  /// The buffer's memory scope ("" for arguments, which are global); a "local.fragment" buffer
  /// holds a warp's tile, 1/32 of it in each lane, and elem_offset counts the whole tile's
  /// elements (te/ptx_tensor_intrins.hpp maps it to a lane's registers).
  std::string scope;

  /// The address of the window's first element (a handle), for extern calls.
  Expr access_ptr() const {
    return CallNode::make(handle_type, intrinsic::address_of, {LoadNode::make(dtype, data, elem_offset)});
  }
  /// The flat index of window element `indices`: elem_offset plus each index times its stride.
  Expr offset_of(const std::vector<Expr>& indices) const {
    Expr index = elem_offset;
    for (size_t d = 0; d < indices.size(); ++d) index = index + indices[d] * strides.at(d);
    return index;
  }
  /// Reads window element `indices` (for intrinsics written as inline IR).
  Expr load(const std::vector<Expr>& indices) const {
    return LoadNode::make(dtype, data, offset_of(indices));
  }
  /// Writes window element `indices`.
  Stmt store(const std::vector<Expr>& indices, Expr value) const {
    return StoreNode::make(data, cast(dtype, std::move(value)), offset_of(indices));
  }
};

/// Builds the IR that replaces a tensorized loop nest from the regions of its inputs and outputs.
using IntrinBody =
    std::function<Stmt(const std::vector<BufferRegion>& inputs, const std::vector<BufferRegion>& outputs)>;

/// A tensor intrinsic (decl_tensor_intrin()): what it computes, as a compute over placeholders, and the
/// bodies that replace a loop nest that computes the same.
class TensorIntrinNode : public Object {
 public:
  /// The intrinsic's name, for messages and the IR.
  std::string name;
  Operation op;     ///< a compute over placeholders: what the intrinsic computes
  IntrinBody body;  ///< computes the whole region (reductions included, from their identity)
  /// For a reduction split around the intrinsic: sets the outputs to the identity. It runs where the
  /// reduction starts, where the inputs may not exist yet, so it is given no input regions.
  IntrinBody reduce_init;
  IntrinBody reduce_update;  ///< ... and accumulates one part into them
  int64_t id = 0;            ///< in TensorIntrinRegistry
};
/// A shared handle to a tensor intrinsic; Stage::tensorize() takes one.
using TensorIntrin = Ref<const TensorIntrinNode>;

/// Intrinsics by id, so that lowered IR can name them with an integer.
class TensorIntrinRegistry {
 public:
  /// The registry every build uses.
  static TensorIntrinRegistry& global() {
    static TensorIntrinRegistry registry;
    return registry;
  }
  /// Adds `intrin` and returns its id.
  int64_t add(TensorIntrin intrin) {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.push_back(std::move(intrin));
    return static_cast<int64_t>(entries_.size() - 1);
  }
  /// The intrinsic of `id`; throws std::out_of_range for an unknown id.
  TensorIntrin get(int64_t id) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.at(static_cast<size_t>(id));
  }

 private:
  mutable std::mutex mutex_;
  std::vector<TensorIntrin> entries_;
};

/// Declares an intrinsic computing `output` (a compute over placeholders).
inline TensorIntrin decl_tensor_intrin(const Tensor& output, IntrinBody body, std::string name,
                                       IntrinBody reduce_init = {}, IntrinBody reduce_update = {}) {
  if (!output.defined() || output.op()->kind != OpKind::Compute)
    throw Error(
        cat("decl_tensor_intrin '", name, "': describe the intrinsic with a compute over placeholders"));
  for (const Tensor& in : output.op()->input_tensors())
    if (in.op()->kind != OpKind::Placeholder)
      throw Error(cat("decl_tensor_intrin '", name, "': input '", in.name(),
                      "' must be a placeholder (an intrinsic reads its operands directly)"));
  if (!body) throw Error(cat("decl_tensor_intrin '", name, "': the body builder is empty"));
  if (static_cast<bool>(reduce_init) != static_cast<bool>(reduce_update))
    throw Error(cat("decl_tensor_intrin '", name, "': give both reduce_init and reduce_update, or neither"));
  auto node = make_ref<TensorIntrinNode>();
  node->name = std::move(name);
  node->op = output.op();
  node->body = std::move(body);
  node->reduce_init = std::move(reduce_init);
  node->reduce_update = std::move(reduce_update);
  TensorIntrin intrin(node);
  node->id = TensorIntrinRegistry::global().add(intrin);
  return intrin;
}

/// A call of the LLVM intrinsic `name` (e.g. "llvm.x86.avx512bf16.dpbf16ps.512"), for intrinsic bodies
/// on the CPU backend. `features`: every CPU feature it needs, comma-separated in LLVM's spelling
/// ("avx512bf16,evex512"); building for a target without one of them is refused with a loom::Error
/// (list them all: a feature left out reaches LLVM, which aborts the process when it cannot select
/// the instruction). Operands and result are bit-cast to the intrinsic's types where the sizes agree,
/// so an int32x16 value passes as <32 x bfloat>; an immediate operand must be an integer constant.
/// Only fixed-type (not overloaded) intrinsics that compute a value from values (the call is pure:
/// no memory access, no side effects); no 16-bit float operands or result (use their bits, int16).
/// Other backends and the interpreter refuse the call.
inline Expr call_llvm_intrinsic(DType result, const std::string& name, const std::string& features,
                                std::vector<Expr> args) {
  std::vector<Expr> all{StringImmNode::make(name), StringImmNode::make(features)};
  all.insert(all.end(), std::make_move_iterator(args.begin()), std::make_move_iterator(args.end()));
  return CallNode::make(result, intrinsic::llvm_intrinsic, std::move(all), CallKind::PureIntrinsic);
}

/// A call of the C function `name` (linked into the process), e.g. from an intrinsic's body.
inline Expr call_extern(DType result, std::string name, std::vector<Expr> args) {
  return CallNode::make(result, std::move(name), std::move(args), CallKind::Extern);
}

}  // namespace loom
