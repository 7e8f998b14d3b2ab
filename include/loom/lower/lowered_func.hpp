// LoweredFunc: the result of lowering a schedule: named parameters (tensors as flat buffers
// with shape and strides, symbolic scalars) and a loop-IR body over flat memory.
#pragma once

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "loom/ir/printer.hpp"
#include "loom/support/config.hpp"

namespace loom {

namespace cuda {
struct DeviceSplit;  // lower/split_host_device.hpp
}

/// A tensor argument seen as flat memory. Load/Store in the body name it through `data`.
struct BufferParam {
  /// The parameter's name (the tensor's).
  std::string name;
  Var data;                   ///< handle-typed variable the body indexes
  DType dtype;                ///< element type
  std::vector<Expr> shape;    ///< extents; may mention symbolic size variables
  std::vector<Expr> strides;  ///< in elements; compact row-major unless the tensor declared others
};

/// A parameter of a lowered function: a buffer or a scalar.
struct FuncParam {
  /// Which of `buffer` and `scalar` describes the parameter.
  enum class Kind { Buffer, Scalar };
  /// Which member below describes the parameter.
  Kind kind = Kind::Buffer;
  BufferParam buffer;  ///< when kind == Buffer
  Var scalar;          ///< when kind == Scalar: a symbolic value passed by the caller
};

/// What one read of an input tensor needs along one dimension, over every point its stage
/// computes (lower/input_regions.hpp): indices min to max, inclusive, in terms of the size
/// variables. A call checks it against the buffer it is given.
struct InputRead {
  size_t param = 0;    ///< index of the buffer parameter read
  int dim = 0;         ///< its dimension
  std::string reader;  ///< the stage that reads it
  std::string access;  ///< the read as printed, e.g. "A(i + 1)"
  /// The lowest and highest index read (inclusive), in terms of the size variables.
  /// @{
  Expr min, max;
  /// @}
};

/// The result of lower(): a function of buffer and scalar parameters with a loop-nest body,
/// ready for a backend (build()) or the interpreter.
class LoweredFunc {
 public:
  /// The function's name, as lower() or build() was given it.
  std::string name;
  /// The parameters in call order.
  std::vector<FuncParam> params;
  /// Symbolic size variables the call binds from buffer shapes (or from scalar parameters).
  std::vector<Var> size_vars;
  /// The loop nest, as lowering left it.
  Stmt body;
  /// The host program and kernels that the Device phase split `body` into, when the function was
  /// lowered for a GPU target (build() with Target::cuda()/cuda_sim()); null otherwise. The CUDA
  /// backend splits again when it is null or was made from another body.
  std::shared_ptr<const cuda::DeviceSplit> device_split;
  /// The index ranges of the inputs that the computation reads; every call checks them against
  /// its buffers before running (empty for functions built by hand, or lowered with
  /// PassContext::check_input_regions off).
  std::vector<InputRead> input_reads;

  /// The function as text: `primfn name(params) {` and the body as lower() prints it.
  LOOM_DECL std::string to_string() const;
};

/// Prints f.to_string().
LOOM_DECL std::ostream& operator<<(std::ostream& os, const LoweredFunc& f);

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/lower/impl/lowered_func.hpp"
#endif
