// CodeGenLLVM: a flattened LoweredFunc -> one LLVM module with the kernel's entry function (ABI in
// codegen/kernel_abi.hpp). This file holds the class, its scopes and the statements; expressions,
// memory and loops are in codegen_expr.hpp, codegen_memory.hpp and codegen_loops.hpp, and
// codegen/llvm/codegen.hpp includes them all. Semantics are the interpreter's (ir/dtype_arith.hpp, interp/).
#pragma once

#include <cctype>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/codegen/kernel_abi.hpp"
#include "loom/codegen/llvm/float_bits.hpp"
#include "loom/codegen/llvm/llvm_includes.hpp"
#include "loom/codegen/llvm/target_machine.hpp"
#include "loom/ir/amx_tile_product.hpp"
#include "loom/ir/dtype_arith.hpp"
#include "loom/ir/extern_c.hpp"
#include "loom/ir/extern_call.hpp"
#include "loom/ir/lane_runs.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/printer.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/lower/lowered_func.hpp"

namespace loom::codegen {

/// The symbol of f's entry function in the module and the object file.
inline std::string entry_symbol(const LoweredFunc& f) {
  std::string s = "loom_";
  for (char c : f.name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return s;
}

class CodeGenLLVM {
 public:
  CodeGenLLVM(llvm::LLVMContext& context, const LoweredFunc& f, const ResolvedTarget& target,
              const llvm::DataLayout& layout)
      : ctx_(context), func_(f), target_(target), builder_(context), floats_(builder_, target.has_f16c) {
    module_ = std::make_unique<llvm::Module>(entry_symbol(f), context);
    module_->setTargetTriple(target.triple);
    module_->setDataLayout(layout);
    if (target.fast_math) builder_.setFastMathFlags(llvm::FastMathFlags::getFast());
  }

  /// Generates the module. Throws loom::Error for IR the backend cannot compile (an unknown call)
  /// and InternalError for IR that was not lowered.
  std::unique_ptr<llvm::Module> generate();

 private:
  // ---- types ---------------------------------------------------------------------------------
  llvm::Type* ptr_type() { return llvm::PointerType::getUnqual(ctx_); }
  llvm::Type* i32_type() { return builder_.getInt32Ty(); }
  llvm::Type* i64_type() { return builder_.getInt64Ty(); }
  llvm::Type* with_lanes(llvm::Type* element, int lanes) {
    return lanes > 1 ? llvm::FixedVectorType::get(element, static_cast<unsigned>(lanes)) : element;
  }
  /// The register type of a value: bool is i1, float16/bfloat16 compute in float.
  llvm::Type* value_type(DType t) {
    if (t.is_handle()) return ptr_type();
    llvm::Type* e = nullptr;
    if (t.is_bool()) {
      e = builder_.getInt1Ty();
    } else if (t.is_integral()) {
      e = builder_.getIntNTy(t.bits);
    } else if (t.is_float()) {
      e = (t.code == TypeCode::Float && t.bits == 64) ? builder_.getDoubleTy() : builder_.getFloatTy();
    } else {
      throw InternalError(cat("no LLVM type for ", t.str()));
    }
    return with_lanes(e, t.lanes);
  }
  /// The memory type of one element: bool takes a byte, float16/bfloat16 are their 16 bits.
  llvm::Type* memory_type(DType element) {
    if (element.is_bool()) return builder_.getInt8Ty();
    if (element.is_float() && element.bits == 16) return builder_.getInt16Ty();
    return value_type(element.element_of());
  }
  static bool is_compute_f32(DType t) { return t.is_float() && !(t.code == TypeCode::Float && t.bits == 64); }

  // ---- scopes --------------------------------------------------------------------------------
  /// A buffer variable: its address and its alias scope (-1: unknown provenance, no metadata).
  struct BufferBinding {
    llvm::Value* ptr = nullptr;
    int scope = -1;
    std::string name;
    /// The bytes of this function's own stack slot (emit_allocate); 0 for other memory, and for a
    /// slot a parallel loop's body captured (its threads may share it: emit_parallel_for zeroes it,
    /// and so must any other code that outlines a body).
    int64_t slot_bytes = 0;
    /// One of the function's parameters (memory the caller owns), not memory the function allocated:
    /// the stores pragma "nontemporal_stores" streams (codegen_memory.hpp).
    bool argument = false;
  };
  std::unordered_map<const VarNode*, std::vector<llvm::Value*>> vars_;
  std::unordered_map<const VarNode*, std::vector<BufferBinding>> buffers_;

  void bind(const Var& v, llvm::Value* value) { vars_[v.get()].push_back(value); }
  void unbind(const Var& v) { vars_[v.get()].pop_back(); }
  void bind_buffer(const Var& v, BufferBinding b) { buffers_[v.get()].push_back(std::move(b)); }
  void unbind_buffer(const Var& v) { buffers_[v.get()].pop_back(); }
  bool is_bound(const VarNode* v) const {
    auto a = vars_.find(v);
    auto b = buffers_.find(v);
    return (a != vars_.end() && !a->second.empty()) || (b != buffers_.end() && !b->second.empty());
  }
  [[noreturn]] void unbound(const VarNode* v) const {
    throw Error(cat("kernel '", func_.name, "' uses variable '", v->name,
                    "' outside any loop, let or allocation that defines it, and it is neither a parameter "
                    "nor a size variable of the kernel; the lowering left it unbound"));
  }
  llvm::Value* lookup(const VarNode* v) {
    auto it = vars_.find(v);
    if (it != vars_.end() && !it->second.empty()) return it->second.back();
    auto b = buffers_.find(v);
    if (b != buffers_.end() && !b->second.empty()) return b->second.back().ptr;  // a handle used as a value
    unbound(v);
  }
  const BufferBinding& lookup_buffer(const Var& v) {
    auto it = buffers_.find(v.get());
    if (it == buffers_.end() || it->second.empty()) {
      if (is_bound(v.get()))
        throw InternalError(cat("'", v.name(), "' is used as a buffer but has type ", v.dtype().str()));
      unbound(v.get());
    }
    return it->second.back();
  }

  // ---- the function being generated (the entry, or an outlined parallel loop body) ------------
  struct FunctionState {
    llvm::Function* function = nullptr;
    llvm::BasicBlock* alloca_block = nullptr;  // static allocas go here, ahead of everything else
    llvm::Value* ctx = nullptr;                // the runtime::CallContext*
    std::vector<llvm::Value*> heap;            // live heap allocations, freed on every exit
    int64_t stack_bytes = 0;
  };
  FunctionState fn_;

  /// Creates a function `name` returning i32 with `params`, sets it up as the current one.
  llvm::Function* begin_function(const std::string& name, const std::vector<llvm::Type*>& params,
                                 llvm::GlobalValue::LinkageTypes linkage);
  llvm::AllocaInst* static_alloca(llvm::Type* type, uint64_t align, const char* name);

  /// Reports `message` into the call context, frees this function's heap memory, returns -1.
  void emit_error_return(const std::string& message);
  /// When `failed` (i1) holds: emit_error_return(message) (or, with an empty message, return -1
  /// because a callee already reported). The error path is marked unlikely.
  void fail_if(llvm::Value* failed, const std::string& message);
  llvm::MDNode* unlikely_weights() { return llvm::MDBuilder(ctx_).createBranchWeights(1, 1 << 20); }

  // ---- runtime functions -----------------------------------------------------------------------
  llvm::FunctionCallee runtime_function(const char* name, llvm::Type* result,
                                        std::vector<llvm::Type*> params) {
    llvm::FunctionCallee f =
        module_->getOrInsertFunction(name, llvm::FunctionType::get(result, params, false));
    if (auto* fn = llvm::dyn_cast<llvm::Function>(f.getCallee())) fn->addFnAttr(llvm::Attribute::NoUnwind);
    return f;
  }
  llvm::Value* string_constant(const std::string& s) {
    auto it = strings_.find(s);
    if (it != strings_.end()) return it->second;
    llvm::Value* g = builder_.CreateGlobalString(s, ".str", 0, module_.get());
    strings_.emplace(s, g);
    return g;
  }
  std::unordered_map<std::string, llvm::Value*> strings_;

  // ---- statements (this file) ------------------------------------------------------------------
  void emit_stmt(const Stmt& s);
  void emit_let_stmt(const LetStmtNode* op);
  void emit_if(const IfThenElseNode* op);
  void emit_assert(const AssertStmtNode* op);
  void emit_evaluate(const EvaluateNode* op);
  void emit_extern_stage(const CallNode* call);
  void emit_amx_tile_product(const CallNode* call);  // codegen_amx.hpp
  [[noreturn]] void not_lowered(const char* what) const {
    throw InternalError(cat("the LLVM backend was given kernel '", func_.name, "' with a ", what,
                            " node: the function was not lowered (run the lowering pipeline first)"));
  }

  // ---- expressions (codegen_expr.hpp) ----------------------------------------------------------
  llvm::Value* emit(const Expr& e);
  llvm::Value* emit_binary(const Expr& e);
  llvm::Value* emit_int_division(const Expr& e, IRNodeKind op, const Expr& a, const Expr& b);
  llvm::Value* emit_compare(IRNodeKind op, const Expr& a, const Expr& b);
  llvm::Value* emit_cast(DType to, const Expr& value);
  llvm::Value* emit_ramp(const RampNode* op);
  llvm::Value* emit_call(const CallNode* op);
  llvm::Value* emit_if_then_else(const CallNode* op);
  llvm::Value* emit_math(const CallNode* op);
  llvm::Value* emit_extern_c(const CallNode* op);
  llvm::Value* emit_reinterpret(const CallNode* op);
  llvm::Value* emit_llvm_intrinsic(const CallNode* op);
  llvm::Value* emit_let(const LetNode* op);
  llvm::Value* float_constant(DType t, double value);
  /// Rounds a float result to its type (float16/bfloat16); float32/float64 are already rounded.
  llvm::Value* round_to(DType t, llvm::Value* v);
  llvm::Value* to_bool(llvm::Value* v);
  llvm::Value* any_lane(llvm::Value* mask);
  llvm::Value* lane0(llvm::Value* v) {
    return v->getType()->isVectorTy() ? builder_.CreateExtractElement(v, uint64_t{0}) : v;
  }
  /// An integer index as i64 (or a vector of i64), for addresses; see codegen_expr.hpp.
  llvm::Value* emit_index(const Expr& e);
  llvm::Value* extend_to_i64(llvm::Value* v, DType t);

  /// Lanes whose evaluation is active inside a vector if_then_else (null: all): loads and integer
  /// divisions of masked lanes must not happen, as in the interpreter's lane-by-lane evaluation.
  llvm::Value* mask_ = nullptr;

  // ---- memory (codegen_memory.hpp) -------------------------------------------------------------
  llvm::Value* emit_load(const LoadNode* op);
  void emit_store(const StoreNode* op);
  void emit_allocate(const AllocateNode* op);
  void emit_prefetch(const PrefetchNode* op);
  llvm::Value* from_memory(DType element, llvm::Value* raw);
  llvm::Value* to_memory(DType element, llvm::Value* value);
  /// The memory form of a stored value: a copy of 16-bit floats moves their bits.
  llvm::Value* stored_value(DType element, const Expr& value);
  llvm::Value* address_of(const LoadNode* op);
  /// A gather or scatter whose lanes cover a few contiguous runs (ir/lane_runs.hpp): contiguous
  /// accesses of the runs and a shuffle. Null (nothing emitted) where the index has no such form.
  llvm::Value* load_runs(const Expr& index, llvm::Type* mem, llvm::Align align, llvm::Value* active,
                         llvm::Value* buffer, int scope);
  bool store_runs(const Expr& index, llvm::Value* v, llvm::Align align, llvm::Value* active,
                  llvm::Value* buffer, int scope);
  std::vector<std::pair<llvm::Value*, llvm::Value*>> run_accesses(const LaneOffsets& offsets,
                                                                  const LaneRuns& runs, llvm::Type* mem,
                                                                  llvm::Value* buffer, llvm::Value* active);
  void create_alias_scopes();
  void tag_access(llvm::Instruction* access, int scope);
  llvm::Instruction* nontemporal_store(llvm::Value* v, llvm::Value* ptr, llvm::Align align, int scope,
                                       llvm::Value* active);
  llvm::Value* all_lanes(llvm::Value* active);
  /// `cond ? then() : otherwise()` as two blocks that a PHI joins, so that each side's code runs
  /// only on its branch (blocks `name`.then, `name`.else, `name`.end).
  template <typename Then, typename Else>
  llvm::Value* emit_branches(llvm::Value* cond, const std::string& name, Then then, Else otherwise) {
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, name + ".then", fn_.function);
    llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(ctx_, name + ".else", fn_.function);
    llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, name + ".end", fn_.function);
    builder_.CreateCondBr(cond, then_bb, else_bb);
    builder_.SetInsertPoint(then_bb);
    llvm::Value* a = then();
    llvm::BasicBlock* then_end = builder_.GetInsertBlock();  // `then` may have added blocks
    builder_.CreateBr(merge);
    builder_.SetInsertPoint(else_bb);
    llvm::Value* b = otherwise();
    llvm::BasicBlock* else_end = builder_.GetInsertBlock();
    builder_.CreateBr(merge);
    builder_.SetInsertPoint(merge);
    llvm::PHINode* phi = builder_.CreatePHI(a->getType(), 2);
    phi->addIncoming(a, then_end);
    phi->addIncoming(b, else_end);
    return phi;
  }
  void store_fence();
  int nontemporal_depth_ = 0;  // loops marked nontemporal_stores around the statement being generated
  // Buffers the outermost of those loops loads: stores to them stay cached (a loop that updates its
  // output in place would otherwise stream every line and read it straight back).
  std::unordered_set<const VarNode*> nontemporal_loaded_;
  llvm::MDNode* alias_domain_ = nullptr;
  std::vector<llvm::MDNode*> scope_nodes_;  // one per buffer of the function
  std::vector<llvm::MDNode*> scope_lists_, noalias_lists_;
  std::unordered_map<const VarNode*, int> allocation_scopes_;

  // ---- loops (codegen_loops.hpp) ---------------------------------------------------------------
  void emit_for(const ForNode* op);
  void emit_serial_loop(const ForNode* op, llvm::Value* min, llvm::Value* extent, llvm::MDNode* hints);
  void emit_parallel_for(const ForNode* op);
  bool enter_nontemporal(const ForNode* op);
  llvm::MDNode* loop_hints(const ForNode* op);
  int parallel_count_ = 0;
  int thread_loops_ = 0;  // ThreadBinding loops around the statement being generated

  llvm::LLVMContext& ctx_;
  const LoweredFunc& func_;
  ResolvedTarget target_;
  llvm::IRBuilder<> builder_;
  FloatBits floats_;
  std::unique_ptr<llvm::Module> module_;
};

// =============================================================================================
// The entry function and the function helpers

inline llvm::Function* CodeGenLLVM::begin_function(const std::string& name,
                                                   const std::vector<llvm::Type*>& params,
                                                   llvm::GlobalValue::LinkageTypes linkage) {
  auto* type = llvm::FunctionType::get(i32_type(), params, false);
  llvm::Function* f = llvm::Function::Create(type, linkage, name, module_.get());
  f->addFnAttr(llvm::Attribute::NoUnwind);
  f->addFnAttr("target-cpu", target_.cpu);
  if (!target_.features.empty()) f->addFnAttr("target-features", target_.features);
  if (target_.fast_math) f->addFnAttr("unsafe-fp-math", "true");
  fn_ = FunctionState();
  fn_.function = f;
  fn_.alloca_block = llvm::BasicBlock::Create(ctx_, "allocas", f);
  builder_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", f));
  return f;
}

inline llvm::AllocaInst* CodeGenLLVM::static_alloca(llvm::Type* type, uint64_t align, const char* name) {
  llvm::IRBuilder<> at(fn_.alloca_block);
  llvm::AllocaInst* a = at.CreateAlloca(type, nullptr, name);
  a->setAlignment(llvm::Align(align));
  return a;
}

inline void CodeGenLLVM::emit_error_return(const std::string& message) {
  if (!message.empty()) {
    builder_.CreateCall(runtime_function("loom_rt_error", builder_.getVoidTy(), {ptr_type(), ptr_type()}),
                        {fn_.ctx, string_constant(message)});
  }
  llvm::FunctionCallee free_fn = runtime_function("loom_rt_free", builder_.getVoidTy(), {ptr_type()});
  for (auto it = fn_.heap.rbegin(); it != fn_.heap.rend(); ++it) builder_.CreateCall(free_fn, {*it});
  builder_.CreateRet(builder_.getInt32(-1));
}

inline void CodeGenLLVM::fail_if(llvm::Value* failed, const std::string& message) {
  if (auto* c = llvm::dyn_cast<llvm::ConstantInt>(failed); c && c->isZero()) return;
  llvm::BasicBlock* error = llvm::BasicBlock::Create(ctx_, "error", fn_.function);
  llvm::BasicBlock* ok = llvm::BasicBlock::Create(ctx_, "ok", fn_.function);
  builder_.CreateCondBr(failed, error, ok, unlikely_weights());
  builder_.SetInsertPoint(error);
  emit_error_return(message);
  builder_.SetInsertPoint(ok);
}

inline std::unique_ptr<llvm::Module> CodeGenLLVM::generate() {
  create_alias_scopes();
  llvm::Function* entry =
      begin_function(entry_symbol(func_), {ptr_type(), ptr_type(), ptr_type(), ptr_type()},
                     llvm::GlobalValue::ExternalLinkage);
  llvm::Argument* buffers = entry->getArg(0);
  llvm::Argument* ints = entry->getArg(1);
  llvm::Argument* floats = entry->getArg(2);
  fn_.ctx = entry->getArg(3);
  buffers->setName("buffers");
  ints->setName("ints");
  floats->setName("floats");
  fn_.ctx->setName("ctx");
  for (llvm::Argument* a : {buffers, ints, floats}) {
    entry->addParamAttr(a->getArgNo(), llvm::Attribute::NoAlias);
    entry->addParamAttr(a->getArgNo(), llvm::Attribute::ReadOnly);
  }

  const runtime::KernelSignature sig = runtime::kernel_signature(func_);
  for (size_t i = 0; i < sig.buffers.size(); ++i) {
    llvm::Value* slot = builder_.CreateConstInBoundsGEP1_64(ptr_type(), buffers, i);
    llvm::Value* p = builder_.CreateLoad(ptr_type(), slot, sig.buffers[i].name());
    std::string name;
    for (const FuncParam& param : func_.params)
      if (param.kind == FuncParam::Kind::Buffer && param.buffer.data.same_as(sig.buffers[i]))
        name = param.buffer.name;
    bind_buffer(sig.buffers[i], BufferBinding{p, static_cast<int>(i), name, 0, true});
  }
  for (size_t i = 0; i < sig.ints.size(); ++i) {
    llvm::Value* slot = builder_.CreateConstInBoundsGEP1_64(i64_type(), ints, i);
    llvm::Value* v = builder_.CreateLoad(i64_type(), slot, sig.ints[i].name());
    llvm::Type* t = value_type(sig.ints[i].dtype());
    if (t != i64_type())
      v = t->isIntegerTy(1) ? builder_.CreateICmpNE(v, builder_.getInt64(0)) : builder_.CreateTrunc(v, t);
    bind(sig.ints[i], v);
  }
  for (size_t i = 0; i < sig.floats.size(); ++i) {
    llvm::Value* slot = builder_.CreateConstInBoundsGEP1_64(builder_.getDoubleTy(), floats, i);
    llvm::Value* v = builder_.CreateLoad(builder_.getDoubleTy(), slot, sig.floats[i].name());
    // The caller rounded the value to the parameter's type, so narrowing it is exact.
    if (is_compute_f32(sig.floats[i].dtype())) v = builder_.CreateFPTrunc(v, builder_.getFloatTy());
    bind(sig.floats[i], v);
  }

  emit_stmt(func_.body);
  if (!builder_.GetInsertBlock()->getTerminator()) builder_.CreateRet(builder_.getInt32(0));
  // The alloca block runs first and falls through to the code.
  for (llvm::Function& f : *module_) {
    if (f.isDeclaration()) continue;
    llvm::BasicBlock& first = f.getEntryBlock();
    if (!first.getTerminator()) llvm::IRBuilder<>(&first).CreateBr(first.getNextNode());
  }
  return std::move(module_);
}

// =============================================================================================
// Statements

inline void CodeGenLLVM::emit_stmt(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case IRNodeKind::LetStmt: return emit_let_stmt(s.as<LetStmtNode>());
    case IRNodeKind::AttrStmt: return emit_stmt(s.as<AttrStmtNode>()->body);
    case IRNodeKind::AssertStmt: return emit_assert(s.as<AssertStmtNode>());
    case IRNodeKind::Store: return emit_store(s.as<StoreNode>());
    case IRNodeKind::Allocate: return emit_allocate(s.as<AllocateNode>());
    case IRNodeKind::For: return emit_for(s.as<ForNode>());
    case IRNodeKind::IfThenElse: return emit_if(s.as<IfThenElseNode>());
    case IRNodeKind::Seq:
      for (const Stmt& child : s.as<SeqNode>()->seq) emit_stmt(child);
      return;
    case IRNodeKind::Evaluate: return emit_evaluate(s.as<EvaluateNode>());
    case IRNodeKind::Barrier:
      // Outside thread-bound loops a barrier has no one to wait for. Inside them the CPU runs the
      // "threads" one after another, which cannot honour it: refuse rather than compute wrongly.
      if (thread_loops_ > 0)
        throw Error(
            cat("kernel '", func_.name, "' synchronizes loops bound to GPU threads with a barrier; the CPU ",
                "backend runs thread-bound loops serially and cannot honour it: build it for a GPU target ",
                "(or run it with Target::cuda_sim()), or remove the bind() calls for the CPU"));
      return;
    case IRNodeKind::Prefetch: return emit_prefetch(s.as<PrefetchNode>());
    case IRNodeKind::Provide: not_lowered("Provide");
    case IRNodeKind::Realize: not_lowered("Realize");
    default: break;
  }
  throw InternalError(cat("LLVM backend: unknown statement kind ", kind_name(s.kind())));
}

inline void CodeGenLLVM::emit_let_stmt(const LetStmtNode* op) {
  if (op->var.dtype().is_handle()) {
    // A second name for a buffer keeps its alias scope; any other address has none.
    if (const VarNode* source = op->value.as<VarNode>();
        source && buffers_.count(source) && !buffers_[source].empty()) {
      BufferBinding b = buffers_[source].back();
      bind_buffer(op->var, b);
    } else {
      bind_buffer(op->var, BufferBinding{emit(op->value), -1, op->var.name()});
    }
    emit_stmt(op->body);
    unbind_buffer(op->var);
    return;
  }
  llvm::Value* v = emit(op->value);
  v->setName(op->var.name());
  bind(op->var, v);
  emit_stmt(op->body);
  unbind(op->var);
}

inline void CodeGenLLVM::emit_if(const IfThenElseNode* op) {
  const CallNode* hint = op->condition.as<CallNode>();
  const bool likely_true = hint && hint->name == intrinsic::likely;
  llvm::Value* c = to_bool(lane0(emit(op->condition)));  // a vector condition: lane 0, as the interpreter
  llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn_.function);
  llvm::BasicBlock* else_bb =
      op->else_case.defined() ? llvm::BasicBlock::Create(ctx_, "else", fn_.function) : nullptr;
  llvm::BasicBlock* merge = llvm::BasicBlock::Create(ctx_, "endif", fn_.function);
  llvm::MDNode* weights = likely_true ? llvm::MDBuilder(ctx_).createBranchWeights(1 << 20, 1) : nullptr;
  builder_.CreateCondBr(c, then_bb, else_bb ? else_bb : merge, weights);
  builder_.SetInsertPoint(then_bb);
  emit_stmt(op->then_case);
  if (!builder_.GetInsertBlock()->getTerminator()) builder_.CreateBr(merge);
  if (else_bb) {
    builder_.SetInsertPoint(else_bb);
    emit_stmt(op->else_case);
    if (!builder_.GetInsertBlock()->getTerminator()) builder_.CreateBr(merge);
  }
  builder_.SetInsertPoint(merge);
}

inline void CodeGenLLVM::emit_assert(const AssertStmtNode* op) {
  llvm::Value* c = to_bool(lane0(emit(op->condition)));
  fail_if(builder_.CreateNot(c), op->message.empty() ? std::string("assertion failed") : op->message);
  emit_stmt(op->body);
}

inline void CodeGenLLVM::emit_evaluate(const EvaluateNode* op) {
  const Expr& v = op->value;
  if (const CallNode* call = v.as<CallNode>(); call && call->name == intrinsic::extern_stage)
    return emit_extern_stage(call);
  if (const CallNode* call = v.as<CallNode>(); call && call->name == intrinsic::amx_tile_product)
    return emit_amx_tile_product(call);
  // A bare handle or string has nothing to evaluate; anything else may fail (a division) or call.
  if (v.dtype().is_handle() && !v.as<CallNode>()) return;
  (void)emit(v);
}

inline void CodeGenLLVM::emit_extern_stage(const CallNode* call) {
  ExternStageCall decoded = ExternStageCall::decode(call);
  std::vector<llvm::Value*> words;
  auto add = [&](const ExternBufferArg& b) {
    words.push_back(builder_.CreatePtrToInt(lookup_buffer(b.data).ptr, i64_type()));
    words.push_back(builder_.getInt64(static_cast<uint64_t>(ExternStageCall::pack_dtype(b.dtype))));
    words.push_back(builder_.getInt64(b.shape.size()));
    for (const Expr& e : b.shape) words.push_back(extend_to_i64(emit(e), e.dtype()));
    for (const Expr& e : b.strides) words.push_back(extend_to_i64(emit(e), e.dtype()));
  };
  for (const ExternBufferArg& b : decoded.inputs) add(b);
  for (const ExternBufferArg& b : decoded.outputs) add(b);
  llvm::AllocaInst* array = static_alloca(llvm::ArrayType::get(i64_type(), words.size()), 8, "extern_args");
  for (size_t i = 0; i < words.size(); ++i)
    builder_.CreateStore(words[i], builder_.CreateConstInBoundsGEP1_64(i64_type(), array, i));
  llvm::FunctionCallee stage = runtime_function("loom_rt_extern_stage", i32_type(),
                                                {ptr_type(), i64_type(), i32_type(), i32_type(), ptr_type()});
  llvm::Value* status =
      builder_.CreateCall(stage, {fn_.ctx, builder_.getInt64(static_cast<uint64_t>(decoded.function_id)),
                                  builder_.getInt32(static_cast<uint32_t>(decoded.inputs.size())),
                                  builder_.getInt32(static_cast<uint32_t>(decoded.outputs.size())), array});
  fail_if(builder_.CreateICmpNE(status, builder_.getInt32(0)), "");
}

}  // namespace loom::codegen
