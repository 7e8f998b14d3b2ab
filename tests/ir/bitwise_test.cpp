// The bitwise nodes (& | ^ << >>): printing, the operators' type rules and errors, constant
// folding and the integer evaluator against native C++ arithmetic for every integer type, the
// simplifier's identities (and its soundness on random expressions), bounds checked against
// evaluation.
#include <loom/core.hpp>
#include <loom/ir/analyzer.hpp>
#include <loom/ir/bitwise_simplify.hpp>
#include <loom/ir/const_fold.hpp>
#include <loom/ir/int_eval.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "../support/bitwise_reference.hpp"
#include "random_expr_util.hpp"

using namespace loom;

namespace {

std::string simplified(const Expr& e) { return to_string(simplify(e)); }
std::string simplified(Analyzer& an, const Expr& e) { return to_string(an.simplify(e)); }
Expr int_imm(DType t, int64_t v) { return IntImmNode::make(t, v); }
ConstIntBound interval(int64_t lo, int64_t hi) { return ConstIntBound{lo, hi}; }

Expr make_bitwise(IRNodeKind k, Expr a, Expr b) {
  return bitwise_detail::make_node(k, std::move(a), std::move(b));
}

/// Evaluates e with the integer evaluator, variables from `values`.
int64_t eval(const Expr& e, const std::unordered_map<const VarNode*, int64_t>& values) {
  IntEvaluator ev([&](const VarNode* v, int) -> const int64_t* {
    auto it = values.find(v);
    return it == values.end() ? nullptr : &it->second;
  });
  return ev(e);
}

template <typename T>
void check_against_native(DType t) {
  CAPTURE(t.str());
  std::mt19937_64 rng(1234 + t.bits + (t.is_int() ? 0 : 100));
  Var x("x", t), y("y", t);
  int mismatches = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const T a = static_cast<T>(rng());
    // Amounts: mostly small, of either sign and past the width, as well as raw random bits.
    const T b = trial % 2 ? static_cast<T>(static_cast<int>(rng() % 160) - 80) : static_cast<T>(rng());
    for (IRNodeKind k : test::kBitwiseKinds) {
      const int64_t want = static_cast<int64_t>(test::native_bitwise<T>(k, a, b));
      // IntImmNode::make normalises: sign-extended for signed types, the bit pattern otherwise.
      const Expr ea = int_imm(t, static_cast<int64_t>(a)), eb = int_imm(t, static_cast<int64_t>(b));
      const Expr folded = fold_binary(k, ea, eb);
      const int64_t* got = as_const_int(folded);
      const int64_t evaluated =
          eval(make_bitwise(k, x, y), {{x.get(), *as_const_int(ea)}, {y.get(), *as_const_int(eb)}});
      if (!got || *got != want || evaluated != want) {
        ++mismatches;
        MESSAGE(kind_name(k) << " " << int64_t(a) << ", " << int64_t(b) << ": want " << want << ", folded "
                             << (got ? std::to_string(*got) : "nothing") << ", evaluated " << evaluated);
      }
    }
  }
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("bitwise: operators print infix and keep the integer type") {
  Var x("x"), y("y");
  CHECK(to_string(x & y) == "(x & y)");
  CHECK(to_string(x | 3) == "(x | 3)");
  CHECK(to_string(x ^ y) == "(x ^ y)");
  CHECK(to_string(x << 2) == "(x << 2)");
  CHECK(to_string(x >> y) == "(x >> y)");
  CHECK(to_string(bitwise_not(x)) == "(x ^ -1)");
  CHECK(to_string(~x) == "(x ^ -1)");
  CHECK(to_string(bitwise_and(x, y)) == to_string(x & y));
  CHECK(to_string(shift_right(x, 1)) == "(x >> 1)");
  Var u("u", u8), k("k", i32), w("w", i64);
  CHECK((u & 3).dtype() == u8);
  CHECK(to_string(u & 3) == "(u & 3u8)");
  CHECK(to_string(~u) == "(u ^ 255u8)");
  CHECK((u ^ k).dtype() == i32);   // usual promotion: the wider type
  CHECK((u << k).dtype() == u8);   // a shift keeps the type of the value shifted
  CHECK((w >> k).dtype() == i64);  // ... and converts the amount to it
  CHECK((x & y).kind() == IRNodeKind::BitwiseAnd);
  CHECK((x | y).kind() == IRNodeKind::BitwiseOr);
  CHECK((x ^ y).kind() == IRNodeKind::BitwiseXor);
  CHECK((x << y).kind() == IRNodeKind::ShiftLeft);
  CHECK((x >> y).kind() == IRNodeKind::ShiftRight);
  // Vectors: a scalar operand is broadcast.
  Expr v = BroadcastNode::make(x, 4);
  CHECK((v ^ 1).dtype() == i32.with_lanes(4));
  CHECK((v << 1).dtype() == i32.with_lanes(4));
  CHECK((x << v).dtype() == i32.with_lanes(4));
}

TEST_CASE(
    "bitwise: float and bool operands, and constant shifts out of range, are errors that say what to do") {
  Var x("x"), f("f", f32), h("h", f16);
  CHECK_THROWS_WITH_AS(f & x,
                       doctest::Contains("operator & needs integer operands, but its left operand f has type "
                                         "float32; cast it to an integer type first, e.g. cast(i32, f)"),
                       Error);
  CHECK_THROWS_WITH_AS(x ^ h, doctest::Contains("its right operand h has type float16"), Error);
  CHECK_THROWS_WITH_AS(x | 1.5f, doctest::Contains("right operand 1.5f32 has type float32"), Error);
  CHECK_THROWS_WITH_AS(f << 1, doctest::Contains("operator << needs integer operands"), Error);
  CHECK_THROWS_WITH_AS(
      x >> f, doctest::Contains("operator >> needs integer operands, but its right operand f"), Error);
  CHECK_THROWS_WITH_AS((x < 3) ^ x, doctest::Contains("left operand (x < 3) is bool; use &&, || and !"),
                       Error);
  CHECK_THROWS_WITH_AS(~f, doctest::Contains("operator ~ needs integer operands"), Error);
  CHECK_THROWS_WITH_AS(
      x << 32, doctest::Contains("shifting x (int32) by 32 is out of range; the amount must be in [0, 32)"),
      Error);
  CHECK_THROWS_WITH_AS(x >> -1, doctest::Contains("by -1 is out of range"), Error);
  CHECK_THROWS_WITH_AS(Var("b", i8) << 8, doctest::Contains("the amount must be in [0, 8)"), Error);
  CHECK_NOTHROW(Var("b", i8) << 7);
  CHECK_NOTHROW(Var("w", i64) << 63);
  // Passes that build the nodes directly are stopped too.
  CHECK_THROWS_AS(BitwiseXorNode::make(f, f), InternalError);
  CHECK_THROWS_AS(ShiftLeftNode::make(x < 1, x < 2), InternalError);
}

TEST_CASE("bitwise: constant folding and the integer evaluator match C++ for every integer type") {
  check_against_native<int8_t>(i8);
  check_against_native<int16_t>(i16);
  check_against_native<int32_t>(i32);
  check_against_native<int64_t>(i64);
  check_against_native<uint8_t>(u8);
  check_against_native<uint16_t>(u16);
  check_against_native<uint32_t>(u32);
  check_against_native<uint64_t>(u64);
  // A few by hand: arithmetic and logical right shifts, wrap-around, masked amounts.
  CHECK(simplified(Expr(-8) >> 1) == "-4");
  CHECK(simplified(int_imm(u32, -8) >> int_imm(u32, 1)) == "2147483644u32");
  CHECK(simplified(int_imm(i8, -128) >> int_imm(i8, 7)) == "-1i8");
  CHECK(simplified(int_imm(u8, 128) >> int_imm(u8, 7)) == "1u8");
  CHECK(simplified(Expr(1) << 31) == "-2147483648");
  CHECK(simplified(int_imm(i8, 3) << int_imm(i8, 7)) == "-128i8");
  CHECK(simplified(Expr(6) ^ 3) == "5");
  CHECK(simplified(Expr(6) | 3) == "7");
  CHECK(simplified(Expr(-6) & 7) == "2");
  CHECK(simplified(ShiftLeftNode::make(Expr(1), Expr(33))) == "2");      // built directly: 33 mod 32
  CHECK(simplified(ShiftRightNode::make(Expr(-64), Expr(-1))) == "-1");  // -1 mod 32 = 31
}

TEST_CASE("bitwise: the simplifier removes identities and folds nested constant shifts") {
  Var x("x"), y("y");
  CHECK(simplified(x ^ 0) == "x");
  CHECK(simplified(Expr(0) ^ x) == "x");
  CHECK(simplified(x & 0) == "0");
  CHECK(simplified(Expr(0) & x) == "0");
  CHECK(simplified(x | 0) == "x");
  CHECK(simplified(x << 0) == "x");
  CHECK(simplified(x >> 0) == "x");
  CHECK(simplified(Expr(0) << y) == "0");
  CHECK(simplified(Expr(0) >> y) == "0");
  CHECK(simplified(x & -1) == "x");
  CHECK(simplified(x | -1) == "-1");
  CHECK(simplified(x ^ x) == "0");
  CHECK(simplified(x & x) == "x");
  CHECK(simplified(x | x) == "x");
  CHECK(simplified(Expr(3) & x) == "(x & 3)");  // constants to the right
  CHECK(simplified((x >> 2) >> 3) == "(x >> 5)");
  CHECK(simplified((x << 4) << 3) == "(x << 7)");
  CHECK(simplified((x << 30) << 2) == "((x << 30) << 2)");  // 32 is not an amount: kept as written
  CHECK(simplified((x + 0) ^ (y * 1)) == "(x ^ y)");        // operands are simplified
  Var u("u", u8);
  CHECK(simplified(u & 255) == "u");  // all ones of uint8
  CHECK(simplified(u | 255) == "255u8");
  // Broadcasts of equal lanes stay one scalar operation.
  Expr v = simplify(BroadcastNode::make(x, 4) ^ BroadcastNode::make(y, 4));
  REQUIRE(v.as<BroadcastNode>() != nullptr);
  CHECK(to_string(v.as<BroadcastNode>()->value) == "(x ^ y)");
  CHECK(to_string(simplify(BroadcastNode::make(x, 4) & 0)) ==
        to_string(simplify(BroadcastNode::make(Expr(0), 4))));

  // Bounds make masks and shifts redundant.
  Analyzer an;
  Var i("i"), j("j");
  an.bind(i, Range(0, 8));
  an.bind(j, Range(-1, 8));
  CHECK(simplified(an, i & 7) == "i");
  CHECK(simplified(an, i & 15) == "i");
  CHECK(simplified(an, i & 3) == "(i & 3)");
  CHECK(simplified(an, j & 7) == "(j & 7)");  // j may be -1
  CHECK(simplified(an, i >> 3) == "0");
  CHECK(simplified(an, i >> 2) == "(i >> 2)");
  CHECK(simplified(an, j >> 3) == "(j >> 3)");

  // A multiple of 2^k leaves the low k bits to the rest: the swizzle of a unit (o * 32 + t) with t
  // in [0, 32) keeps the loop's part o * 32 out of the xor, so code computes the xor once.
  Var o("o"), t("t");
  an.bind(o, Range(0, 16));
  an.bind(t, Range(0, 32));
  CHECK(simplified(an, (o * 32 + t) >> 3) == "((o*4) + (t >> 3))");
  CHECK(simplified(an, (o * 8) >> 3) == "o");
  CHECK(simplified(an, ((o * 32 + t) >> 3) & 3) == "(t >> 3)");  // t >> 3 is in [0, 3] already
  CHECK(simplified(an, (o * 4) & 3) == "0");
  CHECK(simplified(an, (o * 32 + t) ^ ((t >> 3) & 3)) == "((o*32) + (t ^ (t >> 3)))");
  CHECK(simplified(an, (o * 16 + t) ^ 1) == "(((o*16) + t) ^ 1)");    // t may reach 16: not split
  CHECK(simplified(an, (x * 32 + t) >> 3) == "(((x*32) + t) >> 3)");  // x unbounded: may wrap
  CHECK(simplified(an, (x * 32 + t) & 7) == "(t & 7)");               // low bits: wrapping or not
}

TEST_CASE("bitwise: bounds of & | ^ << >> hold for every value they cover") {
  Analyzer an;
  Var x("x"), y("y"), z("z");
  an.bind(x, Range(0, 100));
  an.bind(z, Range(-20, 41));  // [-20, 20]
  auto bound = [&](const Expr& e) { return an.const_int_bound(e); };
  CHECK(bound(x & 12) == interval(0, 12));
  CHECK(bound(y & 12) == interval(0, 12));  // whatever y is
  CHECK(bound(x & y) == interval(0, 99));
  CHECK(bound(x ^ 5) == interval(0, 127));
  CHECK(bound(x | 64) == interval(64, 127));
  CHECK(bound(x >> 2) == interval(0, 24));
  CHECK(bound(x << 2) == interval(0, 396));
  CHECK(bound(z >> 2) == interval(-5, 5));
  CHECK(bound(y >> 28) == interval(-8, 7));
  CHECK(bound(y << 1) == bound_of_type(i32));  // may wrap
  CHECK(bound(z ^ 5) == bound_of_type(i32));   // negative operands: nothing claimed
  CHECK(bound(Var("u", u8) ^ Var("v", u8)) == interval(0, 255));

  // Every value of every expression lies in its bound.
  const std::vector<Expr> cases = {x & 12, x & z,  x | 64,  x | (z & 7), x ^ 5,   x ^ (x >> 1),
                                   x >> 2, z >> 2, z >> 31, x << 2,      z & 255, (x ^ 96) >> 3};
  int outside = 0;
  for (const Expr& e : cases) {
    const ConstIntBound b = bound(e);
    for (int64_t xv = 0; xv < 100; ++xv)
      for (int64_t zv = -20; zv <= 20; ++zv) {
        const int64_t v = eval(e, {{x.get(), xv}, {z.get(), zv}});
        if (!b.contains(v)) {
          ++outside;
          MESSAGE(to_string(e) << " = " << v << " at x=" << xv << ", z=" << zv << " is outside " << b);
        }
      }
  }
  CHECK(outside == 0);
}

TEST_CASE("bitwise: randomized expressions with & | ^ << >> keep their value when simplified") {
  Var n("n"), x("x"), y("y");
  loom_test::ExprGenerator gen(8675309, {n, x, y});
  gen.bitwise = true;
  int checked = 0, changed = 0, with_bitwise = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    Expr e = gen.int_expr(5);
    Analyzer an;
    an.bind(n, Range(1, 9));  // n in [1, 9]
    an.bind(x, Range(0, n));  // x in [0, n)
    an.bind(y, Range(-6, 13));
    Expr se = an.simplify(e);
    REQUIRE(to_string(an.simplify(se)) == to_string(se));  // one pass reaches a fixed point
    const std::string text = to_string(e);
    const bool bitwise = text.find(" & ") != std::string::npos || text.find(" | ") != std::string::npos ||
                         text.find(" ^ ") != std::string::npos || text.find(" << ") != std::string::npos ||
                         text.find(" >> ") != std::string::npos;
    loom_test::Evaluator ev, sev;
    std::vector<std::pair<int64_t, int64_t>> results;
    for (int64_t nv = 1; nv <= 9; ++nv)
      for (int64_t xv = 0; xv < nv; ++xv)
        for (int64_t yv = -6; yv <= 6; ++yv) {
          ev.env = sev.env = {{n.get(), nv}, {x.get(), xv}, {y.get(), yv}};
          results.push_back({ev(e), sev(se)});
        }
    if (ev.large) continue;  // beyond what the simplifier's no-overflow assumption covers
    ++checked;
    with_bitwise += bitwise;
    if (to_string(se) != text) ++changed;
    int differ = 0;
    for (const auto& [want, got] : results) differ += want != got;
    INFO("original:   " << text);
    INFO("simplified: " << to_string(se));
    REQUIRE(differ == 0);
  }
  CHECK(checked > 1500);
  CHECK(with_bitwise > checked / 3);
  CHECK(changed > checked / 3);
}
