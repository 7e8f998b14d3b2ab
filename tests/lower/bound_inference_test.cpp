// Bound inference over multi-stage graphs: the region a producer is realized over inside a
// consumer (1-D/2-D tile, stencil, reduction, transposed reads, symbolic extents).
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>

#include "../support/interpret_checked.hpp"
#include "lower_test_util.hpp"

using namespace loom;
using namespace loom::lower_test;

TEST_CASE("lower: a producer attached inside a consumer's 1-D tile is realized over the tile") {
  const int n = 50;
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) + 1.0f; }, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return B(i) * 2.0f; }, "C");
  for (int factor : {1, 7, 8, 50, 64}) {
    CAPTURE(factor);
    Schedule s = create_schedule(C);
    auto [o, in] = s[C].split(C.axis(0), factor);
    s[B].compute_at(s[C], o);
    LoweredFunc f = lower(s, {A, C}, "tile1d");
    std::string sched = schedule_phase_text(s, {A, C});
    std::string f_text = std::to_string(factor);
    if (factor == 1) {
      CHECK(contains(sched, "realize(B, [i.outer:1], \"global\")"));
    } else if (factor == n) {  // one tile: the outer loop (extent 1) is omitted
      CHECK(contains(sched, "realize(B, [0:50], \"global\")"));
    } else if (factor < n) {
      CHECK(contains(sched, "realize(B, [(i.outer*" + f_text + "):" + f_text + "], \"global\")"));
    }
    if (factor <= n)
      CHECK(contains(f.to_string(), "allocate(B: Pointer(global float32), float32, [" + f_text + "])"));
    Buffer<float> a = random_buffer({n}, 9), c({n});
    test::interpret_checked(f, {a, c});
    for (int i = 0; i < n; ++i) CHECK(c(i) == (a(i) + 1.0f) * 2.0f);
  }
}

TEST_CASE("lower: a stencil consumer C[i] = B[i] + B[i+1] + B[i+2] makes B's region 2 larger") {
  const int n = 30;
  Tensor A = placeholder({n + 2}, f32, "A");
  Tensor B = compute(
      {n + 2}, [&](Expr i) { return A(i) * 3.0f; }, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return B(i) + B(i + 1) + B(i + 2); }, "C");
  Schedule s = create_schedule(C);
  auto [o, in] = s[C].split(C.axis(0), 4);
  s[B].compute_at(s[C], o);
  std::string sched = schedule_phase_text(s, {A, C});
  CHECK(contains(sched, "realize(B, [(i.outer*4):6], \"global\")"));
  LoweredFunc f = lower(s, {A, C}, "stencil");
  CHECK(contains(f.to_string(), "allocate(B: Pointer(global float32), float32, [6])"));
  Buffer<float> a = random_buffer({n + 2}, 1), c({n});
  test::interpret_checked(f, {a, c});
  for (int i = 0; i < n; ++i) CHECK(c(i) == a(i) * 3.0f + a(i + 1) * 3.0f + a(i + 2) * 3.0f);

  // At the root, the region is what C reads: [0, n + 2).
  Schedule root = create_schedule(C);
  CHECK(contains(schedule_phase_text(root, {A, C}), "realize(B, [0:32], \"global\")"));
}

TEST_CASE("lower: a producer inside a 2-D tile is realized over the tile, transposed reads transpose it") {
  const int m = 20, n = 14;
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor B = compute(
      {m, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "B");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return B(i, j) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [xo, yo, xi, yi] = s[C].tile(C.axis(0), C.axis(1), 8, 4);
  s[B].compute_at(s[C], yo);
  CHECK(contains(schedule_phase_text(s, {A, C}), "realize(B, [(i.outer*8):8, (j.outer*4):4], \"global\")"));
  CHECK(contains(lower(s, {A, C}, "tile2d").to_string(), "float32, [32])"));

  // Attached at the outer tile loop only: a whole band of rows, all 14 columns (not the 16 that
  // four column tiles of 4 span).
  Schedule band = create_schedule(C);
  auto [bxo, byo, bxi, byi] = band[C].tile(C.axis(0), C.axis(1), 8, 4);
  band[B].compute_at(band[C], bxo);
  CHECK(contains(schedule_phase_text(band, {A, C}), "realize(B, [(i.outer*8):8, 0:14], \"global\")"));

  // T[j, i] read as T(j, i) from a tile of C over (i, j): T's region is the transposed tile.
  Tensor T = compute(
      {n, m}, [&](Expr j, Expr i) { return A(i, j) - 1.0f; }, "T");
  Tensor D = compute(
      {m, n}, [&](Expr i, Expr j) { return T(j, i) * 0.5f; }, "D");
  Schedule st = create_schedule(D);
  auto [txo, tyo, txi, tyi] = st[D].tile(D.axis(0), D.axis(1), 8, 4);
  st[T].compute_at(st[D], tyo);
  CHECK(contains(schedule_phase_text(st, {A, D}), "realize(T, [(j.outer*4):4, (i.outer*8):8], \"global\")"));
}

TEST_CASE("lower: a producer read by a reduction consumer is realized over the reduce axis' range") {
  const int m = 9, kk = 13;
  Tensor A = placeholder({m, kk}, f32, "A");
  Tensor B = compute(
      {m, kk}, [&](Expr i, Expr j) { return A(i, j) * A(i, j); }, "B");
  IterVar k = reduce_axis(0, kk, "k");
  Tensor C = compute(
      {m}, [&](Expr i) { return sum(B(i, k), {k}); }, "C");
  {
    Schedule s = create_schedule(C);
    s[B].compute_at(s[C], C.axis(0));  // one row of B per i: all of k
    CHECK(contains(schedule_phase_text(s, {A, C}), "realize(B, [i:1, 0:13], \"global\")"));
  }
  {
    Schedule s = create_schedule(C);
    auto [ko, ki] = s[C].split(k, 4);
    s[B].compute_at(s[C], ko);  // one chunk of the reduction per k.outer
    CHECK(contains(schedule_phase_text(s, {A, C}), "realize(B, [i:1, (k.outer*4):4], \"global\")"));
    LoweredFunc f = lower(s, {A, C}, "chunked");
    Buffer<float> a = random_buffer({m, kk}, 2), c({m});
    test::interpret_checked(f, {a, c});
    for (int i = 0; i < m; ++i) {
      float e = 0.0f;
      for (int j = 0; j < kk; ++j) e += a(i, j) * a(i, j);
      CHECK(c(i) == e);
    }
  }
}

TEST_CASE("lower: two consumers: the region covers both reads (a reversed read widens it)") {
  const int n = 16;
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) + 2.0f; }, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return B(i) * 2.0f; }, "C");
  Tensor D = compute(
      {n}, [&](Expr i) { return B(i) + C(i) + B(i / 2); }, "D");
  Schedule s = create_schedule(D);
  auto [o, in] = s[D].split(D.axis(0), 4);
  s[C].compute_at(s[D], o);
  s[B].compute_at(s[D], o);
  std::string sched = schedule_phase_text(s, {A, D});
  // D reads B[i / 2] too: the region starts at the smaller of the two reads.
  CHECK(contains(sched, "realize(B, "));
  CHECK_FALSE(contains(sched, "realize(B, [(i.outer*4):4]"));
  LoweredFunc f = lower(s, {A, D}, "two_consumers");
  Buffer<float> a = random_buffer({n}, 3), d({n});
  test::interpret_checked(f, {a, d});
  for (int i = 0; i < n; ++i) {
    float b = a(i) + 2.0f;
    CHECK(d(i) == b + b * 2.0f + (a(i / 2) + 2.0f));
  }
}

TEST_CASE("lower: symbolic extents: a root producer is realized over n, an attached one over the tile") {
  Var n = size_var("n");
  Tensor A = placeholder({n, 5}, f32, "A");
  Tensor B = compute(
      {n, 5}, [&](Expr i, Expr j) { return A(i, j) + 1.0f; }, "B");
  Tensor C = compute(
      {n, 5}, [&](Expr i, Expr j) { return B(i, j) * 2.0f; }, "C");
  Schedule root = create_schedule(C);
  CHECK(contains(schedule_phase_text(root, {A, C}), "realize(B, [0:n, 0:5], \"global\")"));
  CHECK(contains(lower(root, {A, C}, "root").to_string(), "float32, [(n*5)])"));

  Schedule s = create_schedule(C);
  auto [o, in] = s[C].split(C.axis(0), 8);
  s[B].compute_at(s[C], o);
  CHECK(contains(schedule_phase_text(s, {A, C}), "realize(B, [(i.outer*8):8, 0:5], \"global\")"));
  LoweredFunc f = lower(s, {A, C}, "attached");
  CHECK(contains(f.to_string(), "float32, [40])"));
  for (int rows : {1, 8, 11}) {
    Buffer<float> a = random_buffer({rows, 5}, 4), c({rows, 5});
    test::interpret_checked(f, {a, c});
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < 5; ++j) CHECK(c(i, j) == (a(i, j) + 1.0f) * 2.0f);
  }
}

TEST_CASE("lower: a producer attached inside a fused loop covers every row the fused chunk touches") {
  const int m = 7, n = 5;
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor B = compute(
      {m, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f; }, "B");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return B(i, j) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  IterVar f = s[C].fuse(C.axis(0), C.axis(1));
  auto [fo, fi] = s[C].split(f, 4);
  s[B].compute_at(s[C], fo);
  LoweredFunc fn = lower(s, {A, C}, "fused_at");
  std::string sched = schedule_phase_text(s, {A, C});
  CHECK(contains(sched, "realize(B, "));
  CHECK(contains(sched, ", 0:5], \"global\")"));  // whole rows: a chunk of 4 may span two rows
  Buffer<float> a = random_buffer({m, n}, 5), c({m, n});
  test::interpret_checked(fn, {a, c});
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) CHECK(c(i, j) == a(i, j) * 2.0f + 1.0f);
}

TEST_CASE(
    "lower: a root intermediate read by a tiled consumer is realized over its own shape, not the tiles'") {
  // TVM gives a split's parent its whole range when both halves are relaxed: C is 13 x 11 and
  // D's tiles of 4 x 3 overshoot it to 16 x 12, but C is realized (and computed) for 13 x 11.
  const int m = 13, n = 11;
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return A(i, j) + 1.0f; }, "C");
  Tensor D = compute(
      {m, n}, [&](Expr i, Expr j) { return C(i, j) * 2.0f; }, "D");
  Schedule s = create_schedule(D);
  s[D].tile(D.axis(0), D.axis(1), 4, 3);
  CHECK(contains(schedule_phase_text(s, {A, D}), "realize(C, [0:13, 0:11], \"global\")"));
  CHECK(contains(lower(s, {A, D}, "root_region").to_string(),
                 "allocate(C: Pointer(global float32), float32, [143])"));

  // The same along a relaxed dimension of an attached producer: C at D's outer row loop needs
  // whole rows of 11 columns (not three tiles of 4); the fixed row dimension keeps its tile.
  Schedule t = create_schedule(D);
  auto [xo, yo, xi, yi] = t[D].tile(D.axis(0), D.axis(1), 4, 4);
  t[C].compute_at(t[D], xo);
  CHECK(contains(schedule_phase_text(t, {A, D}), "realize(C, [(i.outer*4):4, 0:11], \"global\")"));
}
