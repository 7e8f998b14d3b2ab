// Tests of ConstIntBound interval arithmetic and of the Analyzer: bindings and their scopes,
// constant bounds of every node kind, symbolic proofs, and a randomized soundness check.
#include <loom/ir/analyzer.hpp>
#include <loom/ir/printer.hpp>

#include <doctest/doctest.h>

#include "random_expr_util.hpp"

using namespace loom;

namespace {
constexpr int64_t kPosInf = ConstIntBound::kPosInf;
constexpr int64_t kNegInf = ConstIntBound::kNegInf;
ConstIntBound cib(int64_t lo, int64_t hi) { return ConstIntBound{lo, hi}; }
}  // namespace

TEST_CASE("const_int_bound: interval arithmetic saturates instead of overflowing") {
  CHECK(bound_add(cib(kPosInf - 1, kPosInf - 1), cib(5, 5)) == cib(kPosInf, kPosInf));
  CHECK(bound_add(cib(kNegInf, 3), cib(1, kPosInf)) == cib(kNegInf, kPosInf));
  CHECK(bound_sub(cib(0, 10), cib(kNegInf, 0)) == cib(0, kPosInf));
  CHECK(bound_neg(cib(kNegInf, 5)) == cib(-5, kPosInf));
  CHECK(bound_mul(cib(-3, 4), cib(2, 5)) == cib(-15, 20));
  CHECK(bound_mul(cib(0, kPosInf), cib(-2, 3)) == cib(kNegInf, kPosInf));
  CHECK(bound_mul(cib(0, 0), cib(kNegInf, kPosInf)) == cib(0, 0));  // 0 * anything finite is 0
  CHECK(bound_mul(cib(int64_t{1} << 40, int64_t{1} << 40), cib(int64_t{1} << 30, int64_t{1} << 30)) ==
        cib(kPosInf, kPosInf));
  CHECK(bound_min(cib(0, 10), cib(3, 5)) == cib(0, 5));
  CHECK(bound_max(cib(0, 10), cib(3, 5)) == cib(3, 10));
  CHECK(bound_union(cib(0, 1), cib(5, 6)) == cib(0, 6));
  CHECK(bound_intersect(cib(0, 10), cib(5, 20)) == cib(5, 10));
}

TEST_CASE("const_int_bound: C division and remainder round toward zero") {
  CHECK(bound_truncdiv(cib(-7, 9), cib(2, 2)) == cib(-3, 4));
  CHECK(bound_truncdiv(cib(-7, 9), cib(-2, -2)) == cib(-4, 3));
  CHECK(bound_truncdiv(cib(10, 20), cib(1, kPosInf)) == cib(0, 20));
  CHECK(bound_truncdiv(cib(5, 10), cib(-1, 1)) == cib(-10, 10));  // |b| >= 1 when defined
  CHECK(bound_truncmod(cib(-7, 9), cib(4, 4)) == cib(-3, 3));
  CHECK(bound_truncmod(cib(0, 100), cib(8, 8)) == cib(0, 7));
  CHECK(bound_truncmod(cib(9, 11), cib(8, 8)) == cib(1, 3));  // one quotient: exact
  CHECK(bound_truncmod(cib(-11, -9), cib(8, 8)) == cib(-3, -1));
  CHECK(bound_truncmod(cib(0, 5), cib(8, 8)) == cib(0, 5));
}

TEST_CASE("const_int_bound: floor division and modulo round toward negative infinity") {
  CHECK(bound_floordiv(cib(-7, 9), cib(2, 2)) == cib(-4, 4));
  CHECK(bound_floordiv(cib(-7, 9), cib(-2, -2)) == cib(-5, 3));
  CHECK(bound_floordiv(cib(-5, 5), cib(1, kPosInf)) == cib(-5, 5));
  CHECK(bound_floordiv(cib(kNegInf, 0), cib(4, 4)) == cib(kNegInf, 0));
  CHECK(bound_floormod(cib(-7, 9), cib(4, 4)) == cib(0, 3));
  CHECK(bound_floormod(cib(-7, -5), cib(4, 4)) == cib(1, 3));  // one quotient: exact
  CHECK(bound_floormod(cib(0, 2), cib(4, 10)) == cib(0, 2));
  CHECK(bound_floormod(cib(-7, 9), cib(-4, -4)) == cib(-3, 0));
  CHECK(bound_floormod(cib(kNegInf, kPosInf), cib(1, kPosInf)) == cib(0, kPosInf));
}

TEST_CASE("const_int_bound: types bound what their values can be") {
  CHECK(bound_of_type(i8) == cib(-128, 127));
  CHECK(bound_of_type(u8) == cib(0, 255));
  CHECK(bound_of_type(boolean) == cib(0, 1));
  CHECK(bound_of_type(i64) == cib(kNegInf, kPosInf));
  CHECK(bound_of_type(u64) == cib(0, kPosInf));
  CHECK(bound_of_type(f32) == cib(kNegInf, kPosInf));
  // Signed arithmetic is assumed not to overflow; unsigned arithmetic wraps.
  CHECK(fit_to_type(cib(-10, 300), i8) == cib(-10, 127));
  CHECK(fit_to_type(cib(-1, 3), u8) == cib(0, 255));
  CHECK(fit_to_type(cib(1, 3), u8) == cib(1, 3));
}

TEST_CASE("analyzer: constant bounds of every integer node kind") {
  Analyzer an;
  Var i("i"), j("j"), n("n");
  an.bind(i, Range(0, 32));
  an.bind(j, Range(-4, 8));  // [-4, 3]
  CHECK(an.const_int_bound(Expr(7)) == cib(7, 7));
  CHECK(an.const_int_bound(i) == cib(0, 31));
  CHECK(an.const_int_bound(n) == cib(INT32_MIN, INT32_MAX));  // unbound: its type's range
  CHECK(an.const_int_bound(i * 4 + 3) == cib(3, 127));
  CHECK(an.const_int_bound(i - j) == cib(-3, 35));
  CHECK(an.const_int_bound(i * j) == cib(-124, 93));
  CHECK(an.const_int_bound(i / 4) == cib(0, 7));
  CHECK(an.const_int_bound(j / 2) == cib(-2, 1));
  CHECK(an.const_int_bound(j % 3) == cib(-2, 2));
  CHECK(an.const_int_bound(floordiv(j, 2)) == cib(-2, 1));
  CHECK(an.const_int_bound(floormod(j, 3)) == cib(0, 2));
  CHECK(an.const_int_bound(floormod(i + 100, 8)) == cib(0, 7));
  CHECK(an.const_int_bound(loom::min(i, j)) == cib(-4, 3));
  CHECK(an.const_int_bound(loom::max(i, j)) == cib(0, 31));
  CHECK(an.const_int_bound(select(i < 3, j, i + 100)) == cib(-4, 131));
  CHECK(an.const_int_bound(if_then_else(i < 3, j, Expr(50))) == cib(-4, 50));
  CHECK(an.const_int_bound(i < j) == cib(0, 1));
  CHECK(an.const_int_bound(i < j && j < 3) == cib(0, 1));
  CHECK(an.const_int_bound(loom_test::likely_call(i < j)) == cib(0, 1));
  CHECK(an.const_int_bound(cast(i64, j)) == cib(-4, 3));
  CHECK(an.const_int_bound(cast(i8, i * 10)) == cib(-128, 127));  // 310 does not fit: wraps
  CHECK(an.const_int_bound(cast(u8, j)) == cib(0, 255));
  CHECK(an.const_int_bound(cast(i32, Var("f", f32))) == cib(INT32_MIN, INT32_MAX));
  CHECK(an.const_int_bound(Var("f", f32) * 2.0) == cib(kNegInf, kPosInf));
  Var t("t");
  CHECK(an.const_int_bound(LetNode::make(t, i + 1, t * 2)) == cib(2, 64));
  CHECK(an.const_int_bound(RampNode::make(i, Expr(2), 4)) == cib(0, 37));
  CHECK(an.const_int_bound(BroadcastNode::make(j, 4)) == cib(-4, 3));
}

TEST_CASE("analyzer: unsigned bounds account for wrap-around") {
  Analyzer an;
  Var x("x", u8);
  an.bind(x, Range(IntImmNode::make(u8, 1), IntImmNode::make(u8, 10)));
  CHECK(an.const_int_bound(x - IntImmNode::make(u8, 1)) == cib(0, 9));
  CHECK(an.const_int_bound(x - IntImmNode::make(u8, 2)) == cib(0, 255));  // x = 1 wraps to 255
  CHECK(an.const_int_bound(IntImmNode::make(u64, -1)) == cib(kPosInf, kPosInf));
}

TEST_CASE("analyzer: symbolic ranges, lets and non-negative sizes") {
  Analyzer an;
  Var n("n"), i("i"), j("j"), v("v");
  an.mark_non_negative(n);
  CHECK(an.const_int_bound(n) == cib(0, INT32_MAX));
  an.bind(i, Range(0, n));
  CHECK(an.const_int_bound(i) == cib(0, INT32_MAX - 1));
  an.bind(j, Range(i * 4, 4));  // j in [4i, 4i + 4)
  CHECK(an.const_int_bound(j).min_value == 0);
  an.bind(v, i + 1);
  CHECK(an.const_int_bound(v) == cib(1, INT32_MAX));
  const Analyzer::VarInfo* info = an.lookup(j.get());
  REQUIRE(info != nullptr);
  CHECK(info->range.defined());
  CHECK(to_string(info->range.min) == "(i*4)");
  an.unbind(j);
  CHECK(an.lookup(j.get()) == nullptr);
}

TEST_CASE("analyzer: scoped bindings restore what was known before") {
  Analyzer an;
  Var i("i"), k("k");
  an.bind(i, Range(0, 10));
  {
    Analyzer::BindingGuard outer = an.scoped_bind(i, Range(5, 2));
    CHECK(an.const_int_bound(i) == cib(5, 6));
    {
      Analyzer::BindingGuard inner = an.scoped_bind(i, Expr(3));
      CHECK(an.const_int_bound(i) == cib(3, 3));
      Analyzer::BindingGuard fresh = an.scoped_bind(k, Range(0, 4));
      CHECK(an.const_int_bound(k) == cib(0, 3));
    }
    CHECK(an.const_int_bound(i) == cib(5, 6));
    CHECK(an.lookup(k.get()) == nullptr);
  }
  CHECK(an.const_int_bound(i) == cib(0, 9));

  int64_t inside = an.with_scope([&] {
    an.bind(i, Range(100, 1));
    an.bind(k, Range(0, 2));
    return an.const_int_bound(i + k).max_value;
  });
  CHECK(inside == 101);
  CHECK(an.const_int_bound(i) == cib(0, 9));
  CHECK(an.lookup(k.get()) == nullptr);
}

TEST_CASE("analyzer: can_prove with constant ranges") {
  Analyzer an;
  Var i("i"), j("j");
  an.bind(i, Range(0, 32));
  an.bind(j, Range(0, 4));
  CHECK(an.can_prove(i < 32));
  CHECK(an.can_prove(i >= 0));
  CHECK(an.can_prove(i * 4 + j < 128));
  CHECK_FALSE(an.can_prove(i * 4 + j < 127));
  CHECK(an.can_prove(i + 1 > i));
  CHECK(an.can_prove(i != 40));
  CHECK(an.can_prove(loom_test::likely_call(i < 32) && j <= 3));
  CHECK(an.can_prove(i < 0 || j < 4));
  CHECK_FALSE(an.can_prove(i < 16));        // true for some i only
  CHECK_FALSE(an.can_prove(Var("u") > 0));  // nothing known
  CHECK(an.can_prove(floordiv(i, 8) < 4));
  CHECK(an.can_prove(floormod(i * 4 + j, 4) == j));
  CHECK(an.can_prove_equal(floordiv(i * 4 + j, 4), i));
  CHECK(an.can_prove_equal(i * 4 + j - i * 4, j));
  CHECK_FALSE(an.can_prove_equal(i, j));
}

TEST_CASE("analyzer: symbolic proofs substitute symbolic range ends") {
  Var n("n"), m("m"), i("i"), j("j"), k("k");
  {
    Analyzer an;
    an.bind(i, Range(0, n));
    CHECK(an.can_prove(i < n));
    CHECK(an.can_prove(i <= n - 1));
    CHECK(an.can_prove(n > i));
    CHECK(an.can_prove(i + 1 <= n));
    CHECK_FALSE(an.can_prove(i < n - 1));
    CHECK_FALSE(an.can_prove(i >= n));
    CHECK(an.can_prove(!(i >= n)));
  }
  {
    Analyzer an;
    an.bind(i, Range(0, n));
    an.bind(j, Range(0, 32));
    CHECK(an.can_prove(i * 32 + j < n * 32));
    CHECK_FALSE(an.can_prove(i * 32 + j < n * 32 - 1));
  }
  {
    // Triangular nest: j in [0, i), i in [0, n).
    Analyzer an;
    an.bind(i, Range(0, n));
    an.bind(j, Range(0, i));
    CHECK(an.can_prove(j < n));
    CHECK(an.can_prove(j + 1 < n));
    CHECK(an.can_prove(j < i));
  }
  {
    // A range with a symbolic minimum, as compute_at produces.
    Analyzer an;
    an.bind(i, Range(0, n));
    an.bind(k, Range(i * 8, 8));
    CHECK(an.can_prove(k < n * 8));
    CHECK(an.can_prove(k >= i * 8));
    CHECK(an.can_prove(k - i * 8 < 8));
  }
  {
    Analyzer an;
    an.bind(i, Range(m, n));
    CHECK(an.can_prove(i >= m));
    CHECK(an.can_prove(i < m + n));
  }
  {
    // A let value is substituted exactly.
    Analyzer an;
    Var t("t");
    an.bind(i, Range(0, n));
    an.bind(t, i + 1);
    CHECK(an.can_prove(t > i));
    CHECK(an.can_prove(t <= n));
  }
}

TEST_CASE("analyzer: simplify uses what is bound") {
  Analyzer an;
  Var i("i"), n("n");
  an.bind(i, Range(0, 8));
  CHECK(to_string(an.simplify(floordiv(i, 8))) == "0");
  CHECK(to_string(an.simplify(floormod(i, 8))) == "i");
  CHECK(to_string(an.simplify(loom::min(i, 8))) == "i");
  CHECK(to_string(an.simplify(loom::max(i, 0))) == "i");
  CHECK(to_string(an.simplify(floordiv(n, 8))) == "floordiv(n, 8)");
  Analyzer one;
  one.bind(i, Range(5, 1));
  CHECK(to_string(one.simplify(i * 2 + n)) == "(n + 10)");
}

TEST_CASE("analyzer: randomized soundness of const_int_bound and can_prove") {
  Var n("n"), x("x"), y("y");
  loom_test::ExprGenerator gen(20240601, {n, x, y});
  int checked = 0;
  for (int iter = 0; iter < 1500; ++iter) {
    Expr e = gen.int_expr(4);
    Expr c = gen.bool_expr(2);
    Analyzer an;
    an.bind(n, Range(1, 7));  // n in [1, 7]
    an.bind(x, Range(0, n));  // x in [0, n)
    an.bind(y, Range(-4, 9));
    ConstIntBound b = an.const_int_bound(e);
    ConstIntBound sb = an.symbolic_bound(e);
    bool proven = an.can_prove(c);
    loom_test::Evaluator ev;
    bool large = false;
    std::vector<std::pair<int64_t, int64_t>> values;
    for (int64_t nv = 1; nv <= 7; ++nv) {
      for (int64_t xv = 0; xv < nv; ++xv) {
        for (int64_t yv = -4; yv <= 4; ++yv) {
          ev.env = {{n.get(), nv}, {x.get(), xv}, {y.get(), yv}};
          values.push_back({ev(e), ev(c)});
        }
      }
    }
    large = ev.large;
    if (large) continue;
    ++checked;
    for (const auto& point : values) {
      // Plain variables, not structured bindings: INFO captures them in a lambda (clang 14).
      int64_t value = point.first, truth = point.second;
      INFO("e = " << to_string(e) << "  bound " << b << "  symbolic " << sb << "  value " << value);
      REQUIRE(b.contains(value));
      REQUIRE(sb.contains(value));
      INFO("c = " << to_string(c));
      if (proven) REQUIRE(truth != 0);
    }
  }
  CHECK(checked > 800);
}
