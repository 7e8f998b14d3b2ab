// The interpreter's whole-kernel cases (tests/runtime/interpreter_test.cpp) through the JIT, each
// compared with the interpreter by check_jit_matches_interpreter: loops, allocations, vectors with
// ramps, broadcasts and predicates, lazy if_then_else, lets, asserts, extern stages, errors.
#include <loom/ir/extern_c.hpp>
#include <loom/te/tensor_intrin.hpp>

#include <doctest/doctest.h>

#include <string>

#include "../runtime/interp_test_util.hpp"
#include "../support/jit_harness.hpp"
#include "../support/text_count.hpp"

using namespace loom;
using namespace loom::test;

namespace {

LoweredFunc matmul_func(int n) {
  BufferParam A = buffer_param("A", f32, {n, n}), B = buffer_param("B", f32, {n, n}),
              C = buffer_param("C", f32, {n, n});
  Var i("i"), j("j"), k("k");
  Stmt init = loop(i, 0, n, loop(j, 0, n, store(C, Expr(0.0f), i * n + j)));
  Expr update = load(C, i * n + j) + load(A, i * n + k) * load(B, k * n + j);
  Stmt body = loop(i, 0, n, loop(j, 0, n, loop(k, 0, n, store(C, update, i * n + j))));
  return make_func("gemm", {param(A), param(B), param(C)}, SeqNode::make({init, body}));
}

}  // namespace

TEST_CASE("jit ir: elementwise add over a symbolic extent, several sizes, one kernel") {
  Var n("n"), i("i");
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n}),
              C = buffer_param("C", f32, {n});
  LoweredFunc f = make_func("add", {param(A), param(B), param(C)},
                            loop(i, 0, n, store(C, load(A, i) + load(B, i), i)), {n});
  for (int size : {0, 1, 37, 1000}) {
    CAPTURE(size);
    Buffer<float> a({size}), b({size}), c({size});
    fill_random(a, 1);
    fill_random(b, 2);
    check_jit_matches_interpreter(f, a, b, c);
  }
}

TEST_CASE("jit ir: a shape variable missing from size_vars is bound by the call") {
  Var n("n"), i("i");
  BufferParam A = buffer_param("A", i32, {n});
  Buffer<int32_t> a({6});
  check_jit_matches_interpreter(make_func("iota", {param(A)}, loop(i, 0, n, store(A, i, i))), a);
}

TEST_CASE("jit ir: row sums through an allocated accumulator (float64)") {
  const int rows = 13, cols = 29;
  BufferParam A = buffer_param("A", f64, {rows, cols}), S = buffer_param("S", f64, {rows});
  Var i("i"), k("k"), acc("acc", handle_type);
  Expr acc0 = LoadNode::make(f64, acc, 0);
  Stmt body = loop(i, 0, rows,
                   AllocateNode::make(
                       acc, f64, {1}, "local",
                       SeqNode::make({StoreNode::make(acc, make_const(f64, 0.0), 0),
                                      loop(k, 0, cols, StoreNode::make(acc, acc0 + load(A, i * cols + k), 0)),
                                      store(S, acc0, i)})));
  Buffer<double> a({rows, cols}), s({rows});
  fill_random(a, 3);
  check_jit_matches_interpreter(make_func("row_sum", {param(A), param(S)}, body), a, s);
}

TEST_CASE("jit ir: allocations start zeroed and are fresh in every iteration (stack and heap)") {
  BufferParam out = buffer_param("out", i32, {4});
  Var i("i"), tmp("tmp", handle_type), n("n");
  for (Expr rows : {Expr(2), Expr(n)}) {  // a constant size (stack) and a symbolic one (heap)
    Stmt body =
        loop(i, 0, 4,
             AllocateNode::make(tmp, i32, {rows, 3}, "global",
                                SeqNode::make({StoreNode::make(tmp, LoadNode::make(i32, tmp, 5) + i + 1, 5),
                                               store(out, LoadNode::make(i32, tmp, 5), i)})));
    Buffer<int32_t> o({4});
    LoweredFunc f = make_func("fresh", {param(out), scalar_param(n)}, body, {n});
    check_jit_matches_interpreter(f, o, 2);
  }
}

TEST_CASE("jit ir: a large allocation comes from the heap and is freed") {
  const int n = 100000;  // 400 KB: beyond the stack limit
  BufferParam out = buffer_param("out", f32, {n});
  Var i("i"), tmp("big", handle_type);
  Stmt body =
      AllocateNode::make(tmp, f32, {n}, "global",
                         SeqNode::make({loop(i, 0, n, StoreNode::make(tmp, cast(f32, i) * Expr(0.5f), i)),
                                        loop(i, 0, n, store(out, LoadNode::make(f32, tmp, n - 1 - i), i))}));
  Buffer<float> o({n});
  LoweredFunc f = make_func("heap", {param(out)}, body);
  Kernel k = check_jit_matches_interpreter(f, o);
  CHECK(k.llvm_ir().find("loom_rt_alloc") != std::string::npos);
}

TEST_CASE("jit ir: 64x64 matmul is bit-exact with the interpreter") {
  const int n = 64;
  Buffer<float> a({n, n}), b({n, n}), c({n, n});
  fill_random(a, 4);
  fill_random(b, 5);
  check_jit_matches_interpreter(matmul_func(n), a, b, c);
}

TEST_CASE("jit ir: serial, vectorized, unrolled and thread-bound loops keep the iteration order") {
  for (ForKind kind : {ForKind::Serial, ForKind::Vectorized, ForKind::Unrolled, ForKind::ThreadBinding}) {
    CAPTURE(for_kind_name(kind));
    BufferParam out = buffer_param("out", i32, {8});
    Var i("i");
    // out[0] = out[0] * 10 + i: a loop-carried dependence the vectorizer must respect.
    Stmt body = loop(i, 1, 5, store(out, load(out, 0) * 10 + i, 0), kind);
    Buffer<int32_t> o({8});
    check_jit_matches_interpreter(make_func("order", {param(out)}, body), o);
  }
}

TEST_CASE("jit ir: loop bounds are evaluated once at entry") {
  BufferParam out = buffer_param("out", i32, {1});
  Var i("i");
  Stmt body = SeqNode::make({store(out, 3, 0), loop(i, 0, load(out, 0), store(out, load(out, 0) + 1, 0))});
  Buffer<int32_t> o({1});
  check_jit_matches_interpreter(make_func("once", {param(out)}, body), o);
}

TEST_CASE("jit ir: vector ramps, broadcasts and predicated loads and stores") {
  const int lanes = 8;
  Var nv("n"), io("io");
  BufferParam A = buffer_param("A", f32, {nv}), B = buffer_param("B", f32, {nv});
  Expr index = RampNode::make(io * lanes, 1, lanes);
  Expr mask = index < BroadcastNode::make(nv, lanes);
  Expr two = BroadcastNode::make(Expr(2.0f), lanes);
  Expr lane_index = CastNode::make(f32.with_lanes(lanes), RampNode::make(Expr(0), Expr(1), lanes));
  Stmt body =
      loop(io, 0, (nv + lanes - 1) / lanes, store(B, load(A, index, mask) * two + lane_index, index, mask));
  LoweredFunc f = make_func("vec", {param(A), param(B)}, body, {nv});
  for (int n : {21, 8, 1}) {
    Buffer<float> a({n}), b({n});
    fill_random(a, 8);
    check_jit_matches_interpreter(f, a, b);
  }
}

TEST_CASE("jit ir: strided ramps (gathers), vector select, vector let, unmasked vector stores") {
  BufferParam A = buffer_param("A", i32, {16}), B = buffer_param("B", i32, {8});
  Var v("v", i32.with_lanes(4)), q("q");
  Expr even = RampNode::make(q * 8, 2, 4);
  Expr odd = RampNode::make(q * 8 + 1, 2, 4);
  Expr bigger = select(load(A, even) > load(A, odd), load(A, even), load(A, odd));
  Expr let_body = LetNode::make(v, bigger, v * BroadcastNode::make(Expr(3), 4));
  Stmt body = loop(q, 0, 2, store(B, let_body, RampNode::make(q * 4, 1, 4)));
  Buffer<int32_t> a({16}), b({8});
  for (int x = 0; x < 16; ++x) a(x) = (x * 7919) % 23;
  Kernel k = check_jit_matches_interpreter(make_func("pairs", {param(A), param(B)}, body), a, b);
  // Gathers are scalarized: LLVM 19 could encode an AVX-512 gather with its index register as
  // destination (#UD, found by the fuzzer; target_machine.hpp).
  CHECK(k.assembly().find("gather") == std::string::npos);
}

TEST_CASE("jit ir: scatters, broadcast indices and predicated gathers") {
  BufferParam A = buffer_param("A", f32, {32}), B = buffer_param("B", f32, {32});
  Var q("q");
  // B[q*8 + 7 - lane] = A[3*lane + q] where lane is odd: a reversed scatter of a masked gather.
  Expr gather_index = RampNode::make(q, Expr(3), 8);
  Expr odd = RampNode::make(Expr(0), Expr(1), 8) % BroadcastNode::make(Expr(2), 8) ==
             BroadcastNode::make(Expr(1), 8);
  Expr scatter_index = RampNode::make(q * 8 + 7, Expr(-1), 8);
  Stmt scatter = store(B, load(A, gather_index, odd), scatter_index, odd);
  // B[q] = sum of A[q] broadcast to 4 lanes, stored to the same address (the last lane wins).
  Stmt same_address =
      store(B, load(A, BroadcastNode::make(q + 24, 4)) + RampNode::make(Expr(0.0f), Expr(1.0f), 4),
            BroadcastNode::make(q + 24, 4));
  Stmt body = loop(q, 0, 3, SeqNode::make({scatter, same_address}));
  Buffer<float> a({32}), b({32});
  fill_random(a, 9);
  check_jit_matches_interpreter(make_func("scatter", {param(A), param(B)}, body), a, b);
}

TEST_CASE("jit ir: a masked load of one address for every lane is one scalar load, made when a lane is on") {
  // B[8q + lane] = A[8q] + lane where 8q + lane < n: a weight broadcast under a partial vector's
  // mask. With n = 21 the last vector has no lane on, and A[24] lies past A's 21 elements.
  Var nv("n"), q("q");
  BufferParam A = buffer_param("A", f32, {nv}), B = buffer_param("B", f32, {nv});
  Expr index = RampNode::make(q * 8, 1, 8);
  Expr mask = index < BroadcastNode::make(nv, 8);
  Expr lane = RampNode::make(Expr(0.0f), Expr(1.0f), 8);
  Stmt body = loop(q, 0, 4, store(B, load(A, BroadcastNode::make(q * 8, 8), mask) + lane, index, mask));
  LoweredFunc f = make_func("weight", {param(A), param(B)}, body, {nv});
  for (int n : {21, 32, 5}) {
    Buffer<float> a({n}), b({n});
    fill_random(a, 10);
    Kernel k = check_jit_matches_interpreter(f, a, b);
    // Before, a masked gather of 8 equal addresses, which the backend scalarizes: 8 loads, each
    // behind its lane's test (a 3x3 convolution with 16-lane vectors of 56 columns, 7x slower).
    CHECK(k.llvm_ir().find("masked.gather") == std::string::npos);
  }
}

namespace {
Expr splat(Expr e, int lanes) { return BroadcastNode::make(std::move(e), lanes); }
/// Lane l of `lanes` lanes reads row l % rows, column l / rows of a matrix with `stride` between rows,
/// from `base`: the interleave a packed panel's groups make.
Expr interleave_index(Expr base, int lanes, int rows, int stride) {
  Expr lane = RampNode::make(Expr(0), Expr(1), lanes);
  return splat(std::move(base), lanes) +
         floormod(lane, splat(Expr(rows), lanes)) * splat(Expr(stride), lanes) +
         floordiv(lane, splat(Expr(rows), lanes));
}
}  // namespace

TEST_CASE("jit ir: gathers and scatters of a few contiguous runs are vector accesses and one shuffle") {
  // Pairs of bfloat16 from two rows (copied as bits), quads of int8 from four, a vector whose two
  // halves are two rows reversed, and interleaved stores: each index splits into runs
  // (ir/lane_runs.hpp), which the backend loads or stores whole.
  BufferParam H = buffer_param("H", bf16, {4, 40}), HP = buffer_param("HP", bf16, {2, 64});
  BufferParam Q = buffer_param("Q", i8, {4, 72}), QP = buffer_param("QP", i8, {2, 64});
  BufferParam F = buffer_param("F", f32, {2, 40}), FR = buffer_param("FR", f32, {2, 16}),
              FS = buffer_param("FS", f32, {2, 40});
  Var q("q");
  Expr lane16 = RampNode::make(Expr(0), Expr(1), 16);
  // Lanes 0..7 read F[47 - l] (row 1 backwards), lanes 8..15 F[15 - l] (row 0 backwards).
  Expr halves = splat(Expr(47), 16) - floormod(lane16, splat(Expr(8), 16)) -
                floordiv(lane16, splat(Expr(8), 16)) * splat(Expr(40), 16);
  Stmt body = loop(
      q, 0, 2,
      SeqNode::make({
          store(HP, load(H, interleave_index(q * 80 + 3, 32, 2, 40)), RampNode::make(q * 32, 1, 32)),
          store(HP, load(H, interleave_index(q * 80 + 19, 32, 2, 40)), RampNode::make(q * 32 + 64, 1, 32)),
          store(QP, load(Q, interleave_index(q * 5, 64, 4, 72)), RampNode::make(q * 64, 1, 64)),
          store(FR, load(F, splat(q * 0, 16) + halves) + splat(Expr(1.0f), 16),
                RampNode::make(q * 16, 1, 16)),
          // FS[row lane % 2][q * 8 + lane / 2] = lane: a scatter to two rows.
          store(FS, cast(f32.with_lanes(16), lane16), interleave_index(q * 8, 16, 2, 40)),
      }));
  LoweredFunc f =
      make_func("runs", {param(H), param(HP), param(Q), param(QP), param(F), param(FR), param(FS)}, body);
  Buffer<bfloat16> h({4, 40}), hp({2, 64});
  Buffer<int8_t> qq({4, 72}), qp({2, 64});
  Buffer<float> ff({2, 40}), fr({2, 16}), fs({2, 40});
  fill_random(h, 11);
  fill_random_view(qq, 12, -128, 127);
  fill_random(ff, 13);
  Kernel k = check_jit_matches_interpreter(f, h, hp, qq, qp, ff, fr, fs);
  const std::string ir = k.llvm_ir();
  CHECK(count_of(ir, "masked.gather") == 0);
  CHECK(count_of(ir, "masked.scatter") == 0);
  // The pairs are two loads of 16 halves each, interleaved; the quads four loads of 16 bytes.
  CHECK(count_of(ir, "load <16 x i16>") >= 2);
  CHECK(count_of(ir, "load <16 x i8>") >= 4);
}

TEST_CASE("jit ir: masked runs read and write only their active lanes, a run wholly off may start outside") {
  // X has n elements; lane l reads X[2q + (l % 2) * 16 + l / 2] where that is below n. With n = 5 the
  // second run (16..23) lies wholly past X, and only lanes of the first run read. With n = 34 every
  // lane is active: the load's branch for a whole mask takes plain loads (n = 18: one of each).
  Var nv("n"), q("q");
  BufferParam X = buffer_param("X", f32, {nv}), Y = buffer_param("Y", f32, {32}),
              Z = buffer_param("Z", f32, {nv});
  Expr index = interleave_index(q * 2, 16, 2, 16);
  Expr active = index < splat(nv, 16);
  Stmt body = loop(
      q, 0, 2,
      SeqNode::make(
          {store(Y, load(X, index, active) * splat(Expr(3.0f), 16) + splat(Expr(1.0f), 16),
                 RampNode::make(q * 16, 1, 16)),
           store(Z, cast(f32.with_lanes(16), RampNode::make(Expr(0), Expr(1), 16)) + splat(cast(f32, q), 16),
                 index, active)}));
  LoweredFunc f = make_func("masked_runs", {param(X), param(Y), param(Z)}, body, {nv});
  for (int n : {5, 18, 34}) {
    CAPTURE(n);
    Buffer<float> x({n}), y({32}), z({n});
    fill_random(x, 14);
    Kernel k = check_jit_matches_interpreter(f, x, y, z);
    CHECK(count_of(k.llvm_ir(), "masked.gather") == 0);
    CHECK(count_of(k.llvm_ir(), "masked.scatter") == 0);
    CHECK(count_of(k.llvm_ir(), "runs.then") >= 1);  // the whole mask's plain loads
  }
}

TEST_CASE("jit ir: masked accesses to a stack slot inside it are whole loads and blended stores") {
  // T (16 floats, on the stack) starts at 1; two passes add 2 to its first n lanes, under a mask;
  // then all 16 lanes are copied out, the masked-off ones still 1. Whole accesses let LLVM keep T
  // in registers (the masked intrinsics kept a register tile in memory).
  Var nv("n"), q("q"), t("T", handle_type);
  BufferParam B = buffer_param("B", f32, {16});
  Expr all = RampNode::make(Expr(0), Expr(1), 16);
  Expr mask = all < BroadcastNode::make(nv, 16);
  Expr tile = LoadNode::make(f32, t, all);
  Stmt add =
      StoreNode::make(t, LoadNode::make(f32, t, all, mask) + BroadcastNode::make(Expr(2.0f), 16), all, mask);
  Stmt body = AllocateNode::make(t, f32, {16}, "local",
                                 SeqNode::make({StoreNode::make(t, BroadcastNode::make(Expr(1.0f), 16), all),
                                                loop(q, 0, 2, add), store(B, tile, all)}));
  LoweredFunc f = make_func("slot", {param(B), scalar_param(nv)}, body, {nv});
  for (int n : {5, 16, 0}) {
    Buffer<float> b({16});
    Kernel k = check_jit_matches_interpreter(f, b, n);
    k(b, n);
    for (int x = 0; x < 16; ++x) CHECK(b(x) == (x < n ? 5.0f : 1.0f));
    CHECK(k.llvm_ir().find("masked.store") == std::string::npos);
    CHECK(k.llvm_ir().find("masked.load") == std::string::npos);
  }
  // A slot that a parallel loop's body captures may be shared by its threads, each iteration
  // writing lanes of its own: masked stores there still (a blend would write the others' lanes).
  Var p("p");
  Expr mine = mask && all >= BroadcastNode::make(p * 8, 16) && all < BroadcastNode::make(p * 8 + 8, 16);
  Stmt add_mine =
      StoreNode::make(t, LoadNode::make(f32, t, all, mine) + BroadcastNode::make(Expr(2.0f), 16), all, mine);
  Stmt shared =
      AllocateNode::make(t, f32, {16}, "local",
                         SeqNode::make({StoreNode::make(t, BroadcastNode::make(Expr(1.0f), 16), all),
                                        loop(p, 0, 2, add_mine, ForKind::Parallel), store(B, tile, all)}));
  Buffer<float> b({16});
  Kernel k =
      check_jit_matches_interpreter(make_func("shared", {param(B), scalar_param(nv)}, shared, {nv}), b, 3);
  CHECK(k.llvm_ir().find("masked.store") != std::string::npos);
}

TEST_CASE("jit ir: a vector LetStmt binds every lane before its body runs") {
  BufferParam out = buffer_param("out", f64, {4});
  Var v("v", f64.with_lanes(4));
  Expr ramp = RampNode::make(make_const(f64, 0.5), make_const(f64, 0.25), 4);
  Stmt body = LetStmtNode::make(v, ramp, store(out, v + v, RampNode::make(Expr(0), Expr(1), 4)));
  Buffer<double> o({4});
  check_jit_matches_interpreter(make_func("vlet", {param(out)}, body), o);
}

TEST_CASE("jit ir: a vector store reads all lanes before writing any") {
  BufferParam A = buffer_param("A", i32, {5});
  Stmt body = store(A, load(A, RampNode::make(Expr(0), Expr(1), 4)), RampNode::make(Expr(1), Expr(1), 4));
  Buffer<int32_t> a({5});
  for (int x = 0; x < 5; ++x) a(x) = 10 + x;
  check_jit_matches_interpreter(make_func("shift", {param(A)}, body), a);
}

TEST_CASE("jit ir: if_then_else evaluates only the chosen branch, scalar and lane by lane") {
  const int n = 10;
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n + 2});
  Var i("i");
  Buffer<float> a({n}), b({n + 2});
  fill_random(a, 9);
  SUBCASE("scalar condition: zero padding") {
    Expr padded = if_then_else(i >= 1 && i < n + 1, load(A, i - 1), Expr(0.0f));
    check_jit_matches_interpreter(
        make_func("pad", {param(A), param(B)}, loop(i, 0, n + 2, store(B, padded, i))), a, b);
  }
  SUBCASE("vector condition: masked-off lanes read nothing") {
    Expr index = RampNode::make(Expr(-2), Expr(1), 4);
    Expr lane_padded = if_then_else(index >= BroadcastNode::make(Expr(0), 4), load(A, index),
                                    BroadcastNode::make(Expr(-5.0f), 4));
    check_jit_matches_interpreter(
        make_func("vpad", {param(A), param(B)}, store(B, lane_padded, RampNode::make(Expr(0), Expr(1), 4))),
        a, b);
  }
  SUBCASE("vector condition with a scalar load and a division in the branches") {
    Var d("d");
    Expr lanes = RampNode::make(Expr(0), Expr(1), 4);
    Expr cond = lanes < BroadcastNode::make(d, 4);  // lanes below d take the division by d
    Expr value = if_then_else(cond,
                              cast(f32.with_lanes(4), BroadcastNode::make(Expr(12) / d, 4)) +
                                  BroadcastNode::make(load(A, Expr(-1) + d), 4),
                              BroadcastNode::make(Expr(7.0f), 4));
    LoweredFunc f = make_func("vdiv", {param(A), param(B), scalar_param(d)},
                              store(B, value, RampNode::make(Expr(0), Expr(1), 4)));
    check_jit_matches_interpreter(f, a, b, 0);  // no lane active: neither A[-1] nor 12 / 0 happens
    check_jit_matches_interpreter(f, a, b, 3);
  }
}

TEST_CASE("jit ir: lets, shadowing, attributes, branches, barriers, prefetches and no-ops") {
  BufferParam out = buffer_param("out", i32, {4});
  Var x("x"), i("i");
  Expr inner = LetNode::make(x, x * 2, x);
  Expr shadowed = LetNode::make(x, 5, inner + x);
  Stmt body = SeqNode::make({
      store(out, shadowed, 0),
      LetStmtNode::make(x, 7, AttrStmtNode::make("pragma_test", x, 1, store(out, x, 1))),
      loop(i, 0, 2, IfThenElseNode::make(i == 0, store(out, 100, 2), store(out, 200, 3))),
      BarrierNode::make("shared"),
      PrefetchNode::make(load(out, 1000)),
      EvaluateNode::make(0),
  });
  Buffer<int32_t> o({4});
  check_jit_matches_interpreter(make_func("misc", {param(out)}, body), o);
}

TEST_CASE("jit ir: a failed assert is a loom::Error with the assert's message") {
  BufferParam out = buffer_param("out", i32, {1});
  Var n("n");
  Stmt asserting = AssertStmtNode::make(n > Expr(2), "n must exceed two", store(out, n, 0));
  LoweredFunc f = make_func("assert", {param(out), scalar_param(n)}, asserting, {n});
  Buffer<int32_t> o({1});
  check_jit_matches_interpreter(f, o, 1);  // both fail with the same message
  check_jit_matches_interpreter(f, o, 3);
  Kernel k = build(f, Target::cpu());
  CHECK_THROWS_WITH_AS(k(o, 1), "n must exceed two", Error);
}

TEST_CASE("jit ir: scalar parameters, integer and float") {
  Var n("n"), alpha("alpha", f32), i("i");
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n});
  LoweredFunc f = make_func("axpy", {param(A), param(B), scalar_param(alpha), scalar_param(n)},
                            loop(i, 0, n, store(B, alpha * load(A, i) + load(B, i), i)), {n});
  Buffer<float> a({5}), b({5});
  fill_random(a, 10);
  fill_random(b, 11);
  check_jit_matches_interpreter(f, a, b, 0.1, int64_t{5});
}

TEST_CASE("jit ir: extern stage calls see views of their buffers") {
  static int64_t doubler = ExternRegistry::global().add(
      [](const std::vector<BufferView>& in, const std::vector<BufferView>& out) {
        const float* src = static_cast<const float*>(in.at(0).data);
        float* dst = static_cast<float*>(out.at(0).data);
        for (int64_t x = 0; x < in[0].shape.at(0); ++x)
          dst[x * out[0].strides[0]] = 2.0f * src[x * in[0].strides[0]];
      },
      "doubler");
  static int64_t thrower =
      ExternRegistry::global().add([](const std::vector<BufferView>&,
                                      const std::vector<BufferView>&) { throw Error("the extern failed"); },
                                   "thrower");
  const int n = 9;
  BufferParam A = buffer_param("A", f32, {n}), B = buffer_param("B", f32, {n});
  Var tmp("tmp", handle_type), i("i");
  ExternStageCall call;
  call.function_id = doubler;
  call.inputs.push_back({A.data, f32, {n}, {1}});
  call.outputs.push_back({tmp, f32, {n}, {1}});
  Stmt body = AllocateNode::make(
      tmp, f32, {n}, "global",
      SeqNode::make({EvaluateNode::make(call.encode()),
                     loop(i, 0, n, store(B, LoadNode::make(f32, tmp, i) + Expr(1.0f), i))}));
  Buffer<float> a({n}), b({n});
  fill_random(a, 12);
  check_jit_matches_interpreter(make_func("ext", {param(A), param(B)}, body), a, b);

  SUBCASE("an exception in the extern function becomes a loom::Error, not a crash") {
    ExternStageCall failing = call;
    failing.function_id = thrower;
    Stmt bad = AllocateNode::make(tmp, f32, {n}, "global", EvaluateNode::make(failing.encode()));
    Kernel k = build(make_func("ext_throw", {param(A), param(B)}, bad), Target::cpu());
    CHECK_THROWS_WITH_AS(k(a, b), doctest::Contains("extern stage 'thrower' failed: the extern failed"),
                         Error);
  }
}

TEST_CASE("jit ir: integer division by zero is an error naming the expression, for every division") {
  Var d("d");
  BufferParam out = buffer_param("out", i32, {1});
  for (Expr e : {Expr(7) / d, Expr(7) % d, floordiv(Expr(7), d), floormod(Expr(7), d)}) {
    LoweredFunc f = make_func("div0", {param(out), scalar_param(d)}, store(out, e, 0));
    Buffer<int32_t> o({1});
    check_jit_matches_interpreter(f, o, 0);
    check_jit_matches_interpreter(f, o, 2);
    check_jit_matches_interpreter(f, o, -2);
  }
  Kernel k =
      build(make_func("div0", {param(out), scalar_param(d)}, store(out, Expr(7) / d, 0)), Target::cpu());
  Buffer<int32_t> o({1});
  CHECK_THROWS_WITH_AS(k(o, 0), doctest::Contains("integer division by zero in (7 / d)"), Error);
}

TEST_CASE("jit ir: unlowered IR, unbound variables and unknown calls are reported") {
  BufferParam out = buffer_param("out", i32, {1});
  SUBCASE("a variable no one binds") {
    Var ghost("ghost");
    CHECK_THROWS_WITH_AS(build(make_func("ghostly", {param(out)}, store(out, ghost, 0)), Target::cpu()),
                         doctest::Contains("uses variable 'ghost'"), Error);
  }
  SUBCASE("Realize and Provide mean the function was not lowered") {
    struct FakeProducer : ProducerNode {
      std::string name = "T";
      std::vector<Expr> shape{Expr(1)};
      const std::string& producer_name() const override { return name; }
      DType producer_dtype() const override { return i32; }
      const std::vector<Expr>& producer_shape() const override { return shape; }
    };
    Producer t = make_ref<FakeProducer>();
    Stmt body = RealizeNode::make(t, {Range(0, 1)}, "global", ProvideNode::make(t, {Expr(0)}, 1));
    CHECK_THROWS_WITH_AS(build(make_func("unlowered", {param(out)}, body), Target::cpu()),
                         doctest::Contains("was not lowered"), InternalError);
  }
  SUBCASE("an unknown intrinsic") {
    Expr call = CallNode::make(i32, "my_intrinsic", {Expr(1)}, CallKind::PureIntrinsic);
    CHECK_THROWS_WITH_AS(build(make_func("calls", {param(out)}, store(out, call, 0)), Target::cpu()),
                         doctest::Contains("cannot compile the call my_intrinsic"), Error);
  }
  SUBCASE("a barrier between GPU threads cannot run on the CPU") {
    Var tx("threadIdx.x");
    Stmt body = ForNode::make(tx, 0, 32, ForKind::ThreadBinding,
                              SeqNode::make({store(out, tx, 0), BarrierNode::make("shared")}), "threadIdx.x");
    CHECK_THROWS_WITH_AS(build(make_func("synced", {param(out)}, body), Target::cpu()),
                         doctest::Contains("synchronizes loops bound to GPU threads with a barrier"), Error);
  }
  SUBCASE("an extern C function that is not registered") {
    Expr call = call_extern(i32, "loom_no_such_c_function", {Expr(1)});
    Buffer<int32_t> o({1});
    check_jit_matches_interpreter(make_func("calls_c", {param(out)}, store(out, call, 0)), o);
    CHECK_THROWS_WITH_AS(build(make_func("calls_c", {param(out)}, store(out, call, 0)), Target::cpu()),
                         doctest::Contains("call loom::register_extern_c(\"loom_no_such_c_function\""),
                         Error);
  }
}

namespace {
int64_t jit_test_mix(int32_t a, int64_t b, double c) { return a * 1000 + b * 10 + static_cast<int64_t>(c); }
float jit_test_half_of(float x) { return x * 0.5f; }
int32_t jit_test_scale(float* p, int32_t n, float s) {
  for (int32_t i = 0; i < n; ++i) p[i] *= s;
  return 0;
}
bool jit_test_is_odd(uint8_t v) { return (v & 1) != 0; }
}  // namespace

TEST_CASE("jit ir: extern C functions registered by name, with the interpreter's conversions") {
  register_extern_c("jit_test_mix", &jit_test_mix);
  register_extern_c("jit_test_half_of", &jit_test_half_of);
  register_extern_c("jit_test_scale", &jit_test_scale);
  register_extern_c("jit_test_is_odd", &jit_test_is_odd);
  BufferParam A = buffer_param("A", f32, {8}), I = buffer_param("I", i64, {8}),
              F = buffer_param("F", f32, {8}), B = buffer_param("B", boolean, {8});
  Var i("i");
  Expr a_i = load(A, i);
  Stmt body = SeqNode::make({
      loop(i, 0, 8,
           SeqNode::make({
               store(I, call_extern(i64, "jit_test_mix", {i, cast(i64, i) * cast(i64, i), a_i * Expr(4.0f)}),
                     i),
               store(F, call_extern(f32, "jit_test_half_of", {a_i}), i),
               store(B, call_extern(boolean, "jit_test_is_odd", {cast(u8, i)}), i),
           })),
      // A function writing through address_of(A[2]): scales A[2..5].
      EvaluateNode::make(call_extern(
          i32, "jit_test_scale",
          {CallNode::make(handle_type, intrinsic::address_of, {load(A, 2)}), Expr(4), Expr(3.0f)})),
  });
  LoweredFunc f = make_func("extern_c", {param(A), param(I), param(F), param(B)}, body);
  RandomArgs args = random_args(f, 3, {}, -4.0, 4.0);
  check_jit_matches_interpreter(f, args.args);
}

TEST_CASE("jit ir: a compiled kernel runs many times with different arguments") {
  Var n("n"), i("i");
  BufferParam A = buffer_param("A", i64, {n});
  Kernel k =
      build(make_func("iota", {param(A)}, loop(i, 0, n, store(A, cast(i64, i) * cast(i64, i), i)), {n}),
            Target::cpu());
  for (int size : {3, 50, 0}) {
    Buffer<int64_t> a({size});
    k(a);
    for (int x = 0; x < size; ++x) CHECK(a(x) == int64_t{x} * x);
  }
}

TEST_CASE("jit ir: a parallel loop with a private allocation and an error in one iteration") {
  const int n = 64;
  Var i("i"), j("j"), tmp("row", handle_type), d("d");
  BufferParam A = buffer_param("A", f32, {n, 8}), B = buffer_param("B", f32, {n});
  Stmt body = loop(i, 0, n,
                   AllocateNode::make(
                       tmp, f32, {8}, "local",
                       SeqNode::make({loop(j, 0, 8, StoreNode::make(tmp, load(A, i * 8 + j) * Expr(2.0f), j)),
                                      store(B,
                                            LoadNode::make(f32, tmp, 0) + LoadNode::make(f32, tmp, 7) +
                                                cast(f32, Expr(100) / (d - i)),
                                            i)})),
                   ForKind::Parallel);
  LoweredFunc f = make_func("par", {param(A), param(B), scalar_param(d)}, body);
  Buffer<float> a({n, 8}), b({n});
  fill_random(a, 13);
  check_jit_matches_interpreter(f, a, b, n + 5);
  Kernel k = build(f, Target::cpu());
  CHECK_THROWS_WITH_AS(k(a, b, 17), doctest::Contains("integer division by zero in (100 / (d - i))"), Error);
}

TEST_CASE("jit ir: a ramp under a border's clamp is one vector load inside the border, a gather at it") {
  // Y[16q + lane] = X[max(min(16q + lane + 1, n - 1), 0)] + X[min(16q + lane, n - 1)]: a stencil's
  // right neighbour clamped at the edge, for 4 vectors; n = 64 clamps only the last lane of the
  // last vector, n = 40 the last two vectors, n = 7 all but the first vector's first lanes.
  Var nv("n"), q("q");
  BufferParam X = buffer_param("X", f32, {nv}), Y = buffer_param("Y", f32, {64});
  auto splat16 = [](Expr e) { return BroadcastNode::make(std::move(e), 16); };
  Expr right = max(min(RampNode::make(q * 16 + 1, 1, 16), splat16(nv - 1)), splat16(Expr(0)));
  Expr here = min(RampNode::make(q * 16, 1, 16), splat16(nv - 1));
  Stmt body = loop(q, 0, 4, store(Y, load(X, right) + load(X, here), RampNode::make(q * 16, 1, 16)));
  LoweredFunc f = make_func("clamped", {param(X), param(Y)}, body, {nv});
  for (int n : {64, 40, 7}) {
    CAPTURE(n);
    Buffer<float> x({n}), y({64});
    fill_random(x, 15);
    Kernel k = check_jit_matches_interpreter(f, x, y);
    // The branch to one vector load; the gather stays for the vectors at the border.
    CHECK(count_of(k.llvm_ir(), "clamp.then") >= 1);
  }
}
