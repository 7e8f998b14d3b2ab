// The input regions lower() records (lower/input_regions.hpp) and the call-time check against
// them (runtime/arg_check.hpp): reads past either end of an input are refused before anything
// runs, guarded reads (if_then_else, a reduction's where) count only where their guard holds and
// are checked when the guard is a box, schedules do not change the regions, and data-dependent
// reads are left unchecked.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <string>

#include <loom/runtime/shape_eval.hpp>

#include "../support/interpret_checked.hpp"

using namespace loom;
using doctest::Contains;

namespace {

/// "reader:access[dim]=min..max" of each recorded read, evaluated with the given sizes, joined
/// by "; ", for compact checks.
std::string read_ranges(const LoweredFunc& f, const std::unordered_map<const VarNode*, int64_t>& sizes) {
  std::string out;
  for (const InputRead& r : f.input_reads)
    out += cat(out.empty() ? "" : "; ", r.reader, ":", r.access, "[", r.dim,
               "]=", detail::eval_shape_expr(r.min, sizes), "..", detail::eval_shape_expr(r.max, sizes));
  return out;
}

}  // namespace

TEST_CASE("input regions: a read past the end of an input is refused at the call, naming the read") {
  Var n = size_var("n"), m = size_var("m");
  Tensor A = placeholder({m}, f32, "A");
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i + 1) * 2.0f; }, "C");
  Schedule s = create_schedule(C);
  auto [io, ii] = s[C].split(C.axis(0), 4);
  LoweredFunc f = lower(s, {A, C}, "shift");
  CHECK(read_ranges(f, {{n.get(), 10}}) == "C:A(i + 1)[0]=1..10");
  Buffer<float> a({11}), small({10}), c({10});
  for (int i = 0; i < 11; ++i) a(i) = static_cast<float>(i);
  c.fill(-1.0f);
  CHECK_THROWS_WITH_AS(interpret(f, {small, c}),
                       Contains("argument 'A' of kernel 'shift': stage 'C' reads A(i + 1), which along "
                                "dimension 0 reaches indices 1 to 10, but dimension 0 of 'A' has extent 10 "
                                "(indices 0 to 9): pass a larger 'A' (at least 11 along dimension 0), or "
                                "compute 'C' over fewer points"),
                       ArgumentError);
  for (int i = 0; i < 10; ++i) REQUIRE(c(i) == -1.0f);  // nothing ran
  test::interpret_checked(f, {a, c});
  for (int i = 0; i < 10; ++i) REQUIRE(c(i) == 2.0f * static_cast<float>(i + 1));
  Buffer<float> none({0});
  CHECK_NOTHROW(interpret(f, {small, none}));  // n = 0: C has no point, nothing is read
}

TEST_CASE("input regions: a read before the start of an input is refused; Select reads both values") {
  const int n = 12;
  Tensor A = placeholder({n}, f32, "A");
  // select evaluates both values, so A(i - 1) is read at i = 0 too.
  Tensor C = compute(
      {n}, [&](Expr i) { return select(i >= 1, A(i - 1), Expr(0.0f)); }, "C");
  LoweredFunc f = lower(create_schedule(C), {A, C}, "back");
  Buffer<float> a({n}), c({n});
  CHECK_THROWS_WITH_AS(
      interpret(f, {a, c}),
      Contains("argument 'A' of kernel 'back': stage 'C' reads A(i - 1), which along dimension "
               "0 reaches indices -1 to 10, before the start of 'A': guard the read with "
               "if_then_else"),
      ArgumentError);
  // if_then_else reads A(i - 1) only where i >= 1.
  Tensor D = compute(
      {n}, [&](Expr i) { return if_then_else(i >= 1, A(i - 1), Expr(0.0f)); }, "D");
  LoweredFunc g = lower(create_schedule(D), {A, D}, "guarded");
  CHECK(read_ranges(g, {}) == "D:A(i - 1)[0]=0..10");  // a box guard: checked, exactly
  CHECK_NOTHROW(test::interpret_checked(g, {a, c}));
  // A guard that does not keep its read inside A is caught like an unguarded read.
  Var m = size_var("m");
  Tensor V = placeholder({m}, f32, "V");
  Tensor E = compute(
      {m}, [&](Expr i) { return if_then_else(i >= 1, V(i + 1), Expr(0.0f)); }, "E");
  LoweredFunc h = lower(create_schedule(E), {V, E}, "off_by_one");
  CHECK(read_ranges(h, {{m.get(), 12}}) == "E:V(i + 1)[0]=2..12");
  Buffer<float> v({12}), e({12});
  CHECK_THROWS_WITH_AS(interpret(h, {v, e}),
                       Contains("stage 'E' reads V(i + 1), which along dimension 0 reaches indices 2 to 12"),
                       ArgumentError);
  // Guards that are not boxes (two variables, a disjunction) leave their reads unchecked: the
  // narrowed intervals could hold points the guard excludes, and refuse a valid call.
  Tensor W2 = placeholder({8, 8}, f32, "W2");
  Tensor F = compute(
      {8, 8}, [&](Expr i, Expr j) { return if_then_else(i + j < 8, W2(i + j, j), Expr(0.0f)); }, "F");
  CHECK(read_ranges(lower(create_schedule(F), {W2, F}, "triangle"), {}).empty());
  Tensor G = compute(
      {n}, [&](Expr i) { return if_then_else(i < 2 || i > 5, A(i), Expr(0.0f)); }, "G");
  CHECK(read_ranges(lower(create_schedule(G), {A, G}, "either"), {}).empty());
}

TEST_CASE("input regions: a padded 2-D stencil needs exactly the input, through an intermediate") {
  Var h = size_var("h"), w = size_var("w");
  Tensor A = placeholder({h, w}, f32, "A");
  // Zero padding of one on each side, then a 3x3 box sum over the padded image.
  Tensor P = compute(
      {h + 2, w + 2},
      [&](Expr y, Expr x) {
        Expr inside = y >= 1 && y - 1 < h && x - 1 >= 0 && x <= w;
        return if_then_else(inside, A(y - 1, x - 1), Expr(0.0f));
      },
      "P");
  IterVar ry = reduce_axis(0, 3, "ry"), rx = reduce_axis(0, 3, "rx");
  Tensor B = compute(
      {h, w},
      [&](Expr y, Expr x) {
        return sum(P(y + ry, x + rx), {ry, rx});
      },
      "B");
  Schedule s = create_schedule(B);
  auto [yo, yi] = s[B].split(B.axis(0), 4);
  s[P].compute_at(s[B], yo);
  LoweredFunc f = lower(s, {A, B, h, w}, "box");
  // The padding guard is a box: A is needed exactly over [0, h) x [0, w).
  CHECK(read_ranges(f, {{h.get(), 7}, {w.get(), 5}}) ==
        "P:A(i - 1, j - 1)[0]=0..6; P:A(i - 1, j - 1)[1]=0..4");
  Buffer<float> a({7, 5}), b({7, 5});
  for (int64_t e = 0; e < a.num_elements(); ++e) a.at_flat(e) = 1.0f;
  test::interpret_checked(f, {a, b, int64_t{7}, int64_t{5}});
  CHECK(b(0, 0) == 4.0f);  // a corner sees 2 x 2 of the image
  CHECK(b(3, 2) == 9.0f);
}

TEST_CASE("input regions: reductions (where conditions, triangular domains) and schedules") {
  Var n = size_var("n");
  Tensor A = placeholder({n}, f32, "A");
  // A running sum: t in [0, i], a domain that depends on i.
  Tensor C = compute(
      {n},
      [&](Expr i) {
        IterVar t = reduce_axis(Range(0, i + 1), "t");
        return sum(A(t), {t});
      },
      "C");
  LoweredFunc f = lower(create_schedule(C), {A, C}, "prefix");
  CHECK(read_ranges(f, {{n.get(), 9}}) == "C:A(t)[0]=0..8");
  // A reduction over k in [0, n + 1) that reads A(k - 1) only where k >= 1.
  IterVar k1 = reduce_axis(0, n + 1, "k1");
  Tensor D = compute(
      {n}, [&](Expr i) { return sum(A(k1 - 1) * cast(f32, i), {k1}, k1 >= 1); }, "D");
  LoweredFunc g = lower(create_schedule(D), {A, D}, "where");
  CHECK(read_ranges(g, {{n.get(), 9}}) == "D:A(k1 - 1)[0]=0..8");  // where k1 >= 1: a box, checked
  // A GEMM's regions are the same under rfactor, cache_read and splits as unscheduled.
  const int m = 20;
  Tensor X = placeholder({m, m}, f32, "X"), Y = placeholder({m, m}, f32, "Y");
  IterVar r = reduce_axis(0, m, "r");
  Tensor Z = compute(
      {m, m}, [&](Expr i, Expr j) { return sum(X(i, r) * Y(r, j), {r}); }, "Z");
  std::string plain = read_ranges(lower(create_schedule(Z), {X, Y, Z}, "gemm"), {});
  CHECK(plain == "Z:X(i, r)[0]=0..19; Z:X(i, r)[1]=0..19; Z:Y(r, j)[0]=0..19; Z:Y(r, j)[1]=0..19");
  Schedule s = create_schedule(Z);
  auto [ro, ri] = s[Z].split(r, 8);
  Tensor ZR = s.rfactor(Z, ri);
  s.cache_read(X, "local", {ZR});
  CHECK(read_ranges(lower(s, {X, Y, Z}, "gemm"), {}) == plain);
}

TEST_CASE("input regions: reads through data are not checked; the check can be switched off") {
  const int n = 8;
  Tensor A = placeholder({n}, f32, "A");
  Tensor I = placeholder({n}, i32, "I");
  Tensor G = compute(
      {n}, [&](Expr i) { return A(I(i)); }, "G");
  LoweredFunc f = lower(create_schedule(G), {A, I, G}, "gather");
  CHECK(read_ranges(f, {}) == "G:I(i)[0]=0..7");  // A(I(i)): the index is data
  Tensor C = compute(
      {n}, [&](Expr i) { return A(i + 1); }, "C");
  PassContext off;
  off.check_input_regions = false;
  CHECK(lower(create_schedule(C), {A, C}, "unchecked", off).input_reads.empty());
  CHECK(lower(create_schedule(C), {A, C}, "checked").input_reads.size() == 1);
}

TEST_CASE("input regions: a guard narrows reads of inputs, not of intermediates computed whole") {
  // P is computed over all of C's points (bound inference ignores the guard), so it reads A over
  // [0, n): an A of m < n elements must be refused although C reads P only where i < m.
  Var n = size_var("n"), m = size_var("m");
  Tensor A = placeholder({m}, f32, "A");
  Tensor P = compute(
      {n}, [&](Expr i) { return A(i) * 2.0f; }, "P");
  Tensor C = compute(
      {n}, [&](Expr i) { return if_then_else(i < m, P(i), Expr(0.0f)); }, "C");
  LoweredFunc f = lower(create_schedule(C), {A, C}, "guarded_intermediate");
  CHECK(read_ranges(f, {{n.get(), 16}, {m.get(), 8}}) == "P:A(i)[0]=0..15");
  Buffer<float> a({8}), c({16});
  CHECK_THROWS_AS(interpret(f, {a, c}), ArgumentError);
}

TEST_CASE("input regions: a read with an empty dimension reads nothing") {
  Var b = size_var("b"), m = size_var("m");
  Tensor A = placeholder({b, m}, f32, "A");
  Tensor C = compute(
      {b, m}, [&](Expr r, Expr i) { return A(r, i + 1); }, "C");
  LoweredFunc f = lower(create_schedule(C), {A, C}, "empty_rows");
  Buffer<float> a({0, 4}), c({0, 4});
  CHECK_NOTHROW(interpret(f, {a, c}));  // no row: dimension 1's 1..4 is never read
  Buffer<float> a1({1, 4}), c1({1, 4});
  CHECK_THROWS_AS(interpret(f, {a1, c1}), ArgumentError);
}
