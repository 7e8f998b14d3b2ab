// KernelEmitter's statements (kernel_emitter.hpp): blocks, lets, stores, allocations in
// registers and shared memory, loops (with their ranges for later indices), barriers, grid flags
// and thread allreduces.
#pragma once

#include "loom/codegen/cuda/emit_expr.hpp"

namespace loom::cuda::detail {

inline void KernelEmitter::stmt(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case IRNodeKind::Seq:
      for (const Stmt& c : s.as<SeqNode>()->seq) stmt(c);
      return;
    case IRNodeKind::LetStmt: return let_stmt(s.as<LetStmtNode>());
    case IRNodeKind::AttrStmt: return stmt(s.as<AttrStmtNode>()->body);
    case IRNodeKind::AssertStmt: {
      const AssertStmtNode* op = s.as<AssertStmtNode>();
      line(cat("if (!", paren(emit(op->condition, -1)), ") __trap();  // ", one_line(op->message)));
      return stmt(op->body);
    }
    case IRNodeKind::Store: return store(s.as<StoreNode>());
    case IRNodeKind::Allocate: return allocate(s.as<AllocateNode>());
    case IRNodeKind::For: return loop(s.as<ForNode>());
    case IRNodeKind::IfThenElse: {
      const IfThenElseNode* op = s.as<IfThenElseNode>();
      line(cat("if ", paren(emit(op->condition, -1)), " {"));
      block(op->then_case);
      if (op->else_case.defined()) {
        line("} else {");
        block(op->else_case);
      }
      line("}");
      return;
    }
    case IRNodeKind::Evaluate: return evaluate(s.as<EvaluateNode>()->value);
    case IRNodeKind::Barrier: {
      const std::string& scope = s.as<BarrierNode>()->scope;
      if (is_shared_scope(scope)) return line("__syncthreads();");
      if (scope == scope::warp) return line("__syncwarp();");
      fail(cat("it has a barrier among the threads sharing memory scope '", scope,
               "'; CUDA kernels have \"shared\" (__syncthreads) and \"warp\" (__syncwarp) barriers"));
    }
    case IRNodeKind::Prefetch: return;
    default: break;
  }
  throw InternalError(cat("CUDA codegen: ", kind_name(s.kind()), " statement in lowered code"));
}

inline std::string KernelEmitter::paren(const std::string& text) {
  if (!text.empty() && text.front() == '(' && text.back() == ')') {
    int depth = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
      if (depth == 0 && i + 1 < text.size()) return "(" + text + ")";
    }
    return text;
  }
  return "(" + text + ")";
}

inline std::string KernelEmitter::one_line(std::string text) {
  for (char& c : text)
    if (c == '\n') c = ' ';
  return text;
}

inline void KernelEmitter::block(const Stmt& s) {
  ++indent_;
  auto saved = vector_loads_;
  stmt(s);
  vector_loads_ = std::move(saved);
  --indent_;
}

inline void KernelEmitter::let_stmt(const LetStmtNode* op) {
  DType t = op->var.dtype();
  note_type(t);
  hoist_vector_loads({op->value});
  if (t.is_scalar()) {
    std::string value = emit(op->value, -1);
    line(cat("const ", c_type(t), " ", bind(op->var), " = ", value, ";"));
  } else {
    std::string lanes;
    for (int i = 0; i < t.lanes; ++i) lanes += (i ? ", " : "") + emit(op->value, i);
    std::string name = bind(op->var);
    array_vars_.insert(op->var.get());
    line(cat("const ", c_type(t), " ", name, "[", t.lanes, "] = {", lanes, "};"));
  }
  stmt(op->body);
  unbind(op->var);
}

inline void KernelEmitter::store(const StoreNode* op) {
  DType t = op->value.dtype();
  hoist_vector_loads({op->value, op->index, op->predicate});
  const std::string buffer = name_of(op->buffer);
  if (t.is_scalar()) {
    std::string text = cat(buffer, "[", emit(op->index, -1), "] = ", emit(op->value, -1), ";");
    if (op->predicate.defined()) text = cat("if ", paren(emit(op->predicate, -1)), " ", text);
    return line(text);
  }
  const VectorAccess access = emitted_access(op->buffer, t, vector_access(t, op->index, op->predicate));
  std::vector<std::string> lanes;
  for (int i = 0; i < t.lanes; ++i) lanes.push_back(emit(op->value, i));
  std::string list;
  for (size_t i = 0; i < lanes.size(); ++i) list += (i ? ", " : "") + lanes[i];
  if (access.vector) {
    note_alignment(op->buffer, access.bytes);
    // A guard whose lanes agree (ir/vector_access.hpp) is lane 0's.
    const std::string guard = access.guarded ? cat("if ", paren(emit(op->predicate, 0)), " ") : "";
    const std::string address = cat(buffer, " + ", emit(op->index.as<RampNode>()->base, -1));
    if (std::string type = vector_access_type(t, access); !type.empty())
      return line(cat(guard, "*reinterpret_cast<", type, "*>(", address, ") = make_", type, "(", list, ");"));
    // No built-in vector type: the lanes go through an aligned array, moved as raw bits.
    const std::string tmp = fresh(op->buffer.name() + "_lanes");
    line(guard + "{");
    ++indent_;
    line(cat("alignas(", access.bytes, ") const ", c_type(t), " ", tmp, "[", t.lanes, "] = {", list, "};"));
    copy_vector_pieces(address, tmp, access);
    --indent_;
    return line("}");
  }
  // Lane by lane: all values first, as one vector store would read them.
  const std::string tmp = fresh(op->buffer.name() + "_lanes");
  line(cat("{"));
  ++indent_;
  line(cat("const ", c_type(t), " ", tmp, "[", t.lanes, "] = {", list, "};"));
  for (int i = 0; i < t.lanes; ++i) {
    std::string text = cat(buffer, "[", emit(op->index, i), "] = ", tmp, "[", i, "];");
    if (op->predicate.defined()) text = cat("if ", paren(emit(op->predicate, i)), " ", text);
    line(text);
  }
  --indent_;
  line("}");
}

inline void KernelEmitter::allocate(const AllocateNode* op) {
  note_type(op->dtype);
  const std::string& scope = op->scope;
  const bool shared = is_shared_scope(scope);
  const bool local = is_local_scope(scope);
  if (!shared && !local) {
    fail(cat("it allocates buffer '", op->buffer.name(), "' in memory scope '",
             scope.empty() ? scope::global : scope,
             "' inside the kernel; a CUDA kernel allocates \"shared\" (one per block) or \"local\" (one per "
             "thread) memory; allocate global buffers outside the loops bound to blockIdx/threadIdx"));
  }
  const std::string type = c_type(op->dtype);
  const std::string name = bind(op->buffer);
  if (local) local_buffers_.insert(op->buffer.get());
  if (shared && (dynamic_ || merged_)) {
    line(cat(type, "* ", name, " = reinterpret_cast<", type, "*>(loom_smem + ",
             emit(dynamic_offsets_.at(op), -1), ");  // ", emit(simplify(allocation_elements(op)), -1),
             " elements of ", dynamic_ ? "dynamic " : "", "shared memory"));
  } else {
    const Expr elements = simplify(allocation_elements(op));  // as_const_int points into it
    const int64_t* n = as_const_int(elements);
    // A per-thread array whose size varies with the loops around it (a stage computed inside a
    // fused, then split loop) gets the largest size those loops' ranges allow.
    int64_t most = 0;
    if (!n && local) {
      const ConstIntBound bound = loop_ranges_.const_int_bound(elements);
      if (bound.max_value > 0 && bound.max_value <= kMaxVaryingLocalElements) {
        most = bound.max_value;
        n = &most;
      }
    }
    if (!n)
      fail(cat("the size of ", scope, " buffer '", op->buffer.name(), "' is ",
               to_string(simplify(allocation_elements(op))),
               ", not a constant; per-thread arrays need a constant size: split the loops the stage is "
               "computed in by constant factors"));
    if (shared) {
      line(cat("__shared__ __align__(16) ", type, " ", name, "[", *n, "];"));
      code_.static_shared_bytes += *n * op->dtype.bytes();
    } else {
      // 16-byte arrays may be read as vectors; arrays of 16-bit elements are also read in 32-bit
      // pairs (the register fragments of warp intrinsics), so they are aligned to 4 bytes at least.
      const int64_t bytes = *n * op->dtype.bytes();
      const int align = bytes % 16 == 0          ? 16
                        : op->dtype.bytes() >= 4 ? 0
                        : bytes % 8 == 0         ? 8
                        : bytes % 4 == 0         ? 4
                                                 : 0;
      line(cat(align ? cat("__align__(", align, ") ") : std::string(), type, " ", name, "[", *n, "];"));
    }
  }
  stmt(op->body);
  unbind(op->buffer);
}

inline void KernelEmitter::loop(const ForNode* op) {
  loop_ranges_.bind(op->loop_var, Range(op->min, op->extent));
  const std::string type = c_type(op->loop_var.dtype());
  const int d = op->kind == ForKind::ThreadBinding ? find_launch_index(op->thread_tag) : -1;
  if (d >= 0) {
    std::string value = cat("(", type, ")", launch_index_name(d));  // a tag is its CUDA name
    if (!is_zero(op->min)) value = cat(value, " + ", emit(op->min, -1));
    line(cat("const ", type, " ", bind(op->loop_var), " = ", value, ";"));
    stmt(op->body);
    unbind(op->loop_var);
    return;
  }
  const std::string min = emit(op->min, -1), extent = emit(op->extent, -1);
  const std::string name = bind(op->loop_var);
  bool contract = false;
  for (const LoopAnnotation& a : op->annotations)
    contract = contract || ((a.key == "fp_contract" || a.key == "pragma_fp_contract") && !is_zero(a.value));
  contract_depth_ += contract;
  if (op->kind == ForKind::Unrolled || op->kind == ForKind::ThreadBinding) line("#pragma unroll");
  std::string end = is_zero(op->min) ? extent : cat(min, " + ", extent);
  std::string comment = op->kind == ForKind::ThreadBinding ? cat("  // ", op->thread_tag) : std::string();
  line(cat("for (", type, " ", name, " = ", min, "; ", name, " < ", end, "; ++", name, ") {", comment));
  block(op->body);
  line("}");
  contract_depth_ -= contract;
  unbind(op->loop_var);
}

inline bool KernelEmitter::is_zero(const Expr& e) {
  const int64_t* c = as_const_int(e);
  return c && *c == 0;
}

inline void KernelEmitter::evaluate(const Expr& value) {
  if (const CallNode* call = value.as<CallNode>()) {
    if (call->name == loom::intrinsic::thread_allreduce) return allreduce(call);
    if (call->name == loom::intrinsic::warp_intrinsic) return warp_intrinsic(call);
    if (call->name == loom::intrinsic::extern_stage)
      fail("it calls an extern stage, which runs on the host only");
  }
  if (value.as<IntImmNode>()) return;
  line(cat("(void)", paren(emit(value, -1)), ";"));
}

/// The intrinsic's CUDA text for the operands' addresses (pointers of the buffers' own types).
inline void KernelEmitter::warp_intrinsic(const CallNode* call) {
  const WarpIntrinsicCall decoded = WarpIntrinsicCall::decode(call);
  const WarpIntrinsic* w = find_warp_intrinsic(decoded.name);
  if (!w) fail(cat("it calls warp intrinsic '", decoded.name, "', which is not registered"));
  if (decoded.operands.size() != w->operands.size())
    fail(cat("it calls warp intrinsic '", decoded.name, "' with ", decoded.operands.size(),
             " operands; it takes ", w->operands.size()));
  if (w->min_sm > code_.min_sm) {
    code_.min_sm = w->min_sm;
    code_.min_sm_reason = w->name;
  }
  for (size_t i = 0; i < decoded.operands.size(); ++i)
    if (decoded.operands[i].buffer.defined())
      note_alignment(decoded.operands[i].buffer, w->operands[i].align);
  std::vector<std::string> addresses;
  for (const WarpOperand& o : decoded.operands)
    addresses.push_back(o.buffer.defined() ? cat("(&", name_of(o.buffer), "[", emit(o.index, -1), "])")
                                           : emit(o.index, -1));  // a value operand
  std::istringstream text(w->cuda(addresses));
  for (std::string l; std::getline(text, l);) line(l);
}

inline void KernelEmitter::allreduce(const CallNode* call) {
  const ThreadAllreduce r = ThreadAllreduce::decode(call);
  std::array<bool, 3> reduced{false, false, false};
  for (const Var& v : r.threads) {
    auto it = thread_tag_of_.find(v.get());
    int d = it == thread_tag_of_.end() ? -1 : it->second;
    if (d < 0 || d >= 3)
      fail(cat("thread_allreduce reduces over '", v.name(),
               "', which is not the variable of an enclosing loop bound to threadIdx"));
    reduced[d] = true;
  }
  std::array<int64_t, 3> block{};
  for (int d = 0; d < 3; ++d) {
    if (block_[d] < 0)
      fail(cat("it has a cross-thread reduction but ", launch_index_name(d), " has the symbolic extent ",
               to_string(code_.kernel.extents[d]),
               "; a cross-thread reduction needs constant block dimensions (split the axis bound to it by "
               "a constant factor)"));
    block[d] = block_[d];
  }
  for (const Expr& v : r.values)
    if (v.dtype().is_vector()) fail("it has a cross-thread reduction of vectors; reduce scalars");
  emit_allreduce(*this, r, plan_allreduce(block, reduced));
}

}  // namespace loom::cuda::detail
