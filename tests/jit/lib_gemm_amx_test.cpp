// loom::lib::gemm on AMX tiles (GemmConfig::dot = DotInstruction::Amx), compared with a naive
// product: built with Target::set_amx_emulation() (the LLVM backend's own loops and addresses, the
// tile instructions computed by the runtime) on every machine, and with Target::cpu() where the CPU
// has AMX; bfloat16 and every signedness of 8-bit, shapes no tile divides, K in blocks, transposed,
// batched, column-major, an epilogue, other register tiles, C copied from each tile's block and
// streamed; the refusals, and where the model picks AMX.
#include <doctest/doctest.h>

#include <loom/backend/build.hpp>
#include <loom/lib/gemm.hpp>
#include <loom/lib/gemm_tuning.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "../support/text_count.hpp"
#include "lib_gemm_test_util.hpp"

using namespace loom;
using namespace loom::test;
using doctest::Contains;

namespace {

/// The model's configuration with dot = amx and an mr x nr register tile (kc, when given).
lib::GemmConfig amx_config(const lib::GemmProblem& p, int64_t mr = 32, int64_t nr = 32, int64_t kc = 0) {
  lib::GemmConfig cfg = lib::model_gemm_config(p);
  cfg.dot = lib::DotInstruction::Amx;
  cfg.mr = mr;
  cfg.nr = nr;
  if (kc > 0) cfg.kc = kc;
  return cfg;
}

bool host_has_amx(DType a) {
  return a == bf16 ? CpuCacheInfo::host().amx_bf16 : CpuCacheInfo::host().amx_int8;
}

/// check_typed_gemm with emulated tiles, and on the CPU's own tiles where it has them.
template <typename TA, typename TB, typename TC>
void check_amx(const lib::GemmProblem& p, const lib::GemmConfig& cfg) {
  check_typed_gemm<TA, TB, TC>(p, &cfg, Target::cpu().set_amx_emulation());
  if (host_has_amx(p.a_type())) check_typed_gemm<TA, TB, TC>(p, &cfg, Target::cpu());
}

template <typename TA, typename TB>
void check_8bit(int64_t m, int64_t n, int64_t k, DType a, DType b, int64_t kc = 0) {
  const lib::GemmProblem p = typed(m, n, k, a, b);
  check_amx<TA, TB, int32_t>(p, amx_config(p, 32, 32, kc));
}

}  // namespace

TEST_CASE("lib::gemm on AMX tiles: bfloat16 -> float32 on shapes no tile divides, K in blocks") {
  for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{
           {1, 1, 1}, {7, 13, 29}, {37, 50, 70}, {130, 70, 257}, {64, 64, 64} /* A read in place */}) {
    const lib::GemmProblem p = typed(m, n, k, bf16, bf16);
    check_amx<bfloat16, bfloat16, float>(p, amx_config(p));
  }
  // K in blocks of 64 and of the model's 1024 (K padded to whole blocks with zeros).
  const lib::GemmProblem blocks = typed(45, 70, 301, bf16, bf16);
  check_amx<bfloat16, bfloat16, float>(blocks, amx_config(blocks, 32, 32, 64));
  const lib::GemmProblem long_k = typed(33, 40, 2100, bf16, bf16);
  check_amx<bfloat16, bfloat16, float>(long_k, amx_config(long_k));
  // Other blocks of tiles: 1 x 6 (A's tile held), 6 x 1 (B's), 1 x 1, with cache blocks that the
  // tiles must divide.
  const lib::GemmProblem p = typed(100, 200, 96, bf16, bf16);
  for (auto [mr, nr] : std::vector<std::array<int64_t, 2>>{{16, 96}, {96, 16}, {16, 16}}) {
    lib::GemmConfig cfg = amx_config(p, mr, nr);
    cfg.mc = 50;
    cfg.nc = 100;
    check_amx<bfloat16, bfloat16, float>(p, cfg);
  }
}

TEST_CASE("lib::gemm on AMX tiles: 8-bit integers -> int32, exact, for every signedness") {
  check_8bit<int8_t, int8_t>(37, 50, 70, i8, i8);
  check_8bit<int8_t, uint8_t>(64, 64, 128, i8, u8);
  check_8bit<uint8_t, int8_t>(45, 70, 301, u8, i8, 128);
  check_8bit<uint8_t, uint8_t>(7, 13, 29, u8, u8);
}

TEST_CASE("lib::gemm on AMX tiles: transposed, batched, column-major, and with an epilogue") {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      lib::GemmProblem p = typed(37, 45, 23, bf16, bf16);
      p.transpose_a = ta;
      p.transpose_b = tb;
      check_amx<bfloat16, bfloat16, float>(p, amx_config(p));
    }
  // Batches: fewer than the threads (the blocks of each in parallel), and more.
  for (int64_t count : {1, 3}) {
    lib::GemmProblem batched = typed(19, 33, 45, bf16, bf16);
    batched.batch = count;
    check_amx<bfloat16, bfloat16, float>(batched, amx_config(batched));
  }
  lib::GemmProblem batched_bytes = typed(40, 20, 70, u8, u8);
  batched_bytes.batch = 2;
  batched_bytes.transpose_a = true;
  check_amx<uint8_t, uint8_t, int32_t>(batched_bytes, amx_config(batched_bytes));
  lib::GemmProblem col = typed(29, 41, 75, i8, u8);
  col.layout = lib::Layout::ColMajor;
  check_amx<int8_t, uint8_t, int32_t>(col, amx_config(col));

  // bias + ReLU on the float32 accumulator, in C's pass over the tiles' product.
  check_bf16_bias_relu(Target::cpu().set_amx_emulation(),
                       [](const lib::GemmProblem& p) { return amx_config(p); });
}

TEST_CASE("lib::gemm on AMX tiles: with K in one block, C copies each tile from a block in L1") {
  // Padded rows and columns, an epilogue or streamed stores, and K in one block: the tiles are stored
  // to an mr x nr block that C's own loops copy, not to an m x n product read back by a pass of its own.
  const lib::GemmProblem padded = typed(37, 50, 70, bf16, bf16);
  CHECK(packed_elements(lib::gemm(padded, amx_config(padded)), "C_padded") == 32 * 32);
  lib::GemmProblem with_epilogue = typed(64, 64, 64, bf16, bf16);
  with_epilogue.epilogue = lib::bias_activation(placeholder({64}, f32, "bias"), "relu");
  CHECK(packed_elements(lib::gemm(with_epilogue, amx_config(with_epilogue)), "C_product") == 32 * 32);
  // K in blocks: the tiles accumulate in the whole padded product between them.
  const lib::GemmProblem blocks = typed(45, 70, 301, bf16, bf16);
  const lib::Gemm in_blocks = lib::gemm(blocks, amx_config(blocks, 32, 32, 64));
  const int64_t nc = in_blocks.config.nc;
  CHECK(packed_elements(in_blocks, "C_padded") == 64 * ((70 + nc - 1) / nc * nc));

  // Streamed stores (stream_c): the copy from each tile's block streams, unpadded or padded; with K
  // in blocks, C's pass over the product does.
  // A batch of one, too (C's pass streams along its rows, not along the batch's one iteration).
  for (auto [m, n, k, kc, batch] : std::vector<std::array<int64_t, 5>>{
           {64, 96, 64, 0, 0}, {37, 50, 70, 0, 0}, {45, 70, 301, 64, 0}, {45, 70, 301, 64, 1}}) {
    CAPTURE(m);
    CAPTURE(k);
    CAPTURE(batch);
    lib::GemmProblem p = typed(m, n, k, u8, i8);
    p.batch = batch;
    lib::GemmConfig cfg = amx_config(p, 32, 32, kc);
    cfg.stream_c = true;
    const lib::Gemm g = lib::gemm(p, cfg);
    CHECK(g.config.stream_c);
    if (kc == 0) CHECK(packed_elements(g, m == 64 ? "C_product" : "C_padded") == 32 * 32);
    const Kernel kernel = build(g.schedule, g.args(), Target::cpu().set_amx_emulation(), "amx_streamed");
    CHECK(test::count_of(kernel.llvm_ir(), "!nontemporal") >= 1);
    check_amx<uint8_t, int8_t, int32_t>(p, cfg);
  }
  // C one tile: nothing streams, and the configuration says so.
  const lib::GemmProblem one_tile = typed(16, 16, 64, u8, i8);
  lib::GemmConfig one_tile_cfg = amx_config(one_tile, 32, 32);
  one_tile_cfg.stream_c = true;
  CHECK_FALSE(lib::gemm(one_tile, one_tile_cfg).config.stream_c);
}

TEST_CASE("lib::gemm on AMX tiles: refusals, and the model picks AMX only where the CPU has it") {
  const lib::GemmProblem f32_problem = problem(64, 64, 64, f32);
  CHECK_THROWS_WITH_AS(
      lib::gemm(f32_problem, amx_config(f32_problem)),
      "lib::gemm: dot = amx multiplies bfloat16 or 8-bit integers, but A is float32 and B float32; "
      "use DotInstruction::MultiplyAdd",
      Error);
  const lib::GemmProblem p = typed(64, 64, 64, bf16, bf16);
  CHECK_THROWS_WITH_AS(
      lib::gemm(p, amx_config(p, 24, 32)),
      Contains("mr and nr multiples of 16 (mr = nr = 32 is 2 x 2 tiles; 16 x 96 and 96 x 16 also "
               "fit), got mr = 24 and nr = 32"),
      Error);
  CHECK_THROWS_WITH_AS(lib::gemm(p, amx_config(p, 32, 48)), Contains("got mr = 32 and nr = 48"), Error);
  lib::GemmConfig stream_k = amx_config(p);
  stream_k.decomposition = lib::Decomposition::StreamK;
  CHECK_THROWS_WITH_AS(lib::gemm(p, stream_k), Contains("Stream-K"), Error);

  lib::Gemm g = lib::gemm(p, amx_config(p));
  CHECK(g.config.str().find("dot=amx") != std::string::npos);
  if (!CpuCacheInfo::host().amx_bf16) {
    CHECK_THROWS_WITH_AS(
        build(g.schedule, g.args(), Target::cpu(), "amx_host"),
        Contains("uses the AMX instruction tdpbf16ps, which needs the CPU feature 'amx-tile'"), Error);
  }
  // K in equal blocks: 1056 in blocks of at most 1024 is two of 544 (whole k-steps of 32), not two of
  // 1024 (almost twice the multiply-adds).
  const lib::GemmProblem k1056 = typed(64, 64, 1056, bf16, bf16);
  CHECK(lib::gemm(k1056, amx_config(k1056, 32, 32, 1024)).config.kc == 544);
  CHECK(lib::gemm(k1056, amx_config(k1056, 32, 32, 64)).config.kc == 64);

  // The tuner's "amx" knob: 1 keeps an AMX configuration, 0 gives the vector model's.
  lib::GemmConfig amx_base = amx_config(p);
  tune::Config keep(tune::Assignment{{"amx", 1}}), vector(tune::Assignment{{"amx", 0}});
  CHECK(lib::gemm_config_knobs(keep, amx_base, p).dot == lib::DotInstruction::Amx);
  const lib::GemmConfig from_vector = lib::gemm_config_knobs(vector, amx_base, p);
  CHECK(from_vector.dot != lib::DotInstruction::Amx);
  CHECK(from_vector.mr == lib::default_gemm_config(p.m, p.n, p.k, p.dtype).mr);  // the vector model's
  CHECK(keep.knobs().front().name == "amx");

  // The model: AMX for bfloat16 and bytes where the CPU has it (and C has a tile of rows and columns).
  const lib::GemmConfig model = lib::model_gemm_config(typed(256, 256, 256, bf16, bf16));
  CHECK((model.dot == lib::DotInstruction::Amx) == CpuCacheInfo::host().amx_bf16);
  const lib::GemmConfig bytes = lib::model_gemm_config(typed(256, 256, 256, u8, u8));
  CHECK((bytes.dot == lib::DotInstruction::Amx) == CpuCacheInfo::host().amx_int8);
  CHECK(lib::model_gemm_config(typed(8, 256, 256, bf16, bf16)).dot != lib::DotInstruction::Amx);
}
