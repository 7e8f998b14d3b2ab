// SwizzleLayout (schedule/swizzle_layout.hpp): its IR form, built from xor, shift and mask, computes
// the same offsets as its integer form, for negative offsets too, before and after simplification.
#include <loom/core.hpp>
#include <loom/ir/int_eval.hpp>
#include <loom/schedule/swizzle_layout.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <string>

using namespace loom;

namespace {

/// e evaluated with the integer evaluator at var = value.
int64_t evaluate_at(const Expr& e, const Var& var, int64_t value) {
  IntEvaluator ev([&](const VarNode* v, int) -> const int64_t* { return v == var.get() ? &value : nullptr; });
  return ev(e);
}

}  // namespace

TEST_CASE(
    "swizzle layout: SwizzleLayout's IR equals its integer function and is built from xor, shift and mask") {
  Var off("off");
  int mismatches = 0;
  for (int bits = 1; bits <= 3; ++bits)
    for (int base = 0; base <= 3; ++base)
      for (int shift = bits; shift <= 4; ++shift) {
        const SwizzleLayout layout{bits, base, shift};
        const Expr e = layout.apply(Expr(off));
        const Expr simple = simplify(e);
        for (int64_t o = -300; o < 1200; o += 7)
          for (const Expr& form : {e, simple})
            if (evaluate_at(form, off, o) != layout.apply(o)) ++mismatches;
      }
  CHECK(mismatches == 0);
  const std::string text = to_string(simplify(SwizzleLayout{2, 3, 3}.apply(Expr(off))));
  CAPTURE(text);
  CHECK(text.find(" ^ ") != std::string::npos);
  CHECK(text.find(" >> ") != std::string::npos);
  CHECK(text.find(" & 3)") != std::string::npos);
}
