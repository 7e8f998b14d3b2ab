// What the AMX tile instructions compute, in plain C++ on tiles in memory: tileloadd, tilezero,
// tilestored and the dot products tdpbf16ps and tdpb[su][su]d as the Intel SDM's pseudo-code
// writes them. The interpreter runs AMX tile products with these (interp/amx_tile_product.hpp),
// and so does code built with Target::set_amx_emulation(), which calls them in place of the
// instructions: the same loops, addresses and strides as the AMX code, on any x86-64 CPU.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "loom/ir/amx_tile_product.hpp"
#include "loom/ir/half.hpp"

namespace loom::runtime {

/// One tile register's contents: up to 16 rows of 64 bytes (16 32-bit lanes).
struct AmxTile {
  uint32_t row[16][16];
};

namespace amx_detail {

/// AMX-BF16 arithmetic treats subnormal inputs as zero and flushes subnormal results to zero.
inline float amx_flush(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

/// The 8-bit lane `i` of a 4-byte group, sign-extended or not.
inline int32_t amx_byte(const uint32_t& group, int i, bool is_signed) {
  const auto u = static_cast<uint8_t>(group >> (8 * i));
  return is_signed ? static_cast<int32_t>(static_cast<int8_t>(u)) : static_cast<int32_t>(u);
}

}  // namespace amx_detail

/// tileloadd: `rows` rows of 64 bytes from `base`, `stride_bytes` apart.
inline void amx_load(AmxTile& tile, int rows, const std::byte* base, int64_t stride_bytes) {
  for (int r = 0; r < rows; ++r) std::memcpy(tile.row[r], base + r * stride_bytes, 64);
}

/// tilestored: the inverse of amx_load.
inline void amx_store(const AmxTile& tile, int rows, std::byte* base, int64_t stride_bytes) {
  for (int r = 0; r < rows; ++r) std::memcpy(base + r * stride_bytes, tile.row[r], 64);
}

/// out = acc + a x b for `rows` rows, by `instruction`; out may be acc. a holds `rows` rows of 16
/// groups (2 bfloat16 or 4 bytes), b 16 rows (one per group) of 16 columns' groups. bfloat16 follows
/// the SDM's pseudo-code for TDPBF16PS: for each element, the even and the odd products of the 16
/// groups are summed in two float32 chains of fused multiply-adds from zero, the two sums added,
/// and that added to the accumulator; every operation rounds to nearest even, and subnormal inputs
/// and results are zero. The 8-bit products are exact and the int32 sums wrap.
inline void amx_dot(AmxInstruction instruction, AmxTile& out, const AmxTile& acc, const AmxTile& a,
                    const AmxTile& b, int rows) {
  using amx_detail::amx_flush;
  const bool a_signed = AmxTileProduct::a_type(instruction) == i8,
             b_signed = AmxTileProduct::b_type(instruction) == i8;
  for (int r = 0; r < rows; ++r) {
    uint32_t sum[16];
    std::memcpy(sum, acc.row[r], 64);
    for (int n = 0; n < 16; ++n) {
      if (instruction == AmxInstruction::Tdpbf16ps) {
        float chain[2] = {0.0f, 0.0f};  // the even and the odd elements' products
        for (int g = 0; g < 16; ++g)
          for (int t = 0; t < 2; ++t) {
            const float x = bfloat16_bits_to_float(static_cast<uint16_t>(a.row[r][g] >> (16 * t))),
                        y = bfloat16_bits_to_float(static_cast<uint16_t>(b.row[g][n] >> (16 * t)));
            chain[t] = amx_flush(std::fma(amx_flush(x), amx_flush(y), chain[t]));
          }
        float c;
        std::memcpy(&c, &sum[n], 4);
        c = amx_flush(amx_flush(c) + amx_flush(chain[0] + chain[1]));
        std::memcpy(&sum[n], &c, 4);
      } else {
        for (int g = 0; g < 16; ++g)
          for (int t = 0; t < 4; ++t)
            sum[n] += static_cast<uint32_t>(amx_detail::amx_byte(a.row[r][g], t, a_signed) *
                                            amx_detail::amx_byte(b.row[g][n], t, b_signed));
      }
    }
    std::memcpy(out.row[r], sum, 64);
  }
}

}  // namespace loom::runtime
