// Reductions: sum/min/max/prod over one and two axes, with a `where` condition, user-defined and
// two-value (argmax) comm_reducers, and one reduce_axis handle shared by two computes.
#include <loom/core.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include "../support/interpret_checked.hpp"
#include "te_test_util.hpp"

using namespace loom;
using namespace loom::te_test;

TEST_CASE("te: sum, min, max and prod over one axis (float32)") {
  const int m = 7, n = 13;
  Tensor A = placeholder({m, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor S = compute(
      {m}, [&](Expr i) { return sum(A(i, k), {k}); }, "S");
  Tensor Mn = compute(
      {m}, [&](Expr i) { return min(A(i, k), {k}); }, "Mn");
  Tensor Mx = compute(
      {m}, [&](Expr i) { return max(A(i, k), {k}); }, "Mx");
  Tensor P = compute(
      {m}, [&](Expr i) { return prod(A(i, k), {k}); }, "P");
  Schedule s = create_schedule({S, Mn, Mx, P});
  LoweredFunc f = lower(s, {A, S, Mn, Mx, P}, "reduce1");
  Buffer<float> a = random_buffer<float>({m, n}, 1, 0.5, 1.5), sm({m}), mn({m}), mx({m}), pr({m});
  test::interpret_checked(f, {a, sm, mn, mx, pr});
  for (int i = 0; i < m; ++i) {
    float es = 0.0f, emn = std::numeric_limits<float>::max(), emx = -emn, ep = 1.0f;
    for (int j = 0; j < n; ++j) {
      es += a(i, j);
      emn = std::min(emn, a(i, j));
      emx = std::max(emx, a(i, j));
      ep *= a(i, j);
    }
    CHECK(sm(i) == es);  // same order of accumulation: bit-exact
    CHECK(mn(i) == emn);
    CHECK(mx(i) == emx);
    CHECK(pr(i) == ep);
  }
}

TEST_CASE_TEMPLATE("te: integer reductions use the type's identities and wrap", T, int8_t, int32_t, int64_t,
                   uint8_t, uint64_t) {
  const DType t = dtype_of<T>::value;
  const int m = 4, n = 6;
  Tensor A = placeholder({m, n}, t, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor S = compute(
      {m}, [&](Expr i) { return sum(A(i, k), {k}); }, "S");
  Tensor Mn = compute(
      {m}, [&](Expr i) { return min(A(i, k), {k}); }, "Mn");
  Tensor Mx = compute(
      {m}, [&](Expr i) { return max(A(i, k), {k}); }, "Mx");
  Schedule s = create_schedule({S, Mn, Mx});
  LoweredFunc f = lower(s, {A, S, Mn, Mx}, "int_reduce");
  Buffer<T> a({m, n}), sm({m}), mn({m}), mx({m});
  const T lo = std::numeric_limits<T>::lowest(), hi = std::numeric_limits<T>::max();
  // Row 0 holds the extremes (min/max identities must not leak); row 1 overflows the sum.
  T rows[m][n] = {{hi, lo, T(1), T(2), hi, lo},
                  {hi, hi, hi, T(3), T(1), T(0)},
                  {T(5), T(5), T(5), T(5), T(5), T(5)},
                  {T(0), T(9), T(2), T(7), T(4), T(1)}};
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) a(i, j) = rows[i][j];
  test::interpret_checked(f, {a, sm, mn, mx});
  using U = std::make_unsigned_t<T>;
  for (int i = 0; i < m; ++i) {
    CAPTURE(i);
    U es = 0;
    T emn = hi, emx = lo;
    for (int j = 0; j < n; ++j) {
      es = static_cast<U>(es + static_cast<U>(a(i, j)));
      emn = std::min(emn, a(i, j));
      emx = std::max(emx, a(i, j));
    }
    CHECK(sm(i) == static_cast<T>(es));
    CHECK(mn(i) == emn);
    CHECK(mx(i) == emx);
  }
}

TEST_CASE("te: reductions over two axes (a sum of a 2-D window, a max over a whole matrix)") {
  const int m = 9, n = 8, kh = 3, kw = 4;
  Tensor A = placeholder({m, n}, f32, "A");
  IterVar ry = reduce_axis(0, kh, "ry"), rx = reduce_axis(0, kw, "rx");
  Tensor Box = compute(
      {m - kh + 1, n - kw + 1},
      [&](Expr y, Expr x) {
        return sum(A(y + ry, x + rx), {ry, rx});
      },
      "Box");
  IterVar ri = reduce_axis(0, m, "ri"), rj = reduce_axis(0, n, "rj");
  Tensor All = compute(
      {},
      [&]() {
        return max(A(ri, rj), {ri, rj});
      },
      "All");
  IterVar pi = reduce_axis(0, 2, "pi"), pj = reduce_axis(0, 3, "pj");
  Tensor P = compute(
      {m - 1},
      [&](Expr i) {
        return prod(A(i + pi, pj) + 2.0f, {pi, pj});
      },
      "P");
  Schedule s = create_schedule({Box, All, P});
  LoweredFunc f = lower(s, {A, Box, All, P}, "reduce2");
  Buffer<float> a = random_buffer<float>({m, n}, 2), box({m - kh + 1, n - kw + 1}),
                all(std::vector<int64_t>{}), p({m - 1});
  test::interpret_checked(f, {a, box, all, p});
  for (int y = 0; y + kh <= m; ++y)
    for (int x = 0; x + kw <= n; ++x) {
      float e = 0.0f;
      for (int dy = 0; dy < kh; ++dy)
        for (int dx = 0; dx < kw; ++dx) e += a(y + dy, x + dx);
      CHECK(box(y, x) == e);
    }
  float emx = a(0, 0);
  for (int64_t i = 0; i < a.num_elements(); ++i) emx = std::max(emx, a.at_flat(i));
  CHECK(all.at_flat(0) == emx);
  for (int i = 0; i + 1 < m; ++i) {
    float e = 1.0f;
    for (int di = 0; di < 2; ++di)
      for (int dj = 0; dj < 3; ++dj) e *= a(i + di, dj) + 2.0f;
    CHECK(p(i) == e);
  }
}

TEST_CASE("te: a reduction with a where condition counts only the points where it holds") {
  const int n = 12;
  Tensor A = placeholder({n, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  // Strictly upper-triangular row sums, and the max over the positive entries only.
  Tensor U = compute(
      {n}, [&](Expr i) { return sum(A(i, k), {k}, k > i); }, "U");
  Tensor Mp = compute(
      {n}, [&](Expr i) { return max(A(i, k), {k}, A(i, k) > 0.0f); }, "Mp");
  IterVar k2 = reduce_axis(0, n, "k2"), l2 = reduce_axis(0, n, "l2");
  Tensor Diag = compute(
      {},
      [&]() {
        return sum(A(k2, l2), {k2, l2}, k2 == l2);
      },
      "Diag");
  Schedule s = create_schedule({U, Mp, Diag});
  LoweredFunc f = lower(s, {A, U, Mp, Diag}, "where");
  Buffer<float> a = random_buffer<float>({n, n}, 3), u({n}), mp({n}), diag(std::vector<int64_t>{});
  test::interpret_checked(f, {a, u, mp, diag});
  float etrace = 0.0f;
  for (int i = 0; i < n; ++i) {
    float es = 0.0f, emx = std::numeric_limits<float>::lowest();
    for (int j = 0; j < n; ++j) {
      if (j > i) es += a(i, j);
      if (a(i, j) > 0.0f) emx = std::max(emx, a(i, j));
    }
    etrace += a(i, i);
    CHECK(u(i) == es);
    CHECK(mp(i) == emx);
  }
  CHECK(u(n - 1) == 0.0f);  // nothing satisfies k > n - 1: the identity
  CHECK(diag.at_flat(0) == etrace);
}

// Comparing two IterVars builds a comparison of their values, as in TVM; it once compared the
// handles and returned a C++ bool that silently became a constant `where` (0 or everything).
static_assert(std::is_same_v<decltype(std::declval<IterVar>() == std::declval<IterVar>()), Expr>);
static_assert(std::is_same_v<decltype(std::declval<IterVar>() >= std::declval<IterVar>()), Expr>);
// ... and Expr does not convert to bool, even explicitly, so `if (a == b)` or std::find over
// IterVars cannot compile into a silent handle comparison: identity is IterVar::same_as.
static_assert(!std::is_constructible_v<bool, Expr>);

TEST_CASE("te: ==, !=, <, <=, > and >= between two reduce axes are value comparisons in a where") {
  const int n = 6;
  Tensor A = placeholder({n, n}, i32, "A");
  IterVar k = reduce_axis(0, n, "k"), l = reduce_axis(0, n, "l");
  using Cond = std::function<Expr(const IterVar&, const IterVar&)>;
  using Oracle = std::function<bool(int, int)>;
  const std::vector<std::pair<Cond, Oracle>> cases = {
      {[](const IterVar& a, const IterVar& b) { return a == b; }, [](int a, int b) { return a == b; }},
      {[](const IterVar& a, const IterVar& b) { return a != b; }, [](int a, int b) { return a != b; }},
      {[](const IterVar& a, const IterVar& b) { return a < b; }, [](int a, int b) { return a < b; }},
      {[](const IterVar& a, const IterVar& b) { return a <= b; }, [](int a, int b) { return a <= b; }},
      {[](const IterVar& a, const IterVar& b) { return a > b; }, [](int a, int b) { return a > b; }},
      {[](const IterVar& a, const IterVar& b) { return a >= b; }, [](int a, int b) { return a >= b; }},
  };
  std::vector<Tensor> outs;
  for (size_t c = 0; c < cases.size(); ++c)
    outs.push_back(compute(
        {1},
        [&](Expr) {
          return sum(A(k, l), {k, l}, cases[c].first(l, k));
        },
        cat("S", c)));
  Schedule s = create_schedule(outs);
  std::vector<LowerArg> args = {A};
  args.insert(args.end(), outs.begin(), outs.end());
  LoweredFunc f = lower(s, args, "compare_axes");
  Buffer<int32_t> a = random_buffer<int32_t>({n, n}, 4, -100, 100);
  std::vector<Buffer<int32_t>> results;  // one each: copies of a Buffer share its memory
  for (size_t c = 0; c < cases.size(); ++c) results.emplace_back(std::vector<int64_t>{1});
  std::vector<KernelArg> bufs = {a};
  for (const Buffer<int32_t>& r : results) bufs.push_back(r);
  test::interpret_checked(f, bufs);
  for (size_t c = 0; c < cases.size(); ++c) {
    int32_t expected = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        if (cases[c].second(j, i)) expected += a(i, j);
    CAPTURE(c);
    CHECK(results[c](0) == expected);
  }
}

TEST_CASE("te: a user-defined comm_reducer (float abs-max and an integer product modulo a prime)") {
  const int m = 5, n = 17;
  Reducer absmax = comm_reducer([](Expr a, Expr b) { return max(abs(a), abs(b)); },
                                [](DType t) { return make_zero(t); }, "absmax");
  Reducer mulmod = comm_reducer([](Expr a, Expr b) { return (a * b) % make_const(a.dtype(), 1000003); },
                                [](DType t) { return make_const(t, 1); }, "mulmod");
  Tensor A = placeholder({m, n}, f32, "A");
  Tensor B = placeholder({m, n}, i64, "B");
  IterVar k = reduce_axis(0, n, "k");
  Tensor Am = compute(
      {m}, [&](Expr i) { return absmax(A(i, k), {k}); }, "Am");
  Tensor Bm = compute(
      {m}, [&](Expr i) { return mulmod(B(i, k), {k}); }, "Bm");
  Schedule s = create_schedule({Am, Bm});
  LoweredFunc f = lower(s, {A, B, Am, Bm}, "custom");
  CHECK(f.to_string().find("abs(") != std::string::npos);
  Buffer<float> a = random_buffer<float>({m, n}, 4), am({m});
  Buffer<int64_t> b = random_buffer<int64_t>({m, n}, 5, 1, 1000000), bm({m});
  test::interpret_checked(f, {a, b, am, bm});
  for (int i = 0; i < m; ++i) {
    float emx = 0.0f;
    int64_t eprod = 1;
    for (int j = 0; j < n; ++j) {
      emx = std::max(emx, std::abs(a(i, j)));
      eprod = (eprod * b(i, j)) % 1000003;
    }
    CHECK(am(i) == emx);
    CHECK(bm(i) == eprod);
  }
}

TEST_CASE("te: argmax, a two-value comm_reducer, in a multi-output compute") {
  const int m = 8, n = 19;
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
        return argmax({k, A(i, k)}, {k});
      },
      "T");
  REQUIRE(T.size() == 2);
  CHECK(T[0].dtype() == i32);
  CHECK(T[1].dtype() == f32);
  // Argmax of the even columns only (a where condition on a tuple reduction).
  IterVar k2 = reduce_axis(0, n, "k2");
  std::vector<Tensor> E = compute(
      {m},
      [&](Expr i) {
        return argmax({k2, A(i, k2)}, {k2}, k2 % 2 == 0);
      },
      "E");
  Schedule s = create_schedule({T[0], T[1], E[0], E[1]});
  LoweredFunc f = lower(s, {A, T[0], T[1], E[0], E[1]}, "argmax");
  Buffer<float> a = random_buffer<float>({m, n}, 6), value({m}), evalue({m});
  Buffer<int32_t> index({m}), eindex({m});
  test::interpret_checked(f, {a, index, value, eindex, evalue});
  for (int i = 0; i < m; ++i) {
    int best = 0, ebest = 0;
    for (int j = 1; j < n; ++j) {
      if (a(i, j) > a(i, best)) best = j;
      if (j % 2 == 0 && a(i, j) > a(i, ebest)) ebest = j;
    }
    CHECK(index(i) == best);
    CHECK(value(i) == a(i, best));
    CHECK(eindex(i) == ebest);
    CHECK(evalue(i) == a(i, ebest));
  }
}

TEST_CASE("te: one reduce_axis handle used by two computes gives correct results for both") {
  // TVM rejects this; Loom clones the axis per compute.
  const int m = 6, n = 10;
  Tensor A = placeholder({m, n}, f32, "A");
  IterVar k = reduce_axis(0, n, "k");
  Tensor S = compute(
      {m}, [&](Expr i) { return sum(A(i, k), {k}); }, "S");
  Tensor Mx = compute(
      {m}, [&](Expr i) { return max(A(i, k) * 2.0f, {k}); }, "Mx");
  Tensor O = compute(
      {m}, [&](Expr i) { return S(i) - Mx(i); }, "O");
  CHECK_FALSE(S.reduce_axis(0).same_as(Mx.reduce_axis(0)));

  auto check = [&](const Schedule& s) {
    LoweredFunc f = lower(s, {A, S, Mx, O}, "shared_k");
    Buffer<float> a = random_buffer<float>({m, n}, 7), sm({m}), mx({m}), o({m});
    test::interpret_checked(f, {a, sm, mx, o});
    for (int i = 0; i < m; ++i) {
      float es = 0.0f, emx = std::numeric_limits<float>::lowest();
      for (int j = 0; j < n; ++j) {
        es += a(i, j);
        emx = std::max(emx, a(i, j) * 2.0f);
      }
      CHECK(sm(i) == es);
      CHECK(mx(i) == emx);
      CHECK(o(i) == es - emx);
    }
  };
  Schedule plain = create_schedule(O);
  check(plain);

  // The handle names each compute's own copy when scheduling: split it in one stage only,
  // reorder it outermost in the other.
  Schedule s = create_schedule(O);
  auto [ko, ki] = s[S].split(k, 3);
  s[Mx].reorder({k, Mx.axis(0)});
  check(s);
  std::string text = lower(s, {A, S, Mx, O}, "shared_k").to_string();
  CHECK(text.find("k.outer") != std::string::npos);
  CHECK(text.find("for (k: int32, 0, 10)") != std::string::npos);  // Mx's copy is not split
}

TEST_CASE("te: a reduce axis that starts above zero, and a reduction of rank 0") {
  const int m = 4, n = 12;
  Tensor A = placeholder({m, n}, f32, "A");
  IterVar k = reduce_axis(3, 10, "k");  // columns 3..9
  Tensor S = compute(
      {m}, [&](Expr i) { return sum(A(i, k), {k}); }, "S");
  IterVar r = reduce_axis(0, m, "r");
  Tensor T = compute(
      {}, [&]() { return sum(S(r), {r}); }, "T");
  Schedule s = create_schedule(T);
  LoweredFunc f = lower(s, {A, S, T}, "offset_k");
  Buffer<float> a = random_buffer<float>({m, n}, 8), sm({m}), t(std::vector<int64_t>{});
  test::interpret_checked(f, {a, sm, t});
  float total = 0.0f;
  for (int i = 0; i < m; ++i) {
    float e = 0.0f;
    for (int j = 3; j < 10; ++j) e += a(i, j);
    CHECK(sm(i) == e);
    total += sm(i);
  }
  CHECK(t.at_flat(0) == total);
}

TEST_CASE("te: a reduce axis whose extent depends on a data axis (triangular prefix sum)") {
  const int n = 11;
  Tensor A = placeholder({n}, f32, "A");
  Tensor C = compute(
      {n},
      [&](Expr i) {
        IterVar k = reduce_axis(0, i + 1, "k");
        return sum(A(k), {k});
      },
      "C");
  auto check = [&](const Schedule& s) {
    LoweredFunc f = lower(s, {A, C}, "triangle");
    Buffer<float> a = random_buffer<float>({n}, 9), c({n});
    test::interpret_checked(f, {a, c});
    float running = 0.0f;
    for (int i = 0; i < n; ++i) {
      running += a(i);
      CHECK(c(i) == running);
    }
  };
  check(create_schedule(C));
  // The reduce loop's extent follows the data axis through a split of it.
  Schedule s = create_schedule(C);
  auto [io, ii] = s[C].split(C.axis(0), 4);
  check(s);
  s[C].split(C.reduce_axis(0), 3);
  check(s);
}
