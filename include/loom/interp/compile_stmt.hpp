// Compiler's statements (interp/compiler_decl.hpp): control flow with scoped frame slots,
// allocations, stores, evaluated calls, extern stages, AMX tile products, and kernel regions handed to the
// KernelRegionCompiler.
#pragma once

#include "loom/interp/amx_tile_product.hpp"
#include "loom/interp/compile_expr.hpp"

namespace loom::interp {

inline StmtPtr Compiler::compile_stmt(const Stmt& s) {
  if (!s.defined()) return std::make_unique<NoOp>();
  switch (s.kind()) {
    case IRNodeKind::LetStmt: return compile_let_stmt(s.as<LetStmtNode>());
    case IRNodeKind::AttrStmt: return compile_stmt(s.as<AttrStmtNode>()->body);
    case IRNodeKind::AssertStmt: {
      const AssertStmtNode* op = s.as<AssertStmtNode>();
      return std::make_unique<Assert>(compile_int(op->condition, 0), op->message, compile_stmt(op->body));
    }
    case IRNodeKind::Store: return compile_store(s.as<StoreNode>());
    case IRNodeKind::Allocate: {
      const AllocateNode* op = s.as<AllocateNode>();
      std::vector<IntExprPtr> extents;
      for (const Expr& e : op->extents) extents.push_back(compile_int(e, 0));
      VarBinding b;
      return with_binding(op->buffer, b, [&]() -> StmtPtr {
        return std::make_unique<Allocation>(b.slot, op->buffer.name(), op->dtype, std::move(extents),
                                            compile_stmt(op->body));
      });
    }
    case IRNodeKind::For: {
      const ForNode* op = s.as<ForNode>();
      if (op->kind == ForKind::ThreadBinding && launch_index_of_tag(op->thread_tag) >= 0)
        return compile_kernel_region(s);
      IntExprPtr min = compile_int(op->min, 0), extent = compile_int(op->extent, 0);
      VarBinding b;
      return with_binding(op->loop_var, b, [&]() -> StmtPtr {
        internal_check(b.kind == VarBinding::Kind::Int, "loop variable '", op->loop_var.name(), "' of type ",
                       op->loop_var.dtype().str());
        return std::make_unique<Loop>(b.slot, std::move(min), std::move(extent), compile_stmt(op->body));
      });
    }
    case IRNodeKind::IfThenElse: {
      const IfThenElseNode* op = s.as<IfThenElseNode>();
      return std::make_unique<IfElse>(compile_int(op->condition, 0), compile_stmt(op->then_case),
                                      op->else_case.defined() ? compile_stmt(op->else_case) : nullptr);
    }
    case IRNodeKind::Seq: {
      std::vector<StmtPtr> stmts;
      for (const Stmt& child : s.as<SeqNode>()->seq) stmts.push_back(compile_stmt(child));
      return std::make_unique<Block>(std::move(stmts));
    }
    case IRNodeKind::Evaluate: return compile_evaluate(s.as<EvaluateNode>()->value);
    case IRNodeKind::Barrier:
    case IRNodeKind::Prefetch: return std::make_unique<NoOp>();  // one thread, no cache model
    case IRNodeKind::Provide: not_lowered("Provide");
    case IRNodeKind::Realize: not_lowered("Realize");
    default: break;
  }
  throw InternalError(cat("interpreter: unknown statement kind ", kind_name(s.kind())));
}

inline StmtPtr Compiler::compile_let_stmt(const LetStmtNode* op) {
  DType t = op->var.dtype();
  VarBinding b;
  if (t.is_handle()) {
    const VarNode* source = op->value.as<VarNode>();
    if (!source || lookup(source).kind != VarBinding::Kind::Buffer)
      throw Error(cat("the interpreter can only bind handle '", op->var.name(),
                      "' to another buffer, not to ", to_string(op->value)));
    int source_slot = lookup(source).slot;
    std::string name = buffer_names_[static_cast<size_t>(source_slot)];
    return with_binding(
        op->var, b,
        [&]() -> StmtPtr {
          return std::make_unique<BufferAlias>(b.slot, source_slot, compile_stmt(op->body));
        },
        name);
  }
  auto make = [&](auto value_tag) -> StmtPtr {
    using V = decltype(value_tag);
    std::vector<ExprPtr<V>> lanes;
    for (int i = 0; i < t.lanes; ++i) lanes.push_back(compile<V>(op->value, i));
    return with_binding(op->var, b, [&]() -> StmtPtr {
      std::vector<int> slots;
      for (int i = 0; i < t.lanes; ++i) slots.push_back(b.slot_of_lane(i));
      return std::make_unique<LetStmt<V>>(std::move(slots), std::move(lanes), compile_stmt(op->body));
    });
  };
  return t.is_float() ? make(double{}) : make(int64_t{});
}

inline StmtPtr Compiler::compile_store(const StoreNode* op) {
  const int slot = buffer_slot(op->buffer);
  const DType element = op->value.dtype().element_of();
  const int lanes = op->value.dtype().lanes;
  AccessSite site = site_of(op->buffer, op->index, true);
  return with_codec(element, [&](auto codec) -> StmtPtr {
    using Codec = decltype(codec);
    using V = typename Codec::Value;
    auto predicate = [&](int lane) -> IntExprPtr {
      return op->predicate.defined() ? compile_int(op->predicate, lane) : nullptr;
    };
    if (lanes == 1) {
      return std::make_unique<ScalarStore<Codec>>(slot, compile_int(op->index, 0), compile<V>(op->value, 0),
                                                  predicate(0), site, element);
    }
    std::vector<typename VectorStore<Codec>::Lane> store_lanes;
    for (int i = 0; i < lanes; ++i)
      store_lanes.push_back({compile_int(op->index, i), compile<V>(op->value, i), predicate(i)});
    int scratch_ints = num_ints_;
    num_ints_ += 2 * lanes;
    int& value_count = std::is_same_v<V, double> ? num_floats_ : num_ints_;
    int scratch_values = value_count;
    value_count += lanes;
    return std::make_unique<VectorStore<Codec>>(slot, std::move(store_lanes), scratch_ints, scratch_values,
                                                site, element);
  });
}

inline StmtPtr Compiler::compile_evaluate(const Expr& value) {
  if (const CallNode* call = value.as<CallNode>(); call && call->name == intrinsic::extern_stage)
    return compile_extern_stage(call);
  if (const CallNode* call = value.as<CallNode>(); call && call->name == intrinsic::amx_tile_product)
    return compile_amx_tile_product(call);
  auto make = [&](auto value_tag) -> StmtPtr {
    using V = decltype(value_tag);
    std::vector<ExprPtr<V>> lanes;
    for (int i = 0; i < value.dtype().lanes; ++i) lanes.push_back(compile<V>(value, i));
    return std::make_unique<EvaluateLanes<V>>(std::move(lanes));
  };
  if (value.dtype().is_handle()) return std::make_unique<NoOp>();  // e.g. a bare string or buffer
  return value.dtype().is_float() ? make(double{}) : make(int64_t{});
}

inline StmtPtr Compiler::compile_extern_stage(const CallNode* call) {
  ExternStageCall decoded = ExternStageCall::decode(call);
  auto specs = [&](const std::vector<ExternBufferArg>& buffers) {
    std::vector<ExternBufferSpec> out;
    for (const ExternBufferArg& b : buffers) {
      ExternBufferSpec spec;
      spec.slot = buffer_slot(b.data);
      spec.name = buffer_names_[static_cast<size_t>(spec.slot)];
      spec.dtype = b.dtype;
      for (const Expr& e : b.shape) spec.shape.push_back(compile_int(e, 0));
      for (const Expr& e : b.strides) spec.strides.push_back(compile_int(e, 0));
      out.push_back(std::move(spec));
    }
    return out;
  };
  return std::make_unique<ExternStage>(decoded.function_id, specs(decoded.inputs), specs(decoded.outputs));
}

inline StmtPtr Compiler::compile_amx_tile_product(const CallNode* call) {
  const AmxTileProduct p = AmxTileProduct::decode(call);
  auto operand = [&](const AmxOperand& o) {
    AmxTileProductStmt::Operand compiled;
    compiled.slot = buffer_slot(o.data);
    compiled.name = buffer_names_[static_cast<size_t>(compiled.slot)];
    compiled.offset = compile_int(o.offset, 0);
    compiled.row_stride = compile_int(o.row_stride, 0);
    compiled.tile_stride = compile_int(o.tile_stride, 0);
    compiled.step_stride = compile_int(o.step_stride, 0);
    return compiled;
  };
  return std::make_unique<AmxTileProductStmt>(p.instruction, p.m_tiles, p.n_tiles, p.rows, p.accumulate,
                                              compile_int(p.steps, 0), operand(p.c), operand(p.a),
                                              operand(p.b), func_.name);
}

inline StmtPtr Compiler::compile_kernel_region(const Stmt& region) {
  if (!kernels_)
    throw Error(cat("kernel '", func_.name,
                    "' has a GPU kernel region (a loop bound to blockIdx/threadIdx): "
                    "run it with interpret() or simulate() (loom/sim/interpreter.hpp), which hand kernel "
                    "regions to the GPU simulator"));
  return kernels_->compile_region(*this, region, num_kernels_++);
}

}  // namespace loom::interp
