// CUDA C spellings of Loom's types and constants: dtype -> C type, vector types usable for
// float2/float4-style memory access, and exactly-rounded literals.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "loom/ir/dtype.hpp"
#include "loom/support/error.hpp"

namespace loom::cuda {

/// The C type of one element of `t` (the lanes are ignored).
inline std::string c_type(DType t) {
  switch (t.code) {
    case TypeCode::Handle: return "void*";
    case TypeCode::BFloat: return "__nv_bfloat16";
    case TypeCode::Float:
      if (t.bits == 16) return "__half";
      return t.bits == 32 ? "float" : "double";
    case TypeCode::UInt:
      switch (t.bits) {
        case 1: return "bool";
        case 8: return "unsigned char";
        case 16: return "unsigned short";
        case 32: return "unsigned int";
        default: return "unsigned long long";
      }
    case TypeCode::Int:
      switch (t.bits) {
        case 8: return "signed char";
        case 16: return "short";
        case 32: return "int";
        default: return "long long";
      }
  }
  return "?";
}

/// Whether C's usual arithmetic conversions widen `t` (so results must be narrowed again to
/// keep the IR's wrap-around semantics).
inline bool promotes_in_c(DType t) { return t.is_integral() && !t.is_bool() && t.bits < 32; }

/// The built-in CUDA vector type for `lanes` elements of `element` ("float4"), or "" when there
/// is none that Loom uses for one memory access (16 bytes at most, naturally aligned).
inline std::string vector_type(DType element, int lanes) {
  if (lanes != 2 && lanes != 4) return "";
  const char* base = nullptr;
  if (element == f32) base = "float";
  if (element == i32) base = "int";
  if (element == u32) base = "uint";
  if (element == f64 && lanes == 2) base = "double";
  if (element == i64 && lanes == 2) base = "longlong";
  if (!base) return "";
  return cat(base, lanes);
}

/// The field of a CUDA vector type that holds lane `i`.
inline const char* vector_field(int i) {
  static const char* const fields[] = {"x", "y", "z", "w"};
  return fields[i];
}

/// An integer literal of type t.
inline std::string int_literal(DType t, int64_t v) {
  if (t.is_bool()) return v ? "true" : "false";
  if (t.is_uint()) {
    const auto u = static_cast<uint64_t>(v);
    if (t.bits == 64) return cat(u, "ull");
    if (t.bits == 32) return cat(u, "u");
    return cat("((", c_type(t), ")", u, ")");
  }
  std::string text;
  if (v == INT64_MIN) {
    text = "(-9223372036854775807LL - 1)";
  } else if (t.bits == 64) {
    text = cat(v, "LL");
  } else if (v == INT32_MIN) {
    text = "(-2147483647 - 1)";
  } else {
    text = cat(v);
  }
  if (t.bits < 32) return cat("((", c_type(t), ")", text, ")");
  if (v < 0 && text.front() == '-') return "(" + text + ")";
  return text;
}

/// A floating-point literal of type t that reads back as exactly the same value.
inline std::string float_literal(DType t, double v) {
  const bool single = t.bits != 64;  // f16/bf16 constants are written as floats and converted
  std::string text;
  if (std::isnan(v)) {
    text = single ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)";
  } else if (std::isinf(v)) {
    text = single ? (v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)")
                  : (v > 0 ? "__longlong_as_double(0x7ff0000000000000LL)"
                           : "__longlong_as_double(0xfff0000000000000LL)");
  } else {
    char buf[64];
    if (single) {
      std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(v)));
    } else {
      std::snprintf(buf, sizeof buf, "%.17g", v);
    }
    text = buf;
    if (text.find_first_of(".en") == std::string::npos) text += ".0";
    if (single) text += "f";
    if (text.front() == '-') text = "(" + text + ")";
  }
  if (t.bits == 16) return cat(t.is_bfloat() ? "__float2bfloat16_rn(" : "__float2half_rn(", text, ")");
  return text;
}

/// Converts a C expression of type `from` to type `to`; 16-bit floats go through float.
inline std::string convert(const std::string& text, DType from, DType to) {
  from = from.element_of();
  to = to.element_of();
  if (from == to) return text;
  const bool from16 = from.is_float() && from.bits == 16, to16 = to.is_float() && to.bits == 16;
  std::string value = text;
  DType at = from;
  if (from16) {
    value = cat(from.is_bfloat() ? "__bfloat162float(" : "__half2float(", value, ")");
    at = f32;
  }
  if (to16) {
    if (at == f64) return cat(to.is_bfloat() ? "__double2bfloat16(" : "__double2half(", value, ")");
    if (at != f32) value = cat("((float)", value, ")");
    return cat(to.is_bfloat() ? "__float2bfloat16_rn(" : "__float2half_rn(", value, ")");
  }
  if (to.is_bool()) return cat("(", value, " != 0)");
  if (at == to) return value;
  return cat("((", c_type(to), ")", value, ")");
}

}  // namespace loom::cuda
