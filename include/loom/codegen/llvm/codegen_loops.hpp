// CodeGenLLVM's loops. Serial, unrolled (llvm.loop.unroll.full), vectorized (a scalar body gets
// llvm.loop.vectorize hints at the host's vector width; a body already in vector IR is a plain
// loop) and thread-bound loops (run serially) stay in the function; a parallel loop's body is
// outlined into a function that the runtime's thread pool calls on chunks of the iterations. A loop
// marked pragma(axis, "nontemporal_stores") streams its whole-vector stores to parameters past the
// caches and is fenced after.
#pragma once

#include <algorithm>
#include <bit>
#include <string>
#include <unordered_set>
#include <vector>

#include "loom/codegen/llvm/codegen_llvm.hpp"
#include "loom/ir/gpu_vocabulary.hpp"

namespace loom::codegen {

namespace detail {

/// Whether the loop is marked pragma(axis, "nontemporal_stores") with a nonzero value.
inline bool marks_nontemporal_stores(const ForNode* op) {
  for (const LoopAnnotation& a : op->annotations)
    if ((a.key == "nontemporal_stores" || a.key == "pragma_nontemporal_stores") && !is_zero(a.value))
      return true;
  return false;
}

/// The buffers `body` loads from (anywhere in it, addresses passed to calls included).
inline std::unordered_set<const VarNode*> buffers_loaded(const Stmt& body) {
  struct Loads : IRVisitor {
    std::unordered_set<const VarNode*> found;
    using IRVisitor::visit;
    void visit(const LoadNode* op) override {
      found.insert(op->buffer.get());
      IRVisitor::visit(op);
    }
  } loads;
  loads.visit_stmt(body);
  return loads.found;
}

/// Every variable `body` reads (values, and buffers through loads, stores and calls), in the
/// order first met, so that outlined closures are laid out deterministically.
inline std::vector<const VarNode*> variables_used(const Stmt& body) {
  struct Collector : IRVisitor {
    std::vector<const VarNode*> order;
    std::unordered_set<const VarNode*> seen;
    void use(const VarNode* v) {
      if (seen.insert(v).second) order.push_back(v);
    }
    using IRVisitor::visit;
    void visit(const VarNode* op) override { use(op); }
    void visit(const LoadNode* op) override {
      use(op->buffer.get());
      IRVisitor::visit(op);
    }
    void visit(const StoreNode* op) override {
      use(op->buffer.get());
      IRVisitor::visit(op);
    }
  } collector;
  collector.visit_stmt(body);
  return collector.order;
}

/// Whether a statement already computes on vectors (a vectorizing pass ran): then a Vectorized
/// loop around it needs no hints.
inline bool has_vector_values(const Stmt& body) {
  bool found = false;
  for_each_expr(body, [&](const Expr& e) { found = found || e.dtype().lanes > 1; });
  return found;
}

/// The widest element (in bits) that `body` loads or stores; 32 when it touches no memory.
inline int widest_element_bits(const Stmt& body) {
  int bits = 0;
  for_each_expr(body, [&](const Expr& e) {
    if (const LoadNode* load = e.as<LoadNode>()) bits = std::max(bits, load->dtype.element_of().bytes() * 8);
  });
  struct Stores : IRVisitor {
    int bits = 0;
    using IRVisitor::visit;
    void visit(const StoreNode* op) override {
      bits = std::max(bits, op->value.dtype().element_of().bytes() * 8);
      IRVisitor::visit(op);
    }
  } stores;
  stores.visit_stmt(body);
  bits = std::max(bits, stores.bits);
  return bits == 0 ? 32 : bits;
}

}  // namespace detail

inline llvm::MDNode* CodeGenLLVM::loop_hints(const ForNode* op) {
  std::vector<llvm::Metadata*> hints;
  auto flag = [&](const char* name, llvm::Constant* value) {
    std::vector<llvm::Metadata*> operands{llvm::MDString::get(ctx_, name)};
    if (value) operands.push_back(llvm::ConstantAsMetadata::get(value));
    hints.push_back(llvm::MDNode::get(ctx_, operands));
  };
  if (op->kind == ForKind::Vectorized && !detail::has_vector_values(op->body)) {
    // As many lanes as the widest register holds of the widest element the body touches; a
    // constant trip count below that caps it. LLVM adds the tail when the width does not divide.
    int width = std::max(1, target_.vector_bits / detail::widest_element_bits(op->body));
    if (const int64_t* extent = as_const_int(op->extent); extent && *extent < width)
      width = static_cast<int>(std::bit_floor(static_cast<uint64_t>(std::max<int64_t>(*extent, 1))));
    if (width > 1) {
      flag("llvm.loop.vectorize.enable", builder_.getTrue());
      flag("llvm.loop.vectorize.width", builder_.getInt32(static_cast<uint32_t>(width)));
    }
  } else if (op->kind == ForKind::Unrolled) {
    flag("llvm.loop.unroll.full", nullptr);
  } else if (op->kind == ForKind::Serial && contains_loop(op->body)) {
    // Schedules unroll explicitly. LLVM would otherwise fully unroll a small outer loop once its
    // inner loops are unrolled, and a block of thousands of vector stores (a GEMM's accumulator
    // initialization over a few register tiles) makes instruction selection take minutes.
    flag("llvm.loop.unroll.disable", nullptr);
  }
  if (hints.empty()) return nullptr;
  hints.insert(hints.begin(), nullptr);  // the loop ID refers to itself
  llvm::MDNode* id = llvm::MDNode::getDistinct(ctx_, hints);
  id->replaceOperandWith(0, id);
  return id;
}

/// Emits `for (iv = begin; iv < end; ++iv) body(iv)` in rotated form (a guard, then a body that
/// tests at its bottom), the shape LLVM's loop passes expect. The increment cannot wrap: iv < end.
template <typename Body>
inline void emit_counted_loop(llvm::IRBuilder<>& b, llvm::Function* f, llvm::Value* begin, llvm::Value* end,
                              bool is_signed, llvm::MDNode* hints, const std::string& name, Body&& body) {
  llvm::LLVMContext& ctx = b.getContext();
  llvm::BasicBlock* preheader = b.GetInsertBlock();
  llvm::BasicBlock* loop = llvm::BasicBlock::Create(ctx, name + ".loop", f);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, name + ".end", f);
  llvm::Value* enter = is_signed ? b.CreateICmpSLT(begin, end) : b.CreateICmpULT(begin, end);
  b.CreateCondBr(enter, loop, exit);
  b.SetInsertPoint(loop);
  llvm::PHINode* iv = b.CreatePHI(begin->getType(), 2, name);
  iv->addIncoming(begin, preheader);
  body(static_cast<llvm::Value*>(iv));
  llvm::Value* next = b.CreateAdd(iv, llvm::ConstantInt::get(begin->getType(), 1), name + ".next",
                                  /*HasNUW=*/!is_signed, /*HasNSW=*/is_signed);
  llvm::Value* again = is_signed ? b.CreateICmpSLT(next, end) : b.CreateICmpULT(next, end);
  llvm::BranchInst* back = b.CreateCondBr(again, loop, exit);
  if (hints) back->setMetadata(llvm::LLVMContext::MD_loop, hints);
  iv->addIncoming(next, b.GetInsertBlock());
  b.SetInsertPoint(exit);
}

/// Entering loop `op`: whether it is marked nontemporal_stores (the caller leaves it by decrementing
/// nontemporal_depth_); the outermost marked loop notes the buffers it loads, whose stores stay cached.
inline bool CodeGenLLVM::enter_nontemporal(const ForNode* op) {
  const bool marked = detail::marks_nontemporal_stores(op);
  if (marked && nontemporal_depth_ == 0) nontemporal_loaded_ = detail::buffers_loaded(op->body);
  nontemporal_depth_ += marked;
  return marked;
}

inline void CodeGenLLVM::emit_for(const ForNode* op) {
  if (op->kind == ForKind::Parallel) return emit_parallel_for(op);
  const DType t = op->loop_var.dtype();
  llvm::Type* type = value_type(t);
  auto as_var_type = [&](const Expr& e) {
    llvm::Value* v = emit(e);
    if (v->getType() == type) return v;
    return e.dtype().is_int() ? builder_.CreateSExtOrTrunc(v, type) : builder_.CreateZExtOrTrunc(v, type);
  };
  // Bounds are evaluated once, before the first iteration.
  llvm::Value* min = as_var_type(op->min);
  llvm::Value* extent = as_var_type(op->extent);
  llvm::Value* end = builder_.CreateAdd(min, extent);
  // Virtual threads ("vthread", "vthread.x", ...) are one thread's loop, not GPU threads: lowering
  // interleaves them (inject_virtual_thread), and a hand-built function's vthread loop runs serially.
  const bool thread_bound = op->kind == ForKind::ThreadBinding && !is_virtual_thread_tag(op->thread_tag);
  thread_loops_ += thread_bound;
  // pragma(axis, "fp_contract"): the loop's a * b + c may become one fused multiply-add (one
  // rounding instead of two), as C compilers do by default; a GEMM micro-kernel asks for it.
  const llvm::FastMathFlags saved_flags = builder_.getFastMathFlags();
  for (const LoopAnnotation& a : op->annotations)
    if ((a.key == "fp_contract" || a.key == "pragma_fp_contract") && !is_zero(a.value)) {
      llvm::FastMathFlags flags = saved_flags;
      flags.setAllowContract(true);
      builder_.setFastMathFlags(flags);
    }
  // pragma(axis, "nontemporal_stores"): whole vectors the loop stores to parameters stream past the
  // caches (nontemporal_store), and a fence after the loop orders them before what follows.
  const bool nontemporal = enter_nontemporal(op);
  emit_counted_loop(builder_, fn_.function, min, end, t.is_int(), loop_hints(op), op->loop_var.name(),
                    [&](llvm::Value* iv) {
                      bind(op->loop_var, iv);
                      emit_stmt(op->body);
                      unbind(op->loop_var);
                    });
  nontemporal_depth_ -= nontemporal;
  if (nontemporal) store_fence();
  builder_.setFastMathFlags(saved_flags);
  thread_loops_ -= thread_bound;
}

/// The body of a parallel loop becomes `i32 body(closure, begin, end, ctx)` running iterations
/// [begin, end); the closure carries every value and buffer of this scope that the body reads.
inline void CodeGenLLVM::emit_parallel_for(const ForNode* op) {
  const DType t = op->loop_var.dtype();
  llvm::Type* var_type = value_type(t);
  llvm::Value* min = emit(op->min);
  if (min->getType() != var_type) min = builder_.CreateSExtOrTrunc(min, var_type);
  llvm::Value* extent = extend_to_i64(emit(op->extent), op->extent.dtype());

  struct Capture {
    const VarNode* var;
    bool is_buffer;
    BufferBinding buffer;
    llvm::Value* value;
  };
  std::vector<Capture> captures;
  std::vector<llvm::Type*> fields{var_type};
  for (const VarNode* v : detail::variables_used(op->body)) {
    if (v == op->loop_var.get()) continue;
    if (auto b = buffers_.find(v); b != buffers_.end() && !b->second.empty()) {
      captures.push_back(Capture{v, true, b->second.back(), b->second.back().ptr});
    } else if (auto s = vars_.find(v); s != vars_.end() && !s->second.empty()) {
      captures.push_back(Capture{v, false, BufferBinding{}, s->second.back()});
    } else {
      continue;  // bound inside the body (or unbound: the body's codegen reports it)
    }
    fields.push_back(captures.back().value->getType());
  }
  llvm::StructType* closure_type = llvm::StructType::get(ctx_, fields);
  llvm::AllocaInst* closure = static_alloca(closure_type, 16, "closure");
  builder_.CreateStore(min, builder_.CreateStructGEP(closure_type, closure, 0));
  for (size_t i = 0; i < captures.size(); ++i)
    builder_.CreateStore(captures[i].value,
                         builder_.CreateStructGEP(closure_type, closure, static_cast<unsigned>(i + 1)));

  // Generate the outlined function with only the captured names in scope.
  const llvm::IRBuilderBase::InsertPoint resume = builder_.saveIP();
  FunctionState outer_fn = std::move(fn_);
  auto outer_vars = std::move(vars_);
  auto outer_buffers = std::move(buffers_);
  llvm::Value* outer_mask = mask_;
  vars_.clear();
  buffers_.clear();
  mask_ = nullptr;

  llvm::Function* body_fn =
      begin_function(entry_symbol(func_) + ".parallel" + std::to_string(parallel_count_++),
                     {ptr_type(), i64_type(), i64_type(), ptr_type()}, llvm::GlobalValue::InternalLinkage);
  llvm::Argument* closure_arg = body_fn->getArg(0);
  body_fn->addParamAttr(0, llvm::Attribute::NoAlias);
  fn_.ctx = body_fn->getArg(3);
  llvm::Value* loop_min =
      builder_.CreateLoad(var_type, builder_.CreateStructGEP(closure_type, closure_arg, 0));
  for (size_t i = 0; i < captures.size(); ++i) {
    const Capture& c = captures[i];
    llvm::Value* field = builder_.CreateStructGEP(closure_type, closure_arg, static_cast<unsigned>(i + 1));
    llvm::Value* v = builder_.CreateLoad(fields[i + 1], field, c.var->name);
    Var var(Ref<const ExprNode>(c.var));
    if (c.is_buffer) {
      BufferBinding b = c.buffer;
      b.ptr = v;
      b.slot_bytes = 0;  // shared by the threads: see whole_in_slot
      bind_buffer(var, b);
    } else {
      bind(var, v);
    }
  }
  // Streaming stores in a thread's share (the loop marked, or inside a marked loop) are fenced by
  // that thread, before it reports the share done.
  const bool marked = enter_nontemporal(op);
  emit_counted_loop(builder_, body_fn, body_fn->getArg(1), body_fn->getArg(2), true, nullptr,
                    op->loop_var.name(), [&](llvm::Value* iv) {
                      llvm::Value* offset = builder_.CreateTrunc(iv, var_type);
                      bind(op->loop_var, builder_.CreateAdd(loop_min, offset, op->loop_var.name()));
                      emit_stmt(op->body);
                      unbind(op->loop_var);
                    });
  if (nontemporal_depth_ > 0) store_fence();
  nontemporal_depth_ -= marked;
  builder_.CreateRet(builder_.getInt32(0));

  fn_ = std::move(outer_fn);
  vars_ = std::move(outer_vars);
  buffers_ = std::move(outer_buffers);
  mask_ = outer_mask;
  builder_.restoreIP(resume);

  llvm::FunctionCallee parallel_for =
      runtime_function("loom_rt_parallel_for", i32_type(), {ptr_type(), i64_type(), ptr_type(), ptr_type()});
  llvm::Value* status = builder_.CreateCall(parallel_for, {fn_.ctx, extent, body_fn, closure});
  fail_if(builder_.CreateICmpNE(status, builder_.getInt32(0)), "");  // the failing iteration reported
}

}  // namespace loom::codegen
