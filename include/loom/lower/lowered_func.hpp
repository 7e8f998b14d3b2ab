// LoweredFunc: the result of lowering a schedule: named parameters (tensors as flat buffers
// with shape and strides, symbolic scalars) and a loop-IR body over flat memory.
#pragma once

#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "loom/ir/printer.hpp"

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

  std::string to_string() const {
    std::ostringstream os;
    IRPrinter printer(os);
    // Parameters are named first so that body variables with the same name get suffixes.
    for (const FuncParam& p : params) {
      if (p.kind == FuncParam::Kind::Buffer) {
        printer.name_of(p.buffer.data);
      } else {
        printer.name_of(p.scalar);
      }
    }
    os << "primfn " << name << "(";
    for (size_t i = 0; i < params.size(); ++i) {
      if (i) os << ", ";
      const FuncParam& p = params[i];
      if (p.kind == FuncParam::Kind::Scalar) {
        os << printer.name_of(p.scalar) << ": " << p.scalar.dtype().str();
        continue;
      }
      os << printer.name_of(p.buffer.data) << ": Buffer(" << p.buffer.dtype.str() << ", [";
      for (size_t d = 0; d < p.buffer.shape.size(); ++d) {
        if (d) os << ", ";
        printer.print(p.buffer.shape[d]);
      }
      os << "])";
    }
    os << ") {\n";
    printer.print(body, 2);
    os << "}\n";
    return os.str();
  }
};

inline std::ostream& operator<<(std::ostream& os, const LoweredFunc& f) { return os << f.to_string(); }

}  // namespace loom
