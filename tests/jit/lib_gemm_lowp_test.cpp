// loom::lib::gemm on narrow types, compiled by the JIT and compared with a naive product: bfloat16 ->
// float32 (vdpbf16ps where the CPU has AVX512-BF16, and the widened multiply-add on every CPU) and
// 8-bit integers -> int32 (vpdpbusd where the CPU has AVX512-VNNI, exact), on shapes no tile or K
// group divides, several K blocks, transposed, column-major, batched, with an epilogue; the refused
// type and instruction choices; call_llvm_intrinsic's errors.
#include <doctest/doctest.h>

#include <loom/backend/build.hpp>
#include <loom/lib/gemm.hpp>
#include <loom/lib/gemm_tuning.hpp>
#include <loom/sim/interpreter.hpp>
#include <loom/te/x86_dot_intrinsics.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "lib_gemm_test_util.hpp"

using namespace loom;
using namespace loom::test;
using doctest::Contains;

namespace {

bool cpu_has(lib::DotInstruction d) {
  const CpuCacheInfo& cpu = CpuCacheInfo::host();
  return d == lib::DotInstruction::MultiplyAdd || (d == lib::DotInstruction::Vdpbf16ps && cpu.bf16_dot) ||
         (d == lib::DotInstruction::Vpdpbusd && cpu.int8_dot);
}

/// check_typed_gemm (lib_gemm_test_util.hpp) with `dot` and the other sizes of the model's
/// configuration, or kc, mc, nc when given; with `stream_c`, C's stores streamed (and gemm() keeps
/// the flag).
template <typename TA, typename TB, typename TC>
void check_lowp(const lib::GemmProblem& p, lib::DotInstruction dot, int64_t kc = 0, int64_t mc = 0,
                int64_t nc = 0, bool stream_c = false) {
  lib::GemmConfig cfg = lib::model_gemm_config(p);
  cfg.dot = dot;
  if (kc > 0) cfg.kc = kc;
  if (mc > 0) cfg.mc = mc;
  if (nc > 0) cfg.nc = nc;
  if (stream_c) {
    cfg.stream_c = true;
    CHECK(lib::gemm(p, cfg).config.stream_c);
  }
  check_typed_gemm<TA, TB, TC>(p, &cfg);
}

/// `cfg` with the register tile the 512-bit dot instructions need (16 lanes, 8 x 32), whatever this
/// CPU's vectors: for lowering, or for building for a target that has them.
lib::GemmConfig avx512_tile(lib::GemmConfig cfg) {
  cfg.lanes = 16;
  cfg.mr = 8;
  cfg.nr = 32;
  return cfg;
}

const std::vector<std::array<int64_t, 3>> kOddShapes = {
    {1, 1, 1},
    {7, 13, 29},
    {67, 129, 31},
    {1, 37, 300},
    {300, 1, 17},
    {33, 50, 3},
    {130, 70, 257},
    // Whole register tiles of rows and K whole groups: A is read in place.
    {64, 45, 30},
    {32, 50, 64}};

}  // namespace

TEST_CASE("lib::gemm: bfloat16 -> float32 on 1s, primes and K not a whole number of pairs") {
  for (lib::DotInstruction dot : {lib::DotInstruction::Vdpbf16ps, lib::DotInstruction::MultiplyAdd}) {
    if (!cpu_has(dot)) {
      MESSAGE("this CPU has no AVX512-BF16: vdpbf16ps not tested");
      continue;
    }
    CAPTURE(lib::dot_instruction_name(dot));
    for (auto [m, n, k] : kOddShapes) check_lowp<bfloat16, bfloat16, float>(typed(m, n, k, bf16, bf16), dot);
    // Several K blocks (the accumulator is zeroed before the first, where no packed panel exists yet).
    check_lowp<bfloat16, bfloat16, float>(typed(45, 70, 301, bf16, bf16), dot, 64);
    check_lowp<bfloat16, bfloat16, float>(typed(48, 70, 320, bf16, bf16), dot, 64);
    // Cache blocks that do not divide the padded rows and columns (the dot kernels take the nearest
    // ones that do: a tensorized micro-kernel has no guard).
    check_lowp<bfloat16, bfloat16, float>(typed(200, 230, 70, bf16, bf16), dot, 0, 96, 96);
  }
}

TEST_CASE("lib::gemm: 8-bit integers -> int32, exact, for every mix of signedness") {
  for (auto [a, b] : std::vector<std::array<DType, 2>>{{i8, u8}, {u8, i8}, {i8, i8}, {u8, u8}}) {
    CAPTURE(a.str());
    CAPTURE(b.str());
    // Same-signed bytes take vpdpbusd too: B's sign bits flipped in its copy, 128 x A's row sums
    // taken back as C is written.
    for (lib::DotInstruction dot : {lib::DotInstruction::Vpdpbusd, lib::DotInstruction::MultiplyAdd}) {
      if (!cpu_has(dot)) continue;
      CAPTURE(lib::dot_instruction_name(dot));
      for (auto [m, n, k] : kOddShapes) {
        const lib::GemmProblem p = typed(m, n, k, a, b);
        if (a == i8 && b == u8) check_lowp<int8_t, uint8_t, int32_t>(p, dot);
        if (a == u8 && b == i8) check_lowp<uint8_t, int8_t, int32_t>(p, dot);
        if (a == i8 && b == i8) check_lowp<int8_t, int8_t, int32_t>(p, dot);
        if (a == u8 && b == u8) check_lowp<uint8_t, uint8_t, int32_t>(p, dot);
      }
    }
  }
  if (cpu_has(lib::DotInstruction::Vpdpbusd)) {
    check_lowp<int8_t, uint8_t, int32_t>(typed(45, 70, 301, i8, u8), lib::DotInstruction::Vpdpbusd, 64);
    check_lowp<uint8_t, int8_t, int32_t>(typed(48, 70, 320, u8, i8), lib::DotInstruction::Vpdpbusd, 64);
    check_lowp<int8_t, int8_t, int32_t>(typed(45, 70, 301, i8, i8), lib::DotInstruction::Vpdpbusd, 64);
    check_lowp<uint8_t, uint8_t, int32_t>(typed(48, 70, 320, u8, u8), lib::DotInstruction::Vpdpbusd, 64);
  }
}

TEST_CASE("lib::gemm: the model multiplies with the dot instruction from 3 rows, widening below") {
  // The dot instructions read B packed; from 3 rows of C that copy costs less than widening B in
  // place (gemm_config.hpp), for every mix of byte signedness (same-signed ones flip B's sign bits).
  // 640 columns are whole register tiles for every row count here (tiles of 128, 64 or 32 columns:
  // the model takes the widest that divides N), so nothing is packed for padding. Each choice is
  // also computed right.
  const bool bf16_dot = cpu_has(lib::DotInstruction::Vdpbf16ps),
             int8_dot = cpu_has(lib::DotInstruction::Vpdpbusd);
  // Without a dot instruction B is packed from more than two register tiles of rows (AVX2: 4 rows).
  const int64_t f32_rows = lib::model_gemm_config(problem(256, 256, 256)).mr;
  for (int64_t m : {1, 2, 3, 4, 6, 12}) {  // below 16 rows: not AMX, where a CPU has it
    CAPTURE(m);
    const lib::GemmProblem h = typed(m, 640, 130, bf16, bf16), q = typed(m, 640, 130, u8, i8),
                           same = typed(m, 640, 130, i8, i8);
    CHECK(lib::gemm(h).config.dot ==
          (bf16_dot && m >= 3 ? lib::DotInstruction::Vdpbf16ps : lib::DotInstruction::MultiplyAdd));
    CHECK(lib::gemm(q).config.dot ==
          (int8_dot && m >= 3 ? lib::DotInstruction::Vpdpbusd : lib::DotInstruction::MultiplyAdd));
    CHECK(lib::gemm(same).config.dot ==
          (int8_dot && m >= 3 ? lib::DotInstruction::Vpdpbusd : lib::DotInstruction::MultiplyAdd));
    CHECK(lib::gemm(same).config.pack_b == ((int8_dot && m >= 3) || m > 2 * f32_rows));
    check_typed_gemm<bfloat16, bfloat16, float>(h);
    check_typed_gemm<uint8_t, int8_t, int32_t>(q);
    check_typed_gemm<int8_t, int8_t, int32_t>(same);
  }
}

TEST_CASE("lib::gemm: without a dot instruction, narrow panels are packed widened, with float32's blocks") {
  // The multiply-add micro-kernel reads panels of C's type; the dot instructions the narrow type
  // (a same-signed B flipped to the other signedness). 67 x 129: rows and columns padded, so both
  // operands are packed whatever the model says.
  for (auto [a, b, acc, dot] : std::vector<std::tuple<DType, DType, DType, lib::DotInstruction>>{
           {bf16, bf16, f32, lib::DotInstruction::Vdpbf16ps},
           {u8, i8, i32, lib::DotInstruction::Vpdpbusd},
           {i8, i8, i32, lib::DotInstruction::Vpdpbusd}}) {
    CAPTURE(a.str());
    CAPTURE(b.str());
    const lib::GemmProblem p = typed(67, 129, 32, a, b);
    lib::GemmConfig cfg = avx512_tile(lib::model_gemm_config(p));  // lowered only
    cfg.dot = lib::DotInstruction::MultiplyAdd;
    const lib::Gemm widened = lib::gemm(p, cfg);
    for (const char* packed : {"packedA", "packedB"}) {
      CAPTURE(packed);
      CHECK(packed_allocation(widened, packed).elements > 0);
      CHECK(packed_allocation(widened, packed).dtype == acc);
    }
    cfg.dot = dot;
    const lib::Gemm narrow = lib::gemm(p, cfg);
    CHECK(packed_allocation(narrow, "packedA").dtype == a);
    const bool flipped = a == i8 && b == i8;
    CHECK(packed_allocation(narrow, "packedB").dtype == (flipped ? u8 : b));
  }
  // A copy of B's panels side by side spans 1 KB of the widened type: 8 panels of 32 float32 columns
  // (16 of bfloat16 would fill 2 KB).
  with_threads(1, [] {
    const lib::GemmProblem p = typed(24, 1024, 64, bf16, bf16);
    lib::GemmConfig cfg = avx512_tile(lib::model_gemm_config(p));
    cfg.kc = 64;
    cfg.mc = 24;
    cfg.nc = 1024;
    cfg.pack_b = true;
    cfg.dot = lib::DotInstruction::MultiplyAdd;
    CHECK(packed_elements(lib::gemm(p, cfg), "packedB") == 8 * 64 * 32);
  });
  // The model on CPUs without the dot instructions (AVX-512 without BF16 and VNNI, and AVX2): where
  // B is packed, a narrow product packs A too and takes float32's register tile and blocks; with
  // two register tiles of rows or fewer, B is read in place, widened in the micro-kernel.
  lib::CpuCacheInfo avx512 = lib::CpuCacheInfo::host();
  avx512.vector_bytes = 64;
  avx512.registers = 32;
  avx512.bf16_dot = avx512.int8_dot = false;
  lib::CpuCacheInfo avx2 = avx512;
  avx2.vector_bytes = 32;
  avx2.registers = 16;
  for (const lib::CpuCacheInfo& cpu : {avx512, avx2}) {
    CAPTURE(cpu.registers);
    int a_in_place_for_f32 = 0;  // shapes where only the widening packs A
    for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{
             {256, 256, 256}, {64, 4096, 4096}, {1000, 1000, 777}, {4096, 4096, 64}}) {
      CAPTURE(m);
      const lib::GemmConfig wide = lib::default_gemm_config(m, n, k, f32, 1, cpu);
      a_in_place_for_f32 += wide.pack_a ? 0 : 1;
      for (DType t : {bf16, u8}) {
        CAPTURE(t.str());
        const lib::GemmConfig c = lib::default_gemm_config(m, n, k, t, 1, cpu);
        CHECK(c.dot == lib::DotInstruction::MultiplyAdd);
        CHECK(c.pack_a);
        CHECK(c.pack_b);
        CHECK(c.mr == wide.mr);
        CHECK(c.nr == wide.nr);
        CHECK(c.kc == wide.kc);
        CHECK(c.nc == wide.nc);
      }
    }
    CHECK(a_in_place_for_f32 > 0);
    const int64_t two_tiles = 2 * lib::default_gemm_config(256, 256, 256, f32, 1, cpu).mr;
    CHECK_FALSE(lib::default_gemm_config(two_tiles, 4096, 4096, bf16, 1, cpu).pack_b);
  }
}

TEST_CASE("lib::gemm: narrow types stream C's stores (stream_c), exact or within rounding") {
  for (auto [m, n, k] : {std::array<int64_t, 3>{64, 96, 64}, std::array<int64_t, 3>{67, 129, 31}}) {
    for (lib::DotInstruction dot : {lib::DotInstruction::Vpdpbusd, lib::DotInstruction::MultiplyAdd})
      if (cpu_has(dot)) check_lowp<uint8_t, int8_t, int32_t>(typed(m, n, k, u8, i8), dot, 0, 0, 0, true);
    for (lib::DotInstruction dot : {lib::DotInstruction::Vdpbf16ps, lib::DotInstruction::MultiplyAdd})
      if (cpu_has(dot)) check_lowp<bfloat16, bfloat16, float>(typed(m, n, k, bf16, bf16), dot, 0, 0, 0, true);
  }
}

TEST_CASE("lib::gemm: narrow types with few rows pack B's panels side by side, on one thread or two") {
  // All rows one block of A and the register-tile columns not shared: each copy of B covers several
  // dot-layout panels (a row of the copy, one group of K deep, spans 1 KB: 8 panels of 32 columns of
  // bfloat16 pairs or byte quads, fewer where 8 does not divide 40 or 44 panels). One product of 67
  // rows: the copy covers two or more of B's panels, as many as the rule says, and C is right.
  auto check = [](auto a_element, auto b_element, auto c_element, int64_t n, DType a, DType b,
                  lib::DotInstruction dot, int64_t threads) {
    if (!cpu_has(dot)) return;
    const int64_t group = dot == lib::DotInstruction::Vdpbf16ps ? 2 : 4;
    for (int64_t k : {31, 64}) {
      const lib::GemmProblem p = typed(67, n, k, a, b);
      const lib::Gemm g = lib::gemm(p);
      if (g.config.dot == lib::DotInstruction::Amx) {
        MESSAGE("the model multiplies these on AMX tiles here (lib_gemm_amx_test.cpp)");
        return;
      }
      REQUIRE(g.config.dot == dot);
      const int64_t nr = g.config.nr,
                    panels = lib::detail::panels_per_b_copy(g.config.nc / threads, nr, b.bytes(), group);
      CAPTURE(panels);
      CHECK(panels >= 2);
      CHECK(packed_elements(g, "packedB") == panels * nr * ((k + group - 1) / group * group));
      check_lowp<decltype(a_element), decltype(b_element), decltype(c_element)>(p, dot);
    }
  };
  // On two threads, too: each thread copies its own 20 or 22 panels side by side.
  for (int threads : {1, 2})
    with_threads(threads, [&] {
      CAPTURE(threads);
      check(bfloat16{}, bfloat16{}, float{}, 1260, bf16, bf16, lib::DotInstruction::Vdpbf16ps, threads);
      check(uint8_t{}, int8_t{}, int32_t{}, 1400, u8, i8, lib::DotInstruction::Vpdpbusd, threads);
    });
}

TEST_CASE("lib::gemm: narrow types transposed, column-major, batched and with an epilogue") {
  const lib::DotInstruction bf = cpu_has(lib::DotInstruction::Vdpbf16ps) ? lib::DotInstruction::Vdpbf16ps
                                                                         : lib::DotInstruction::MultiplyAdd;
  const lib::DotInstruction vnni = cpu_has(lib::DotInstruction::Vpdpbusd) ? lib::DotInstruction::Vpdpbusd
                                                                          : lib::DotInstruction::MultiplyAdd;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      lib::GemmProblem p = typed(37, 45, 23, bf16, bf16);
      p.transpose_a = ta;
      p.transpose_b = tb;
      check_lowp<bfloat16, bfloat16, float>(p, bf);
      lib::GemmProblem q = typed(37, 45, 23, u8, i8);
      q.transpose_a = ta;
      q.transpose_b = tb;
      check_lowp<uint8_t, int8_t, int32_t>(q, vnni);
      lib::GemmProblem same = typed(37, 45, 23, i8, i8), unsigned_bytes = typed(37, 45, 64, u8, u8);
      same.transpose_a = unsigned_bytes.transpose_a = ta;
      same.transpose_b = unsigned_bytes.transpose_b = tb;
      check_lowp<int8_t, int8_t, int32_t>(same, vnni);
      check_lowp<uint8_t, uint8_t, int32_t>(unsigned_bytes, vnni);
    }
  // Column-major exchanges A and B inside gemm(): their types go with them.
  lib::GemmProblem col = typed(29, 41, 19, i8, u8);
  col.layout = lib::Layout::ColMajor;
  check_lowp<int8_t, uint8_t, int32_t>(col, vnni);
  col = typed(29, 41, 32, i8, i8);
  col.layout = lib::Layout::ColMajor;
  check_lowp<int8_t, int8_t, int32_t>(col, vnni);
  lib::GemmProblem batched = typed(19, 33, 15, bf16, bf16);
  batched.batch = 3;
  check_lowp<bfloat16, bfloat16, float>(batched, bf);
  // The row sums of a batch's A, each its own (and, with 16 | K, summed 16 lanes at a time).
  for (int64_t k : {15, 48}) {
    lib::GemmProblem bytes = typed(19, 33, k, u8, u8);
    bytes.batch = 3;
    check_lowp<uint8_t, uint8_t, int32_t>(bytes, vnni);
  }

  // bias + ReLU on the float32 accumulator, applied as C is written.
  check_bf16_bias_relu(Target::cpu());
  // And on int8 x int8's int32 product, after its row sums are taken back.
  {
    const int64_t M = 21, N = 35, K = 40;
    lib::GemmProblem e = typed(M, N, K, i8, i8);
    Tensor bias = placeholder({static_cast<int>(N)}, i32, "bias");
    e.epilogue = lib::bias_activation(bias, "relu");
    lib::GemmConfig cfg = lib::model_gemm_config(e);
    cfg.dot = vnni;
    lib::Gemm g = lib::gemm(e, cfg);
    CAPTURE(g.config.str());
    Kernel f = build(g.schedule, g.args(), Target::cpu(), "s8s8_bias_relu");
    Buffer<int8_t> a({M, K}), b({K, N});
    Buffer<int32_t> vb({N}), c({M, N});
    fill_operand(a, 5);
    fill_operand(b, 6);
    for (int64_t j = 0; j < N; ++j) vb.at_flat(j) = static_cast<int32_t>(j * 997 % 4001) - 2000;
    f(a, b, vb, c);
    int64_t bad = 0;
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int32_t sum = vb.at_flat(j);
        for (int64_t k = 0; k < K; ++k) sum += int32_t{a.at_flat(i * K + k)} * int32_t{b.at_flat(k * N + j)};
        bad += c.at_flat(i * N + j) != std::max(sum, 0);
      }
    CHECK(bad == 0);
  }
}

TEST_CASE("lib::gemm: the narrow types' refusals") {
  lib::GemmProblem p = problem(8, 8, 8, f16);
  CHECK_THROWS_WITH_AS(
      lib::gemm(p),
      "lib::gemm: element types A float16, B float16, C float16 are not supported; use float32 "
      "or float64 for all three, bfloat16 A and B with a float32 C, or int8/uint8 A and B with "
      "an int32 C",
      Error);
  p = typed(8, 8, 8, bf16, bf16);
  p.c_dtype = bf16;
  CHECK_THROWS_WITH_AS(lib::gemm(p), Contains("C bfloat16 are not supported"), Error);
  p = typed(8, 8, 8, f32, bf16);
  CHECK_THROWS_WITH_AS(lib::gemm(p), Contains("A float32, B bfloat16, C float32 are not supported"), Error);

  lib::GemmConfig cfg = lib::model_gemm_config(problem(32, 32, 32));
  cfg.dot = lib::DotInstruction::Vdpbf16ps;
  CHECK_THROWS_WITH_AS(lib::gemm(problem(32, 32, 32), cfg),
                       "lib::gemm: dot = vdpbf16ps multiplies bfloat16, but A is float32 and B float32; use "
                       "DotInstruction::MultiplyAdd",
                       Error);
  cfg = lib::model_gemm_config(problem(32, 32, 32));
  cfg.dot = lib::DotInstruction::Vpdpbusd;
  CHECK_THROWS_WITH_AS(lib::gemm(problem(32, 32, 32), cfg),
                       "lib::gemm: dot = vpdpbusd multiplies 8-bit integers, but A is float32 and B float32; "
                       "use DotInstruction::MultiplyAdd",
                       Error);
  lib::GemmProblem bp = typed(32, 32, 32, bf16, bf16);
  cfg = lib::model_gemm_config(bp);
  cfg.dot = lib::DotInstruction::Vdpbf16ps;
  cfg.lanes = 16;  // an AVX-512 CPU's (on AVX2 the model gives 8)
  cfg.nr = 24;
  CHECK_THROWS_WITH_AS(
      lib::gemm(bp, cfg),
      Contains("dot = vdpbf16ps updates 16-lane vectors: it needs lanes = 16 and nr a multiple "
               "of 16, got lanes = 16 and nr = 24"),
      Error);
  cfg = lib::model_gemm_config(bp);
  cfg.decomposition = lib::Decomposition::StreamK;
  cfg.dot = lib::DotInstruction::MultiplyAdd;
  CHECK_THROWS_WITH_AS(
      lib::gemm(bp, cfg),
      "lib::gemm: the Stream-K decomposition computes float32 and float64 only, not bfloat16 x "
      "bfloat16 -> float32; use Decomposition::DataParallel",
      Error);
  CHECK_THROWS_WITH_AS(x86::dot_8bit_intrin(i8, i8),
                       Contains("vpdpbusd multiplies an unsigned by a signed byte"), Error);
}

TEST_CASE("call_llvm_intrinsic: unknown names, overloaded intrinsics and the interpreter are refused") {
  Tensor A = placeholder({16}, f32, "A");
  auto kernel_with = [&](Expr call) {
    Tensor C = compute(
        {16}, [&](Expr i) { return A(i) + cast(f32, call); }, "C");
    return build(create_schedule(C), {A, C}, Target::cpu(), "intrin");
  };
  CHECK_THROWS_WITH_AS(kernel_with(call_llvm_intrinsic(f32, "llvm.x86.no.such.thing", "", {})),
                       Contains("calls 'llvm.x86.no.such.thing', which LLVM 19"), Error);
  CHECK_THROWS_WITH_AS(kernel_with(call_llvm_intrinsic(f32, "llvm.fabs.f32", "", {Expr(1.0f)})),
                       Contains("'llvm.fabs.f32', which is overloaded"), Error);
  // Side effects (a fence, returning nothing), an operand count, an immediate that is not a constant, a
  // 16-bit float result: each a loom::Error, none reaches LLVM.
  CHECK_THROWS_WITH_AS(kernel_with(call_llvm_intrinsic(f32, "llvm.x86.sse2.lfence", "sse2", {})),
                       Contains("which reads or writes memory or has side effects"), Error);
  CHECK_THROWS_WITH_AS(kernel_with(call_llvm_intrinsic(i32, "llvm.x86.bmi.pext.32", "bmi2", {Expr(1)})),
                       Contains("'llvm.x86.bmi.pext.32', which takes 2 operands; the call gives 1"), Error);
  CHECK_THROWS_WITH_AS(
      kernel_with(call_llvm_intrinsic(f64, "llvm.x86.bmi.pext.32", "bmi2", {Expr(1), cast(i32, A(0))})),
      Contains("its result is 32 bits, the call's is 64"), Error);
  CHECK_THROWS_WITH_AS(
      kernel_with(call_llvm_intrinsic(bf16, "llvm.x86.bmi.pext.32", "bmi2", {Expr(1), cast(i32, A(0))})),
      Contains("its result is bfloat16 in the call; pass and take 16-bit floats as their bits"), Error);
  if (CpuCacheInfo::host().vector_bytes == 64) {
    // rndscale's rounding control is an immediate: a loaded value cannot be one.
    Expr v = BroadcastNode::make(A(0), 16);
    CHECK_THROWS_WITH_AS(
        kernel_with(call_llvm_intrinsic(f32, "llvm.x86.avx512.mask.rndscale.ps.512", "avx512f,evex512",
                                        {v, cast(i32, A(1)), v, make_const(i16, -1), Expr(4)})),
        Contains("its operand 1 is an immediate; pass an integer constant"), Error);
  }
  Tensor C = compute(
      {16}, [&](Expr i) { return A(i) + call_llvm_intrinsic(f32, "llvm.x86.no.such", "", {}); }, "C");
  Buffer<float> a({16}), c({16});
  CHECK_THROWS_WITH_AS(interpret(lower(create_schedule(C), {A, C}, "intrin"), {a, c}),
                       Contains("the interpreter cannot run the LLVM intrinsic 'llvm.x86.no.such'"), Error);
}

TEST_CASE("lib::gemm: the dot instructions are in the code, and the model picks them where B is packed") {
  // Built for a CPU that has both (whatever this one has): the micro-kernel is the instruction.
  for (auto [a, b, mnemonic] : std::vector<std::tuple<DType, DType, const char*>>{
           {bf16, bf16, "vdpbf16ps"}, {i8, u8, "vpdpbusd"}, {u8, i8, "vpdpbusd"}}) {
    CAPTURE(mnemonic);
    lib::GemmProblem p = typed(64, 64, 64, a, b);
    lib::GemmConfig cfg = avx512_tile(lib::model_gemm_config(p));
    cfg.dot = a == bf16 ? lib::DotInstruction::Vdpbf16ps : lib::DotInstruction::Vpdpbusd;
    cfg.pack_a = false;  // the model packs A where this CPU widens instead
    lib::Gemm g = lib::gemm(p, cfg);
    CHECK(g.config.pack_a == false);  // row-major A with whole tiles and K groups: read in place
    CHECK(g.config.pack_b == true);
    Kernel f = build(g.schedule, g.args(), Target::cpu("sapphirerapids"), "dot_gemm");
    CHECK(f.assembly().find(mnemonic) != std::string::npos);
  }
  // The model: a dot instruction where this CPU has it and B is packed anyway; with one row of C,
  // the widened multiply-add on B in place.
  const lib::GemmConfig big = lib::model_gemm_config(typed(256, 256, 256, bf16, bf16));
  const lib::GemmConfig row = lib::model_gemm_config(typed(1, 4096, 4096, bf16, bf16));
  CHECK(row.dot == lib::DotInstruction::MultiplyAdd);
  const CpuCacheInfo& cpu = CpuCacheInfo::host();  // AMX before the vector dot instructions
  CHECK(big.dot == (cpu.amx_bf16   ? lib::DotInstruction::Amx
                    : cpu.bf16_dot ? lib::DotInstruction::Vdpbf16ps
                                   : lib::DotInstruction::MultiplyAdd));
  const lib::GemmConfig bytes = lib::model_gemm_config(typed(256, 256, 256, u8, i8));
  CHECK(bytes.dot == (cpu.amx_int8   ? lib::DotInstruction::Amx
                      : cpu.int8_dot ? lib::DotInstruction::Vpdpbusd
                                     : lib::DotInstruction::MultiplyAdd));
  CHECK(lib::model_gemm_config(typed(256, 256, 256, i8, i8)).dot == bytes.dot);  // B flipped
}
