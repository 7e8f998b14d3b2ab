// The printed form of lowered functions, pinned exactly: a matmul, a tiled matmul with guards,
// a pipeline with an attached producer, thread bindings, and the IR before flattening.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "lower_test_util.hpp"

using namespace loom;
using namespace loom::lower_test;

namespace {

struct Matmul {
  Tensor A, B, C;
  IterVar k;
  Matmul(Expr m, Expr n, Expr kk) {
    A = placeholder({m, kk}, f32, "A");
    B = placeholder({kk, n}, f32, "B");
    k = reduce_axis(0, kk, "k");
    C = compute(
        {m, n}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  }
};

}  // namespace

TEST_CASE("lower: the printed text of a matmul is pinned") {
  Matmul mm(8, 8, 8);
  LoweredFunc f = lower(create_schedule(mm.C), {mm.A, mm.B, mm.C}, "matmul");
  const std::string expected =
      "primfn matmul(A: Buffer(float32, [8, 8]), B: Buffer(float32, [8, 8]), C: Buffer(float32, [8, 8])) {\n"
      "  for (i: int32, 0, 8) {\n"
      "    for (j: int32, 0, 8) {\n"
      "      C[((i*8) + j)] = 0f32\n"
      "      for (k: int32, 0, 8) {\n"
      "        C[((i*8) + j)] = (C[((i*8) + j)] + (A[((i*8) + k)]*B[((k*8) + j)]))\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  CHECK(f.to_string() == expected);
  std::ostringstream os;
  os << f;
  CHECK(os.str() == expected);
}

TEST_CASE("lower: the printed text of a tiled matmul with non-dividing splits is pinned") {
  Matmul mm(10, 6, 5);
  Schedule s = create_schedule(mm.C);
  auto [xo, yo, xi, yi] = s[mm.C].tile(mm.C.axis(0), mm.C.axis(1), 4, 3);
  auto [ko, ki] = s[mm.C].split(mm.k, 2);
  s[mm.C].reorder({xo, yo, ko, xi, ki, yi});
  LoweredFunc f = lower(s, {mm.A, mm.B, mm.C}, "matmul_tiled");
  const std::string expected =
      "primfn matmul_tiled(A: Buffer(float32, [10, 5]), B: Buffer(float32, [5, 6]), C: Buffer(float32, [10, "
      "6])) {\n"
      "  for (i.outer: int32, 0, 3) {\n"
      "    for (j.outer: int32, 0, 2) {\n"
      "      for (i.inner: int32, 0, 4) {\n"
      "        for (j.inner: int32, 0, 3) {\n"
      "          if (likely((((i.outer*4) + i.inner) < 10))) {\n"
      "            C[((((i.outer*24) + (i.inner*6)) + (j.outer*3)) + j.inner)] = 0f32\n"
      "          }\n"
      "        }\n"
      "      }\n"
      "      for (k.outer: int32, 0, 3) {\n"
      "        for (i.inner: int32, 0, 4) {\n"
      "          for (k.inner: int32, 0, 2) {\n"
      "            for (j.inner: int32, 0, 3) {\n"
      "              if ((likely((((i.outer*4) + i.inner) < 10)) && likely((((k.outer*2) + k.inner) < 5)))) "
      "{\n"
      "                C[((((i.outer*24) + (i.inner*6)) + (j.outer*3)) + j.inner)] = (C[((((i.outer*24) + "
      "(i.inner*6)) + "
      "(j.outer*3)) + j.inner)] + (A[((((i.outer*20) + (i.inner*5)) + (k.outer*2)) + "
      "k.inner)]*B[((((k.outer*12) + "
      "(k.inner*6)) + (j.outer*3)) + j.inner)]))\n"
      "              }\n"
      "            }\n"
      "          }\n"
      "        }\n"
      "      }\n"
      "    }\n"
      "  }\n"
      "}\n";
  CHECK(f.to_string() == expected);
}

TEST_CASE("lower: the printed text of an attached producer and of thread bindings is pinned") {
  const int n = 10;
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f; }, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return B(i) + 1.0f; }, "C");
  {
    Schedule s = create_schedule(C);
    auto [o, in] = s[C].split(C.axis(0), 4);
    s[B].compute_at(s[C], o);
    s[C].parallel(o);
    const std::string expected =
        "primfn pipeline(A: Buffer(float32, [10]), C: Buffer(float32, [10])) {\n"
        "  for (i.outer: int32, 0, 3) \"parallel\" {\n"
        "    allocate(B: Pointer(global float32), float32, [4]), storage_scope = global {\n"
        "      for (i: int32, 0, 4) {\n"
        "        if (likely((((i.outer*4) + i) < 10))) {\n"
        "          B[i] = (A[((i.outer*4) + i)]*2f32)\n"
        "        }\n"
        "      }\n"
        "      for (i.inner: int32, 0, 4) {\n"
        "        if (likely((((i.outer*4) + i.inner) < 10))) {\n"
        "          C[((i.outer*4) + i.inner)] = (B[i.inner] + 1f32)\n"
        "        }\n"
        "      }\n"
        "    }\n"
        "  }\n"
        "}\n";
    CHECK(lower(s, {A, C}, "pipeline").to_string() == expected);
  }
  {
    Schedule s = create_schedule(C);
    auto [bx, tx] = s[C].split(C.axis(0), 4);
    s[C].bind(bx, thread_axis("blockIdx.x"));
    s[C].bind(tx, thread_axis("threadIdx.x"));
    s[B].compute_inline();
    const std::string expected =
        "primfn bound(A: Buffer(float32, [10]), C: Buffer(float32, [10])) {\n"
        "  attr [IterVar(blockIdx.x: int32, \"blockIdx.x\")] \"thread_extent\" = 3;\n"
        "  attr [IterVar(threadIdx.x: int32, \"threadIdx.x\")] \"thread_extent\" = 4;\n"
        "  if (likely((((blockIdx.x*4) + threadIdx.x) < 10))) {\n"
        "    C[((blockIdx.x*4) + threadIdx.x)] = ((A[((blockIdx.x*4) + threadIdx.x)]*2f32) + 1f32)\n"
        "  }\n"
        "}\n";
    CHECK(lower(s, {A, C}, "bound").to_string() == expected);
  }
}

TEST_CASE("lower: symbolic shapes, scalar parameters and the IR before flattening print as pinned") {
  Var n = size_var("n");
  Var scale = size_var("scale");
  Tensor A = placeholder({n, 3}, f32, "A");
  Tensor B = compute(
      {n, 3}, [&](Expr i, Expr j) { return A(i, j) * cast(f32, scale); }, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return B(i, 0) + B(i, 2); }, "C");
  Schedule s = create_schedule(C);
  const std::string expected =
      "primfn sym(A: Buffer(float32, [n, 3]), C: Buffer(float32, [n]), scale: int32) {\n"
      "  allocate(B: Pointer(global float32), float32, [(n*3)]), storage_scope = global {\n"
      "    for (i: int32, 0, n) {\n"
      "      for (j: int32, 0, 3) {\n"
      "        B[((i*3) + j)] = (A[((i*3) + j)]*cast(float32, scale))\n"
      "      }\n"
      "    }\n"
      "    for (i_1: int32, 0, n) {\n"
      "      C[i_1] = (B[(i_1*3)] + B[((i_1*3) + 2)])\n"
      "    }\n"
      "  }\n"
      "}\n";
  CHECK(lower(s, {A, C, scale}, "sym").to_string() == expected);
  const std::string before_flatten =
      "realize(B, [0:n, 0:3], \"global\") {\n"
      "  for (i: int32, 0, n) {\n"
      "    for (j: int32, 0, 3) {\n"
      "      B[i, j] = (A[i, j]*cast(float32, scale))\n"
      "    }\n"
      "  }\n"
      "  for (i_1: int32, 0, n) {\n"
      "    C[i_1] = (B[i_1, 0] + B[i_1, 2])\n"
      "  }\n"
      "}\n";
  CHECK(schedule_phase_text(s, {A, C, scale}) == before_flatten);
}
