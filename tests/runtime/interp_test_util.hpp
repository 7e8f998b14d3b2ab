// Helpers for the runtime tests: build LoweredFuncs by hand (buffer and scalar parameters, loops)
// and fill host buffers with seeded random data.
#pragma once

#include <loom/ir/op.hpp>
#include <loom/lower/lowered_func.hpp>
#include <loom/runtime/buffer.hpp>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace loom::test {

/// A buffer parameter with compact row-major strides (folded to numbers when the shape is).
inline BufferParam buffer_param(const std::string& name, DType dtype, std::vector<Expr> shape) {
  BufferParam p;
  p.name = name;
  p.data = Var(name, handle_type);
  p.dtype = dtype;
  p.shape = shape;
  p.strides.resize(shape.size());
  Expr stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    p.strides[d] = stride;
    const int64_t* s = as_const_int(stride);
    const int64_t* e = as_const_int(shape[d]);
    stride = (s && e) ? Expr(static_cast<int>(*s * *e)) : stride * shape[d];
  }
  return p;
}

inline FuncParam param(const BufferParam& b) {
  FuncParam p;
  p.kind = FuncParam::Kind::Buffer;
  p.buffer = b;
  return p;
}

inline FuncParam scalar_param(const Var& v) {
  FuncParam p;
  p.kind = FuncParam::Kind::Scalar;
  p.scalar = v;
  return p;
}

inline LoweredFunc make_func(std::string name, std::vector<FuncParam> params, Stmt body,
                             std::vector<Var> size_vars = {}) {
  LoweredFunc f;
  f.name = std::move(name);
  f.params = std::move(params);
  f.body = std::move(body);
  f.size_vars = std::move(size_vars);
  return f;
}

inline Stmt loop(const Var& v, Expr min, Expr extent, Stmt body, ForKind kind = ForKind::Serial) {
  return ForNode::make(v, std::move(min), std::move(extent), kind, std::move(body));
}

inline Expr load(const BufferParam& b, Expr index, Expr predicate = Expr()) {
  return LoadNode::make(b.dtype, b.data, std::move(index), std::move(predicate));
}

inline Stmt store(const BufferParam& b, Expr value, Expr index, Expr predicate = Expr()) {
  return StoreNode::make(b.data, std::move(value), std::move(index), std::move(predicate));
}

template <typename T>
void fill_random(Buffer<T>& buffer, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0; i < buffer.num_elements(); ++i) buffer.at_flat(i) = static_cast<T>(dist(rng));
}

}  // namespace loom::test
