// Placement: compute_at at several levels of a 3-stage pipeline with non-dividing splits, inline
// chains, compute_root after compute_at; each checked against the unscheduled computation.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>

#include "../support/interpret_checked.hpp"
#include "schedule_test_util.hpp"

using namespace loom;
using namespace loom::test;

namespace {

/// A -> B -> C -> D, element-wise with a stencil in C: D[i, j] = C[i, j] * C[i, j], with
/// C[i, j] = B[i, j] + B[i + 1, j] and B = 2A + 1. Sizes: 13 x 11 (prime-ish, not tile multiples).
struct Pipeline {
  static constexpr int m = 13, n = 11;
  Tensor A = placeholder({m + 1, n}, f32, "A");
  Tensor B = compute(
      {m + 1, n}, [&](Expr i, Expr j) { return A(i, j) * 2.0f + 1.0f; }, "B");
  Tensor C = compute(
      {m, n}, [&](Expr i, Expr j) { return B(i, j) + B(i + 1, j); }, "C");
  Tensor D = compute(
      {m, n}, [&](Expr i, Expr j) { return C(i, j) * C(i, j); }, "D");
};

}  // namespace

TEST_CASE("schedule: compute_at at each loop of a tiled consumer in a 3-stage pipeline") {
  Pipeline p;
  // Place C at every loop of D's tile, and B at every loop of C (or of D) that encloses C.
  for (int c_level = 0; c_level < 4; ++c_level) {
    for (int b_level = 0; b_level < 3; ++b_level) {
      CAPTURE(c_level);
      CAPTURE(b_level);
      Schedule s = create_schedule(p.D);
      auto [xo, yo, xi, yi] = s[p.D].tile(p.D.axis(0), p.D.axis(1), 4, 3);
      IterVar d_loops[] = {xo, yo, xi, yi};
      s[p.C].compute_at(s[p.D], d_loops[c_level]);
      if (b_level == 0) {
        s[p.B].compute_at(s[p.C], p.C.axis(0));
      } else if (b_level == 1) {
        s[p.B].compute_at(s[p.C], p.C.axis(1));
      } else {
        s[p.B].compute_at(s[p.D], d_loops[c_level]);
      }
      check_against_default(s, {p.A}, {p.D});
    }
  }
}

TEST_CASE("schedule: compute_at an outer and an inner loop when the producer is split too") {
  Pipeline p;
  Schedule s = create_schedule(p.D);
  auto [io, ii] = s[p.D].split(p.D.axis(0), 5);
  auto [jo, ji] = s[p.D].split(p.D.axis(1), NParts{2});
  s[p.D].reorder({io, jo, ii, ji});
  s[p.C].compute_at(s[p.D], jo);
  s[p.B].compute_at(s[p.D], io);
  for (int factor : {3, 4}) {  // 3 divides the 6 columns of C's region, 4 overshoots it
    CAPTURE(factor);
    Schedule t = s.copy();
    t[p.C].split(p.C.axis(1), factor);
    check_against_default(t, {p.A}, {p.D});
  }
}

TEST_CASE(
    "schedule: a producer split by a factor that does not divide its compute_at region stays inside it") {
  // B's region at C's outer loop is 5 elements (a tile of 3 plus the stencil's 2); split by 4, its
  // second outer iteration must stop at the region's end, not at B's extent of 20, or it writes
  // past the 5-element allocation.
  const int n = 20;
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f; }, "B");
  Tensor C = compute(
      {n - 2}, [&](Expr i) { return B(i) + B(i + 1) + B(i + 2); }, "C");
  Schedule s = create_schedule(C);
  auto [co, ci] = s[C].split(C.axis(0), 3);
  s[B].compute_at(s[C], co);
  s[B].split(B.axis(0), 4);
  std::string text = check_against_default(s, {A}, {C}).to_string();
  CHECK(contains(text, "allocate(B: Pointer(global float32), float32, [5])"));
}

TEST_CASE("schedule: compute_at realizes the producer only for the consumer's tile") {
  Pipeline p;
  Schedule s = create_schedule(p.D);
  auto [xo, yo, xi, yi] = s[p.D].tile(p.D.axis(0), p.D.axis(1), 4, 3);
  s[p.C].compute_at(s[p.D], yo);
  s[p.B].compute_at(s[p.D], yo);
  std::string text = check_against_default(s, {p.A}, {p.D}).to_string();
  CHECK(contains(text, "allocate(C: Pointer(global float32), float32, [12])"));  // 4 x 3
  CHECK(contains(text, "allocate(B: Pointer(global float32), float32, [15])"));  // (4 + 1) x 3
}

TEST_CASE("schedule: compute_at into the loops of a reduction (outside, between and inside reduce loops)") {
  const int m = 9, kk = 14;
  Tensor A = placeholder({m, kk}, f32, "A");
  Tensor B = compute(
      {m, kk}, [&](Expr i, Expr j) { return A(i, j) * A(i, j); }, "B");
  IterVar k = reduce_axis(0, kk, "k");
  Tensor C = compute(
      {m}, [&](Expr i) { return sum(B(i, k), {k}); }, "C");
  for (int level = 0; level < 4; ++level) {
    CAPTURE(level);
    Schedule s = create_schedule(C);
    auto [ko, ki] = s[C].split(k, 4);
    auto [io, ii] = s[C].split(C.axis(0), 2);
    s[C].reorder({io, ko, ii, ki});
    IterVar loops[] = {io, ko, ii, ki};
    s[B].compute_at(s[C], loops[level]);
    check_against_default(s, {A}, {C});
  }
}

TEST_CASE("schedule: a producer with two consumers is computed at a loop enclosing both") {
  const int n = 23;
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) - 0.5f; }, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return B(i) * 3.0f; }, "C");
  Tensor D = compute(
      {n}, [&](Expr i) { return B(n - 1 - i) + C(i); }, "D");  // reads B reversed
  Schedule s = create_schedule(D);
  auto [o, in] = s[D].split(D.axis(0), 6);
  s[C].compute_at(s[D], o);
  s[B].compute_at(s[D], o);
  check_against_default(s, {A}, {D});
}

TEST_CASE("schedule: a multi-output producer computed at a consumer's loop") {
  const int n = 17;
  Tensor A = placeholder({n}, f32, "A");
  std::vector<Tensor> T = compute(
      {n},
      [&](Expr i) {
        return std::vector<Expr>{A(i) * 2.0f, A(i) + 3.0f};
      },
      "T");
  Tensor C = compute(
      {n}, [&](Expr i) { return T[0](i) * T[1](i); }, "C");
  Schedule s = create_schedule(C);
  auto [o, in] = s[C].split(C.axis(0), 4);
  s[T[1]].compute_at(s[C], o);  // either output names the stage
  std::string text = check_against_default(s, {A}, {C}).to_string();
  CHECK(contains(text, "allocate(T.v0"));
  CHECK(contains(text, "allocate(T.v1"));
}

TEST_CASE("schedule: a reduction computed at a consumer's loop (argmax feeding an element-wise stage)") {
  const int m = 11, n = 9;
  Reducer argmax = comm_reducer(
      [](const std::vector<Expr>& x, const std::vector<Expr>& y) {
        Expr take_y = y[1] > x[1];
        return std::vector<Expr>{select(take_y, y[0], x[0]), select(take_y, y[1], x[1])};
      },
      [](const std::vector<DType>& t) {
        return std::vector<Expr>{make_const(t[0], -1), min_value(t[1])};
      },
      "argmax");
  Tensor A = placeholder({m, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  std::vector<Tensor> T = compute(
      {m},
      [&](Expr i) {
        return argmax({cast(f32, k), A(i, k)}, {k});
      },
      "T");
  Tensor C = compute(
      {m}, [&](Expr i) { return T[0](i) * 100.0f + T[1](i); }, "C");
  Schedule s = create_schedule(C);
  auto [o, in] = s[C].split(C.axis(0), 4);
  s[T[0]].compute_at(s[C], in);
  s[T[0]].split(k, 2);
  check_against_default(s, {A}, {C});
}

TEST_CASE("schedule: compute_inline of a chain A -> B -> C -> D with B and C inlined") {
  const int n = 31;
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f + 1.0f; }, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return B(i) * B(n - 1 - i); }, "C");
  Tensor D = compute(
      {n}, [&](Expr i) { return C(i) - B(i); }, "D");
  for (bool b_first : {true, false}) {
    CAPTURE(b_first);
    Schedule s = create_schedule(D);
    if (b_first) {
      s[B].compute_inline();
      s[C].compute_inline();
    } else {
      s[C].compute_inline();
      s[B].compute_inline();
    }
    auto [o, in] = s[D].split(D.axis(0), 8);
    std::string text = check_against_default(s, {A}, {D}).to_string();
    CHECK_FALSE(contains(text, "allocate("));
    CHECK(count_of(text, "for (") == 2);  // only D's loops remain
  }
}

TEST_CASE("schedule: compute_inline into a reduction, and an inlined stage read by an attached stage") {
  const int m = 8, kk = 12;
  Tensor A = placeholder({m, kk}, f32, "A");
  Tensor B = compute(
      {m, kk}, [&](Expr i, Expr j) { return A(i, j) * 0.5f; }, "B");
  Tensor E = compute(
      {m, kk}, [&](Expr i, Expr j) { return B(i, j) + 1.0f; }, "E");
  IterVar k = reduce_axis(0, kk, "k");
  Tensor C = compute(
      {m}, [&](Expr i) { return sum(E(i, k) * B(i, k), {k}, B(i, k) > 0.0f); }, "C");
  Schedule s = create_schedule(C);
  s[B].compute_inline();
  auto [io, ii] = s[C].split(C.axis(0), 3);
  s[E].compute_at(s[C], io);
  std::string text = check_against_default(s, {A}, {C}).to_string();
  CHECK_FALSE(contains(text, "allocate(B"));
  CHECK(contains(text, "allocate(E"));
}

TEST_CASE("schedule: compute_root after compute_at restores the producer to the root") {
  Pipeline p;
  Schedule s = create_schedule(p.D);
  auto [xo, yo, xi, yi] = s[p.D].tile(p.D.axis(0), p.D.axis(1), 4, 3);
  s[p.C].compute_at(s[p.D], yo);
  s[p.B].compute_at(s[p.C], p.C.axis(0));
  s[p.C].compute_root();  // B stays attached to C, which now runs at the root
  std::string text = check_against_default(s, {p.A}, {p.D}).to_string();
  // C is allocated and computed before D's loops, B inside C's row loop (two rows of B per row of C).
  CHECK(text.find("allocate(C") < text.find("for (i.outer"));
  CHECK(text.find("allocate(C") < text.find("allocate(B"));
  CHECK(contains(text, "allocate(B: Pointer(global float32)"));

  s[p.B].compute_root();
  std::string text2 = check_against_default(s, {p.A}, {p.D}).to_string();
  CHECK(text2.find("allocate(B") < text2.find("allocate(C"));
  CHECK(text2.find("allocate(C") < text2.find("for (i.outer"));
}

TEST_CASE("schedule: compute_at on a symbolic size, checked at several sizes") {
  Var n = size_var("n");
  Tensor A = placeholder({n}, f32, "A");
  Tensor B = compute(
      {n}, [&](Expr i) { return A(i) * A(i); }, "B");
  Tensor C = compute(
      {n}, [&](Expr i) { return B(i) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [o, in] = s[C].split(C.axis(0), 8);
  s[B].compute_at(s[C], o);
  LoweredFunc f = lower(s, {A, C}, "sym_at");
  for (int size : {1, 7, 8, 9, 31}) {
    CAPTURE(size);
    Buffer<float> a = random_buffer({size}, 3), c({size});
    test::interpret_checked(f, {a, c});
    int bad = 0;
    for (int i = 0; i < size; ++i) bad += c(i) != a(i) * a(i) + 1.0f;
    CHECK(bad == 0);
  }
}

TEST_CASE(
    "schedule: a stage computed inside an extern stage's consumer, and an extern stage computed at a loop") {
  const int n = 10;
  Tensor A = placeholder({n}, f32, "A");
  Tensor E = extern_compute(
      {n}, f32, {A},
      [](const std::vector<BufferView>& in, const std::vector<BufferView>& out) {
        const float* a = static_cast<const float*>(in[0].data);
        float* e = static_cast<float*>(out[0].data);
        for (int64_t i = 0; i < in[0].shape[0]; ++i) e[i] = a[in[0].shape[0] - 1 - i];  // reverse
      },
      "reverse");
  Tensor C = compute(
      {n}, [&](Expr i) { return E(i) * 2.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [o, in] = s[C].split(C.axis(0), 3);
  s[E].compute_at(s[C], o);
  check_against_default(s, {A}, {C});
}

TEST_CASE(
    "schedule: a producer attached inside a consumer's fully guarded iterations gets no negative extent") {
  // Found by the fuzzer (seed 786261): C's cache stage splits j (extent 5) by 7 and then into 6
  // parts, so most iterations of the outer part lie past the end of j. P's region there starts
  // beyond P's last column; clamping only its end made the allocation's extent negative.
  const int n = 16, m = 5;
  Tensor A = placeholder({n + 1, m}, f32, "A");
  Tensor P = compute(
      {n + 1, m}, [&](Expr i, Expr j) { return A(i, j) * 2.0f + 1.0f; }, "P");
  Tensor C = compute(
      {n, m}, [&](Expr i, Expr j) { return P(i, j) + P(i + 1, j) * A(i, j); }, "C");
  Schedule s = create_schedule(C);
  Tensor CL = s.cache_write(C, "local");
  auto [o0, i1] = s[C].split(C.axis(0), Factor{6});
  s[C].reorder({i1, C.axis(1), o0});
  auto [o4, i5] = s[CL].split(CL.axis(1), Factor{7});
  auto [o6, i7] = s[CL].split(o4, NParts{1});
  auto [o8, i9] = s[CL].split(o6, NParts{6});
  s[CL].fuse(CL.axis(0), o8);
  s[P].compute_at(s[CL], i9);
  s[CL].vectorize(i5);
  check_against_default(s, {A}, {C});
}
