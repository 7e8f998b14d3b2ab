// clamped_ramp (ir/clamped_ramp.hpp): which vector indices are a stride-1 ramp under a border's
// select, min or max (plus a broadcast), and the condition under which they equal it. The LLVM
// backend's branch on that condition is checked against the interpreter in
// tests/jit/jit_ir_cases_test.cpp.
#include <loom/core.hpp>
#include <loom/ir/clamped_ramp.hpp>

#include <doctest/doctest.h>

#include <string>

using namespace loom;

namespace {

Expr splat(Expr e) { return BroadcastNode::make(std::move(e), 16); }

}  // namespace

TEST_CASE("clamped_ramp: a ramp under a border's select, min or max, and the condition") {
  Var j("j"), n("n"), row("row");
  const Expr ramp = RampNode::make(j * 16, Expr(1), 16);
  // lib::gemm's pass over a padded product: row * 224 + select(ramp < n, ramp, 223).
  auto padded = clamped_ramp(splat(row * 224) + select(ramp < splat(n), ramp, splat(Expr(223))));
  REQUIRE(padded.has_value());
  CHECK(to_string(padded->condition) == to_string(ramp < splat(n)));
  const RampNode* shifted = padded->ramp.as<RampNode>();
  REQUIRE(shifted != nullptr);
  CHECK(to_string(shifted->base) == to_string(row * 224 + j * 16));
  CHECK(shifted->lanes == 16);
  // A stencil's edges: max(min(ramp + 1, n - 1), 0), both conditions; the bound on either side.
  auto clamped =
      clamped_ramp(max(splat(Expr(0)), min(RampNode::make(j * 16 + 1, Expr(1), 16), splat(n - 1))));
  REQUIRE(clamped.has_value());
  const std::string cond = to_string(clamped->condition);
  CHECK(cond.find("<=") != std::string::npos);
  CHECK(cond.find(">=") != std::string::npos);
  CHECK(to_string(clamped->ramp) == to_string(RampNode::make(j * 16 + 1, Expr(1), 16)));
}

TEST_CASE("clamped_ramp: anything else is not one") {
  Var j("j"), n("n");
  const Expr ramp = RampNode::make(j * 16, Expr(1), 16);
  CHECK_FALSE(clamped_ramp(ramp).has_value());  // a plain ramp: no condition to branch on
  CHECK_FALSE(clamped_ramp(splat(j)).has_value());
  // Stride 2; a bound that differs by lane; the ramp in the select's false value; a scalar.
  CHECK_FALSE(clamped_ramp(min(RampNode::make(j, Expr(2), 16), splat(n))).has_value());
  CHECK_FALSE(clamped_ramp(min(ramp, ramp + splat(Expr(3)))).has_value());
  CHECK_FALSE(clamped_ramp(select(ramp < splat(n), splat(Expr(0)), ramp)).has_value());
  CHECK_FALSE(clamped_ramp(min(j, n)).has_value());
  // Parts that may fail or have an effect: the branch would skip or repeat them (a division by a
  // zero divisor in the select's false value must still be reported).
  Var d("d");
  CHECK_FALSE(clamped_ramp(select(ramp < splat(n), ramp, splat(Expr(100) / d))).has_value());
  CHECK_FALSE(clamped_ramp(min(ramp, splat(floordiv(n, d)))).has_value());
  // A float vector is no index.
  CHECK_FALSE(clamped_ramp(min(cast(f32.with_lanes(16), ramp), splat(Expr(1.0f)))).has_value());
}
