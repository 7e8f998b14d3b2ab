// The interpreter's AMX tile product (ir/amx_tile_product.hpp): the Intel SDM's pseudo-code for
// tdpbf16ps and tdpb[su][su]d (runtime/amx_emulation.hpp), run on the buffers' memory with every
// tile row checked against the buffer's bounds. The interpreter thus runs kernels tensorized with AMX on any
// machine, and tests compare them with the unscheduled reference where no CPU has AMX.
#pragma once

#include <cstring>
#include <string>
#include <utility>

#include "loom/interp/expr_nodes.hpp"
#include "loom/interp/stmt_nodes.hpp"
#include "loom/runtime/amx_emulation.hpp"

namespace loom::interp {

/// Runs one AMX tile product, tile by tile as the instructions would (runtime::amx_dot).
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
    runtime::AmxTile acc, a_tile, b_tile;
    for (int mi = 0; mi < m_tiles_; ++mi) {
      for (int nj = 0; nj < n_tiles_; ++nj) {
        const int64_t c_first = c.first + mi * c.tile + nj * 16;
        std::memset(&acc, 0, sizeof acc);
        for (int r = 0; r < rows_ && accumulate_; ++r) std::memcpy(acc.row[r], c.row(c_first, r, "C"), 64);
        for (int64_t s = 0; s < steps; ++s) {
          const int64_t a_first = a.first + mi * a.tile + s * a.step,
                        b_first = b.first + nj * b.tile + s * b.step;
          for (int r = 0; r < rows_; ++r) std::memcpy(a_tile.row[r], a.row(a_first, r, "A"), 64);
          for (int g = 0; g < 16; ++g) std::memcpy(b_tile.row[g], b.row(b_first, g, "B"), 64);
          runtime::amx_dot(instruction_, acc, acc, a_tile, b_tile, rows_);
        }
        for (int r = 0; r < rows_; ++r) std::memcpy(c.row(c_first, r, "C"), acc.row[r], 64);
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
        throw Error(cat("kernel '", self->kernel_, "': the AMX tile product (",
                        amx_instruction_name(self->instruction_), ") reads or writes 64 bytes of ", which,
                        " at byte ", byte, " of buffer '", operand->name, "', outside its memory (bytes ",
                        slot->begin_byte, " to ", slot->end_byte,
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

  AmxInstruction instruction_;
  int m_tiles_, n_tiles_, rows_;
  bool accumulate_;
  IntExprPtr steps_;
  Operand c_, a_, b_;
  std::string kernel_;
};

}  // namespace loom::interp
