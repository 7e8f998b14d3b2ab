// 16-bit float storage types, half (IEEE binary16) and bfloat16, with exact conversions to
// and from float (round to nearest even). Arithmetic on them happens in float.
#pragma once

#include <cstdint>
#include <cstring>

namespace loom {

/// The bits of a float, and the float of given bits (memcpy, no conversion).
/// @{
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
/// @}

/// float -> binary16 bits, round to nearest even, with overflow to inf and subnormals.
inline uint16_t float_to_half_bits(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or nan
    return static_cast<uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0u));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to inf
  if (abs < 0x38800000u) {                                               // subnormal half or zero
    // Scale so that the subnormal half's LSB lands on 2^-24 and let float rounding do the work.
    float scaled = bits_float(abs) * 16777216.0f;  // * 2^24
    uint32_t m = static_cast<uint32_t>(scaled);
    float rem = scaled - static_cast<float>(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t mantissa = abs & 0x7fffffu;
  uint32_t exponent = (abs >> 23) - 127 + 15;
  uint32_t h = (exponent << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: fine
  return static_cast<uint16_t>(sign | h);
}

/// binary16 bits -> float, exactly (subnormals, infinities and NaN included).
inline float half_bits_to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    float value = static_cast<float>(mantissa) / 16777216.0f;  // mantissa * 2^-24
    return sign ? -value : value;
  }
  if (exponent == 31) return bits_float(sign | 0x7f800000u | (mantissa << 13));
  return bits_float(sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
}

/// float -> bfloat16 bits, round to nearest even; NaN stays a (quiet) NaN.
inline uint16_t float_to_bfloat16_bits(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet nan
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}
/// bfloat16 bits -> float, exactly.
inline float bfloat16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

/// IEEE binary16 storage.
struct half {
  /// The binary16 bit pattern.
  uint16_t bits = 0;
  half() = default;
  /// Conversions: from float rounds to nearest even; to float is exact; from_bits() takes raw binary16 bits.
  /// @{
  half(float f) : bits(float_to_half_bits(f)) {}
  operator float() const { return half_bits_to_float(bits); }
  static half from_bits(uint16_t b) {
    half h;
    h.bits = b;
    return h;
  }
  /// @}
};

/// bfloat16 storage: the upper half of a float32.
struct bfloat16 {
  /// The bfloat16 bit pattern: the upper 16 bits of a float32.
  uint16_t bits = 0;
  bfloat16() = default;
  /// Conversions: from float rounds to nearest even; to float is exact; from_bits() takes raw bfloat16 bits.
  /// @{
  bfloat16(float f) : bits(float_to_bfloat16_bits(f)) {}
  operator float() const { return bfloat16_bits_to_float(bits); }
  static bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
  /// @}
};

}  // namespace loom
