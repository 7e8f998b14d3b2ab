// DType: the scalar or vector element type of an IR value (code, bits, lanes), as in TVM.
// bool is uint1; f16/bf16 are storage types whose arithmetic rounds through f32.
#pragma once

#include <cstdint>
#include <string>

#include "loom/support/error.hpp"

namespace loom {

/// The kind of a DType's elements: signed or unsigned integer (bool is a 1-bit UInt), IEEE float, bfloat16,
/// or an opaque pointer.
enum class TypeCode : uint8_t { Int, UInt, Float, BFloat, Handle };

/// An element type: a TypeCode, a width in bits and a vector lane count (1 for scalars), as in TVM.
/// Compare with ==; print with str(); the predefined constants below (f32, i32, ...) cover the usual types.
struct DType {
  /// What kind of element: integer, unsigned (bool when bits is 1), float, bfloat or handle.
  TypeCode code = TypeCode::Int;
  /// The width of one element in bits (1 for bool).
  uint8_t bits = 32;
  /// Elements per value: 1 for scalars, the vector width otherwise.
  uint16_t lanes = 1;

  constexpr DType() = default;
  /// A type of `b` bits and `l` lanes, not validated (parse_dtype() validates text).
  constexpr DType(TypeCode c, int b, int l = 1)
      : code(c), bits(static_cast<uint8_t>(b)), lanes(static_cast<uint16_t>(l)) {}

  /// Predicates and derived types: is_uint() excludes bool, is_float() includes bfloat16; with_lanes() and
  /// with_bits() keep the other fields, element_of() drops the lanes.
  /// @{
  constexpr bool is_int() const { return code == TypeCode::Int; }
  constexpr bool is_uint() const { return code == TypeCode::UInt && bits != 1; }
  constexpr bool is_bool() const { return code == TypeCode::UInt && bits == 1; }
  /// Int, UInt or bool: everything computed with integer arithmetic.
  constexpr bool is_integral() const { return code == TypeCode::Int || code == TypeCode::UInt; }
  constexpr bool is_float() const { return code == TypeCode::Float || code == TypeCode::BFloat; }
  constexpr bool is_bfloat() const { return code == TypeCode::BFloat; }
  constexpr bool is_handle() const { return code == TypeCode::Handle; }
  constexpr bool is_scalar() const { return lanes == 1; }
  constexpr bool is_vector() const { return lanes > 1; }
  constexpr DType element_of() const { return DType(code, bits, 1); }
  constexpr DType with_lanes(int l) const { return DType(code, bits, l); }
  constexpr DType with_bits(int b) const { return DType(code, b, lanes); }
  /// @}
  /// Bytes one element occupies in memory (bool takes a byte).
  constexpr int bytes() const { return bits == 1 ? 1 : bits / 8; }

  /// Equal when code, bits and lanes all agree.
  /// @{
  friend constexpr bool operator==(const DType& a, const DType& b) {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
  }
  friend constexpr bool operator!=(const DType& a, const DType& b) { return !(a == b); }
  /// @}

  /// TVM spelling: float32, int8, uint1 is "bool", float32x4 for vectors.
  std::string str() const {
    // Built by appending: GCC 12 warns spuriously on `"int" + std::to_string(bits)`.
    std::string base;
    switch (code) {
      case TypeCode::Int: base = "int"; break;
      case TypeCode::UInt: base = bits == 1 ? "bool" : "uint"; break;
      case TypeCode::Float: base = "float"; break;
      case TypeCode::BFloat: base = "bfloat"; break;
      case TypeCode::Handle: return "handle";
    }
    if (!is_bool()) base += std::to_string(bits);
    if (lanes > 1) {
      base += 'x';
      base += std::to_string(lanes);
    }
    return base;
  }
};

/// The element types Loom supports, by their short names (f32 is float32, u8 is uint8, boolean is uint1).
/// handle_type is an opaque 64-bit pointer (a buffer's data Var).
/// @{
inline constexpr DType f16{TypeCode::Float, 16};
inline constexpr DType bf16{TypeCode::BFloat, 16};
inline constexpr DType f32{TypeCode::Float, 32};
inline constexpr DType f64{TypeCode::Float, 64};
inline constexpr DType i8{TypeCode::Int, 8};
inline constexpr DType i16{TypeCode::Int, 16};
inline constexpr DType i32{TypeCode::Int, 32};
inline constexpr DType i64{TypeCode::Int, 64};
inline constexpr DType u8{TypeCode::UInt, 8};
inline constexpr DType u16{TypeCode::UInt, 16};
inline constexpr DType u32{TypeCode::UInt, 32};
inline constexpr DType u64{TypeCode::UInt, 64};
inline constexpr DType boolean{TypeCode::UInt, 1};
inline constexpr DType handle_type{TypeCode::Handle, 64};
/// @}

/// Parses "float32", "int8", "bool", "bfloat16", "float32x4"; throws loom::Error otherwise.
inline DType parse_dtype(const std::string& text) {
  auto fail = [&]() -> DType {
    throw Error(cat("unknown dtype '", text,
                    "': use one of float16, bfloat16, float32, float64, int8, int16, int32, "
                    "int64, uint8, uint16, uint32, uint64, bool (optionally with xN lanes)"));
  };
  std::string base = text;
  int lanes = 1;
  if (auto x = text.find('x'); x != std::string::npos) {
    base = text.substr(0, x);
    try {
      lanes = std::stoi(text.substr(x + 1));
    } catch (...) {
      return fail();
    }
  }
  if (base == "bool") return boolean.with_lanes(lanes);
  if (base == "handle") return handle_type;
  struct Prefix {
    const char* name;
    TypeCode code;
  };
  for (Prefix p : {Prefix{"bfloat", TypeCode::BFloat}, Prefix{"float", TypeCode::Float},
                   Prefix{"uint", TypeCode::UInt}, Prefix{"int", TypeCode::Int}}) {
    std::string prefix = p.name;
    if (base.rfind(prefix, 0) == 0) {
      std::string bits_text = base.substr(prefix.size());
      int bits = 0;
      try {
        bits = std::stoi(bits_text);
      } catch (...) {
        return fail();
      }
      bool ok = (p.code == TypeCode::Float && (bits == 16 || bits == 32 || bits == 64)) ||
                (p.code == TypeCode::BFloat && bits == 16) ||
                ((p.code == TypeCode::Int || p.code == TypeCode::UInt) &&
                 (bits == 8 || bits == 16 || bits == 32 || bits == 64));
      if (!ok) return fail();
      return DType(p.code, bits, lanes);
    }
  }
  return fail();
}

}  // namespace loom
