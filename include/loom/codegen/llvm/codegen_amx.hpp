// CodeGenLLVM's AMX tile product (ir/amx_tile_product.hpp): the accumulator tiles are loaded (or
// zeroed) once, carried through the k loop in tile registers as x86_amx phis, and stored once. Per
// k-step the smaller side's tiles are loaded once and the other side's one at a time, so the block
// fits AMX's 8 tile registers without spills. LLVM configures the tiles (ldtilecfg, tilerelease)
// from the constant shapes; the kernel runtime asks Linux for the tile state before the first call.
// With Target::set_amx_emulation() the same loops and addresses call the runtime's stand-ins for
// the four tile operations instead (a tile is then 1 KiB of stack), so they can be tested anywhere.
#pragma once

#include <string>
#include <vector>

#include "loom/codegen/llvm/codegen_llvm.hpp"
#include "loom/ir/amx_tile_product.hpp"

namespace loom::codegen {

inline void CodeGenLLVM::emit_amx_tile_product(const CallNode* call) {
  const AmxTileProduct p = AmxTileProduct::decode(call);
  const bool emulated = target_.amx_emulation;
  if (const std::string f = target_.first_missing(AmxTileProduct::features(p.instruction));
      !emulated && !f.empty())
    throw Error(cat("kernel '", func_.name, "' uses the AMX instruction ",
                    amx_instruction_name(p.instruction), ", which needs the CPU feature '", f,
                    "'; the target (", target_.description(),
                    ") lacks it: build for a CPU with AMX (Target::cpu(\"sapphirerapids\") to inspect the "
                    "code, Target::cpu() on such a machine to run it), emulate the tiles "
                    "(Target::set_amx_emulation()), or tensorize with x86::dot_bf16_intrin() / "
                    "x86::dot_8bit_intrin() (AVX512-BF16, AVX512-VNNI)"));
  llvm::Intrinsic::ID dot = llvm::Intrinsic::x86_tdpbf16ps_internal;
  switch (p.instruction) {
    case AmxInstruction::Tdpbf16ps: dot = llvm::Intrinsic::x86_tdpbf16ps_internal; break;
    case AmxInstruction::Tdpbssd: dot = llvm::Intrinsic::x86_tdpbssd_internal; break;
    case AmxInstruction::Tdpbsud: dot = llvm::Intrinsic::x86_tdpbsud_internal; break;
    case AmxInstruction::Tdpbusd: dot = llvm::Intrinsic::x86_tdpbusd_internal; break;
    case AmxInstruction::Tdpbuud: dot = llvm::Intrinsic::x86_tdpbuud_internal; break;
  }
  auto declaration = [&](llvm::Intrinsic::ID id) {
    return llvm::Intrinsic::getDeclaration(module_.get(), id);
  };
  llvm::Value* rows = builder_.getInt16(static_cast<uint16_t>(p.rows));
  llvm::Value* row_bytes = builder_.getInt16(64);
  llvm::Value* group_rows = builder_.getInt16(16);
  // The four tile operations. A tile is an x86_amx value, or (emulated) the address of 1 KiB of
  // stack that the runtime function of each operation fills.
  auto stack_tile = [&] {
    return static_alloca(llvm::ArrayType::get(builder_.getInt8Ty(), 1024), 64, "amx.tile");
  };
  auto rows_of = [&](llvm::Value* r) { return builder_.CreateZExt(r, i32_type()); };
  auto load = [&](llvm::Value* tile_rows, llvm::Value* address, llvm::Value* stride) -> llvm::Value* {
    if (!emulated)
      return builder_.CreateCall(declaration(llvm::Intrinsic::x86_tileloadd64_internal),
                                 {tile_rows, row_bytes, address, stride});
    llvm::Value* tile = stack_tile();
    builder_.CreateCall(runtime_function("loom_rt_amx_load", builder_.getVoidTy(),
                                         {ptr_type(), i32_type(), ptr_type(), i64_type()}),
                        {tile, rows_of(tile_rows), address, stride});
    return tile;
  };
  auto zero = [&]() -> llvm::Value* {
    if (!emulated)
      return builder_.CreateCall(declaration(llvm::Intrinsic::x86_tilezero_internal), {rows, row_bytes});
    llvm::Value* tile = stack_tile();
    builder_.CreateCall(runtime_function("loom_rt_amx_zero", builder_.getVoidTy(), {ptr_type()}), {tile});
    return tile;
  };
  auto store = [&](llvm::Value* address, llvm::Value* stride, llvm::Value* tile) {
    if (!emulated) {
      builder_.CreateCall(declaration(llvm::Intrinsic::x86_tilestored64_internal),
                          {rows, row_bytes, address, stride, tile});
      return;
    }
    builder_.CreateCall(runtime_function("loom_rt_amx_store", builder_.getVoidTy(),
                                         {ptr_type(), i32_type(), ptr_type(), i64_type()}),
                        {tile, rows_of(rows), address, stride});
  };
  // One product per accumulator tile: emulated, each writes the buffer of its own site (in place
  // from the second k-step on: the phi hands it its own result).
  std::vector<llvm::Value*> product_tiles;
  auto multiply = [&](size_t site, llvm::Value* acc, llvm::Value* a_value,
                      llvm::Value* b_value) -> llvm::Value* {
    if (!emulated)
      return builder_.CreateCall(declaration(dot), {rows, row_bytes, row_bytes, acc, a_value, b_value});
    builder_.CreateCall(
        runtime_function("loom_rt_amx_dot", builder_.getVoidTy(),
                         {i32_type(), ptr_type(), ptr_type(), ptr_type(), ptr_type(), i32_type()}),
        {builder_.getInt32(static_cast<uint32_t>(p.instruction)), product_tiles[site], acc, a_value, b_value,
         rows_of(rows)});
    return product_tiles[site];
  };

  // An operand's base address and strides, evaluated once outside the loop.
  struct Operand {
    llvm::Value* base;
    int64_t bytes;
    llvm::Value *row_bytes, *tile, *step;
  };
  auto int64 = [&](const Expr& e) { return extend_to_i64(emit(e), e.dtype()); };
  auto operand = [&](const AmxOperand& o) {
    llvm::Value* base =
        builder_.CreateGEP(builder_.getInt8Ty(), lookup_buffer(o.data).ptr,
                           builder_.CreateMul(int64(o.offset), builder_.getInt64(o.dtype.bytes())));
    return Operand{base, o.dtype.bytes(),
                   builder_.CreateMul(int64(o.row_stride), builder_.getInt64(o.dtype.bytes())),
                   int64(o.tile_stride), int64(o.step_stride)};
  };
  const Operand c = operand(p.c), a = operand(p.a), b = operand(p.b);
  // The address of element `elements` after an operand's base.
  auto at = [&](const Operand& o, llvm::Value* elements) {
    return builder_.CreateGEP(builder_.getInt8Ty(), o.base,
                              builder_.CreateMul(elements, builder_.getInt64(o.bytes)));
  };
  auto c_tile = [&](int mi, int nj) {
    return at(
        c, builder_.CreateAdd(builder_.CreateMul(builder_.getInt64(mi), c.tile), builder_.getInt64(16 * nj)));
  };

  std::vector<llvm::Value*> initial;
  for (int mi = 0; mi < p.m_tiles; ++mi)
    for (int nj = 0; nj < p.n_tiles; ++nj)
      initial.push_back(p.accumulate ? load(rows, c_tile(mi, nj), c.row_bytes) : zero());
  if (emulated)
    for (size_t i = 0; i < initial.size(); ++i) product_tiles.push_back(stack_tile());

  llvm::Value* steps = int64(p.steps);
  llvm::Function* f = builder_.GetInsertBlock()->getParent();
  llvm::BasicBlock* before = builder_.GetInsertBlock();
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx_, "amx.k", f);
  llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx_, "amx.k.end", f);
  builder_.CreateCondBr(builder_.CreateICmpSGT(steps, builder_.getInt64(0)), loop, done);

  builder_.SetInsertPoint(loop);
  llvm::PHINode* s = builder_.CreatePHI(i64_type(), 2, "amx.step");
  s->addIncoming(builder_.getInt64(0), before);
  std::vector<llvm::PHINode*> acc;
  for (llvm::Value* v : initial) {
    acc.push_back(builder_.CreatePHI(v->getType(), 2, "amx.acc"));
    acc.back()->addIncoming(v, before);
  }
  auto a_tile = [&](int mi) {
    llvm::Value* first =
        builder_.CreateAdd(builder_.CreateMul(builder_.getInt64(mi), a.tile), builder_.CreateMul(s, a.step));
    return load(rows, at(a, first), a.row_bytes);
  };
  auto b_tile = [&](int nj) {
    llvm::Value* first =
        builder_.CreateAdd(builder_.CreateMul(builder_.getInt64(nj), b.tile), builder_.CreateMul(s, b.step));
    return load(group_rows, at(b, first), b.row_bytes);
  };
  std::vector<llvm::Value*> next(acc.begin(), acc.end());
  auto product = [&](int mi, int nj, llvm::Value* a_value, llvm::Value* b_value) {
    const size_t site = static_cast<size_t>(mi * p.n_tiles + nj);
    next[site] = multiply(site, next[site], a_value, b_value);
  };
  if (p.m_tiles <= p.n_tiles) {  // A's tiles stay, B's come one at a time
    std::vector<llvm::Value*> held;
    for (int mi = 0; mi < p.m_tiles; ++mi) held.push_back(a_tile(mi));
    for (int nj = 0; nj < p.n_tiles; ++nj) {
      llvm::Value* bt = b_tile(nj);
      for (int mi = 0; mi < p.m_tiles; ++mi) product(mi, nj, held[static_cast<size_t>(mi)], bt);
    }
  } else {
    std::vector<llvm::Value*> held;
    for (int nj = 0; nj < p.n_tiles; ++nj) held.push_back(b_tile(nj));
    for (int mi = 0; mi < p.m_tiles; ++mi) {
      llvm::Value* a_value = a_tile(mi);
      for (int nj = 0; nj < p.n_tiles; ++nj) product(mi, nj, a_value, held[static_cast<size_t>(nj)]);
    }
  }
  llvm::Value* s_next = builder_.CreateAdd(s, builder_.getInt64(1));
  llvm::BasicBlock* loop_end = builder_.GetInsertBlock();
  s->addIncoming(s_next, loop_end);
  for (size_t i = 0; i < acc.size(); ++i) acc[i]->addIncoming(next[i], loop_end);
  builder_.CreateCondBr(builder_.CreateICmpSLT(s_next, steps), loop, done);

  builder_.SetInsertPoint(done);
  std::vector<llvm::PHINode*> results;  // every phi first: a block's phis lead it
  for (size_t i = 0; i < initial.size(); ++i) {
    results.push_back(builder_.CreatePHI(initial[i]->getType(), 2, "amx.c"));
    results.back()->addIncoming(initial[i], before);
    results.back()->addIncoming(next[i], loop_end);
  }
  for (int mi = 0; mi < p.m_tiles; ++mi)
    for (int nj = 0; nj < p.n_tiles; ++nj)
      store(c_tile(mi, nj), c.row_bytes, results[static_cast<size_t>(mi * p.n_tiles + nj)]);
}

}  // namespace loom::codegen
