// The definitions of lower/lowered_func.hpp.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/lower/lowered_func.hpp");

#include <ostream>
#include <sstream>
#include <string>

#include "loom/ir/ir_printer.hpp"
#include "loom/lower/lowered_func.hpp"

namespace loom {

LOOM_DECL std::string LoweredFunc::to_string() const {
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

LOOM_DECL std::ostream& operator<<(std::ostream& os, const LoweredFunc& f) { return os << f.to_string(); }

}  // namespace loom
