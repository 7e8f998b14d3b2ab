// The interpreter's AMX tile product (ir/amx_tile_product.hpp): the Intel SDM's pseudo-code for
// tdpbf16ps and tdpb[su][su]d, run on the buffers' memory with every tile row checked against the
// buffer's bounds. The interpreter thus runs kernels tensorized with AMX on any machine, and tests
// compare them with the unscheduled reference where no CPU has AMX.
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "loom/interp/expr_nodes.hpp"
#include "loom/interp/stmt_nodes.hpp"
#include "loom/ir/amx_tile_product.hpp"
#include "loom/ir/half.hpp"

namespace loom::interp {

namespace detail {

/// AMX-BF16 arithmetic treats subnormal inputs as zero and flushes subnormal results to zero.
inline float amx_flush(float x) { return std::fpclassify(x) == FP_SUBNORMAL ? std::copysign(0.0f, x) : x; }

/// The 8-bit lane `i` of a 4-byte group, sign-extended or not.
inline int32_t amx_byte(const std::byte* group, int i, bool is_signed) {
  const auto u = static_cast<uint8_t>(group[i]);
  return is_signed ? static_cast<int32_t>(static_cast<int8_t>(u)) : static_cast<int32_t>(u);
}

}  // namespace detail

/// Runs one AMX tile product. Each accumulator element follows the SDM's order: group by group
/// along K (step by step), and within a bfloat16 pair the even element first, each an FP32 fused
/// multiply-add rounded to nearest even with subnormals flushed; the 8-bit products are exact and
/// the int32 sums wrap.
class AmxTileProductStmt final : public CompiledStmt {
 public:
  /// One operand: its buffer slot and name, and its compiled offset and strides (elements).
  struct Operand {
    int slot = 0;
    std::string name;
    IntExprPtr offset, row_stride, tile_stride, step_stride;
  };

  AmxTileProductStmt(AmxInstruction instruction, int m_tiles, int n_tiles, int rows, bool accumulate,
                     IntExprPtr steps, Operand c, Operand a, Operand b, std::string kernel)
      : instruction_(instruction),
        m_tiles_(m_tiles),
        n_tiles_(n_tiles),
        rows_(rows),
        accumulate_(accumulate),
        steps_(std::move(steps)),
        c_(std::move(c)),
        a_(std::move(a)),
        b_(std::move(b)),
        kernel_(std::move(kernel)) {}

  void run(Frame& frame) const override {
    const int64_t steps = steps_->eval(frame);
    if (steps < 0)
      throw Error(cat("kernel '", kernel_, "': an AMX tile product of ", steps, " k-steps (fewer than 0)"));
    const Bound c = bind(c_, frame, AmxTileProduct::c_type(instruction_)),
                a = bind(a_, frame, AmxTileProduct::a_type(instruction_)),
                b = bind(b_, frame, AmxTileProduct::b_type(instruction_));
    for (int mi = 0; mi < m_tiles_; ++mi) {
      for (int nj = 0; nj < n_tiles_; ++nj) {
        uint32_t acc[16][16] = {};  // the accumulator tile's bits, rows x 16 columns
        for (int r = 0; r < rows_; ++r)
          if (accumulate_) std::memcpy(acc[r], c.row(c.first + mi * c.tile + nj * 16, r, "C"), 64);
        for (int64_t s = 0; s < steps; ++s) {
          const int64_t a_tile = a.first + mi * a.tile + s * a.step, b_tile = b.first + nj * b.tile + s * b.step;
          const std::byte* b_rows[16];
          for (int g = 0; g < 16; ++g) b_rows[g] = b.row(b_tile, g, "B");
          for (int r = 0; r < rows_; ++r) multiply_row(acc[r], a.row(a_tile, r, "A"), b_rows);
        }
        for (int r = 0; r < rows_; ++r) std::memcpy(c.row(c.first + mi * c.tile + nj * 16, r, "C"), acc[r], 64);
      }
    }
  }

 private:
  /// An operand's values for this run, with the checked address of a tile's 64-byte row.
  struct Bound {
    const AmxTileProductStmt* self;
    const Operand* operand;
    const BufferSlot* slot;
    int64_t element_bytes, first, row_stride, tile, step;
    std::byte* row(int64_t tile_first, int64_t r, const char* which) const {
      const int64_t byte = (tile_first + r * row_stride) * element_bytes;
      if (byte < slot->begin_byte || byte > slot->end_byte - 64)
        throw Error(cat("kernel '", self->kernel_, "': the AMX tile product (", amx_instruction_name(self->instruction_),
                        ") reads or writes 64 bytes of ", which, " at byte ", byte, " of buffer '", operand->name,
                        "', outside its memory (bytes ", slot->begin_byte, " to ", slot->end_byte,
                        "): the tile's rows, strides or k-steps reach past the buffer"));
      return slot->data + byte;
    }
  };

  Bound bind(const Operand& o, Frame& frame, DType type) const {
    return Bound{this,
                 &o,
                 &frame.buffers[o.slot],
                 type.bytes(),
                 o.offset->eval(frame),
                 o.row_stride->eval(frame),
                 o.tile_stride->eval(frame),
                 o.step_stride->eval(frame)};
  }

  /// acc (16 values) += the dot products of A's row (16 groups) with B's 16 rows of groups.
  void multiply_row(uint32_t* acc, const std::byte* a_row, const std::byte* const* b_rows) const {
    if (instruction_ == AmxInstruction::Tdpbf16ps) {
      for (int g = 0; g < 16; ++g) {
        for (int n = 0; n < 16; ++n) {
          float sum;
          std::memcpy(&sum, &acc[n], 4);
          for (int t = 0; t < 2; ++t) {
            uint16_t x, y;
            std::memcpy(&x, a_row + 4 * g + 2 * t, 2);
            std::memcpy(&y, b_rows[g] + 4 * n + 2 * t, 2);
            sum = detail::amx_flush(std::fma(detail::amx_flush(bfloat16_bits_to_float(x)),
                                             detail::amx_flush(bfloat16_bits_to_float(y)), detail::amx_flush(sum)));
          }
          std::memcpy(&acc[n], &sum, 4);
        }
      }
      return;
    }
    const bool a_signed = AmxTileProduct::a_type(instruction_) == i8,
               b_signed = AmxTileProduct::b_type(instruction_) == i8;
    for (int g = 0; g < 16; ++g) {
      for (int n = 0; n < 16; ++n) {
        uint32_t sum = acc[n];
        for (int t = 0; t < 4; ++t)
          sum += static_cast<uint32_t>(detail::amx_byte(a_row + 4 * g, t, a_signed) *
                                       detail::amx_byte(b_rows[g] + 4 * n, t, b_signed));
        acc[n] = sum;
      }
    }
  }

  AmxInstruction instruction_;
  int m_tiles_, n_tiles_, rows_;
  bool accumulate_;
  IntExprPtr steps_;
  Operand c_, a_, b_;
  std::string kernel_;
};

}  // namespace loom::interp
