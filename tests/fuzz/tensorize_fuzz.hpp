// The differential fuzzer's tensorize cases: tensor intrinsics (inline IR or an extern C function)
// for an elementwise tile and a matmul tile, programs whose sizes are multiples of the tile, and
// random legal schedules around the tensorized loop, each recorded as C++.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "schedule_fuzz.hpp"

namespace loom::fuzz {

/// The extern C body of intrin_matmul: c[i, j] (+)= sum_r a[i, r] * b[r, j] over one tile, the
/// operands' rows `lda`, `ldb`, `ldc` elements apart; `accumulate` 0 starts c from zero.
inline int32_t fuzz_tile_gemm(float* c, const float* a, const float* b, int32_t rows, int32_t cols,
                              int32_t depth, int32_t lda, int32_t ldb, int32_t ldc, int32_t accumulate) {
  for (int32_t i = 0; i < rows; ++i)
    for (int32_t j = 0; j < cols; ++j) {
      float sum = accumulate ? c[i * ldc + j] : 0.0f;
      for (int32_t r = 0; r < depth; ++r) sum = sum + a[i * lda + r] * b[r * ldb + j];
      c[i * ldc + j] = sum;
    }
  return 0;
}

/// The extern C body of intrin_axpy: c = x * y + x over a rows x cols tile.
inline int32_t fuzz_tile_axpy(float* c, const float* x, const float* y, int32_t rows, int32_t cols,
                              int32_t ldc, int32_t ldx, int32_t ldy) {
  for (int32_t i = 0; i < rows; ++i)
    for (int32_t j = 0; j < cols; ++j) c[i * ldc + j] = x[i * ldx + j] * y[i * ldy + j] + x[i * ldx + j];
  return 0;
}

/// Registers the extern C bodies with the interpreter and the JIT (idempotent).
inline void register_fuzz_intrinsics() {
  register_extern_c("fuzz_tile_gemm", &fuzz_tile_gemm);
  register_extern_c("fuzz_tile_axpy", &fuzz_tile_axpy);
}

namespace detail {
/// Row stride of a window: its leading dimension's stride, 0 for a one-dimensional window.
inline Expr row_stride(const BufferRegion& r) { return r.strides.size() >= 2 ? r.strides[0] : Expr(0); }
}  // namespace detail

/// out = x * y + x over a rows x cols tile (rows 0: a one-dimensional tile of cols).
inline TensorIntrin intrin_axpy(int rows, int cols, bool extern_call) {
  std::vector<Expr> shape = rows ? std::vector<Expr>{rows, cols} : std::vector<Expr>{cols};
  Tensor x = placeholder(shape, f32, "x"), y = placeholder(shape, f32, "y");
  Tensor out = compute(
      shape,
      [&](const std::vector<Var>& i) {
        std::vector<Expr> idx(i.begin(), i.end());
        return x(idx) * y(idx) + x(idx);
      },
      "out");
  if (extern_call)
    return decl_tensor_intrin(
        out,
        [rows, cols](const std::vector<BufferRegion>& in, const std::vector<BufferRegion>& o) {
          return EvaluateNode::make(call_extern(
              i32, "fuzz_tile_axpy",
              {o[0].access_ptr(), in[0].access_ptr(), in[1].access_ptr(), Expr(rows ? rows : 1), Expr(cols),
               detail::row_stride(o[0]), detail::row_stride(in[0]), detail::row_stride(in[1])}));
        },
        "fuzz_tile_axpy");
  return decl_tensor_intrin(
      out,
      [rows, cols](const std::vector<BufferRegion>& in, const std::vector<BufferRegion>& o) {
        Var i("ti"), j("tj");
        std::vector<Expr> idx = rows ? std::vector<Expr>{i, j} : std::vector<Expr>{j};
        Stmt body = o[0].store(idx, in[0].load(idx) * in[1].load(idx) + in[0].load(idx));
        body = ForNode::make(j, 0, cols, ForKind::Serial, body);
        return rows ? ForNode::make(i, 0, rows, ForKind::Serial, body) : body;
      },
      "axpy");
}

/// c[i, j] = sum_r a[i, r] * b[r, j] over a rows x cols x depth tile; with `update`, also the
/// reduce_init / reduce_update pair for a reduction that continues outside the tile.
inline TensorIntrin intrin_matmul(int rows, int cols, int depth, bool extern_call, bool update) {
  Tensor a = placeholder({rows, depth}, f32, "a"), b = placeholder({depth, cols}, f32, "b");
  IterVar r = reduce_axis(0, depth, "r");
  Tensor c = compute(
      {rows, cols}, [&](Expr i, Expr j) { return sum(a(i, r) * b(r, j), {r}); }, "c");
  // accumulate: 0 the whole reduction, 1 one more part of it, -1 only the zero fill.
  auto make = [=](int accumulate) -> IntrinBody {
    return [=](const std::vector<BufferRegion>& in, const std::vector<BufferRegion>& o) -> Stmt {
      const BufferRegion& cc = o[0];
      Var i("ti"), j("tj"), k("tk");
      Stmt zero = cc.store({i, j}, 0.0f);
      auto tile = [&](const Stmt& cell) {
        return ForNode::make(i, 0, rows, ForKind::Serial, ForNode::make(j, 0, cols, ForKind::Serial, cell));
      };
      if (accumulate < 0) return tile(zero);  // reduce_init: given no inputs
      const BufferRegion &aa = in[0], &bb = in[1];
      if (extern_call)
        return EvaluateNode::make(
            call_extern(i32, "fuzz_tile_gemm",
                        {cc.access_ptr(), aa.access_ptr(), bb.access_ptr(), Expr(rows), Expr(cols),
                         Expr(depth), aa.strides[0], bb.strides[0], cc.strides[0], Expr(accumulate)}));
      Stmt acc = ForNode::make(k, 0, depth, ForKind::Serial,
                               cc.store({i, j}, cc.load({i, j}) + aa.load({i, k}) * bb.load({k, j})));
      return tile(accumulate > 0 ? acc : SeqNode::make({zero, acc}));
    };
  };
  if (update)
    return decl_tensor_intrin(c, make(0), extern_call ? "fuzz_tile_gemm" : "gemm", make(-1), make(1));
  return decl_tensor_intrin(c, make(0), extern_call ? "fuzz_tile_gemm" : "gemm");
}

/// A random elementwise or matmul program whose tiled dimensions are multiples of the intrinsic's
/// tile, and a legal schedule that tensorizes it: the outer loops reordered, fused, unrolled or
/// parallel at random, the tile loops innermost in the intrinsic's order.
class TensorizeBuilder : public ScheduleBuilder {
 public:
  TensorizeBuilder(const Program& p, Rng& rng) : ScheduleBuilder(p, rng) {}

  static Program random_program(Rng& rng) {
    Program p;
    const bool matmul = rng.chance(0.5);
    if (matmul) {
      const int ti = rng.uniform(1, 5), tj = rng.uniform(1, 5), tk = rng.uniform(1, 5);
      const int n = ti * rng.uniform(1, 4), m = tj * rng.uniform(1, 4), k = tk * rng.uniform(1, 3);
      p.kind = cat("tensorize_matmul ", ti, "x", tj, "x", tk);
      Tensor A = placeholder({n, k}, f32, "A"), B = placeholder({k, m}, f32, "B");
      IterVar r = reduce_axis(0, k, "r");
      p.output = compute(
          {n, m}, [&](Expr i, Expr j) { return sum(A(i, r) * B(r, j), {r}); }, "C");
      p.inputs = {A, B};
      p.code = cat("int n = ", n, ", m = ", m, ", k = ", k,
                   ";\n"
                   "Tensor A = placeholder({n, k}, f32, \"A\"), B = placeholder({k, m}, f32, \"B\");\n"
                   "IterVar r = reduce_axis(0, k, \"r\");\n"
                   "Tensor C = compute({n, m}, [&](Expr i, Expr j) { return sum(A(i, r) * B(r, j), {r}); }, "
                   "\"C\");\n");
      p.tile = {ti, tj, tk};
    } else {
      const int ti = rng.chance(0.4) ? 0 : rng.uniform(1, 5), tj = rng.uniform(1, 8);
      const int n = (ti ? ti : 1) * rng.uniform(1, 5), m = tj * rng.uniform(1, 4);
      p.kind = cat("tensorize_elementwise ", ti, "x", tj);
      Tensor A = placeholder({n, m}, f32, "A"), B = placeholder({n, m}, f32, "B");
      p.output = compute(
          {n, m}, [&](Expr i, Expr j) { return A(i, j) * B(i, j) + A(i, j); }, "C");
      p.inputs = {A, B};
      p.code = cat("int n = ", n, ", m = ", m,
                   ";\n"
                   "Tensor A = placeholder({n, m}, f32, \"A\"), B = placeholder({n, m}, f32, \"B\");\n"
                   "Tensor C = compute({n, m}, [&](Expr i, Expr j) { return A(i, j) * B(i, j) + A(i, j); }, "
                   "\"C\");\n");
      p.tile = {ti, tj};
    }
    return p;
  }

  void randomize_tensorize() {
    const Tensor C = program_.output;
    Stage st = schedule_[C];
    const bool matmul = program_.tile.size() == 3;
    const int ti = program_.tile[0], tj = program_.tile[1];
    const bool extern_call = rng_.chance(0.5);
    std::vector<IterVar> outer, tile;
    std::string intrin;
    TensorIntrin in;
    if (matmul) {
      const int k = static_cast<int>(*as_const_int(C.reduce_axis(0)->dom.extent));
      // Either the whole reduction inside the tile, or its outer part outside (reduce_update).
      const bool split_k = rng_.chance(0.5) && program_.tile[2] < k;
      const int tk = split_k ? program_.tile[2] : k;
      auto [io, ii] = split(C.axis(0), ti);
      auto [jo, ji] = split(C.axis(1), tj);
      outer = {io, jo};
      tile = {ii, ji};
      if (split_k) {
        auto [ro, ri] = split(C.reduce_axis(0), tk);
        outer.push_back(ro);
        tile.push_back(ri);
      } else {
        tile.push_back(C.reduce_axis(0));
      }
      intrin = cat("intrin_matmul(", ti, ", ", tj, ", ", tk, ", ", b(extern_call), ", ", b(split_k), ")");
      in = intrin_matmul(ti, tj, tk, extern_call, split_k);
    } else if (ti == 0) {
      auto [jo, ji] = split(C.axis(1), tj);
      outer = {C.axis(0), jo};
      tile = {ji};
      intrin = cat("intrin_axpy(0, ", tj, ", ", b(extern_call), ")");
      in = intrin_axpy(0, tj, extern_call);
    } else {
      auto [io, ii] = split(C.axis(0), ti);
      auto [jo, ji] = split(C.axis(1), tj);
      outer = {io, jo};
      tile = {ii, ji};
      intrin = cat("intrin_axpy(", ti, ", ", tj, ", ", b(extern_call), ")");
      in = intrin_axpy(ti, tj, extern_call);
    }
    for (size_t i = outer.size(); i > 1; --i)
      std::swap(outer[i - 1], outer[static_cast<size_t>(rng_.uniform(0, static_cast<int>(i) - 1))]);
    std::vector<IterVar> order = outer;
    order.insert(order.end(), tile.begin(), tile.end());
    std::string line = "s[C].reorder({";
    for (size_t i = 0; i < order.size(); ++i) line += cat(i ? ", " : "", axis_name(order[i]));
    emit(line + "});");
    st.reorder(order);
    if (rng_.chance(0.3) && !is_reduce(outer[0]) && !is_reduce(outer[1])) {
      const std::string name = fresh("f");
      emit(cat("IterVar ", name, " = s[C].fuse(", axis_name(outer[0]), ", ", axis_name(outer[1]), ");"));
      IterVar f = st.fuse(outer[0], outer[1]);
      axis_names_[f.get()] = name;
      outer.erase(outer.begin());
      outer[0] = f;
    }
    emit(cat("s[C].tensorize(", axis_name(tile[0]), ", loom::fuzz::", intrin, ");"));
    st.tensorize(tile[0], in);
    if (rng_.chance(0.3) && !is_reduce(outer[0])) {
      emit(cat("s[C].parallel(", axis_name(outer[0]), ");"));
      st.parallel(outer[0]);
    } else if (rng_.chance(0.3)) {
      IterVar u = rng_.pick(outer);
      emit(cat("s[C].unroll(", axis_name(u), ");"));
      st.unroll(u);
    }
  }

 private:
  static const char* b(bool v) { return v ? "true" : "false"; }

  std::pair<IterVar, IterVar> split(const IterVar& x, int factor) {
    const std::string o = fresh("o"), i = fresh("i");
    emit(cat("auto [", o, ", ", i, "] = s[C].split(", axis_name(x), ", Factor{", factor, "});"));
    auto [outer, inner] = schedule_[program_.output].split(x, Factor{factor});
    axis_names_[outer.get()] = o;
    axis_names_[inner.get()] = i;
    return {outer, inner};
  }
};

}  // namespace loom::fuzz
