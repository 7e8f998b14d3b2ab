// Which math calls the CPU backend computes in vector instructions and which one lane at a time:
// the code generator (emit_math, VectorMath) and loom::lint (a vector loop whose math falls back to
// one libm call per lane) read the same rule from here. No LLVM headers: lint includes it.
#pragma once

#include <string>

#include "loom/ir/dtype.hpp"

namespace loom::codegen {

/// Whether `name` is one of the math functions te/ir's calls produce (exp(x), sqrt(x), ...), which the
/// CPU backend compiles itself (the rest are Loom intrinsics or extern C calls).
inline bool is_math_function(const std::string& name) {
  for (const char* m : {"exp", "exp2", "log", "log2", "log10", "sqrt", "sin", "cos", "tan", "tanh", "erf",
                        "floor", "ceil", "round", "trunc", "abs", "pow"})
    if (name == m) return true;
  return false;
}

/// Whether math call `name` has an inline polynomial on every floating-point type: exp, log, tanh
/// and erf of float (and of 16-bit floats, which the backend computes in float; vector_math.hpp) and
/// of double (vector_math_f64.hpp).
inline bool has_cpu_polynomial(const std::string& name) {
  return name == "exp" || name == "log" || name == "tanh" || name == "erf";
}

/// Whether math call `name` on a vector of `t` stays in vector instructions: the polynomials
/// above, and the LLVM intrinsics that x86 has instructions for. Everything else (exp2, log2,
/// log10, sin, cos, tan, pow) becomes one libm call per lane.
inline bool cpu_math_stays_vector(const std::string& name, DType t) {
  if (name == "sqrt" || name == "floor" || name == "ceil" || name == "round" || name == "trunc" ||
      name == "abs")
    return true;
  return t.is_float() && t.bits <= 64 && has_cpu_polynomial(name);
}

}  // namespace loom::codegen
