// Loop IR -> CUDA C: one `extern "C" __global__` function per kernel region of a lowered
// function, readable (names from the IR, one statement per line), for NVRTC.
#pragma once

#include <array>
#include <cctype>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/codegen/cuda/cuda_allreduce.hpp"
#include "loom/codegen/cuda/cuda_grid_flags.hpp"
#include "loom/codegen/cuda/cuda_types.hpp"
#include "loom/ir/analyzer.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/printer.hpp"
#include "loom/ir/shared_memory_layout.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/ir/thread_allreduce.hpp"
#include "loom/lower/split_host_device.hpp"

namespace loom::cuda {

/// Static shared memory above this needs the dynamic-shared opt-in (cudaFuncSetAttribute).
inline constexpr int64_t kStaticSharedLimit = 48 * 1024;

/// One shared buffer of a kernel, for reports and messages.
struct SharedBufferUse {
  std::string name;
  Expr bytes;           // host expression
  int64_t offset = -1;  // in the dynamic shared block, or -1 when static
};

/// A generated kernel and how to launch it.
struct KernelCode {
  DeviceKernel kernel;  // region, parameters, launch extents
  int64_t static_shared_bytes = 0;
  /// Bytes of dynamic shared memory (a host expression; 0 when the kernel uses none).
  Expr dynamic_shared_bytes;
  std::vector<SharedBufferUse> shared_buffers;
  /// Threads per block when the block dimensions are constants, else -1.
  int64_t threads_per_block = -1;
  /// Shared memory the planner saved by letting buffers with disjoint live ranges overlap.
  int64_t shared_bytes_saved = 0;
};

/// The CUDA translation of one lowered function.
struct CudaModule {
  std::string name;
  std::string source;
  Stmt host;  // see DeviceSplit
  std::vector<KernelCode> kernels;
};

namespace detail {

/// Whether `e` is a multiple of k for every value of its variables.
inline bool is_multiple_of(const Expr& e, int64_t k) {
  if (k == 1) return true;
  if (const int64_t* c = as_const_int(e)) return *c % k == 0;
  if (const auto* a = e.as<AddNode>()) return is_multiple_of(a->a, k) && is_multiple_of(a->b, k);
  if (const auto* s = e.as<SubNode>()) return is_multiple_of(s->a, k) && is_multiple_of(s->b, k);
  if (const auto* m = e.as<MulNode>()) return is_multiple_of(m->a, k) || is_multiple_of(m->b, k);
  return false;
}

/// Emits one kernel. Every variable the kernel binds gets a C name of its own, derived from
/// its IR name ("k.outer" -> "k_outer", then "k_outer_1", ...), so scopes never clash.
class KernelEmitter {
 public:
  KernelEmitter(std::ostringstream& os, KernelCode& code, std::unordered_set<std::string>& helpers,
                bool& uses_fp16, bool& uses_bf16)
      : os_(os), code_(code), helpers_(helpers), uses_fp16_(uses_fp16), uses_bf16_(uses_bf16) {}

  void emit() {
    DeviceKernel& k = code_.kernel;
    for (const char* reserved : {"threadIdx", "blockIdx", "blockDim", "gridDim", "loom_smem"})
      used_.insert(reserved);
    // Block dimensions, when constant, for __launch_bounds__ and allreduce plans.
    int64_t threads = 1;
    for (int d = 0; d < 3; ++d) {
      const int64_t* c = as_const_int(k.extents[d]);
      block_[d] = c ? *c : -1;
      if (!c) threads = -1;
      if (threads > 0) threads *= *c;
    }
    code_.threads_per_block = threads;
    plan_shared();

    std::vector<std::string> params;
    for (const KernelParam& p : k.params) {
      note_type(p.element);
      std::string name = bind(p.var);
      if (p.is_buffer) {
        params.push_back(cat(p.written ? "" : "const ", c_type(p.element), "* __restrict__ ", name));
      } else {
        params.push_back(cat(c_type(p.element), " ", name));
      }
    }
    std::string signature = cat("extern \"C\" __global__ void ");
    if (threads > 0) signature += cat("__launch_bounds__(", threads, ") ");
    signature += k.name + "(";
    for (size_t i = 0; i < params.size(); ++i) signature += (i ? ", " : "") + params[i];
    signature += ") {";
    os_ << signature << "\n";
    indent_ = 1;
    if (dynamic_) {
      line("extern __shared__ __align__(16) unsigned char loom_smem[];");
    } else if (merged_) {
      line(cat("__shared__ __align__(16) unsigned char loom_smem[", merged_bytes_, "];  // ",
               code_.shared_bytes_saved, " bytes fewer than one buffer each (shared-memory planner)"));
    }
    stmt(k.body);
    os_ << "}\n";
  }

  // ---- the interface emit_allreduce uses -----------------------------------------------------
  void line(const std::string& text) {
    for (int i = 0; i < indent_; ++i) os_ << "  ";
    os_ << text << "\n";
  }
  void indent(int delta) { indent_ += delta; }
  std::string fresh(const std::string& base) {
    std::string name = sanitize(base);
    if (!used_.count(name)) {
      used_.insert(name);
      return name;
    }
    for (int i = 1;; ++i) {
      std::string candidate = cat(name, "_", i);
      if (!used_.count(candidate)) {
        used_.insert(candidate);
        return candidate;
      }
    }
  }
  std::string expr(const Expr& e) { return emit(e, -1); }
  std::string combine(const ThreadAllreduce& r, size_t k, const std::vector<std::string>& lhs,
                      const std::vector<std::string>& rhs) {
    for (size_t i = 0; i < r.size(); ++i) {
      names_[r.lhs[i].get()].push_back(lhs[i]);
      names_[r.rhs[i].get()].push_back(rhs[i]);
    }
    std::string text = emit(r.combine[k], -1);
    for (size_t i = 0; i < r.size(); ++i) {
      names_[r.lhs[i].get()].pop_back();
      names_[r.rhs[i].get()].pop_back();
    }
    return text;
  }
  std::string thread_index(int d) const { return cat("(int)threadIdx.", "xyz"[d]); }
  std::string result_store(const ThreadAllreduce& r, size_t k, const std::string& value) {
    return cat(name_of(r.results[k]), "[0] = ", value, ";");
  }
  void note_shared(int64_t bytes) { code_.static_shared_bytes += bytes; }
  void use_shuffle() { helpers_.insert("shuffle"); }

 private:
  // ---- names ----------------------------------------------------------------------------------
  static std::string sanitize(const std::string& name) {
    std::string out;
    for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v_" + out;
    return out;
  }
  std::string bind(const Var& v) {
    std::string name = fresh(v.name());
    names_[v.get()].push_back(name);
    return name;
  }
  void unbind(const Var& v) { names_[v.get()].pop_back(); }
  std::string name_of(const Var& v) const {
    auto it = names_.find(v.get());
    if (it == names_.end() || it->second.empty())
      throw InternalError(cat("CUDA codegen: variable '", v.name(), "' used outside its scope in kernel ",
                              code_.kernel.name));
    return it->second.back();
  }

  void note_type(DType t) {
    if (t.is_float() && t.bits == 16) (t.is_bfloat() ? uses_bf16_ : uses_fp16_) = true;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(cat("CUDA codegen of kernel ", code_.kernel.name, ": ", what));
  }

  // ---- shared memory ------------------------------------------------------------------------
  /// Static __shared__ arrays when their total is known and at most 48 KB, else one dynamic
  /// block with the buffers at 16-byte aligned offsets.
  void plan_shared() {
    std::vector<const AllocateNode*> shared;
    for_each_alloc(code_.kernel.body, [&](const AllocateNode* op) {
      if (is_shared_scope(op->scope)) shared.push_back(op);
    });
    int64_t total = 0;
    bool symbolic = false;
    for (const AllocateNode* op : shared) {
      const Expr elements = simplify(allocation_elements(op));  // as_const_int points into it
      const int64_t* c = as_const_int(elements);
      if (!c || op->scope == scope::shared_dyn) symbolic = true;
      if (c) total += (*c * op->dtype.bytes() + 15) / 16 * 16;
    }
    // Buffers the shared-memory planner (lower/plan_shared_memory.hpp) placed: one block of shared
    // memory, static when it fits in 48 KB, with each buffer at its planned offset.
    if (std::vector<PlacedSharedBuffer> placed = placed_shared_buffers(code_.kernel.body); !placed.empty()) {
      if (placed.size() != shared.size())
        fail(cat("the shared-memory planner placed ", placed.size(), " of its ", shared.size(),
                 " shared buffers: a pass after the memory phase added or copied shared allocations; "
                 "add such a pass after Phase::Flatten or Phase::Loops instead"));
      int64_t naive = 0;
      for (const PlacedSharedBuffer& b : placed) {
        dynamic_offsets_[b.alloc] = make_const(i64, b.offset);
        code_.shared_buffers.push_back(
            SharedBufferUse{b.alloc->buffer.name(), make_const(i64, b.bytes), b.offset});
        merged_bytes_ = std::max(merged_bytes_, b.offset + loom::detail::align16(b.bytes));
        naive += loom::detail::align16(b.bytes);
      }
      merged_ = true;
      dynamic_ = merged_bytes_ > kStaticSharedLimit;
      code_.shared_bytes_saved = naive - merged_bytes_;
      if (dynamic_) {
        code_.dynamic_shared_bytes = make_const(i64, merged_bytes_);
      } else {
        code_.dynamic_shared_bytes = make_const(i64, 0);
        code_.static_shared_bytes += merged_bytes_;
      }
      return;
    }
    dynamic_ = symbolic || total > kStaticSharedLimit;
    Expr offset = make_const(i64, 0);
    for (const AllocateNode* op : shared) {
      Expr bytes = simplify(cast(i64, allocation_elements(op)) * make_const(i64, op->dtype.bytes()));
      SharedBufferUse use{op->buffer.name(), bytes, -1};
      if (dynamic_) {
        if (const int64_t* o = as_const_int(offset)) use.offset = *o;
        dynamic_offsets_[op] = offset;
        offset = simplify(offset +
                          floordiv(bytes + make_const(i64, 15), make_const(i64, 16)) * make_const(i64, 16));
      }
      code_.shared_buffers.push_back(use);
    }
    code_.dynamic_shared_bytes = dynamic_ ? offset : make_const(i64, 0);
  }

  template <typename F>
  static void for_each_alloc(const Stmt& s, F&& f) {
    struct Finder : IRVisitor {
      F& fn;
      explicit Finder(F& g) : fn(g) {}
      using IRVisitor::visit;
      void visit(const AllocateNode* op) override {
        fn(op);
        IRVisitor::visit(op);
      }
    } finder(f);
    finder.visit_stmt(s);
  }

  static Expr allocation_elements(const AllocateNode* op) {
    Expr n = make_const(i64, 1);
    for (const Expr& e : op->extents) n = n * cast(i64, e);
    return n;
  }

  // ---- expressions --------------------------------------------------------------------------
  /// The C text of `e`, or of its lane `lane` when it is a vector.
  std::string emit(const Expr& e, int lane) {
    if (e.dtype().is_scalar()) lane = -1;
    note_type(e.dtype());
    switch (e.kind()) {
      case IRNodeKind::IntImm: return int_literal(e.dtype(), e.as<IntImmNode>()->value);
      case IRNodeKind::FloatImm: return float_literal(e.dtype(), e.as<FloatImmNode>()->value);
      case IRNodeKind::StringImm: return cat("\"", e.as<StringImmNode>()->value, "\"");
      case IRNodeKind::Var: {
        const Var v(Ref<const ExprNode>(e.get()));
        std::string name = name_of(v);
        if (lane >= 0 && array_vars_.count(v.get())) return cat(name, "[", lane, "]");
        return name;
      }
#define LOOM_CUDA_BINARY(kind_, node_) \
  case IRNodeKind::kind_:              \
    return binary(e.as<node_>()->a, e.as<node_>()->b, IRNodeKind::kind_, e.dtype(), lane);
        LOOM_BINARY_EXPR_NODES(LOOM_CUDA_BINARY)
#undef LOOM_CUDA_BINARY
      case IRNodeKind::Not: return cat("(!", emit(e.as<NotNode>()->a, lane), ")");
      case IRNodeKind::Select: {
        const SelectNode* op = e.as<SelectNode>();
        return cat("(", emit(op->condition, lane), " ? ", emit(op->true_value, lane), " : ",
                   emit(op->false_value, lane), ")");
      }
      case IRNodeKind::Cast: {
        const CastNode* op = e.as<CastNode>();
        return convert(emit(op->value, lane), op->value.dtype(), op->dtype);
      }
      case IRNodeKind::Load: return load(e.as<LoadNode>(), lane);
      case IRNodeKind::Ramp: {
        const RampNode* op = e.as<RampNode>();
        return emit(simplify(op->base + op->stride * make_const(op->stride.dtype(), lane)), -1);
      }
      case IRNodeKind::Broadcast: return emit(e.as<BroadcastNode>()->value, -1);
      case IRNodeKind::Call: return call(e.as<CallNode>(), lane);
      case IRNodeKind::Let: {
        const LetNode* op = e.as<LetNode>();
        // A let in an expression becomes an immediately called lambda; a vector let is taken
        // lane by lane, like everything else in a vector expression.
        std::string value = emit(op->value, op->value.dtype().is_vector() ? lane : -1);
        std::string name = bind(op->var);
        std::string body = emit(op->body, lane);
        unbind(op->var);
        return cat("([&]() -> ", c_type(op->dtype), " { const ", c_type(op->var.dtype()), " ", name, " = ",
                   value, "; return ", body, "; }())");
      }
      default: break;
    }
    throw InternalError(cat("CUDA codegen: ", kind_name(e.kind()), " in lowered code"));
  }

  /// In a loop marked pragma(axis, "fp_contract"), a * b + c (and a * b - c, c - a * b) of
  /// float32/float64 becomes one fused multiply-add (one rounding instead of two), as the CPU
  /// backend lets LLVM contract there: a GEMM's MAC loop then runs at the FMA rate. NVRTC itself
  /// never contracts (--fmad=false), so nothing outside such loops changes.
  std::optional<std::string> fused_multiply_add(const Expr& a, const Expr& b, IRNodeKind kind, int lane) {
    const DType t = a.dtype().element_of();
    if (contract_depth_ == 0 || !t.is_float() || (t.bits != 32 && t.bits != 64)) return std::nullopt;
    if (kind != IRNodeKind::Add && kind != IRNodeKind::Sub) return std::nullopt;
    const char* fma = t.bits == 64 ? "__fma_rn" : "__fmaf_rn";
    auto fused = [&](const MulNode* m, const std::string& addend, bool negate_product) {
      const std::string x = emit(m->a, lane), y = emit(m->b, lane);
      return cat(fma, "(", negate_product ? cat("-", x) : x, ", ", y, ", ", addend, ")");
    };
    if (const MulNode* m = a.as<MulNode>())  // a * b + c, a * b - c
      return fused(m, kind == IRNodeKind::Add ? emit(b, lane) : cat("-", emit(b, lane)), false);
    if (const MulNode* m = b.as<MulNode>())  // c + a * b, c - a * b
      return fused(m, emit(a, lane), kind == IRNodeKind::Sub);
    return std::nullopt;
  }

  std::string binary(const Expr& a, const Expr& b, IRNodeKind kind, DType result, int lane) {
    if (std::optional<std::string> fma = fused_multiply_add(a, b, kind, lane)) return *fma;
    DType t = a.dtype().element_of();
    std::string x = emit(a, lane), y = emit(b, lane);
    // 16-bit floats are storage types: their arithmetic goes through float and rounds back,
    // exactly as the interpreter computes it.
    const bool half = t.is_float() && t.bits == 16;
    if (half) {
      x = convert(x, t, f32);
      y = convert(y, t, f32);
    }
    const DType at = half ? f32 : t;
    auto op = [&](const char* sym) { return cat("(", x, " ", sym, " ", y, ")"); };
    std::string text;
    switch (kind) {
      case IRNodeKind::Add: text = op("+"); break;
      case IRNodeKind::Sub: text = op("-"); break;
      case IRNodeKind::Mul: text = op("*"); break;
      case IRNodeKind::Div: text = op("/"); break;
      case IRNodeKind::Mod:
        text = at.is_float() ? cat(at.bits == 64 ? "fmod(" : "fmodf(", x, ", ", y, ")") : op("%");
        break;
      case IRNodeKind::FloorDiv:
        if (at.is_float()) {
          text = cat(at.bits == 64 ? "floor(" : "floorf(", x, " / ", y, ")");
        } else {
          helpers_.insert("floordiv");
          text = cat("loom_floordiv(", x, ", ", y, ")");
        }
        break;
      case IRNodeKind::FloorMod:
        if (at.is_float()) {
          text = cat("(", x, " - ", at.bits == 64 ? "floor(" : "floorf(", x, " / ", y, ") * ", y, ")");
        } else {
          helpers_.insert("floormod");
          text = cat("loom_floormod(", x, ", ", y, ")");
        }
        break;
      case IRNodeKind::Min:
        helpers_.insert("minmax");
        text = cat("loom_min(", x, ", ", y, ")");
        break;
      case IRNodeKind::Max:
        helpers_.insert("minmax");
        text = cat("loom_max(", x, ", ", y, ")");
        break;
      case IRNodeKind::EQ: return op("==");
      case IRNodeKind::NE: return op("!=");
      case IRNodeKind::LT: return op("<");
      case IRNodeKind::LE: return op("<=");
      case IRNodeKind::GT: return op(">");
      case IRNodeKind::GE: return op(">=");
      case IRNodeKind::And: return op("&&");
      case IRNodeKind::Or: return op("||");
      default: throw InternalError("CUDA codegen: unknown binary operator");
    }
    if (half) return convert(text, f32, t);
    // C computes narrow integers in int; the IR wraps at their width.
    if (promotes_in_c(result)) return cat("((", c_type(result), ")", text, ")");
    return text;
  }

  std::string load(const LoadNode* op, int lane) {
    if (auto it = vector_loads_.find(op); it != vector_loads_.end() && lane >= 0)
      return cat(it->second, ".", vector_field(lane));
    std::string text = cat(name_of(op->buffer), "[", emit(op->index, lane), "]");
    if (op->predicate.defined())
      text = cat("(", emit(op->predicate, lane), " ? ", text, " : ",
                 emit(make_zero(op->dtype.element_of()), -1), ")");
    return text;
  }

  std::string call(const CallNode* op, int lane) {
    const std::string& name = op->name;
    auto arg = [&](size_t i) { return emit(op->args.at(i), lane); };
    if (name == loom::intrinsic::likely) return arg(0);
    if (name == loom::intrinsic::if_then_else) return cat("(", arg(0), " ? ", arg(1), " : ", arg(2), ")");
    if (name == loom::intrinsic::reinterpret) {
      helpers_.insert("reinterpret");
      return cat("loom_reinterpret<", c_type(op->dtype), ">(", arg(0), ")");
    }
    if (name == loom::intrinsic::address_of) {
      const LoadNode* l = op->args.at(0).as<LoadNode>();
      if (!l) throw InternalError("address_of takes a load");
      return cat("(&", name_of(l->buffer), "[", emit(l->index, lane), "])");
    }
    if (is_grid_flag_call(op)) {
      helpers_.insert("grid_flags");
      return grid_flag_call_text(op, arg(0), arg(1), arg(2));
    }
    if (op->call_kind == CallKind::Extern)
      fail(cat("it calls the C function '", name,
               "', which exists only on the host; GPU kernels can call math functions (exp, log, sqrt, pow, "
               "tanh, ...) only"));
    static const std::unordered_set<std::string> math = {"exp",  "exp2",  "log",   "log2", "log10", "sqrt",
                                                         "sin",  "cos",   "tan",   "tanh", "erf",   "floor",
                                                         "ceil", "round", "trunc", "abs",  "pow"};
    if (!math.count(name))
      fail(cat("it calls '", name,
               "', which the CUDA backend does not know; it knows if_then_else, likely, reinterpret, "
               "address_of, abs, pow, exp, exp2, log, log2, log10, sqrt, sin, cos, tan, tanh, erf, floor, "
               "ceil, round, trunc"));
    DType t = op->dtype.element_of();
    if (name == "abs" && t.is_integral()) {
      if (t.is_uint() || t.is_bool()) return arg(0);
      const std::string x = arg(0);
      return cat(t.bits == 64 ? "llabs(" : "abs(", x, ")");
    }
    const bool half = t.bits == 16;
    const bool dbl = t.bits == 64;
    std::string fn = name == "abs" ? "fabs" : name;
    if (!dbl) fn += "f";
    std::string args;
    for (size_t i = 0; i < op->args.size(); ++i) {
      std::string a = arg(i);
      if (half) a = convert(a, op->args[i].dtype(), f32);
      args += (i ? ", " : "") + a;
    }
    std::string text = cat(fn, "(", args, ")");
    return half ? convert(text, f32, t) : text;
  }

  // ---- vector memory access -----------------------------------------------------------------
  /// A float2/float4-style access: a dense ramp of 2 or 4 lanes at an aligned offset.
  static std::string vector_access_type(DType element, const Expr& index, const Expr& predicate) {
    if (predicate.defined()) return "";
    const RampNode* ramp = index.as<RampNode>();
    if (!ramp) return "";
    const int64_t* stride = as_const_int(ramp->stride);
    if (!stride || *stride != 1) return "";
    std::string type = vector_type(element, ramp->lanes);
    if (type.empty() || !is_multiple_of(ramp->base, ramp->lanes)) return "";
    return type;
  }

  /// Loads every vector load of `s`'s expressions that can be one access into a vector
  /// temporary first (not those under an if_then_else or a let, which may not be evaluated).
  void hoist_vector_loads(const std::vector<Expr>& exprs) {
    struct Finder : IRVisitor {
      std::vector<const LoadNode*> loads;
      using IRVisitor::visit;
      void visit(const LoadNode* op) override {
        if (op->dtype.is_vector()) loads.push_back(op);
        IRVisitor::visit(op);
      }
      void visit(const CallNode* op) override {
        if (op->name == loom::intrinsic::if_then_else) {
          visit_expr(op->args.at(0));
          return;
        }
        IRVisitor::visit(op);
      }
      void visit(const LetNode* op) override { visit_expr(op->value); }
    } finder;
    for (const Expr& e : exprs) finder.visit_expr(e);
    for (const LoadNode* op : finder.loads) {
      if (vector_loads_.count(op)) continue;
      std::string type = vector_access_type(op->dtype.element_of(), op->index, op->predicate);
      if (type.empty()) continue;
      std::string name = fresh(op->buffer.name() + "_v");
      line(cat("const ", type, " ", name, " = *reinterpret_cast<const ", type, "*>(", name_of(op->buffer),
               " + ", emit(op->index.as<RampNode>()->base, -1), ");"));
      vector_loads_[op] = name;
    }
  }

  // ---- statements ---------------------------------------------------------------------------
  void stmt(const Stmt& s) {
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

  static std::string paren(const std::string& text) {
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

  static std::string one_line(std::string text) {
    for (char& c : text)
      if (c == '\n') c = ' ';
    return text;
  }

  void block(const Stmt& s) {
    ++indent_;
    auto saved = vector_loads_;
    stmt(s);
    vector_loads_ = std::move(saved);
    --indent_;
  }

  void let_stmt(const LetStmtNode* op) {
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

  void store(const StoreNode* op) {
    DType t = op->value.dtype();
    hoist_vector_loads({op->value, op->index, op->predicate});
    const std::string buffer = name_of(op->buffer);
    if (t.is_scalar()) {
      std::string text = cat(buffer, "[", emit(op->index, -1), "] = ", emit(op->value, -1), ";");
      if (op->predicate.defined()) text = cat("if ", paren(emit(op->predicate, -1)), " ", text);
      return line(text);
    }
    std::string type = vector_access_type(t.element_of(), op->index, op->predicate);
    std::vector<std::string> lanes;
    for (int i = 0; i < t.lanes; ++i) lanes.push_back(emit(op->value, i));
    if (!type.empty()) {
      std::string args;
      for (size_t i = 0; i < lanes.size(); ++i) args += (i ? ", " : "") + lanes[i];
      return line(cat("*reinterpret_cast<", type, "*>(", buffer, " + ",
                      emit(op->index.as<RampNode>()->base, -1), ") = make_", type, "(", args, ");"));
    }
    // Lane by lane: all values first, as one vector store would read them.
    const std::string tmp = fresh(op->buffer.name() + "_lanes");
    std::string list;
    for (size_t i = 0; i < lanes.size(); ++i) list += (i ? ", " : "") + lanes[i];
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

  void allocate(const AllocateNode* op) {
    note_type(op->dtype);
    const std::string& scope = op->scope;
    const bool shared = is_shared_scope(scope);
    const bool local = is_local_scope(scope);
    if (!shared && !local) {
      fail(
          cat("it allocates buffer '", op->buffer.name(), "' in memory scope '",
              scope.empty() ? scope::global : scope,
              "' inside the kernel; a CUDA kernel allocates \"shared\" (one per block) or \"local\" (one per "
              "thread) memory; allocate global buffers outside the loops bound to blockIdx/threadIdx"));
    }
    const std::string type = c_type(op->dtype);
    const std::string name = bind(op->buffer);
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
        line(cat(*n * op->dtype.bytes() % 16 == 0 ? "__align__(16) " : "", type, " ", name, "[", *n, "];"));
      }
    }
    stmt(op->body);
    unbind(op->buffer);
  }

  void loop(const ForNode* op) {
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

  static bool is_zero(const Expr& e) {
    const int64_t* c = as_const_int(e);
    return c && *c == 0;
  }

  void evaluate(const Expr& value) {
    if (const CallNode* call = value.as<CallNode>()) {
      if (call->name == loom::intrinsic::thread_allreduce) return allreduce(call);
      if (call->name == loom::intrinsic::extern_stage)
        fail("it calls an extern stage, which runs on the host only");
    }
    if (value.as<IntImmNode>()) return;
    line(cat("(void)", paren(emit(value, -1)), ";"));
  }

  void allreduce(const CallNode* call) {
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

 public:
  /// Records which launch index each loop variable of the kernel is bound to (for allreduce).
  void collect_thread_vars() {
    for (int d = 0; d < kNumLaunchIndices; ++d)
      for (const ForNode* loop : code_.kernel.loops[d]) thread_tag_of_[loop->loop_var.get()] = d;
  }

 private:
  std::ostringstream& os_;
  KernelCode& code_;
  std::unordered_set<std::string>& helpers_;
  bool& uses_fp16_;
  bool& uses_bf16_;
  int indent_ = 0;
  std::unordered_set<std::string> used_;
  std::unordered_map<const VarNode*, std::vector<std::string>> names_;
  std::unordered_set<const VarNode*> array_vars_;
  std::unordered_map<const LoadNode*, std::string> vector_loads_;
  std::unordered_map<const VarNode*, int> thread_tag_of_;
  std::array<int64_t, 3> block_{1, 1, 1};
  int contract_depth_ = 0;  // loops marked fp_contract around the statement being emitted
  bool dynamic_ = false;
  /// The ranges of the loops emitted so far (variables are unique, so they may stay bound).
  Analyzer loop_ranges_;
  /// The largest per-thread array a varying size is rounded up to (beyond: the error asks for
  /// constant splits).
  static constexpr int64_t kMaxVaryingLocalElements = 1 << 14;
  bool merged_ = false;  // the shared buffers are placed by the shared-memory planner
  int64_t merged_bytes_ = 0;
  std::unordered_map<const AllocateNode*, Expr> dynamic_offsets_;
};

/// Definitions the kernels use, emitted once before them.
inline std::string prelude(const std::unordered_set<std::string>& helpers, bool fp16, bool bf16) {
  std::string s;
  if (fp16) s += "#include <cuda_fp16.h>\n";
  if (bf16) s += "#include <cuda_bf16.h>\n";
  if (fp16 || bf16) s += "\n";
  if (helpers.count("floordiv"))
    s += "// Integer division rounding toward negative infinity (the IR's floordiv).\n"
         "template <typename T> __device__ __forceinline__ T loom_floordiv(T a, T b) {\n"
         "  T q = a / b;\n"
         "  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
         "}\n";
  if (helpers.count("floormod"))
    s += "// The remainder of loom_floordiv: it has the sign of b.\n"
         "template <typename T> __device__ __forceinline__ T loom_floormod(T a, T b) {\n"
         "  T r = a % b;\n"
         "  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
         "}\n";
  if (helpers.count("minmax"))
    s += "template <typename T> __device__ __forceinline__ T loom_min(T a, T b) { return b < a ? b : a; }\n"
         "template <typename T> __device__ __forceinline__ T loom_max(T a, T b) { return a < b ? b : a; }\n";
  if (helpers.count("reinterpret"))
    s += "template <typename To, typename From> __device__ __forceinline__ To loom_reinterpret(From x) {\n"
         "  To y;\n"
         "  memcpy(&y, &x, sizeof(To));\n"
         "  return y;\n"
         "}\n";
  if (helpers.count("grid_flags")) s += grid_flags_prelude();
  if (helpers.count("shuffle")) {
    s += "// Warp shuffles of any value type (narrow integers travel as int).\n"
         "template <typename T> __device__ __forceinline__ T loom_shfl_down(unsigned mask, T v, int off, int "
         "w) {\n"
         "  return __shfl_down_sync(mask, v, off, w);\n"
         "}\n"
         "template <typename T> __device__ __forceinline__ T loom_shfl(unsigned mask, T v, int lane, int w) "
         "{\n"
         "  return __shfl_sync(mask, v, lane, w);\n"
         "}\n";
    for (const char* t : {"bool", "signed char", "unsigned char", "short", "unsigned short"}) {
      s += cat("template <> __device__ __forceinline__ ", t, " loom_shfl_down(unsigned mask, ", t,
               " v, int off, int w) {\n  return (", t, ")__shfl_down_sync(mask, (int)v, off, w);\n}\n");
      s += cat("template <> __device__ __forceinline__ ", t, " loom_shfl(unsigned mask, ", t,
               " v, int lane, int w) {\n  return (", t, ")__shfl_sync(mask, (int)v, lane, w);\n}\n");
    }
  }
  return s;
}

}  // namespace detail

/// Translates the kernels of `f` (after the host/device split) to CUDA C.
inline CudaModule codegen_cuda(const LoweredFunc& f) {
  // The Device phase of lower() made the split already when it lowered for this target.
  DeviceSplit split =
      f.device_split && f.device_split->source.same_as(f.body) ? *f.device_split : split_host_device(f);
  CudaModule m;
  m.name = f.name;
  m.host = split.host;
  std::ostringstream body;
  std::unordered_set<std::string> helpers;
  bool fp16 = false, bf16 = false;
  for (DeviceKernel& k : split.kernels) {
    KernelCode code;
    code.kernel = std::move(k);
    detail::KernelEmitter emitter(body, code, helpers, fp16, bf16);
    emitter.collect_thread_vars();
    emitter.emit();
    body << "\n";
    m.kernels.push_back(std::move(code));
  }
  m.source = cat("// CUDA C generated by Loom for '", f.name, "': ", m.kernels.size(),
                 m.kernels.size() == 1 ? " kernel" : " kernels", ".\n", detail::prelude(helpers, fp16, bf16),
                 helpers.empty() ? "" : "\n", body.str());
  return m;
}

}  // namespace loom::cuda
