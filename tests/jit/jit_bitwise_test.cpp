// The bitwise nodes through every evaluator: the LLVM JIT (scalar and vectorized loops, computed and
// constant amounts), the interpreter and constant folding agree with native C++ on random values of
// every integer type, negative numbers and shift amounts outside [0, bits) included.
#include <loom/backend/build.hpp>
#include <loom/ir/bitwise_op.hpp>
#include <loom/ir/bitwise_simplify.hpp>
#include <loom/ir/const_fold.hpp>
#include <loom/schedule/swizzle_layout.hpp>
#include <loom/sim/interpreter.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "../runtime/interp_test_util.hpp"
#include "../support/bitwise_reference.hpp"

using namespace loom;
using namespace loom::test;

namespace {

constexpr int kN = 67;  // not a multiple of the vector width: the vectorized loop has a tail

/// out_k[i] = A[i] (op_k) B[i] for the five bitwise kinds, then A[i] << c and A[i] >> c for a
/// constant c (where codegen can fold the mask of the amount away).
LoweredFunc bitwise_kernel(DType t, ForKind kind, int c) {
  BufferParam A = buffer_param("A", t, {kN}), B = buffer_param("B", t, {kN});
  std::vector<FuncParam> params{param(A), param(B)};
  Var i("i");
  std::vector<Stmt> body;
  auto add = [&](const std::string& name, Expr value) {
    BufferParam C = buffer_param(name, t, {kN});
    params.push_back(param(C));
    body.push_back(store(C, value, i));
  };
  Expr a = load(A, i), b = load(B, i);
  for (IRNodeKind k : kBitwiseKinds) add(kind_name(k), bitwise_detail::make_node(k, a, b));
  add("shl_const", a << c);
  add("shr_const", a >> c);
  return make_func("bits_" + t.str(), params, loop(i, 0, kN, SeqNode::make(body), kind));
}

template <typename T>
void check_type(DType t) {
  CAPTURE(t.str());
  std::mt19937_64 rng(99 + t.bits * 3 + (t.is_int() ? 0 : 1));
  Buffer<T> A({kN}), B({kN});
  for (int i = 0; i < kN; ++i) {
    A.data()[i] = static_cast<T>(rng());
    // Shift amounts of either sign and past the width, and raw random bits.
    B.data()[i] = i % 3 ? static_cast<T>(static_cast<int>(rng() % 200) - 100) : static_cast<T>(rng());
  }
  A.data()[0] = std::numeric_limits<T>::min();
  A.data()[1] = std::numeric_limits<T>::max();
  B.data()[1] = static_cast<T>(t.bits - 1);
  const int c = static_cast<int>(t.bits) - 3;
  for (ForKind kind : {ForKind::Serial, ForKind::Vectorized}) {
    CAPTURE(for_kind_name(kind));
    LoweredFunc f = bitwise_kernel(t, kind, c);
    const size_t outputs = f.params.size() - 2;
    std::vector<Buffer<T>> interp_out, jit_out;
    for (size_t k = 0; k < outputs; ++k) {
      interp_out.emplace_back(std::vector<int64_t>{kN});
      jit_out.emplace_back(std::vector<int64_t>{kN});
    }
    std::vector<KernelArg> interp_args{A, B}, jit_args{A, B};
    for (size_t k = 0; k < outputs; ++k) {
      interp_args.emplace_back(interp_out[k]);
      jit_args.emplace_back(jit_out[k]);
    }
    interpret(f, interp_args);
    build(f, Target::cpu())(jit_args);

    int wrong = 0;
    for (size_t k = 0; k < outputs; ++k) {
      const bool constant_amount = k >= std::size(kBitwiseKinds);
      const IRNodeKind op = constant_amount
                                ? (k == outputs - 2 ? IRNodeKind::ShiftLeft : IRNodeKind::ShiftRight)
                                : kBitwiseKinds[k];
      for (int i = 0; i < kN; ++i) {
        const T a = A.data()[i], b = constant_amount ? static_cast<T>(c) : B.data()[i];
        const T want = native_bitwise<T>(op, a, b);
        const T folded = static_cast<T>(*as_const_int(fold_binary(
            op, IntImmNode::make(t, static_cast<int64_t>(a)), IntImmNode::make(t, static_cast<int64_t>(b)))));
        const T interp = interp_out[k].data()[i], jit = jit_out[k].data()[i];
        if (interp != want || jit != want || folded != want) {
          if (++wrong <= 10)
            MESSAGE(kind_name(op) << " " << int64_t(a) << ", " << int64_t(b) << ": want " << int64_t(want)
                                  << ", interpreter " << int64_t(interp) << ", JIT " << int64_t(jit)
                                  << ", folded " << int64_t(folded));
        }
      }
    }
    CHECK(wrong == 0);
  }
}

}  // namespace

TEST_CASE("jit bitwise: JIT, interpreter and constant folding agree with C++ on every integer type") {
  check_type<int8_t>(i8);
  check_type<int16_t>(i16);
  check_type<int32_t>(i32);
  check_type<int64_t>(i64);
  check_type<uint8_t>(u8);
  check_type<uint16_t>(u16);
  check_type<uint32_t>(u32);
  check_type<uint64_t>(u64);
}

TEST_CASE("jit bitwise: a swizzled index computed by the JIT equals SwizzleLayout's integer function") {
  // out[i] = swizzle(i - 64) for Swizzle<2,3,3>, negative offsets included, as code computes it.
  const int n = 1024;
  const SwizzleLayout layout{2, 3, 3};
  BufferParam out = buffer_param("out", i32, {n});
  Var i("i");
  LoweredFunc f = make_func("swizzle", {param(out)}, loop(i, 0, n, store(out, layout.apply(i - 64), i)));
  Buffer<int32_t> jit({n}), interp({n});
  build(f, Target::cpu())(jit);
  interpret(f, {KernelArg(interp)});
  int wrong = 0;
  for (int k = 0; k < n; ++k)
    wrong += jit.data()[k] != layout.apply(k - 64) || interp.data()[k] != layout.apply(k - 64);
  CHECK(wrong == 0);
}
