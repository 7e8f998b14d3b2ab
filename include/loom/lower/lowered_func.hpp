// LoweredFunc: the result of lowering a schedule: named parameters (tensors as flat buffers
// with shape and strides, symbolic scalars) and a loop-IR body over flat memory.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "loom/ir/printer.hpp"
#include "loom/support/config.hpp"

namespace loom {

/// A tensor argument seen as flat memory. Load/Store in the body name it through `data`.
struct BufferParam {
  std::string name;
  Var data;                   // handle-typed variable the body indexes
  DType dtype;                // element type
  std::vector<Expr> shape;    // extents; may mention symbolic size variables
  std::vector<Expr> strides;  // in elements; compact row-major unless the tensor declared others
};

struct FuncParam {
  enum class Kind { Buffer, Scalar };
  Kind kind = Kind::Buffer;
  BufferParam buffer;  // when kind == Buffer
  Var scalar;          // when kind == Scalar: a symbolic value passed by the caller
};

class LoweredFunc {
 public:
  std::string name;
  std::vector<FuncParam> params;
  /// Symbolic size variables the call binds from buffer shapes (or from scalar parameters).
  std::vector<Var> size_vars;
  Stmt body;

  /// The function as text: `primfn name(params) {` and the body as lower() prints it.
  LOOM_DECL std::string to_string() const;
};

LOOM_DECL std::ostream& operator<<(std::ostream& os, const LoweredFunc& f);

}  // namespace loom

#if LOOM_HEADER_ONLY
#include "loom/lower/impl/lowered_func.hpp"
#endif
