// The CPU facts a GEMM schedule is sized from (cache sizes, SIMD width) and the tile sizes derived
// from them: register tile mr x nr, cache blocks kc (L1), mc (L2), nc (L3), as in BLIS's analytical model.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>

#include "loom/ir/dtype.hpp"
#include "loom/lib/streamk_decomposition.hpp"
#include "loom/support/cpu_info.hpp"
#include "loom/support/error.hpp"

namespace loom::lib {

/// The caches and SIMD width the tile sizes are derived from (support/cpu_info.hpp).
using loom::CpuCacheInfo;

/// The instruction the micro-kernel multiplies and accumulates with.
enum class DotInstruction {
  /// Widen A and B to C's type (when narrower) and multiply-add there: any supported types.
  MultiplyAdd,
  /// AVX512-BF16 vdpbf16ps: pairs of bfloat16 products into float32 (x86::dot_bf16_intrin()).
  Vdpbf16ps,
  /// AVX512-VNNI vpdpbusd: quads of uint8 x int8 products into int32 (x86::dot_8bit_intrin()).
  Vpdpbusd,
  /// Intel AMX: tdpbf16ps (bfloat16 -> float32) or tdpb[su][su]d (8-bit of either signedness ->
  /// int32) on 16 x 16 tiles (x86::amx_intrin()); mr and nr count tiles' rows and columns.
  Amx,
};

/// "multiply_add", "vdpbf16ps", "vpdpbusd", "amx".
inline const char* dot_instruction_name(DotInstruction d) {
  switch (d) {
    case DotInstruction::MultiplyAdd: return "multiply_add";
    case DotInstruction::Vdpbf16ps: return "vdpbf16ps";
    case DotInstruction::Vpdpbusd: return "vpdpbusd";
    case DotInstruction::Amx: return "amx";
  }
  return "?";
}

/// The tile sizes of one GEMM schedule. mr x nr is the register tile (mr rows of C, nr columns:
/// nr / lanes vector accumulators per row); kc rows of a packed B micro-panel stay in L2 (L1 on
/// BLIS's model), an mc x kc block of packed A in L2, and a kc x nc block of packed B in L3.
struct GemmConfig {
  /// The register tile: mr rows by nr columns of C.
  /// @{
  int64_t mr = 8, nr = 32;
  /// @}
  /// The cache blocking: kc of K, mc rows of A, nc columns of B.
  /// @{
  int64_t kc = 256, mc = 128, nc = 1024;
  /// @}
  int lanes = 16;        ///< SIMD lanes of C's (the accumulator's) element type
  bool pack_a = true;    ///< copy mc x kc blocks of A into mr-row panels
  bool pack_b = true;    ///< copy kc x nc blocks of B into nr-column panels
  bool parallel = true;  ///< spread blocks of rows (or the batch) over the thread pool
  /// C is written with streaming stores (pragma "nontemporal_stores"), which do not read C's lines
  /// first or keep them in the caches: for a C larger than the caches. gemm() streams only a C that
  /// one store writes: with K in one block (C then a stage of its own, each register tile stored
  /// once), or C's own pass after the blocks of K (an epilogue, or padding); elsewhere (C updated at
  /// each block of K, or Stream-K) it clears the flag. The model sets it for a C written once and at
  /// least the size of the L3 (counted as 4 to 32 MiB).
  bool stream_c = false;
  // How the work is shared by the threads. DataParallel: whole blocks of C per thread.
  // StreamK: C in mc x nc tiles, and the MAC-loop iterations (tile x kc-block of K) split evenly
  // over `workers`; tiles split between workers are summed from a workspace after the parallel
  // loop, in a fixed order (the result does not depend on the threads' timing). Stream-K splits a
  // tile only between kc-blocks: default_gemm_config may take K in one block (for many rows), which
  // leaves nothing to split, so give Stream-K a kc of a half or less of K.
  /// How the threads share the work.
  Decomposition decomposition = Decomposition::DataParallel;
  int workers = 0;  ///< StreamK: the workers (0: the thread pool's threads when gemm() is called)
  /// The micro-kernel's instruction. The dot instructions take K in groups (2 bfloat16, 4 bytes) from
  /// panels packed group-innermost, so they pack A and B and pad K to whole groups.
  DotInstruction dot = DotInstruction::MultiplyAdd;

  /// The configuration as one line, for bench output and messages.
  std::string str() const {
    std::string s =
        cat("mr=", mr, " nr=", nr, " kc=", kc, " mc=", mc, " nc=", nc, " lanes=", lanes,
            " pack_a=", pack_a ? 1 : 0, " pack_b=", pack_b ? 1 : 0, " parallel=", parallel ? 1 : 0);
    if (decomposition != Decomposition::DataParallel)
      s += cat(" decomposition=", decomposition_name(decomposition), " workers=", workers);
    if (dot != DotInstruction::MultiplyAdd) s += cat(" dot=", dot_instruction_name(dot));
    if (stream_c) s += " stream_c=1";
    return s;
  }
};

namespace detail {

inline int64_t round_up(int64_t x, int64_t multiple) { return (x + multiple - 1) / multiple * multiple; }

/// The largest multiple of `step` that is at most `limit` (at least `step`).
inline int64_t floor_multiple(int64_t limit, int64_t step) { return std::max(step, limit / step * step); }

/// A block size near `target` that divides `extent` (a multiple of `step`, and `extent` a multiple of
/// `step`): a split that does not divide puts a guard inside the micro-kernel. The fewest blocks of at
/// most `target` that divide (with `extent / step` prime, blocks of one step).
inline int64_t dividing_block(int64_t extent, int64_t target, int64_t step) {
  const int64_t units = extent / step, target_units = std::max<int64_t>(1, target / step);
  if (units <= target_units) return extent;
  const int64_t first = (units + target_units - 1) / target_units;
  for (int64_t blocks = first; blocks < units; ++blocks)
    if (units % blocks == 0) return units / blocks * step;
  return step;
}

/// A block size near `target` for `extent` (both multiples of `step`): dividing_block's where that
/// is at least half the target (or the whole extent), else equal blocks of whole steps that cover
/// the extent, the last one padded (the caller pads the extent to a multiple of the block). 94
/// float64 micro-panels (2 x 47) with a target of 43: 3 blocks of 32, not 47 of 2, whose column
/// blocks of 32 had A reread for each (f64 1500^3 on one Zen 4 core: 28 -> 52 GFLOP/s).
inline int64_t covering_block(int64_t extent, int64_t target, int64_t step) {
  const int64_t d = dividing_block(extent, target, step);
  if (2 * d >= std::min(target, extent)) return d;
  const int64_t units = extent / step, target_units = std::max<int64_t>(1, target / step);
  const int64_t blocks = (units + target_units - 1) / target_units;
  return (units + blocks - 1) / blocks * step;
}

/// mc: the rows of A's mc x kc block (a multiple of mr dividing mp, the padded rows), about half of
/// L2, at least 16 register tiles of rows (narrow types 32; so with K in one block beyond the
/// L2-sized kc, A's block is all of L2 or more): the first tile to use a B micro-panel
/// streams it from L3, the others from L2 (float64 1024^3 on one Zen 4 core: mc 64 -> 128 took 38 ->
/// 51 GFLOP/s). Each of `threads` threads gets a block of rows of its own when its share has 16
/// register tiles or more; with fewer, the rows stay one block and the threads share its columns
/// instead (gemm() parallelizes the register-tile columns when there are fewer blocks of rows than
/// threads): 64 x 4096 x 4096 float32 on two Zen 4 cores, 112 -> 125 GFLOP/s. `a_block_bytes`, where
/// given, replaces half of L2 as the size A's block aims at.
inline int64_t row_block(int64_t mp, int64_t mr, int64_t kc, int64_t elem, bool narrow, int64_t threads,
                         const CpuCacheInfo& cpu, int64_t a_block_bytes = 0) {
  if (a_block_bytes <= 0) a_block_bytes = cpu.l2_bytes / 2;
  int64_t target = std::max<int64_t>((narrow ? 32 : 16) * mr, a_block_bytes / (kc * elem));
  const int64_t share = round_up((mp + threads - 1) / threads, mr);
  if (share >= 16 * mr) target = std::min(target, share);
  const int64_t mc = dividing_block(mp, target, mr);
  // Threads take whole blocks: with a count of blocks that is not a multiple of the threads, some
  // finish early and wait. The fewest blocks whose count is a multiple, where one is 0.5 to 1.5
  // times the target: 1003 rows (126 register tiles) on two Zen 4 cores, 9 blocks of 112 rows -> 6
  // of 168, f32 1003 x 768 x 1024 8.27 -> 7.59 ms (blocks of 72 rows, 14 of them: 8.50).
  const int64_t units = mp / mr, blocks = mp / mc;
  if (threads > 1 && share >= 16 * mr && blocks % threads != 0)
    for (int64_t b = threads; b <= units; b += threads) {
      const int64_t rows = units / b * mr;
      if (units % b == 0 && 2 * rows <= 3 * target && 2 * rows >= target) return rows;
    }
  return mc;
}

/// How many of B's nr-column micro-panels (of a block of nc columns) one copy packs side by side
/// when all rows are one block: a row of the copy (one group of K deep: `group` rows of B) spans 1 KB
/// (f32, nr 32: 8 panels, 1 KB of each row of B; bytes, nr 32, quads: 8 panels, 256 B of each of 4
/// rows), fewer where that many do not divide the block's panels.
inline int64_t panels_per_b_copy(int64_t nc, int64_t nr, int64_t b_bytes, int64_t group) {
  return dividing_block(nc / nr, std::max<int64_t>(1, 1024 / (nr * b_bytes * group)), 1);
}

}  // namespace detail

namespace detail {
/// default_gemm_config, told whether gemm() multiplies the (narrow) inputs with a dot instruction.
inline GemmConfig gemm_config_model(int64_t m, int64_t n, int64_t k, DType dtype, int threads_hint,
                                    const CpuCacheInfo& cpu, bool dot) {
  const bool narrow = dtype == bf16 || dtype == i8 || dtype == u8;
  if (!(dtype == f32 || dtype == f64 || narrow))
    throw Error(cat("lib::gemm: element type ", dtype.str(),
                    " is not supported; use float32, float64, bfloat16, int8 or uint8"));
  GemmConfig c;
  // The accumulator's lanes set the register tile; a narrow type's packed panels hold the input type
  // where a dot instruction multiplies them.
  // Without a dot instruction, gemm() widens the packed panels of a narrow type to the accumulator's
  // type: with B packed (more than two register tiles of rows, below) such a product is float32's
  // or int32's, and takes their blocks, with A packed as well (widened once, not in every tile).
  const bool widened = narrow && !dot && m > 2 * (cpu.registers >= 32 ? 8 : 4);
  const bool narrow_panels = narrow && !widened;
  const int64_t acc_bytes = narrow ? 4 : dtype.bytes(), elem = widened ? acc_bytes : dtype.bytes();
  c.lanes = static_cast<int>(cpu.vector_bytes / acc_bytes);

  // Register tile: nr = two vectors wide, mr rows; mr * (nr / lanes) accumulators plus the B
  // vectors and one broadcast A value must fit the register file (16 of 32 with AVX-512 leaves
  // room for the loads of the next k to be in flight).
  c.nr = 2 * c.lanes;
  c.mr = cpu.registers >= 32 ? 8 : 4;
  // A wider tile with fewer rows when C has few rows (a row of C is an accumulator row): up to 8
  // vectors, and for one row of a narrow type (B read in place, widened) as many as the registers
  // allow (16 with AVX-512: 512 B of a row of bfloat16 per k, as float32's 8 vectors read; one Zen 5
  // core, 1 x 4096 x 4096, 8-bit 0.30 -> 0.27 ms; float32 1.43 -> 1.65, so it keeps 8). A power of
  // two vectors (or N in whole vectors, where that is narrower), the widest whose columns divide N:
  // a tile that pads N makes the product pad and pack B, 2-5x slower here (one Zen 5 core, x 4096 x
  // 4096: 3 rows of 80 -> 64 columns in place, bfloat16 3.2 -> 2.4 ms, 8-bit 1.85 -> 0.79, float32
  // 3.5 -> 2.4; 5 rows of 48 -> 32 columns, bfloat16 6.6 -> 1.3 ms, 8-bit 2.7 -> 0.59).
  if (m < c.mr) {
    c.mr = std::max<int64_t>(1, m);
    const int64_t most =
        std::min<int64_t>(narrow && m == 1 ? cpu.registers / 2 : 8, cpu.registers / 2 / c.mr);
    const auto widest =
        static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(std::max<int64_t>(1, most))));
    int64_t vectors = widest;
    while (vectors > 1 && n % (vectors * c.lanes) != 0) vectors /= 2;
    if (n % (vectors * c.lanes) != 0) vectors = widest;  // N is padded whatever the tile
    c.nr = std::min<int64_t>(vectors * c.lanes, detail::round_up(std::max<int64_t>(n, 1), c.lanes));
  }

  // kc: the rows of a kc x nr micro-panel of B. K is padded to a multiple of kc (packing fills
  // zeros) when no block size near the target divides it.
  // Narrow types take K in one block up to 4096 (the B micro-panel then lives in L2): C's tile is
  // then zeroed in registers and crosses memory once. On one Zen 4 core, kc = K against the L1-sized
  // kc: bfloat16 2048^3 219 against 192 GFLOP/s, 4096^3 213 against 186; 8-bit 4096^3 434 against
  // 335 GOP/s (the dot instructions' peaks: 236 and 473).
  // Wide types: the micro-panel streams from L2 (an eighth of it, at least 2/3 of L1, at most
  // 1024 rows). The L1-sized kc of BLIS's model loaded and stored C's tile every 128 rows of K,
  // and those misses cost more than reading B from L2: on one Zen 4 core (1 MB L2), f32 1024^3
  // 83 -> 105 GFLOP/s and 4096^3 72 -> 104 with kc 128 -> 1024 (kc 2048 no better).
  // AVX2 (16 registers) instead takes an L1-sized micro-panel, with A's block of 16 register tiles
  // in a quarter of L2 (below), where B is packed (wide types; few rows keep the rules above). Its
  // 4-row tile loads a 32-byte vector of B for every 4 FMAs, two FMAs a cycle: 16 bytes of B a cycle,
  // twice AVX-512's 8-row tile on Zen 4 (64 bytes for every 8 FMAs, one a cycle), so streaming B from
  // L2 starves it. Interleaved rounds, one Zen 3 core (32 KB L1, 512 KB L2), the Zen 4 rules (K in
  // one block, A's block 512 KB / 1 MB) -> these (kc 512 f32, 256 f64, 64 rows): f32 2048^3 72-76
  // -> 78-82 GFLOP/s, 4096^3 69.5 -> 72.2; f64 1024^3 28.2 -> 30.3, 2048^3 35.2 -> 36.8, 4096^3
  // 29.4 -> 33.7 (Debian OpenBLAS 0.3.21, Zen kernel: 83-86, 84, 35, 40, 39). Blocks of 8 tiles
  // with a longer kc (f64 512, f32 1024) were faster on two cores in later rounds (f64 2048^3 53.8
  // -> 69.0 GFLOP/s, f32 99.5 -> 122.8) but are not yet the rule.
  const bool packs_b = m > 2 * c.mr || (dot && m >= 3);                      // B packed (c.pack_b, below)
  const bool avx2_packed = cpu.registers < 32 && packs_b && !narrow_panels;  // the AVX2 blocks below
  const int64_t row_bytes = c.nr * elem;  // one row of K of B's micro-panel
  const int64_t wide_rows =
      avx2_packed ? std::min(cpu.l1d_bytes / row_bytes, cpu.l2_bytes / 4 / (16 * c.mr * elem))  // 16 tiles
                  : std::max(cpu.l1d_bytes * 2 / 3 / row_bytes, cpu.l2_bytes / 8 / row_bytes);
  const int64_t kc_target =
      narrow_panels ? 4096 : detail::floor_multiple(std::clamp<int64_t>(wide_rows, 16, 1024), 16);
  // With many rows per thread, K is one block up to twice that all the same: C's tile then starts
  // from zero in registers and is stored once (no pass that zeroes C, no loads and stores of it
  // between blocks), and gemm() stores it through an epilogue or past padding straight from
  // registers. Interleaved runs, Zen 4, one / two cores, kc 1024 -> K: f32 2048^3 105.2 -> 110.1 /
  // 211.4 -> 215.8 GFLOP/s, 1024 x 1024 x 2048 103.0 -> 106.7 / 203.6 -> 216.3, 2048 x 512 x 2048
  // 101.1 -> 106.3 / 198.6 -> 214.3; f64 2048^3 50.3 -> 52.0 / 94.5 -> 100.4. Not with few rows per
  // thread, where the larger block of B is reused by fewer of them (f32 64 x 2048 x 2048 6-8%
  // slower, 256 rows 1-3%, 512 rows on two cores 6%). Beyond twice, K in one block was slower with 4
  // KiB pages (f32 4096^3 with kc 4096 9% slower than with 1024): its packed block of B is tens of
  // MB, more than the TLB covers. On 2 MiB pages (WorkspacePool maps the packed blocks on them where
  // the system has transparent huge pages) it wins up to 16 times the L2-sized kc, and blocks of 8
  // times it beyond: interleaved runs, two cores, kc 1024 -> K: f32 4096^3 218.5 -> 221.3 GFLOP/s
  // (one core 106.0 -> 111.0), 3072^3 213.9 -> 217.6, 1024 x 1024 x 8192 182.7 -> 200.8,
  // 1024 x 1024 x 16384 181.2 -> 201.9 (kc 8192: 197.9); f64 4096^3 102.7 -> 105.0.
  // A Stream-K decomposition needs K in several blocks to split a tile: give it a kc of its own
  // (bench/gemm_streamk_cpu.cpp).
  const int64_t mp = detail::round_up(m, c.mr), np = detail::round_up(n, c.nr);
  const int64_t threads = std::max(1, threads_hint);
  // AVX2: B's packed block gets a sixteenth of L3 and at most 2 MiB, not a quarter (nc, below), and
  // K is one block only where all of B fits that. One Zen 3 core (its 32 MB L3 shared with 7 more
  // cores, other VMs' here), 4096^3, interleaved: f32 kc 512 mc 32, nc 1024 / 2048 / 4096 (blocks
  // of 2 / 4 / 8 MB) 79.3 / 80.5 / 51.5 GFLOP/s; f64 kc 256 mc 64, nc 1024 / 2048 (2 / 4 MB) 33.7
  // / 29.7 in two runs (OpenBLAS 39.3 / 38.4). With few columns K in one block still wins: f64
  // 4096 x 64 x 4096 30.1 GFLOP/s against 19.5 with kc 256. Capped: a VM may report a host's L3.
  const int64_t b_block_bytes =
      avx2_packed ? std::min<int64_t>(cpu.l3_bytes / 16, int64_t{2} << 20) : cpu.l3_bytes / 4;
  const bool long_blocks =
      !narrow_panels && mp / threads >= 64 * c.mr && (!avx2_packed || k * np * elem <= b_block_bytes);
  const int64_t block_target = long_blocks && cpu.huge_pages ? 8 * kc_target : kc_target;
  c.kc = long_blocks && k <= 2 * block_target ? k : detail::dividing_block(k, block_target, 1);
  if (c.kc < block_target / 2) {  // no good divisor: pad K to equal blocks
    const int64_t blocks = (k + block_target - 1) / block_target;
    c.kc = (k + blocks - 1) / blocks;
  }
  c.mc = detail::row_block(mp, c.mr, c.kc, elem, narrow_panels, threads, cpu,
                           avx2_packed ? cpu.l2_bytes / 4 : 0);
  // nc: a kc x nc block of packed B in (a share of) L3.
  // Where only small blocks divide the columns, gemm() pads them to whole blocks (covering_block).
  // A K block longer than twice the L2-sized kc (huge pages) sizes nc as that kc would: a block of B
  // sized to L3 by the long kc is a few panels wide, and A is packed again for each (f32 4096^3 on two
  // Zen 4 cores, kc 4096: nc 512 211.5 GFLOP/s, 1024 215.7, 2048 219.0).
  auto nc_for = [&](int64_t kc) {
    if (kc > 2 * kc_target) kc = kc_target;
    return detail::covering_block(np, std::max<int64_t>(c.nr, b_block_bytes / (kc * elem)), c.nr);
  };

  // Packing copies a block once per reuse: B's panels pay off when many rows of C reuse them
  // (and avoid the cache-set conflicts of a large row stride); A is read in place unless its rows
  // or K need padding, or its rows are a multiple of 4 KB apart while many columns of C reuse
  // them and L1 has no more ways than the register tile has rows: the mr rows then fill one set of
  // L1 (each way 4 KB) and evict each other and B's lines. (AVX2's 4-row tile keeps the 8-way
  // threshold: the rule was measured with 8-row tiles only.) One Zen 4 core (8 ways), packed
  // against in place: float64 1024^3 and 2048^3 45 -> 48 and 42 -> 48 GFLOP/s, float32 2048^3 96 -> 101,
  // float32 1024^3 the same. On Zen 5 (12 ways) in place is the faster, 2026-11-29, interleaved,
  // one / two cores: float32 1024^3 249 / 485 -> 260 / 508 GFLOP/s, 2048^3 246 / 465 -> 261 / 497,
  // 4096^3 236 / 458 -> 246 / 472; float64 2048^3 110 / 204 -> 119 / 221.
  // A narrow type that this CPU multiplies with a dot instruction (vdpbf16ps, vpdpbusd: gemm()
  // uses them on packed panels only) packs B from 3 rows of C: the dot instruction's product then
  // costs less than widening B in place. One Zen 5 core, 4096 x 4096, in place -> packed: bfloat16
  // 4 rows 2.6 -> 1.7 ms, 8 rows 4.1 -> 2.1, 16 rows 4.0 -> 2.5; 8-bit 4 rows 1.9 -> 0.8, 8 rows
  // 3.1 -> 1.3, 16 rows 3.2 -> 1.5; 3 rows (64 columns, kc 512 packed) bfloat16 1.85 -> 1.29,
  // 8-bit 0.66 -> 0.53 (2 rows: bfloat16 1.37 -> 1.29, 8-bit 0.37 -> 0.47, in place stays).
  c.pack_b = packs_b;
  const bool aliased_rows =
      (k * elem) % 4096 == 0 && n >= 8 * c.nr && cpu.l1d_associativity() <= std::max<int64_t>(c.mr, 8);
  c.pack_a = widened || m % c.mr != 0 || k % c.kc != 0 || aliased_rows;
  // A read in place with K in one block longer than the L2-sized kc: A's block does not stay in L2
  // whatever its height, and each of B's micro-panels (kc x nr, much of L2) comes into L2 once per
  // block of rows. Taller blocks bring B in less often, while A's block still stays in L3 as B
  // streams past: a quarter of L3, at most 8 MiB (a VM may report the host's whole L3, and 16 MiB
  // was slower here), shared by the threads' blocks. Interleaved runs, one Zen 5 core (12-way L1: A
  // in place; 1 MB L2, 32 MB L3), A's block 2 MB (the L2 rule) -> 4 -> 8 -> 16 MB: f32 4096^3 239.6
  // -> 246.9 -> 248.0 -> 230.4 GFLOP/s; f64 4096^3 (8 MB is 256 rows) 110.6 -> 114.1 -> 106.6 (32
  // MB); f32 2048^3 within the noise (244-251 for 1 to 8 MB). Two cores, best of 5 rounds, f32
  // 4096^3, each thread's block 2 -> 4 -> 8 MB: 463.3 -> 483.1 -> 465.5 (Debian OpenBLAS 476.3).
  const int64_t a_in_l3 = std::max(cpu.l2_bytes / 2, std::min<int64_t>(cpu.l3_bytes / 4, 8 << 20));
  if (!c.pack_a && c.kc > kc_target)
    c.mc = detail::row_block(mp, c.mr, c.kc, elem, narrow_panels, threads, cpu,
                             std::max(cpu.l2_bytes / 2, a_in_l3 / threads));
  // The dot instructions take K in groups (pairs of bfloat16, quads of bytes); gemm() packs A when
  // K is not whole groups.
  const int64_t group = dtype == bf16 ? 2 : 4;
  const bool whole_groups = !narrow_panels || k % group == 0;
  // All of A fits in L2, is read in place, and every thread has panels of B in each block of
  // columns: the rows stay one block and the threads share the panels (each packs its own, with no
  // pass over B before the product), reading A from their own L2. Two Zen 4 cores, best of 7
  // interleaved runs: f32 256^3 0.193 -> 0.169 ms, 512^3 1.28 -> 1.18 ms, 256 x 1024 x 256 0.75 ->
  // 0.64 ms; f64 256^3 0.38 -> 0.31 ms; 8-bit 256^3 0.072 -> 0.055 ms. Not with A packed (one thread
  // packs it while the other waits: f32 300^3 10% slower). A larger than L2 (f64 512^3 was 7% slower
  // on Zen 4, where such rows, 4 KB apart, are now packed) but within the block size A takes in L3
  // (above) stays one block too, for wide types on two threads (as measured), when they get equal
  // shares of the panels: two Zen 5 cores, best of 12-15 interleaved rounds, f32 1024^3 462-477 ->
  // 475-489 GFLOP/s, 1000^3 445 -> 464, 1024 x 1024 x 2048 478 -> 489; f64 1024^3 205-210 -> 231-233;
  // 800^3, 25 panels, 491 -> 470.
  const int64_t panels = nc_for(c.kc) / c.nr, a_bytes = mp * k * elem;
  if (threads > 1 && c.pack_b && !c.pack_a && whole_groups && panels >= 4 * threads &&
      (a_bytes <= cpu.l2_bytes ||
       (!narrow_panels && threads == 2 && a_bytes <= a_in_l3 && panels % threads == 0)))
    c.mc = mp;
  // All rows in one block: gemm() packs each B micro-panel right before its tiles use it, reading
  // kc rows of B, each in a page of its own, and the next micro-panel reads the lines beside those.
  // A narrow type's kc then stays at 512 (measured; likely the TLB and the caches keep those pages
  // from one micro-panel to the next, not 4096 of them). One Zen 4 core, kc 4096 -> 1024, bfloat16
  // 64 x 4096 x 4096: 18.1 -> 14.0 ms, 8-bit 9.8 -> 7.3 ms; two cores 9.6 -> 7.4 and 5.0 -> 3.6 ms.
  // One Zen 5 core, x 4096 x 4096, kc 1024 -> 512: 8-bit 4 rows 0.55 -> 0.55 ms, 8 rows 0.73 -> 0.60,
  // 16 rows 1.04 -> 0.84, 128 rows 5.04 -> 4.76; bfloat16 4 rows 1.76 -> 1.13, 8 rows 1.65 -> 1.35,
  // 16 rows 2.08 -> 1.74, 64 rows 5.13 -> 5.00 (two cores, 8 rows, 1.13 -> 0.87). With several
  // blocks of rows B is packed a kc x nc block at a time, and K in one block is faster. Only a kc
  // of whole groups that divides K (so A stays in place), and not below 256 (or else one near 1024).
  if (narrow_panels && c.mc >= mp && c.kc > 512 && whole_groups)
    for (int64_t target : {512, 1024}) {  // 1024 where no block near 512 divides K
      const int64_t kc = detail::dividing_block(k, target, group);
      if (k % kc == 0 && kc >= 256 && kc < c.kc) {
        c.kc = kc;
        break;
      }
    }
  c.nc = nc_for(c.kc);
  // Few rows (B read in place, once): B's rows are N apart, so a register tile's walk down all of K
  // touches a new page every row or so. In blocks of 16 rows of K, the tiles sweep 16 rows of B
  // side by side instead (16 sequential streams), and C, a few rows, stays in L1 between blocks:
  // on one Zen 4 core, 1 x 4096 x 4096 float32 6 -> 12 GFLOP/s, 4 x 4096 x 4096 23 -> 35. The
  // threads then share the columns in blocks of their own (gemm() parallelizes those), so that each
  // runs its K blocks with no barrier between them.
  // One or two rows of bfloat16 walk 128 rows of B per block instead: interleaved rounds, one Zen 5
  // core, kc 16 -> 128 (with one row's wider tile, above): 1 x 4096 x 4096 1.24 -> 0.84 ms (two
  // cores 0.59 -> 0.40), 1 x 4096 x 16384 5.7 -> 3.9, 1 x 16384 x 4096 5.4 -> 4.0; 2 x 4096 x 4096
  // 1.52 -> 1.33. Longer blocks lost for bytes (one row 0.27 -> 0.35 ms), float32 (1.4 -> 1.9 ms)
  // and 3 rows of bfloat16 (1.85 -> 2.41).
  // AVX2 CPUs take blocks of 8: one Zen 3 core (16 vector registers), interleaved rounds, kc 16 -> 8
  // -> 4: float32 1 x 4096 x 4096 8.3 -> 5.0 -> 4.6 ms (two cores 5.1 -> 4.8 -> 3.7), 4 x 4096 x 4096
  // 8.1 -> 4.8 -> 5.5, float64 1 x 4096 x 4096 17.3 -> 10.0 -> 9.2; bfloat16 one row (kc 128) 11.6
  // -> 2.9 -> 3.3. Its prefetchers follow fewer streams. (Intel AVX2 cores: not measured.)
  if (!c.pack_b && m % c.mr == 0) {
    c.pack_a = false;
    const int64_t target = cpu.registers >= 32 ? (dtype == bf16 && m <= 2 ? 128 : 16) : 8;
    const int64_t block = detail::dividing_block(k, target, 1);
    c.kc = block >= std::min<int64_t>(8, target / 2) ? block : k;
    if (c.kc < k)
      c.nc = detail::dividing_block(np, detail::round_up((np + threads - 1) / threads, c.nr), c.nr);
  }
  return c;
}
}  // namespace detail

/// Tile sizes for C[m, n] (+)= sum_k A[m, k] * B[k, n] of element type `dtype` on `cpu`.
/// threads_hint: the threads that will share the work (blocks of rows are sized so each gets some).
/// gemm() tells the model whether the input types have a dot instruction on the CPU it runs on;
/// here every bfloat16 and 8-bit product is taken to have one where the CPU does.
inline GemmConfig default_gemm_config(int64_t m, int64_t n, int64_t k, DType dtype, int threads_hint = 1,
                                      const CpuCacheInfo& cpu = CpuCacheInfo::host()) {
  const bool dot = (dtype == bf16 && cpu.bf16_dot) || ((dtype == i8 || dtype == u8) && cpu.int8_dot);
  return detail::gemm_config_model(m, n, k, dtype, threads_hint, cpu, dot);
}

}  // namespace loom::lib
