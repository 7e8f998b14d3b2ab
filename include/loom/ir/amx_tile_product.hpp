// The AMX tile product as one IR statement: a block of m_tiles x n_tiles accumulator tiles of C
// (each `rows` x 16 32-bit values) updated over `steps` k-steps, each step the product of an A
// tile (rows x 64 bytes) and a B tile (16 rows of 64 bytes: 16 K-groups, each the group of one
// column for 16 columns side by side, "VNNI-packed") per accumulator, by one of the AMX dot
// instructions. te/x86_amx_intrinsics.hpp builds it for tensorize; the LLVM backend keeps the
// accumulators in tile registers through the k loop (tileloadd, tdp*, tilestored); the interpreter
// runs the Intel SDM's pseudo-code. Both decode the call here, so they read the same operands.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "loom/ir/expr.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/stmt.hpp"

namespace loom {

namespace intrinsic {
/// The AMX tile product statement (AmxTileProduct::make); a call with side effects in an Evaluate.
inline constexpr const char* amx_tile_product = "loom.x86.amx_tile_product";
}  // namespace intrinsic

/// The AMX dot instructions: bfloat16 pairs into float32 (AMX-BF16), and quads of 8-bit integers
/// into int32 (AMX-INT8), A's and B's signedness named by the two letters after "tdpb".
enum class AmxInstruction : uint8_t { Tdpbf16ps, Tdpbssd, Tdpbsud, Tdpbusd, Tdpbuud };

/// The instruction's mnemonic ("tdpbf16ps", ...).
inline const char* amx_instruction_name(AmxInstruction i) {
  switch (i) {
    case AmxInstruction::Tdpbf16ps: return "tdpbf16ps";
    case AmxInstruction::Tdpbssd: return "tdpbssd";
    case AmxInstruction::Tdpbsud: return "tdpbsud";
    case AmxInstruction::Tdpbusd: return "tdpbusd";
    case AmxInstruction::Tdpbuud: return "tdpbuud";
  }
  return "?";
}

/// The instruction that multiplies `a` by `b`; throws for types no AMX instruction takes.
inline AmxInstruction amx_instruction_for(DType a, DType b) {
  if (a == bf16 && b == bf16) return AmxInstruction::Tdpbf16ps;
  const bool a8 = a == i8 || a == u8, b8 = b == i8 || b == u8;
  if (a8 && b8)
    return a == i8 ? (b == i8 ? AmxInstruction::Tdpbssd : AmxInstruction::Tdpbsud)
                   : (b == i8 ? AmxInstruction::Tdpbusd : AmxInstruction::Tdpbuud);
  throw Error(
      cat("AMX multiplies bfloat16 x bfloat16 (tdpbf16ps) or 8-bit integers (tdpbssd, tdpbsud, "
          "tdpbusd, tdpbuud); got ",
          a.str(), " x ", b.str()));
}

/// One operand's memory: a flat buffer, the element offset of the block's first tile, the elements
/// between a tile's rows, between consecutive tiles of the block (m-tiles for A and C, n-tiles for
/// B; C's n-tiles are 16 elements apart), and between k-steps (A and B).
struct AmxOperand {
  Var data;     ///< the flat buffer
  DType dtype;  ///< its element type
  /// Elements: to the first tile, between a tile's rows, between tiles, between k-steps.
  /// @{
  Expr offset, row_stride, tile_stride, step_stride;
  /// @}
};

/// A decoded or to-be-built AMX tile product. For every accumulator tile (mi, nj), rows r < `rows`
/// and columns c < 16:
///   C[mi, nj](r, c) = (accumulate ? C[mi, nj](r, c) : 0) + sum over steps s and groups g < 16 of
///                     dot(A[mi, s](r, group g), B[nj, s](g, column c))
/// where a group is 2 bfloat16 or 4 bytes, and dot the instruction's (see amx_instruction_name).
struct AmxTileProduct {
  AmxInstruction instruction = AmxInstruction::Tdpbf16ps;  ///< the dot instruction
  /// The block's accumulator tiles along M and N.
  /// @{
  int m_tiles = 1, n_tiles = 1;
  /// @}
  int rows = 16;            ///< rows of each C and A tile, 1 to 16
  bool accumulate = false;  ///< add to C (tileloadd) rather than start from zero (tilezero)
  Expr steps;               ///< k-steps of 64 bytes of A's rows (32 bfloat16, 64 bytes); may be 0
  /// The accumulators (read when accumulating, written) and the two inputs.
  /// @{
  AmxOperand c, a, b;
  /// @}

  /// AMX has 8 tile registers: the accumulators, the smaller side's tiles (loaded once per step) and
  /// one tile of the other side (loaded for each of its products).
  static constexpr int kTileRegisters = 8;
  /// The call's arguments (make): the mnemonic, m_tiles, n_tiles, rows, accumulate and steps, then
  /// six for each of C, A and B (the buffer first); C's buffer is argument kFirstOperand.
  static constexpr size_t kFirstOperand = 6;
  /// The tile registers an m x n block uses.
  static int registers_used(int m, int n) { return m * n + std::min(m, n) + 1; }

  /// The element types A, B and C must have for `i`.
  /// @{
  static DType a_type(AmxInstruction i) {
    return i == AmxInstruction::Tdpbf16ps                                   ? bf16
           : (i == AmxInstruction::Tdpbssd || i == AmxInstruction::Tdpbsud) ? i8
                                                                            : u8;
  }
  static DType b_type(AmxInstruction i) {
    return i == AmxInstruction::Tdpbf16ps                                   ? bf16
           : (i == AmxInstruction::Tdpbssd || i == AmxInstruction::Tdpbusd) ? i8
                                                                            : u8;
  }
  static DType c_type(AmxInstruction i) { return i == AmxInstruction::Tdpbf16ps ? f32 : i32; }
  /// @}

  /// The LLVM CPU features the instruction needs.
  static const char* features(AmxInstruction i) {
    return i == AmxInstruction::Tdpbf16ps ? "amx-tile,amx-bf16" : "amx-tile,amx-int8";
  }

  /// Throws a loom::Error naming `who` for a block the tile registers cannot hold or rows outside 1-16.
  static void check_block(int m_tiles, int n_tiles, int rows, const std::string& who) {
    if (m_tiles < 1 || n_tiles < 1 || registers_used(m_tiles, n_tiles) > kTileRegisters)
      throw Error(cat(who, ": an AMX block of ", m_tiles, " x ", n_tiles, " accumulator tiles needs ",
                      registers_used(std::max(m_tiles, 1), std::max(n_tiles, 1)),
                      " tile registers (accumulators, the smaller side's tiles and one more); AMX has ",
                      kTileRegisters, ": use 1 x 1 to 1 x 6, 2 x 2, or 2 x 1 to 6 x 1"));
    if (rows < 1 || rows > 16) throw Error(cat(who, ": an AMX tile has 1 to 16 rows, not ", rows));
  }

  /// The statement; throws a loom::Error naming `who` for a block check_block refuses or operands
  /// of the wrong element type.
  Stmt make(const std::string& who) const {
    check_block(m_tiles, n_tiles, rows, who);
    auto check = [&](const AmxOperand& o, DType want, const char* name) {
      if (o.dtype != want)
        throw Error(cat(who, ": ", amx_instruction_name(instruction), " needs ", name, " of ", want.str(),
                        ", got ", o.dtype.str()));
    };
    check(c, c_type(instruction), "C");
    check(a, a_type(instruction), "A");
    check(b, b_type(instruction), "B");
    std::vector<Expr> args{StringImmNode::make(amx_instruction_name(instruction)),
                           make_const(i32, m_tiles),
                           make_const(i32, n_tiles),
                           make_const(i32, rows),
                           make_const(i32, accumulate ? 1 : 0),
                           steps};
    for (const AmxOperand* o : {&c, &a, &b}) {
      args.insert(args.end(), {o->data, make_const(i32, pack(o->dtype)), o->offset, o->row_stride,
                               o->tile_stride, o->step_stride});
    }
    return EvaluateNode::make(
        CallNode::make(i32, intrinsic::amx_tile_product, std::move(args), CallKind::Intrinsic));
  }

  /// The product a call of intrinsic::amx_tile_product describes (the call make() built).
  static AmxTileProduct decode(const CallNode* call) {
    internal_check(call->name == intrinsic::amx_tile_product && call->args.size() == kFirstOperand + 3 * 6,
                   "not an AMX tile product: ", call->name);
    AmxTileProduct p;
    const std::string& name = call->args[0].as<StringImmNode>()->value;
    for (AmxInstruction i : {AmxInstruction::Tdpbf16ps, AmxInstruction::Tdpbssd, AmxInstruction::Tdpbsud,
                             AmxInstruction::Tdpbusd, AmxInstruction::Tdpbuud})
      if (name == amx_instruction_name(i)) p.instruction = i;
    auto constant = [&](size_t i) { return static_cast<int>(*as_const_int(call->args[i])); };
    p.m_tiles = constant(1);
    p.n_tiles = constant(2);
    p.rows = constant(3);
    p.accumulate = constant(4) != 0;
    p.steps = call->args[5];
    AmxOperand* operands[] = {&p.c, &p.a, &p.b};
    for (size_t k = 0; k < 3; ++k) {
      const size_t at = kFirstOperand + 6 * k;
      internal_check(call->args[at].as<VarNode>() != nullptr, "AMX tile product: operand ", k,
                     " is not a buffer");
      *operands[k] = AmxOperand{Var(Ref<const ExprNode>(call->args[at].get())),
                                unpack(constant(at + 1)),
                                call->args[at + 2],
                                call->args[at + 3],
                                call->args[at + 4],
                                call->args[at + 5]};
    }
    return p;
  }

 private:
  static int pack(DType t) { return static_cast<int>(t.code) | (t.bits << 8); }
  static DType unpack(int v) { return DType(static_cast<TypeCode>(v & 0xff), v >> 8); }
};

}  // namespace loom
