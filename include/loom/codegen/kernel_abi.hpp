// The calling convention between a Kernel and its JIT-compiled entry function: which parameter
// and size variable lands in which slot of the three argument arrays. Codegen and the call both
// derive it from the LoweredFunc with kernel_signature(), so they cannot disagree.
#pragma once

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "loom/ir/free_vars.hpp"
#include "loom/lower/lowered_func.hpp"

namespace loom::runtime {

/// The compiled entry point: int32_t entry(void* const* buffers, const int64_t* ints,
/// const double* floats, void* ctx). Returns 0, or non-zero after reporting an error into ctx
/// (a runtime::CallContext).
using KernelEntry = int32_t (*)(void* const* buffers, const int64_t* ints, const double* floats, void* ctx);

struct KernelSignature {
  std::vector<Var> buffers;  // BufferParam::data of each buffer parameter, in parameter order
  std::vector<Var> ints;     // integer scalar parameters, then the other size variables
  std::vector<Var> floats;   // float scalar parameters
};

/// The slots of f's entry function: buffers in parameter order; integer scalars in parameter
/// order, then size variables and variables of buffer shapes and strides that are not parameters
/// (the checked call binds them all); float scalars in parameter order.
inline KernelSignature kernel_signature(const LoweredFunc& f) {
  KernelSignature sig;
  std::unordered_set<const VarNode*> seen;
  auto add_int = [&](const Var& v) {
    if (seen.insert(v.get()).second) sig.ints.push_back(v);
  };
  for (const FuncParam& p : f.params) {
    if (p.kind == FuncParam::Kind::Buffer) {
      sig.buffers.push_back(p.buffer.data);
    } else if (p.scalar.dtype().is_float()) {
      if (seen.insert(p.scalar.get()).second) sig.floats.push_back(p.scalar);
    } else {
      add_int(p.scalar);
    }
  }
  for (const Var& v : f.size_vars) add_int(v);
  for (const FuncParam& p : f.params) {
    if (p.kind != FuncParam::Kind::Buffer) continue;
    std::vector<Expr> layout = p.buffer.shape;
    layout.insert(layout.end(), p.buffer.strides.begin(), p.buffer.strides.end());
    for (const Expr& e : layout) append_free_vars(e, sig.ints, seen);
  }
  return sig;
}

}  // namespace loom::runtime
