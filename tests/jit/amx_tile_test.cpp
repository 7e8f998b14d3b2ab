// AMX tiles through tensorize (te/x86_amx_intrinsics.hpp): GEMMs tensorized with x86::amx_intrin
// run on the interpreter (the SDM's semantics, on any machine) and are compared bit for bit with
// a reference written here, with the LLVM backend's code with emulated tiles, and with the
// unscheduled computation; the LLVM backend's code for a CPU with AMX keeps the accumulators in
// tile registers through K, and calling it on a CPU without AMX is a clear error.
#include <doctest/doctest.h>

#include <loom/backend/build.hpp>
#include <loom/ir/half.hpp>
#include <loom/sim/interpreter.hpp>
#include <loom/support/cpu_info.hpp>
#include <loom/te/x86_amx_intrinsics.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

using namespace loom;
using doctest::Contains;

namespace {

/// C[i, j] = sum_{kg, t} widen(A[i, kg * group + t]) * widen(B[kg, j, t]), and a schedule that
/// tensorizes blocks of (m_tiles * rows) x (16 * n_tiles) with AMX, over all of K or (k_block > 0)
/// over K in blocks of k_block, the reduction split around the intrinsic.
struct AmxGemm {
  Tensor A, B, C;
  Schedule s;
};

AmxGemm amx_gemm(int M, int N, int K, DType a_type, DType b_type, int m_tiles, int n_tiles, int rows,
                 int k_block = 0) {
  const int group = 4 / a_type.bytes();
  const DType acc = a_type == bf16 ? f32 : i32;
  AmxGemm g;
  g.A = placeholder({M, K}, a_type, "A");
  g.B = placeholder({K / group, N, group}, b_type, "B");
  IterVar kg = reduce_axis(0, K / group, "kg"), t = reduce_axis(0, group, "t");
  Tensor A = g.A, B = g.B;
  g.C = compute(
      {M, N},
      [&](Expr i, Expr j) {
        return sum(cast(acc, A(i, kg * group + t)) * cast(acc, B(kg, j, t)), {kg, t});
      },
      "C");
  g.s = create_schedule(g.C);
  Stage st = g.s[g.C];
  auto [io, ii] = st.split(g.C.axis(0), m_tiles * rows);
  auto [jo, ji] = st.split(g.C.axis(1), 16 * n_tiles);
  if (k_block > 0) {
    auto [ko, ki] = st.split(kg, k_block / group);
    st.reorder({io, jo, ko, ii, ji, ki, t});
  } else {
    st.reorder({io, jo, ii, ji, kg, t});
  }
  st.tensorize(ii, x86::amx_intrin(a_type, b_type, m_tiles, n_tiles, k_block > 0 ? k_block : K, rows));
  return g;
}

float flush(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

/// TDPBF16PS as the SDM's pseudo-code writes it, one instruction per 32 elements of K: from zero, a
/// chain of fused multiply-adds over the even elements of its 16 pairs and one over the odd ones,
/// then their sum added to the accumulator, with subnormals read and written as zero throughout.
float tdpbf16ps_reference(const Buffer<bfloat16>& a, const Buffer<bfloat16>& b, int64_t i, int64_t j,
                          int64_t K) {
  float acc = 0.0f;
  for (int64_t step = 0; step < K / 32; ++step) {
    float even = 0.0f, odd = 0.0f;
    for (int64_t kg = 16 * step; kg < 16 * step + 16; ++kg) {
      even = flush(std::fma(flush(float(a(i, 2 * kg))), flush(float(b(kg, j, 0))), even));
      odd = flush(std::fma(flush(float(a(i, 2 * kg + 1))), flush(float(b(kg, j, 1))), odd));
    }
    acc = flush(flush(acc) + flush(even + odd));
  }
  return acc;
}

/// Random bfloat16 in [-2, 2], with a few subnormals (which AMX reads as zero).
void fill_bf16(Buffer<bfloat16>& b, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = bfloat16(i % 37 == 5 ? 3e-39f : value(rng));
}

template <typename T>
void fill_bytes(Buffer<T>& b, unsigned seed) {
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < b.num_elements(); ++i) b.at_flat(i) = static_cast<T>(rng());
}

/// Runs the AMX schedule and the unscheduled one on the interpreter; checks the bfloat16 product
/// bit for bit against the SDM's order and within float32 rounding of the plain sum.
void check_bf16(int M, int N, int K, int m_tiles, int n_tiles, int rows, int k_block = 0) {
  CAPTURE(M);
  CAPTURE(N);
  CAPTURE(K);
  CAPTURE(k_block);
  AmxGemm g = amx_gemm(M, N, K, bf16, bf16, m_tiles, n_tiles, rows, k_block);
  Buffer<bfloat16> a({M, K}), b({K / 2, N, 2});
  fill_bf16(a, 1);
  fill_bf16(b, 2);
  Buffer<float> c({M, N}), plain({M, N}), jit({M, N});
  c.fill(7.0f);  // a sentinel: an element the kernel does not write fails
  jit.fill(7.0f);
  const LoweredFunc f = lower(g.s, {g.A, g.B, g.C}, "amx");
  interpret(f, {a, b, c});
  interpret(lower(create_schedule(g.C), {g.A, g.B, g.C}, "plain"), {a, b, plain});
  // The LLVM backend's loops and addresses, with the tile instructions emulated: the same bits.
  build(f, Target::cpu().set_amx_emulation())(a, b, jit);
  CHECK(std::memcmp(c.data(), jit.data(), sizeof(float) * M * N) == 0);
  int64_t not_exact = 0, far = 0;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      const float want = tdpbf16ps_reference(a, b, i, j, K), got = c(i, j);
      if (std::memcmp(&want, &got, 4) != 0) ++not_exact;
      if (std::abs(got - plain(i, j)) > 1e-5f * K * 4) ++far;
    }
  }
  CHECK(not_exact == 0);
  CHECK(far == 0);
}

template <typename TA, typename TB>
void check_8bit(DType a_type, DType b_type, int M, int N, int K, int m_tiles, int n_tiles, int k_block = 0) {
  CAPTURE(a_type.str());
  CAPTURE(b_type.str());
  AmxGemm g = amx_gemm(M, N, K, a_type, b_type, m_tiles, n_tiles, 16, k_block);
  Buffer<TA> a({M, K});
  Buffer<TB> b({K / 4, N, 4});
  fill_bytes(a, 3);
  fill_bytes(b, 4);
  Buffer<int32_t> c({M, N}), plain({M, N}), jit({M, N});
  c.fill(7);
  jit.fill(7);
  const LoweredFunc f = lower(g.s, {g.A, g.B, g.C}, "amx");
  interpret(f, {a, b, c});
  build(f, Target::cpu().set_amx_emulation())(a, b, jit);
  CHECK(std::memcmp(c.data(), jit.data(), sizeof(int32_t) * M * N) == 0);
  interpret(lower(create_schedule(g.C), {g.A, g.B, g.C}, "plain"), {a, b, plain});
  int64_t wrong = 0;
  for (int64_t i = 0; i < M; ++i) {
    for (int64_t j = 0; j < N; ++j) {
      int64_t want = 0;
      for (int64_t k = 0; k < K; ++k) want += int64_t{a(i, k)} * int64_t{b(k / 4, j, k % 4)};
      if (c(i, j) != static_cast<int32_t>(want) || plain(i, j) != c(i, j)) ++wrong;
    }
  }
  CHECK(wrong == 0);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

/// Lines that load or store a tile register at a stack address: spilled tiles.
size_t tile_accesses_on_stack(const std::string& text) {
  size_t n = 0, start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    if (line.find("%tmm") != std::string::npos && line.find("%rsp") != std::string::npos) ++n;
    start = end + 1;
  }
  return n;
}

}  // namespace

TEST_CASE("AMX bfloat16 tiles on the interpreter: the SDM pseudo-code's rounding, bit for bit") {
  check_bf16(64, 96, 96, 2, 2, 16);       // 2 x 2 blocks, K in one block of 3 k-steps
  check_bf16(64, 96, 128, 2, 2, 16, 64);  // K in blocks of 2 k-steps: reduce_init, then reduce_update
  check_bf16(15, 48, 32, 1, 3, 5);        // tiles of 5 rows, 1 x 3 blocks, one k-step
  check_bf16(48, 16, 64, 3, 1, 16, 32);   // 3 x 1 blocks (B's tile held), K in blocks of one step
  check_bf16(16, 96, 64, 1, 6, 16);       // 1 x 6: A's tile held, B's one at a time
}

TEST_CASE("AMX 8-bit tiles on the interpreter: exact for every signedness") {
  check_8bit<int8_t, int8_t>(i8, i8, 32, 32, 128, 2, 2);
  check_8bit<int8_t, uint8_t>(i8, u8, 48, 32, 192, 1, 2, 64);
  check_8bit<uint8_t, int8_t>(u8, i8, 32, 48, 64, 2, 1);
  check_8bit<uint8_t, uint8_t>(u8, u8, 16, 64, 128, 1, 4, 64);
}

TEST_CASE("AMX on the LLVM backend: the accumulators stay in tile registers through K") {
  AmxGemm g = amx_gemm(64, 96, 512, bf16, bf16, 2, 2, 16, 256);
  Kernel k = build(g.s, {g.A, g.B, g.C}, Target::cpu("sapphirerapids"), "amx_bf16");
  const std::string& text = k.assembly();
  INFO(text);
  // 2 x 2 accumulators over K = 512 in 2 blocks of 8 k-steps: each block's tiles are loaded and
  // stored once (LLVM may unroll the loops, each copy then stores its own), and none is spilled to
  // the stack. Stored at every k-step, there would be 64 stores.
  CHECK(count(text, "ldtilecfg") >= 1);
  CHECK(count(text, "tilezero") >= 4);
  CHECK(count(text, "tdpbf16ps") >= 4);
  CHECK(count(text, "tilestored") <= 4 * 3);
  CHECK(tile_accesses_on_stack(text) == 0);
  AmxGemm s8 = amx_gemm(32, 32, 256, u8, i8, 1, 2, 16);  // 2 blocks of rows, 4 k-steps
  const std::string& int8_text =
      build(s8.s, {s8.A, s8.B, s8.C}, Target::cpu("sapphirerapids"), "amx_u8s8").assembly();
  INFO(int8_text);
  CHECK(count(int8_text, "tdpbusd") >= 2);
  CHECK(count(int8_text, "tilestored") <= 2 * 2);
  CHECK(tile_accesses_on_stack(int8_text) == 0);

  // Running it: on a CPU with AMX the result must be the product; elsewhere a clear error.
  Buffer<bfloat16> a({64, 512}), b({256, 96, 2});
  fill_bf16(a, 5);
  fill_bf16(b, 6);
  Buffer<float> c({64, 96});
  if (!CpuCacheInfo::host().amx_bf16) {
    CHECK_THROWS_WITH_AS(k(a, b, c), Contains("needs CPU features this host lacks ("), Error);
    CHECK_THROWS_WITH_AS(k(a, b, c), Contains("amx-bf16"), Error);
  } else {
    k(a, b, c);
    int64_t far = 0;
    for (int64_t i = 0; i < 64; ++i)
      for (int64_t j = 0; j < 96; ++j)
        if (std::abs(c(i, j) - tdpbf16ps_reference(a, b, i, j, 512)) > 1e-4f * 512) ++far;
    CHECK(far == 0);
  }
}

TEST_CASE("AMX on the LLVM backend: each tile instruction gets the shapes and the operands it needs") {
  // Tiles of 5 rows, 1 x 3 (A's tile held): A's loads have 5 rows, B's 16, and every tdpbf16ps
  // takes (rows, 64 bytes of C, 64 bytes of A), the accumulator, an A tile, then a B tile.
  AmxGemm g = amx_gemm(15, 48, 64, bf16, bf16, 1, 3, 5);
  const std::string& ir = build(g.s, {g.A, g.B, g.C}, Target::cpu("sapphirerapids"), "amx_shapes").llvm_ir();
  INFO(ir);
  std::set<std::string> a_tiles, b_tiles;
  const std::regex load(
      R"((%[\w.]+) = (?:tail )?call x86_amx @llvm\.x86\.tileloadd64\.internal\(i16 (\d+), i16 64,)");
  for (std::sregex_iterator it(ir.begin(), ir.end(), load), end; it != end; ++it)
    ((*it)[2] == "5" ? a_tiles : b_tiles).insert((*it)[1]);
  CHECK(!a_tiles.empty());
  CHECK(!b_tiles.empty());
  const std::regex dot(
      R"(@llvm\.x86\.tdpbf16ps\.internal\(i16 (\d+), i16 (\d+), i16 (\d+), x86_amx %[\w.]+, x86_amx (%[\w.]+), x86_amx (%[\w.]+)\))");
  size_t dots = 0;
  for (std::sregex_iterator it(ir.begin(), ir.end(), dot), end; it != end; ++it, ++dots) {
    CHECK((*it)[1] == "5");
    CHECK((*it)[2] == "64");
    CHECK((*it)[3] == "64");
    CHECK(a_tiles.count((*it)[4]) == 1);
    CHECK(b_tiles.count((*it)[5]) == 1);
  }
  CHECK(dots >= 3);
}

TEST_CASE("An AMX kernel's C counts as written: a C that overlaps A is refused") {
  AmxGemm g = amx_gemm(32, 32, 64, u8, i8, 1, 2, 16);
  Kernel k = build(g.s, {g.A, g.B, g.C}, Target::cpu().set_amx_emulation(), "amx_overlap");
  Buffer<int8_t> b({16, 32, 4});
  Buffer<int32_t> shared_memory({32, 32});
  BufferView a_over_c(static_cast<void*>(shared_memory.data()), u8, {32, 64});
  CHECK_THROWS_WITH_AS(k(a_over_c, b, shared_memory),
                       Contains("arguments 'C' and 'A' of kernel 'amx_overlap' overlap in memory"),
                       ArgumentError);
}

TEST_CASE("AMX through tensorize: a nest that does not have the intrinsic's shape is refused") {
  // (The intrinsic's own refusals, and targets without AMX, are the error catalog's E-AMX-BLOCK and
  // E-BUILD-AMX-FEATURE in tests/hostile.)
  // A nest that splits K under the tensorized loop: tensorize names both shapes.
  AmxGemm wrong = amx_gemm(32, 32, 128, bf16, bf16, 1, 1, 16);
  Stage st = wrong.s[wrong.C];
  (void)st.split(st->leaf_iter_vars[4], 16);
  CHECK_THROWS_WITH_AS(lower(wrong.s, {wrong.A, wrong.B, wrong.C}, "wrong"),
                       Contains("do not match: the loops are data-parallel ["), Error);
}

TEST_CASE("The interpreter checks every tile row of an AMX product against its buffer") {
  // A user's intrinsic with the AMX compute, whose body gets B's row stride wrong (twice the
  // packed one): its last tiles reach past B's end, which the interpreter reports.
  Tensor a = placeholder({16, 32}, bf16, "a"), b = placeholder({16, 16, 2}, bf16, "b");
  IterVar kg = reduce_axis(0, 16, "kg"), t = reduce_axis(0, 2, "t");
  Tensor out = compute(
      {16, 16},
      [&](Expr i, Expr j) {
        return sum(cast(f32, a(i, kg * 2 + t)) * cast(f32, b(kg, j, t)), {kg, t});
      },
      "wide_b");
  TensorIntrin wide_b = decl_tensor_intrin(
      out,
      [](const std::vector<BufferRegion>& ins, const std::vector<BufferRegion>& outs) {
        AmxTileProduct p;
        p.steps = Expr(1);
        const Expr zero = make_const(i32, 0);
        p.c = AmxOperand{outs[0].data, f32, outs[0].elem_offset, outs[0].strides[0], zero, zero};
        p.a = AmxOperand{ins[0].data, bf16, ins[0].elem_offset, ins[0].strides[0], zero, zero};
        p.b = AmxOperand{ins[1].data, bf16, ins[1].elem_offset, ins[1].strides[0] * 2, zero, zero};
        return p.make("wide_b");
      },
      "wide_b");
  AmxGemm g = amx_gemm(32, 32, 32, bf16, bf16, 1, 1, 16);
  Stage st = g.s[g.C];
  st.tensorize(st->leaf_iter_vars[2], wide_b);
  Buffer<bfloat16> av({32, 32}), bv({16, 32, 2});
  Buffer<float> c({32, 32});
  CHECK_THROWS_WITH_AS(
      interpret(lower(g.s, {g.A, g.B, g.C}, "wide_b"), {av, bv, c}),
      Contains("the AMX tile product (tdpbf16ps) reads or writes 64 bytes of B at byte 2048 of "
               "buffer 'B', outside its memory (bytes 0 to 2048)"),
      Error);
}
