// Tensor intrinsics for Intel AMX (Advanced Matrix Extensions): a block of m_tiles x n_tiles tiles
// of 16 x 16 32-bit accumulators, multiplied over K by tdpbf16ps (bfloat16 pairs into float32) or
// tdpb[su][su]d (quads of signed or unsigned bytes into int32). For tensorize:
//
//   out[i, j] = sum_{kg < K / group, t < group} widen(a[i, kg * group + t]) * widen(b[kg, j, t])
//
// with group = 2 for bfloat16 and 4 for bytes: A's rows hold K contiguously, B is packed with the
// group of one column side by side ("VNNI-packed", as for x86::dot_bf16_intrin), out's rows are
// contiguous. The body is one AMX tile product (ir/amx_tile_product.hpp): the accumulators stay in
// tile registers for the whole of K. Kernels build for the CPU backend on targets with AMX, and the
// interpreter runs them everywhere (the SDM's pseudo-code); calling one on a CPU without AMX is a
// loom::Error, and the kernel runtime asks Linux for the AMX tile state before the first call.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include "loom/ir/amx_tile_product.hpp"
#include "loom/te/tensor_intrin.hpp"

namespace loom::x86 {

namespace detail {

/// Checks that window `r`'s dimension `d` has the constant stride `want`.
inline void amx_stride(const BufferRegion& r, size_t d, int64_t want, const std::string& intrin,
                       const char* what, const char* fix) {
  const Expr& s = r.strides.at(d);
  const int64_t* c = as_const_int(s);
  if (!c || *c != want)
    throw Error(cat("tensor intrinsic '", intrin, "': ", what, " must be ", want, " elements apart, got ",
                    to_string(s), "; ", fix));
}

}  // namespace detail

/// The AMX block intrinsic for A of `a_type` and B of `b_type` (bf16 x bf16 -> float32, or any two of
/// int8 / uint8 -> int32): out is (m_tiles * rows) x (16 * n_tiles), reduced over `k` elements of K
/// (a multiple of 64 bytes of A's row: 32 bfloat16 or 64 bytes). rows: 1 to 16 rows per tile. The
/// block must fit AMX's 8 tile registers (AmxTileProduct::registers_used). bfloat16 rounds as the
/// SDM's pseudo-code for the instruction says (runtime::amx_dot: per instruction, chains of float32
/// fused multiply-adds over the pairs' even and odd elements, summed, then added; subnormals zero),
/// which the interpreter and the emulation follow; 8-bit products are exact, int32 sums wrap.
inline TensorIntrin amx_intrin(DType a_type, DType b_type, int m_tiles, int n_tiles, int k, int rows = 16) {
  const AmxInstruction instruction = amx_instruction_for(a_type, b_type);
  const std::string name =
      cat("x86.amx.", amx_instruction_name(instruction), ".", m_tiles, "x", n_tiles, ".r", rows, ".k", k);
  // One declaration per shape: the registry keeps every intrinsic declared, and a library schedule
  // asks for the same few shapes again and again.
  static std::mutex mutex;
  static std::map<std::string, TensorIntrin>* declared = new std::map<std::string, TensorIntrin>();
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = declared->find(name); it != declared->end()) return it->second;
  const int group = 4 / a_type.bytes(), step_elements = 64 / a_type.bytes();
  if (k <= 0 || k % step_elements != 0)
    throw Error(cat("x86::amx_intrin '", name, "': K (", k, ") must be a positive multiple of ",
                    step_elements, " (64 bytes of ", a_type.str(), ", one tile row); pad K with zeros"));
  AmxTileProduct shape;
  shape.instruction = instruction;
  shape.m_tiles = m_tiles;
  shape.n_tiles = n_tiles;
  shape.rows = rows;
  AmxTileProduct::check_block(m_tiles, n_tiles, rows, cat("x86::amx_intrin '", name, "'"));

  const DType acc_type = AmxTileProduct::c_type(instruction);
  Tensor a = placeholder({m_tiles * rows, k}, a_type, "a");
  Tensor b = placeholder({k / group, 16 * n_tiles, group}, b_type, "b");
  IterVar kg = reduce_axis(0, k / group, "kg"), t = reduce_axis(0, group, "t");
  Tensor out = compute(
      {m_tiles * rows, 16 * n_tiles},
      [&](Expr i, Expr j) {
        return sum(cast(acc_type, a(i, kg * group + t)) * cast(acc_type, b(kg, j, t)), {kg, t});
      },
      name);
  auto product = [=](bool accumulate, int64_t steps) {
    return [=](const std::vector<BufferRegion>& ins, const std::vector<BufferRegion>& outs) {
      AmxTileProduct p = shape;
      p.accumulate = accumulate;
      p.steps = make_const(i32, steps);
      const BufferRegion& o = outs[0];
      detail::amx_stride(o, 1, 1, name, "the output's columns", "store the output with rows contiguous");
      const Expr c_row = o.strides.at(0);
      const Expr zero = make_zero(o.elem_offset.dtype());
      p.c = AmxOperand{o.data, o.dtype, o.elem_offset, c_row, c_row * rows, zero};
      if (steps > 0) {
        const BufferRegion &ra = ins[0], &rb = ins[1];
        detail::amx_stride(ra, 1, 1, name, "A's elements along K", "store A with K contiguous in its rows");
        detail::amx_stride(rb, 2, 1, name, "B's group", "pack B as [k / group, columns, group]");
        detail::amx_stride(rb, 1, group, name, "B's columns", "pack B as [k / group, columns, group]");
        const Expr a_row = ra.strides.at(0), b_row = rb.strides.at(0);
        p.a = AmxOperand{ra.data, ra.dtype,     ra.elem_offset,
                         a_row,   a_row * rows, make_const(ra.elem_offset.dtype(), step_elements)};
        p.b = AmxOperand{
            rb.data,   rb.dtype, rb.elem_offset, b_row, make_const(rb.elem_offset.dtype(), 16 * group),
            b_row * 16};
      } else {  // reduce_init: no inputs; the operands are never read (steps = 0)
        p.a = AmxOperand{o.data, AmxTileProduct::a_type(instruction), zero, zero, zero, zero};
        p.b = AmxOperand{o.data, AmxTileProduct::b_type(instruction), zero, zero, zero, zero};
      }
      return p.make(cat("tensor intrinsic '", name, "'"));
    };
  };
  const int64_t steps = k / step_elements;
  TensorIntrin intrin =
      decl_tensor_intrin(out, product(false, steps), name, product(false, 0), product(true, steps));
  declared->emplace(name, intrin);
  return intrin;
}

}  // namespace loom::x86
