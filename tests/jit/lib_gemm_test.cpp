// loom::lib::gemm compiled by the JIT against a naive triple loop (in double): odd and prime shapes,
// 1s, transposed operands, column-major, f64, batches, thread counts, given tile sizes, and errors.
#include <doctest/doctest.h>

#include <loom/backend/build.hpp>
#include <loom/lib/gemm.hpp>
#include <loom/lib/gemm_tuning.hpp>
#include <loom/runtime/thread_pool.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "../runtime/interp_test_util.hpp"
#include "lib_gemm_test_util.hpp"

using namespace loom;
using namespace loom::test;

TEST_CASE("lib::gemm: f32 on 1s, primes and shapes no tile divides") {
  for (auto [m, n, k] : std::vector<std::array<int64_t, 3>>{{1, 1, 1},
                                                            {7, 13, 29},
                                                            {67, 129, 31},
                                                            {1, 37, 300},
                                                            {300, 1, 17},
                                                            {64, 64, 64},
                                                            {8, 32, 1},
                                                            {129, 67, 613}})
    check_gemm<float>(problem(m, n, k));
}

TEST_CASE(
    "lib::gemm: few rows take K in blocks of 16 (AVX2: 8) with B read in place, each thread its columns") {
  for (auto [m, n, k] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
           {1, 256, 96}, {2, 512, 80}, {3, 200, 96}, {8, 64, 48}, {4, 96, 97}}) {
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    const lib::GemmConfig c = lib::gemm(problem(m, n, k)).config;
    const int64_t block = CpuCacheInfo::host().registers >= 32 ? 16 : 8;  // AVX2: blocks of 8
    CHECK(c.kc == (k == 97 ? 97 : block));                                // 97 is prime: K in one block
    check_gemm<float>(problem(m, n, k));
    check_gemm<double>(problem(m, n, k, f64));
  }
}

TEST_CASE("lib::gemm: few rows in one block pack several B micro-panels side by side") {
  // One thread: the register-tile columns are not shared, so a copy of B covers as many panels as
  // make 1 KB of a row of B (f32 with AVX-512: 8 of 32 columns) and divide the panels of a block.
  with_threads(1, [] {
    for (auto [m, n, k, t] : std::vector<std::tuple<int64_t, int64_t, int64_t, DType>>{
             {24, 384, 70, f32}, {40, 1000, 531, f64}, {17, 384, 1100, f32}}) {
      CAPTURE(m);
      CAPTURE(n);
      CAPTURE(k);
      const lib::Gemm g = lib::gemm(problem(m, n, k, t));
      const int64_t nr = g.config.nr, kc = g.config.kc;
      const int64_t panels = lib::detail::panels_per_b_copy(g.config.nc, nr, t.bytes(), 1);
      CAPTURE(panels);
      CHECK(panels > 1);
      CHECK(packed_elements(g, "packedB") == panels * kc * nr);  // kc x nr per panel
      if (t == f32)
        check_gemm<float>(problem(m, n, k, t));
      else
        check_gemm<double>(problem(m, n, k, t));
    }
  });
}

TEST_CASE("lib::gemm: a square size the tiles divide, and one that needs K padding") {
  check_gemm<float>(problem(256, 256, 256));
  check_gemm<float>(problem(96, 160, 521));  // 521 is prime: K padded with zeros in the panels
}

TEST_CASE("lib::gemm: transposed operands, row- and column-major") {
  for (lib::Layout layout : {lib::Layout::RowMajor, lib::Layout::ColMajor})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        lib::GemmProblem p = problem(67, 129, 31);
        p.transpose_a = ta;
        p.transpose_b = tb;
        p.layout = layout;
        check_gemm<float>(p);
        p.m = 16;
        p.n = 64;
        p.k = 40;
        check_gemm<float>(p);
      }
}

TEST_CASE("lib::gemm: float64") {
  check_gemm<double>(problem(7, 13, 29, f64));
  check_gemm<double>(problem(67, 129, 31, f64));
  check_gemm<double>(problem(64, 48, 100, f64));
  lib::GemmProblem p = problem(33, 17, 9, f64);
  p.transpose_a = true;
  p.layout = lib::Layout::ColMajor;
  check_gemm<double>(p);
}

TEST_CASE("lib::gemm: batched matmul") {
  for (int64_t batch : {1, 2, 3}) {
    lib::GemmProblem p = problem(17, 33, 9);
    p.batch = batch;
    check_gemm<float>(p);
    p.m = 64;
    p.n = 32;
    p.k = 70;
    p.transpose_b = true;
    check_gemm<float>(p);
  }
  lib::GemmProblem p = problem(5, 7, 3, f64);
  p.batch = 4;
  p.layout = lib::Layout::ColMajor;
  check_gemm<double>(p);
}

TEST_CASE("lib::gemm: one thread and all threads give the same products") {
  with_threads(1, [] {
    check_gemm<float>(problem(67, 129, 31));
    check_gemm<float>(problem(128, 96, 64));
  });
  with_threads(runtime::ThreadPool::global().pool_threads(), [] {
    check_gemm<float>(problem(67, 129, 31));
    check_gemm<float>(problem(128, 96, 64));
    check_gemm<float>(problem(256, 256, 200));  // with 2+ threads: one block of rows, shared panels
  });
}

TEST_CASE("lib::gemm: given tile sizes, including ones that divide nothing (gemm() fits mc and nc)") {
  lib::GemmConfig cfg = lib::default_gemm_config(50, 70, 90, f32);
  cfg.mr = 3;
  cfg.nr = 16;
  cfg.kc = 7;
  cfg.mc = 10;
  cfg.nc = 40;
  check_gemm<float>(problem(50, 70, 90), &cfg);
  cfg.pack_a = false;
  cfg.pack_b = false;
  cfg.parallel = false;
  check_gemm<float>(problem(48, 64, 91), &cfg);
}

TEST_CASE("lib::gemm: cache blocks that do not divide the padded rows and columns are fitted") {
  // mr 12 over 100 rows pads to 108; mc 48 and nc 64 do not divide 108 rows and 96 columns, and
  // left so they would put a guard on every row of the micro-kernel (ten times slower).
  lib::GemmConfig cfg = lib::default_gemm_config(100, 90, 70, f32);
  cfg.mr = 12;
  cfg.mc = 48;
  cfg.nr = 32;
  cfg.nc = 64;
  const lib::Gemm g = lib::gemm(problem(100, 90, 70), cfg);
  CHECK(108 % g.config.mc == 0);
  CHECK(g.config.mc % 12 == 0);
  CHECK(96 % g.config.nc == 0);
  CHECK(g.config.nc % 32 == 0);
  check_gemm<float>(problem(100, 90, 70), &cfg);
  // Only blocks of one micro-panel divide 47 of them: the columns are padded to whole blocks of the
  // size asked for instead, with K in one block (the tile stored from registers, the padding left
  // out) and in several (a pass of its own copies the valid corner).
  cfg = lib::default_gemm_config(40, 1504, 20, f32);
  cfg.nr = 32;
  cfg.nc = 768;
  const lib::Gemm covered = lib::gemm(problem(40, 1504, 20), cfg);
  CHECK(covered.config.nc == 768);
  CHECK(covered.config.pack_b);
  check_gemm<float>(problem(40, 1504, 20), &cfg);
  cfg.kc = 8;
  cfg.pack_a = true;
  check_gemm<float>(problem(40, 1504, 20), &cfg);
}

TEST_CASE("lib::gemm: C's stores stream where one store writes each element (stream_c)") {
  auto streamed = [](const lib::GemmProblem& p, int64_t kc) {
    lib::GemmConfig cfg = lib::default_gemm_config(p.m, p.n, p.k, p.dtype);
    cfg.kc = kc;
    cfg.stream_c = true;
    return cfg;
  };
  auto assembly = [](const lib::Gemm& g) {
    return build(g.schedule, g.args(), Target::cpu(), "lib_gemm").assembly();
  };
  for (int threads : {1, 2}) {
    with_threads(threads, [&] {
      // K in one block: C becomes a stage of its own, each register tile stored once, streamed where
      // its rows are aligned; on shapes the tiles divide and ones they do not (the tiles' vectors
      // masked where C's columns end: whole ones still stream).
      for (auto [m, n, k] : {std::array<int64_t, 3>{128, 96, 64}, std::array<int64_t, 3>{67, 129, 31}}) {
        const lib::GemmProblem p = problem(m, n, k);
        const lib::GemmConfig cfg = streamed(p, k);
        const lib::Gemm g = lib::gemm(p, cfg);
        CHECK(g.config.stream_c);
        check_gemm<float>(p, &cfg);
        CHECK(assembly(g).find("movnt") != std::string::npos);
        CHECK(assembly(g).find("sfence") != std::string::npos);
      }
      // K in several blocks: C is updated in place at each, so nothing streams ...
      lib::GemmConfig cfg = streamed(problem(128, 96, 64), 16);
      const lib::Gemm in_place = lib::gemm(problem(128, 96, 64), cfg);
      CHECK_FALSE(in_place.config.stream_c);
      CHECK(assembly(in_place).find("movnt") == std::string::npos);
      check_gemm<float>(problem(128, 96, 64), &cfg);
      // ... unless C is a pass of its own after them (padded rows): that pass streams.
      cfg = streamed(problem(67, 96, 64), 16);
      CHECK(lib::gemm(problem(67, 96, 64), cfg).config.stream_c);
      check_gemm<float>(problem(67, 96, 64), &cfg);
      check_gemm<double>(problem(67, 40, 21, f64), &cfg);
    });
  }
  // The model streams a C written once and as large as the L3 (at most 32 MiB counted), not a
  // small one, nor one whose K comes in blocks.
  CHECK(lib::model_gemm_config(problem(2048, 4096, 64)).stream_c);
  CHECK_FALSE(lib::model_gemm_config(problem(64, 64, 64)).stream_c);
  lib::GemmProblem long_k = problem(2048, 4096, 1 << 16);
  CHECK_FALSE(lib::model_gemm_config(long_k).stream_c);
}

TEST_CASE("lib::gemm: the default tiles follow the cache sizes and the vector width") {
  lib::CpuCacheInfo cpu;
  cpu.l1d_bytes = 48 * 1024;
  cpu.l2_bytes = 1024 * 1024;
  cpu.l3_bytes = 32 * 1024 * 1024;
  cpu.vector_bytes = 64;
  cpu.registers = 32;
  cpu.bf16_dot = cpu.int8_dot = true;  // the narrow types' rules below are those of packed narrow panels
  lib::GemmConfig c = lib::default_gemm_config(1024, 1024, 1024, f32, 1, cpu);
  CHECK(c.lanes == 16);
  CHECK(c.nr == 32);
  CHECK(c.mr == 8);
  CHECK(c.kc == 1024);                   // 128 KB of B micro-panel, an eighth of the 1 MB L2
  CHECK(1024 % c.mc == 0);               // blocks divide: no guard in the micro-kernel
  CHECK(c.mc * c.kc * 4 <= 512 * 1024);  // half of L2
  // A small L2 leaves the micro-panel in L1 (2/3 of it); an L2 reported absurdly large (a VM's
  // sysfs) is capped at 1024 rows of K.
  lib::CpuCacheInfo small = cpu;
  small.l2_bytes = 128 * 1024;
  CHECK(lib::default_gemm_config(1024, 1024, 1024, f32, 1, small).kc == 256);
  lib::CpuCacheInfo odd = cpu;
  odd.l2_bytes = int64_t{480} << 20;
  CHECK(lib::default_gemm_config(4096, 4096, 4096, f32, 1, odd).kc == 1024);
  // Up to twice that, K is one block when each thread has many rows (64 register tiles), for the
  // tile to start from zero in registers and be stored once.
  CHECK(lib::default_gemm_config(2048, 2048, 2048, f32, 2, cpu).kc == 2048);
  CHECK(lib::default_gemm_config(2048, 2048, 2048, f64, 1, cpu).kc == 2048);
  CHECK(lib::default_gemm_config(512, 2048, 2000, f32, 1, cpu).kc == 2000);
  CHECK(lib::default_gemm_config(512, 2048, 2048, f32, 2, cpu).kc == 1024);
  CHECK(lib::default_gemm_config(64, 2048, 2048, f32, 1, cpu).kc == 1024);
  CHECK(lib::default_gemm_config(4096, 4096, 4096, f32, 1, cpu).kc == 1024);
  // With huge pages for the packed blocks, K is one block up to 16 times that (many rows per thread
  // still), and blocks of about 8 times it beyond; few rows keep the L2-sized kc.
  lib::CpuCacheInfo huge = cpu;
  huge.huge_pages = true;
  CHECK(lib::default_gemm_config(4096, 4096, 4096, f32, 2, huge).kc == 4096);
  CHECK(lib::default_gemm_config(1024, 1024, 16384, f32, 2, huge).kc == 16384);
  CHECK(lib::default_gemm_config(1024, 1024, 20000, f32, 2, huge).kc == 5000);
  CHECK(lib::default_gemm_config(1024, 1024, 16385, f64, 1, huge).kc == 5462);  // 3 blocks, K padded
  CHECK(lib::default_gemm_config(512, 2048, 2048, f32, 2, huge).kc == 1024);
  CHECK(lib::default_gemm_config(2048, 4096, 4096, bf16, 1, huge).kc == 4096);
  // A read in place with K in one long block: A's block aims at a quarter of L3, at most 8 MiB, not at
  // half of L2 (which no such block fits); packed, or with the L2-sized kc, half of L2 still.
  CHECK(lib::default_gemm_config(4096, 4096, 4096, f32, 1, huge).mc == 512);  // 512 x 4096 x 4 B = 8 MiB
  CHECK(lib::default_gemm_config(4096, 4096, 4096, f64, 1, huge).mc == 256);
  CHECK(lib::default_gemm_config(4096, 4096, 4096, f32, 2, huge).mc == 256);  // 4 MiB for each thread
  lib::CpuCacheInfo huge_l3 = huge;
  huge_l3.l3_bytes = int64_t{480} << 20;  // a VM's report of the host's L3
  CHECK(lib::default_gemm_config(4096, 4096, 4096, f32, 1, huge_l3).mc == 512);
  lib::CpuCacheInfo small_l3 = huge;
  small_l3.l3_bytes = 8 << 20;
  CHECK(lib::default_gemm_config(4096, 4096, 4096, f32, 1, small_l3).mc == 128);
  lib::CpuCacheInfo huge_eight_ways = huge;
  huge_eight_ways.l1d_ways = 8;  // A packed
  CHECK(lib::default_gemm_config(4096, 4096, 4096, f32, 1, huge_eight_ways).mc == 128);
  CHECK(lib::default_gemm_config(4096, 4096, 4096, f32, 1, cpu).mc == 128);  // kc 1024 on 4 KiB pages
  // Two threads take whole blocks of rows: 1003 rows (126 register tiles) in 6 blocks, not 9.
  CHECK(lib::default_gemm_config(1003, 768, 1024, f32, 1, cpu).mc == 112);
  CHECK(lib::default_gemm_config(1003, 768, 1024, f32, 2, cpu).mc == 168);
  // 47 micro-panels (a prime) make 2 blocks of 24 (gemm() pads the columns to 1536), not 47 of one;
  // f64's 94 (2 x 47) make 3 of 32, not 47 of 2.
  CHECK(lib::default_gemm_config(1500, 1500, 1500, f32, 1, cpu).nc == 768);
  CHECK(lib::default_gemm_config(1500, 1500, 1500, f64, 1, cpu).nc == 512);
  // Narrow types take K in one block up to 4096, except when all rows are one block of A (B's
  // micro-panels are then packed a few at a time, from rows of B a page apart): 512 there.
  CHECK(lib::default_gemm_config(2048, 4096, 4096, bf16, 1, cpu).kc == 4096);
  const lib::GemmConfig few_rows = lib::default_gemm_config(64, 4096, 4096, bf16, 1, cpu);
  CHECK(few_rows.mc >= 64);
  CHECK(few_rows.kc == 512);
  CHECK(lib::default_gemm_config(64, 4096, 4096, u8, 2, cpu).kc == 512);
  CHECK(lib::default_gemm_config(64, 4096, 500, bf16, 1, cpu).kc == 500);  // K under 512: one block
  CHECK(lib::default_gemm_config(64, 4096, 1000, bf16, 1, cpu).kc == 500);
  // The 512 rows are whole groups that divide K (A stays in place), and not too short; else near
  // 1024 (4100: 164 is too short, 820 is not).
  CHECK(lib::default_gemm_config(64, 4096, 4100, u8, 1, cpu).kc == 820);
  CHECK(lib::default_gemm_config(64, 4096, 1100, u8, 1, cpu).kc == 1100);  // 220 would be too short
  // Two threads and all of A in L2, read in place: the rows stay one block (the threads share B's
  // panels); not when A is packed (300 rows are padded).
  CHECK(lib::default_gemm_config(256, 256, 256, f32, 2, cpu).mc == 256);
  CHECK(lib::default_gemm_config(256, 256, 256, f32, 1, cpu).mc == 256);
  CHECK(lib::default_gemm_config(300, 300, 300, f32, 2, cpu).mc < 304);
  // Larger than L2 but within A's share of L3 (a quarter, at most 8 MiB) as well, when the threads
  // get equal shares of B's panels: 800 columns are 25 panels, and the rows are split instead.
  CHECK(lib::default_gemm_config(1024, 1024, 1024, f32, 2, cpu).mc == 1024);  // A 4 MiB
  CHECK(lib::default_gemm_config(1024, 1024, 1024, f64, 2, cpu).mc == 1024);  // 8 MiB
  CHECK(lib::default_gemm_config(1024, 1024, 1024, f32, 1, cpu).mc < 1024);
  CHECK(lib::default_gemm_config(800, 800, 800, f32, 2, cpu).mc < 800);
  CHECK(lib::default_gemm_config(2048, 2048, 2048, f32, 2, cpu).mc < 2048);  // 16 MiB
  lib::CpuCacheInfo l3_8mib = cpu;
  l3_8mib.l3_bytes = 8 << 20;
  CHECK(lib::default_gemm_config(1024, 1024, 1024, f32, 2, l3_8mib).mc < 1024);
  // A is packed when its rows are a multiple of 4 KB apart and L1's ways cannot hold the register
  // tile's rows besides B's lines (8 ways, as Zen 4's), read in place with more ways (Zen 5's 12);
  // rows that are not 4 KB apart are read in place either way.
  lib::CpuCacheInfo eight_ways = cpu, twelve_ways = cpu;
  eight_ways.l1d_ways = 8;
  twelve_ways.l1d_ways = 12;
  CHECK(lib::default_gemm_config(2048, 2048, 2048, f32, 1, eight_ways).pack_a);
  CHECK_FALSE(lib::default_gemm_config(2048, 2048, 2048, f32, 1, twelve_ways).pack_a);
  CHECK(lib::default_gemm_config(1024, 1024, 1024, f64, 2, eight_ways).pack_a);
  CHECK_FALSE(lib::default_gemm_config(1024, 1024, 1024, f64, 2, twelve_ways).pack_a);
  CHECK_FALSE(lib::default_gemm_config(2000, 2000, 2000, f32, 1, eight_ways).pack_a);
  // Ways unknown: a 48 KiB L1 has 12 (x86 L1s hold one 4 KiB page per way); a 32 KiB one 8.
  CHECK(cpu.l1d_ways == 0);
  CHECK(cpu.l1d_associativity() == 12);
  CHECK_FALSE(lib::default_gemm_config(2048, 2048, 2048, f32, 1, cpu).pack_a);
  lib::CpuCacheInfo small_l1 = cpu;
  small_l1.l1d_bytes = 32 * 1024;
  CHECK(lib::default_gemm_config(2048, 2048, 2048, f32, 1, small_l1).pack_a);
  // AVX2's 4-row tile keeps the 8-way rule (measured there; fewer rows were not).
  lib::CpuCacheInfo avx2_eight = eight_ways;
  avx2_eight.vector_bytes = 32;
  avx2_eight.registers = 16;
  CHECK(lib::default_gemm_config(2048, 2048, 2048, f32, 1, avx2_eight).mr == 4);
  CHECK(lib::default_gemm_config(2048, 2048, 2048, f32, 1, avx2_eight).pack_a);
  lib::GemmConfig d = lib::default_gemm_config(1024, 1024, 1024, f64, 1, cpu);
  CHECK(d.lanes == 8);
  CHECK(d.nr == 16);
  // Fewer rows than mr: a wider tile, a power of two vectors within half the registers, the widest
  // whose columns divide N (a tile that pads N pads and packs B); one row of a narrow type as wide as
  // the registers allow (16 vectors), float32 8.
  auto nr_for = [&](int64_t m, int64_t n, DType t) {
    return lib::default_gemm_config(m, n, 4096, t, 1, cpu).nr;
  };
  CHECK(nr_for(1, 4096, f32) == 128);
  CHECK(nr_for(1, 4096, bf16) == 256);
  CHECK(nr_for(1, 4096, u8) == 256);
  CHECK(nr_for(1, 640, bf16) == 128);  // 256 does not divide 640
  CHECK(nr_for(1, 100, bf16) == 112);  // N covered by 7 vectors
  CHECK(nr_for(2, 4096, f32) == 128);
  CHECK(nr_for(3, 4096, f32) == 64);  // 4 vectors, not 5 (80 columns pad 4096 to 4160)
  CHECK(nr_for(3, 1000, f32) == 64);  // N padded whatever the tile: the widest
  CHECK(nr_for(5, 4096, f32) == 32);
  CHECK(nr_for(7, 4096, bf16) == 32);
  CHECK(nr_for(3, 48, f32) == 16);  // 48 columns: 1 vector divides them, 4 and 2 do not
  // Few rows walk K in blocks of 16 rows of B (one or two rows of bfloat16: 128), AVX2 CPUs in 8.
  CHECK(lib::default_gemm_config(1, 4096, 4096, f32, 1, cpu).kc == 16);
  CHECK(lib::default_gemm_config(1, 4096, 4096, bf16, 1, cpu).kc == 128);
  cpu.vector_bytes = 32;
  cpu.registers = 16;
  lib::GemmConfig avx2 = lib::default_gemm_config(1024, 1024, 1024, f32, 1, cpu);
  CHECK(avx2.nr == 16);
  CHECK(avx2.mr == 4);
  CHECK(lib::default_gemm_config(1, 4096, 4096, f32, 1, cpu).kc == 8);
  CHECK(lib::default_gemm_config(1, 4096, 4096, bf16, 1, cpu).kc == 8);
  CHECK(lib::default_gemm_config(4, 4096, 100, f32, 1, cpu).kc == 5);  // 100 = 20 x 5: no block of 8
  // AVX2 (a Zen 3's caches), B packed: an L1-sized micro-panel, A's block of 16 register tiles in a
  // quarter of L2, B's block in a sixteenth of L3 (at most 2 MiB); K is one block only where all of B
  // fits that.
  lib::CpuCacheInfo zen3 = cpu;
  zen3.l1d_bytes = 32 * 1024;
  zen3.l2_bytes = 512 * 1024;
  zen3.huge_pages = true;
  for (int threads : {1, 2}) {
    CAPTURE(threads);
    const lib::GemmConfig f = lib::default_gemm_config(2048, 2048, 2048, f32, threads, zen3);
    CHECK(f.kc == 512);  // 512 rows x 16 columns x 4 B: 32 KB
    CHECK(f.mc == 64);
    CHECK(f.nc == 1024);  // 512 x 1024 x 4 B: 2 MB
    const lib::GemmConfig d64 = lib::default_gemm_config(4096, 4096, 4096, f64, threads, zen3);
    CHECK(d64.kc == 256);  // 64 rows x 256 x 8 B: 128 KB
    CHECK(d64.mc == 64);
    CHECK(d64.nc == 1024);
  }
  CHECK(lib::default_gemm_config(1024, 1024, 1024, f32, 1, zen3).kc == 512);  // B is 4 MB
  CHECK(lib::default_gemm_config(4096, 64, 4096, f32, 1, zen3).kc == 4096);   // B is 1 MB
  CHECK(lib::default_gemm_config(4096, 64, 4096, f64, 1, zen3).kc == 4096);   // 2 MB
  CHECK(lib::default_gemm_config(4096, 96, 4096, f64, 1, zen3).kc == 256);    // 3 MB
  lib::CpuCacheInfo zen3_host_l3 = zen3;
  zen3_host_l3.l3_bytes = int64_t{480} << 20;  // a VM's report of the host's L3: still 2 MiB
  const lib::GemmConfig host_l3 = lib::default_gemm_config(2048, 2048, 2048, f32, 1, zen3_host_l3);
  CHECK(host_l3.kc == 512);
  CHECK(host_l3.nc == 1024);
  // Few rows (B read in place) keep the other rules: kc 1024 (an eighth of L2), B's block a quarter of
  // L3.
  const lib::GemmConfig five_rows = lib::default_gemm_config(5, 4096, 4096, f32, 1, zen3);
  CHECK_FALSE(five_rows.pack_b);
  CHECK(five_rows.kc == 1024);
  CHECK(five_rows.nc == 2048);
  CHECK(lib::CpuCacheInfo::parse_size("48K") == 48 * 1024);
  CHECK(lib::CpuCacheInfo::parse_size("32M") == 32 * 1024 * 1024);
}

TEST_CASE("lib::gemm: mistakes are loom::Error with what to do") {
  CHECK_THROWS_WITH_AS(lib::gemm(problem(0, 4, 4)), doctest::Contains("m = 0 must be at least 1"), Error);
  CHECK_THROWS_WITH_AS(lib::gemm(problem(4, 4, 4, i32)), doctest::Contains("use float32 or float64"), Error);
  lib::GemmProblem p = problem(4, 4, 4);
  p.batch = -1;
  CHECK_THROWS_WITH_AS(lib::gemm(p), doctest::Contains("batch = -1"), Error);
  lib::GemmConfig cfg;
  cfg.mr = 0;
  CHECK_THROWS_WITH_AS(lib::gemm(problem(4, 4, 4), cfg), doctest::Contains("tile size"), Error);
  // A C of the wrong shape is caught by the kernel's argument check.
  lib::Gemm g = lib::gemm(problem(4, 5, 6));
  Kernel f = build(g.schedule, g.args(), Target::cpu(), "lib_gemm");
  Buffer<float> a{4, 6}, b{6, 5}, c{5, 4};
  CHECK_THROWS_AS(f(a, b, c), Error);
}
