// The loop transformations the lowering carries out for schedule annotations: vectorize (with
// predicated lanes for uneven splits), unroll, prefetch, double_buffer and tensorize.
#include "../support/matmul_program.hpp"
#include "check_schedule.hpp"

using namespace loom;
using namespace loom::test;

TEST_CASE("vectorize turns a loop into ramps, predicating lanes past an uneven split") {
  Tensor A = placeholder({37, 45}, f32, "A");
  Tensor B = placeholder({37, 45}, f32, "B");
  Tensor C = compute(
      {37, 45}, [&](Expr i, Expr j) { return A(i, j) * B(i, j) + 1.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 16);
  s[C].vectorize(ji);
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  CHECK(contains(f.to_string(), "ramp("));
  CHECK(contains(f.to_string(), " if "));  // the predicate on the last, partial vector
}

TEST_CASE("vectorize of a reduction's data-parallel loop") {
  Tensor A = placeholder({19, 21}, f32, "A");
  Tensor B = placeholder({21, 24}, f32, "B");
  IterVar k = reduce_axis(0, 21, "k");
  Tensor C = compute(
      {19, 24}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 8);
  s[C].reorder({C.axis(0), jo, k, ji});
  s[C].vectorize(ji);
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  CHECK(contains(f.to_string(), "ramp("));
}

TEST_CASE("unroll copies the body once per iteration") {
  Tensor A = placeholder({10, 6}, f32, "A");
  Tensor C = compute(
      {10, 6}, [&](Expr i, Expr j) { return A(i, j) + 2.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [io, ii] = s[C].split(C.axis(0), 4);
  s[C].unroll(ii);
  LoweredFunc f = check_against_default(s, {A}, {C});
  CHECK(contains(f.to_string(), "for (j_3: int32, 0, 6)"));
}

TEST_CASE("prefetch and double_buffer do not change results") {
  const auto [A, B, C, k] = matmul_program(33, 27, 50);
  Schedule s = create_schedule(C);
  Tensor AL = s.cache_read(A, "local", {C});
  auto [ko, ki] = s[C].split(k, 8);
  s[AL].compute_at(s[C], ko);
  s[AL].double_buffer();
  s[C].prefetch(B, ko, 1);
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  std::string text = f.to_string();
  CHECK(contains(text, "prefetch(B["));
  CHECK(contains(text, "allocate(A.local: Pointer(local float32), float32, [16])"));  // two halves of 8
  CHECK(contains(text, "floormod((k.outer + 1), 2)"));
}

TEST_CASE("prefetch spread over inner loops: the next block's copy, a line at a time") {
  // C = A B with B's rows copied a block of 16 columns at a time (a stage attached at jo): while
  // block jo computes, its k loop prefetches the rows that block jo + 1's copy reads.
  const auto [A, B, C, k] = matmul_program(9, 45, 70);
  Schedule s = create_schedule(C);
  Tensor BC = s.cache_read(B, "global", {C});
  auto [jo, ji] = s[C].split(C.axis(1), 16);
  s[C].reorder({jo, C.axis(0), k, ji});
  s[BC].compute_at(s[C], jo);
  s[C].prefetch(B, jo, 1, k);
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  const std::string text = f.to_string();
  // 70 rows of 16 floats, two lines each (a row of B starts anywhere in a line), over 9 x 70
  // iterations of (i, k): one every 4 iterations, the first 140 such.
  CHECK(contains(text, "floormod(((i*70) + k), 4) == 0"));
  CHECK(contains(text, "prefetch(B["));
  // The column of the block after the last is clamped into B.
  CHECK(contains(text, ", 44)"));

  // Fewer iterations than lines: several lines per iteration, in a loop.
  Schedule s2 = create_schedule(C);
  Tensor BC2 = s2.cache_read(B, "global", {C});
  auto [jo2, ji2] = s2[C].split(C.axis(1), 16);
  auto [ko2, ki2] = s2[C].split(k, 32);
  s2[C].reorder({jo2, ko2, C.axis(0), ki2, ji2});
  s2[BC2].compute_at(s2[C], jo2);
  s2[C].prefetch(B, jo2, 1, ko2);  // 140 lines over the 3 iterations of ko: 47 each
  LoweredFunc f2 = check_against_default(s2, {A, B}, {C});
  CHECK(contains(f2.to_string(), "for (prefetch.B.line: int32, 0, 47)"));
}

TEST_CASE("prefetch spread: a region reaching before the tensor is clipped, so its last row is not missed") {
  // S reads row i - 1 (where i >= 1) and row i of X: the rows ahead are -1 .. 9 before clipping. Capped
  // at X's 10 rows without clipping, the lines would start at row -1 and miss row 9.
  Tensor X = placeholder({4, 10, 32}, f32, "X");
  Tensor S = compute(
      {4, 10, 32},
      [&](Expr b, Expr i, Expr j) { return if_then_else(i >= 1, X(b, i - 1, j), 0.0f) + X(b, i, j); }, "S");
  Schedule s = create_schedule(S);
  s[S].prefetch(X, S.axis(0), 1, S.axis(1));  // 10 rows of 2 lines over the 10 iterations of i
  LoweredFunc f = check_against_default(s, {X}, {S});
  const std::string text = f.to_string();
  CHECK(contains(text, "for (prefetch.X.line: int32, 0, 2)"));
  CHECK(contains(text, "prefetch(X[(((min((i + 1), 3)*320) + (j*32)) + (prefetch.X.line*16))]"));
}

TEST_CASE("prefetch spread: mistakes name the stage and axis, and change nothing") {
  const auto [A, B, C, k] = matmul_program(9, 45, 70);
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 16);
  s[C].vectorize(ji);
  CHECK_THROWS_WITH_AS(s[C].prefetch(B, k, 1, jo),
                       doctest::Contains("axis 'j.outer' of stage 'C' is not inside axis 'k'"),
                       ScheduleError);
  CHECK_THROWS_WITH_AS(s[C].prefetch(B, jo, 1, ji),
                       doctest::Contains("axis 'j.inner' of stage 'C' is vectorized"), ScheduleError);
  CHECK(lower(s, {A, B, C}, "unchanged").to_string().find("prefetch") == std::string::npos);

  // Found when lowering: a tensor that neither the stage nor a stage attached at the axis reads.
  Tensor D = placeholder({70, 45}, f32, "D");
  Schedule unread = create_schedule(C);
  unread[C].prefetch(D, C.axis(0), 1, k);
  CHECK_THROWS_WITH_AS(
      lower(unread, {A, B, C}, "f"),
      doctest::Contains("prefetch of 'D' at axis 'i' of stage 'C': neither the stage nor a stage "
                        "attached at that axis reads 'D'"),
      ScheduleError);
  // Loops changed after the request: a vector down to the spread axis, the axis split, the spread
  // axis moved outside it. Before, each dropped the prefetch without a word.
  Schedule vectorized = create_schedule(C);
  auto [vo, vi] = vectorized[C].split(C.axis(1), 16);
  vectorized[C].prefetch(B, C.axis(0), 1, k);
  vectorized[C].vectorize(vi);
  CHECK_THROWS_WITH_AS(
      lower(vectorized, {A, B, C}, "f"),
      doctest::Contains("prefetch of 'B' at axis 'i' of stage 'C': axis 'j.inner', from it down "
                        "to the spread axis 'k', is vectorized"),
      ScheduleError);
  Schedule split = create_schedule(C);
  split[C].prefetch(B, C.axis(0), 1, k);
  split[C].split(C.axis(0), 4);
  CHECK_THROWS_WITH_AS(
      lower(split, {A, B, C}, "f"),
      doctest::Contains("prefetch of 'B' at axis 'i' of stage 'C': the axis is no longer one "
                        "of the stage's loops"),
      ScheduleError);
  Schedule reordered = create_schedule(C);
  reordered[C].prefetch(B, C.axis(0), 1, k);
  reordered[C].reorder({k, C.axis(0), C.axis(1)});
  CHECK_THROWS_WITH_AS(lower(reordered, {A, B, C}, "f"),
                       doctest::Contains("the spread axis 'k' is no longer a loop inside it"), ScheduleError);
  // Indices that depend on data: no region to spread.
  Tensor Idx = placeholder({9}, i32, "Idx");
  Tensor G = compute(
      {9}, [&, B = B, k = k](Expr i) { return sum(B(k, Idx(i)), {k}); }, "G");
  Schedule gather = create_schedule(G);
  gather[G].prefetch(B, G.axis(0), 1, k);
  CHECK_THROWS_WITH_AS(
      lower(gather, {B, Idx, G}, "f"),
      doctest::Contains("prefetch of 'B' at axis 'i' of stage 'G': the region of 'B' read ahead "
                        "has no bound before the kernel runs"),
      ScheduleError);
}

TEST_CASE("prefetch of a tensor computed at a loop of the stage is refused; of one inlined since, dropped") {
  Tensor A = placeholder({3, 5}, f32, "A");
  Tensor P = compute(
      {3, 5}, [&](Expr i, Expr j) { return A(i, j) * A(i, j); }, "P");
  IterVar r = reduce_axis(0, 5, "r");
  Tensor C = compute(
      {3}, [&](Expr i) { return sum(P(i, r), {r}); }, "C");
  for (bool spread : {false, true}) {
    CAPTURE(spread);
    Schedule s = create_schedule(C);
    s[P].compute_at(s[C], C.reduce_axis(0));
    if (spread)
      s[C].prefetch(P, C.axis(0), 1, C.reduce_axis(0));
    else
      s[C].prefetch(P, C.axis(0), 1);
    // Before, the unspread prefetch ended in an internal error ("no storage for tensor 'P'").
    CHECK_THROWS_WITH_AS(
        lower(s, {A, C}, "f"),
        doctest::Contains("prefetch of 'P' at axis 'i' of stage 'C': 'P' is computed at loop 'r' of this "
                          "stage (compute_at)"),
        ScheduleError);
    Schedule t = create_schedule(C);
    if (spread)
      t[C].prefetch(P, C.axis(0), 1, C.reduce_axis(0));
    else
      t[C].prefetch(P, C.axis(0), 1);
    t[P].compute_inline();  // C now reads A: nothing reads P
    LoweredFunc f = check_against_default(t, {A}, {C});
    CHECK(f.to_string().find("prefetch") == std::string::npos);
  }
}

namespace {
TensorIntrin vector_add_intrin(int width) {
  Tensor x = placeholder({width}, f32, "x");
  Tensor y = placeholder({width}, f32, "y");
  Tensor z = compute(
      {width}, [&](Expr i) { return x(i) + y(i); }, "z");
  return decl_tensor_intrin(
      z,
      [width](const std::vector<BufferRegion>& in, const std::vector<BufferRegion>& out) {
        Var i("lane");
        return ForNode::make(i, 0, width, ForKind::Serial,
                             out[0].store({i}, in[0].load({i}) + in[1].load({i})));
      },
      "vadd" + std::to_string(width));
}
}  // namespace

TEST_CASE("tensorize replaces a matching loop nest by the intrinsic's code") {
  Tensor A = placeholder({6, 32}, f32, "A");
  Tensor B = placeholder({6, 32}, f32, "B");
  Tensor C = compute(
      {6, 32}, [&](Expr i, Expr j) { return A(i, j) + B(i, j); }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 8);
  s[C].tensorize(ji, vector_add_intrin(8));
  LoweredFunc f = check_against_default(s, {A, B}, {C});
  CHECK(contains(f.to_string(), "for (lane: int32, 0, 8)"));
}

TEST_CASE("tensorize reports what differs") {
  Tensor A = placeholder({6, 32}, f32, "A");
  Tensor B = placeholder({6, 32}, f32, "B");
  Tensor C = compute(
      {6, 32}, [&](Expr i, Expr j) { return A(i, j) - B(i, j); }, "C");
  Schedule s = create_schedule(C);
  auto [jo, ji] = s[C].split(C.axis(1), 8);
  s[C].tensorize(ji, vector_add_intrin(8));
  CHECK_THROWS_WITH_AS(lower(s, {A, B, C}, "f"),
                       doctest::Contains("they first differ at '(x[j.inner] - y[j.inner])'"), ScheduleError);
  Schedule s2 = create_schedule(C);
  auto [jo2, ji2] = s2[C].split(C.axis(1), 4);
  s2[C].tensorize(ji2, vector_add_intrin(8));
  CHECK_THROWS_WITH_AS(lower(s2, {A, B, C}, "f"), doctest::Contains("data-parallel [j.inner: 4]"),
                       ScheduleError);
}
