// Tensor intrinsics for the x86 dot-product instructions that multiply narrow types into a wider
// accumulator, 16 lanes at a time: AVX512-BF16 vdpbf16ps (pairs of bfloat16 -> float32) and
// AVX512-VNNI vpdpbusd (quads of unsigned x signed 8-bit -> int32). Each is a tensor intrinsic
// (te/tensor_intrin.hpp) over one row of A's K-group and a 16 x group block of B, for tensorize:
//
//   out[j] = sum_{t < group} widen(a[t]) * widen(b[j, t]),  j < 16
//
// b's 16 x group window must be contiguous (B packed "VNNI-style": the group of consecutive k for
// one column side by side) and out's 16 elements too. The bodies call the LLVM intrinsics, so the
// kernels build only for the CPU backend, for targets with the feature (a clear error otherwise).
#pragma once

#include <string>

#include "loom/ir/op.hpp"
#include "loom/ir/printer.hpp"
#include "loom/ir/stmt.hpp"
#include "loom/te/tensor_intrin.hpp"

/// x86 tensor intrinsics for tensorize on the CPU backend.
namespace loom::x86 {

/// The lanes of the accumulator the dot intrinsics update: one 512-bit vector of 32-bit values.
inline constexpr int kDotLanes = 16;

namespace detail {

/// The constant stride of window `r`'s dimension `d`; a symbolic one is refused.
inline int64_t const_stride(const BufferRegion& r, size_t d, const std::string& intrin, const char* what) {
  const int64_t* s = as_const_int(r.strides.at(d));
  if (!s)
    throw Error(cat("tensor intrinsic '", intrin, "': the stride of ", what, " is ", to_string(r.strides[d]),
                    ", not a constant; the intrinsic needs it contiguous (pack the operand)"));
  return *s;
}

/// The `count` elements of `r` (a 1-D window, stride 1) at its origin, as one int32 of their bits
/// (little-endian: element 0 in the low bits). Built from narrow loads so that no alignment of the
/// origin is assumed; LLVM combines them into one 32-bit load.
inline Expr group_bits(const BufferRegion& r, int count, const std::string& intrin) {
  if (const_stride(r, 0, intrin, "A's group") != 1)
    throw Error(cat("tensor intrinsic '", intrin, "': A's ", count,
                    " elements of one group must be contiguous (stride 1); pack A with the group innermost"));
  const int bits = 32 / count;
  const DType lane = DType(TypeCode::UInt, bits, 1);
  Expr word;
  for (int t = 0; t < count; ++t) {
    Expr part = cast(u32, LoadNode::make(lane, r.data, r.elem_offset + t));
    if (t > 0) part = part << make_const(u32, t * bits);
    word = t == 0 ? part : (word | part);
  }
  return CallNode::make(i32, intrinsic::reinterpret, {word}, CallKind::PureIntrinsic);
}

/// B's 16 x group window, contiguous, as 16 int32 lanes of packed bits.
inline Expr block_bits(const BufferRegion& r, int group, const std::string& intrin) {
  if (const_stride(r, 1, intrin, "B's group") != 1 || const_stride(r, 0, intrin, "B's columns") != group)
    throw Error(cat("tensor intrinsic '", intrin, "': B's 16 x ", group,
                    " window must be contiguous, the group of one column side by side (strides ", group,
                    " and 1); got strides ", to_string(r.strides[0]), " and ", to_string(r.strides[1]),
                    ": pack B as [..., k / ", group, ", columns, ", group, "]"));
  // 16 lanes of 32 bits over 16 * group narrow elements: index in 32-bit units is only valid for an
  // origin that is a multiple of the group, so load the narrow elements and let the call bit-cast.
  const DType lane = DType(TypeCode::UInt, 32 / group, 1);
  return LoadNode::make(
      lane, r.data, RampNode::make(r.elem_offset, make_const(r.elem_offset.dtype(), 1), kDotLanes * group));
}

/// The 16 contiguous elements of the output window, as a Ramp index.
inline Expr accumulator_ramp(const BufferRegion& out, const std::string& intrin) {
  if (const_stride(out, 0, intrin, "the output") != 1)
    throw Error(cat("tensor intrinsic '", intrin, "': the 16 outputs must be contiguous (stride 1)"));
  return RampNode::make(out.elem_offset, make_const(out.elem_offset.dtype(), 1), kDotLanes);
}

/// Declares `out[j] = sum_t widen(a[t]) * widen(b[j, t])` with `call(acc, a_bits, b_bits)` as its body.
template <typename Call>
inline TensorIntrin declare_dot(const std::string& name, DType a_type, DType b_type, DType acc_type,
                                int group, Call call) {
  Tensor a = placeholder({group}, a_type, "a");
  Tensor b = placeholder({kDotLanes, group}, b_type, "b");
  IterVar t = reduce_axis(0, group, "t");
  Tensor out = compute(
      {kDotLanes}, [&](Expr j) { return sum(cast(acc_type, a(t)) * cast(acc_type, b(j, t)), {t}); }, name);
  const DType vec = acc_type.with_lanes(kDotLanes);
  auto update = [=](bool from_zero) {
    return [=](const std::vector<BufferRegion>& ins, const std::vector<BufferRegion>& outs) {
      const BufferRegion& o = outs[0];
      Expr index = accumulator_ramp(o, name);
      Expr acc = from_zero ? BroadcastNode::make(make_zero(acc_type), kDotLanes)
                           : LoadNode::make(acc_type, o.data, index);
      Expr a_bits = BroadcastNode::make(group_bits(ins[0], group, name), kDotLanes);
      return StoreNode::make(o.data, call(vec, acc, a_bits, block_bits(ins[1], group, name)), index);
    };
  };
  auto init = [=](const std::vector<BufferRegion>&, const std::vector<BufferRegion>& outs) {
    return StoreNode::make(outs[0].data, BroadcastNode::make(make_zero(acc_type), kDotLanes),
                           accumulator_ramp(outs[0], name));
  };
  return decl_tensor_intrin(out, update(true), name, init, update(false));
}

}  // namespace detail

/// out[j] (float32) = sum_{t < 2} a[t] * b[j, t], a and b bfloat16: AVX512-BF16 vdpbf16ps on 16 lanes.
/// Its rounding is the instruction's: the products are exact, the two additions round to nearest even
/// (t = 1 first), and subnormal inputs and results are flushed to zero. Needs avx512bf16 (and 512-bit
/// registers).
inline TensorIntrin dot_bf16_intrin() {
  static const TensorIntrin intrin = detail::declare_dot(
      "x86.vdpbf16ps", bf16, bf16, f32, 2, [](DType vec, Expr acc, Expr a_bits, Expr b_bits) {
        return call_llvm_intrinsic(vec, "llvm.x86.avx512bf16.dpbf16ps.512", "avx512bf16,evex512",
                                   {acc, b_bits, a_bits});
      });
  return intrin;
}

/// out[j] (int32) = sum_{t < 4} a[t] * b[j, t] for one signed and one unsigned 8-bit operand
/// (a int8 and b uint8, or a uint8 and b int8): AVX512-VNNI vpdpbusd on 16 lanes, exact, wrapping
/// on int32 overflow like the reference. Needs avx512vnni (and 512-bit registers).
inline TensorIntrin dot_8bit_intrin(DType a_type, DType b_type) {
  const bool a_signed = a_type == i8 && b_type == u8, b_signed = a_type == u8 && b_type == i8;
  if (!a_signed && !b_signed)
    throw Error(cat("x86::dot_8bit_intrin: vpdpbusd multiplies an unsigned by a signed byte; got ",
                    a_type.str(), " x ", b_type.str(), " (use int8 x uint8 or uint8 x int8)"));
  auto declare = [](DType a, DType b, bool unsigned_b) {
    return detail::declare_dot(
        cat("x86.vpdpbusd.", a.str(), ".", b.str()), a, b, i32, 4,
        [unsigned_b](DType vec, Expr acc, Expr a_bits, Expr b_bits) {
          // vpdpbusd(acc, unsigned bytes, signed bytes)
          std::vector<Expr> args{acc, unsigned_b ? b_bits : a_bits, unsigned_b ? a_bits : b_bits};
          return call_llvm_intrinsic(vec, "llvm.x86.avx512.vpdpbusd.512", "avx512vnni,evex512",
                                     std::move(args));
        });
  };
  static const TensorIntrin s8u8 = declare(i8, u8, true), u8s8 = declare(u8, i8, false);
  return a_signed ? s8u8 : u8s8;
}

}  // namespace loom::x86
