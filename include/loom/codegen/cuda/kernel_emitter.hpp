// KernelEmitter, declared: it writes one kernel region as an `extern "C" __global__` function.
// This file keeps the kernel's signature, its C names and its shared memory; expressions are
// written in emit_expr.hpp, statements in emit_stmt.hpp (codegen_cuda.hpp includes all three).
#pragma once

#include <algorithm>
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
#include "loom/codegen/cuda/cuda_module.hpp"
#include "loom/codegen/cuda/cuda_types.hpp"
#include "loom/ir/analyzer.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/op.hpp"
#include "loom/ir/printer.hpp"
#include "loom/ir/shared_memory_layout.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/ir/thread_allreduce.hpp"
#include "loom/ir/vector_access.hpp"
#include "loom/lower/split_host_device.hpp"
#include "loom/te/ptx_intrinsics.hpp"

namespace loom::cuda::detail {

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
  /// The code assumes element 0 of `buffer` is aligned to `bytes` (KernelCode::assumed_alignment).
  void note_alignment(const Var& buffer, int bytes) {
    int& a = code_.assumed_alignment[buffer.get()];
    a = std::max(a, bytes);
  }
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
  std::string emit(const Expr& e, int lane);

  /// In a loop marked pragma(axis, "fp_contract"), a * b + c (and a * b - c, c - a * b) of
  /// float32/float64 becomes one fused multiply-add (one rounding instead of two), as the CPU
  /// backend lets LLVM contract there: a GEMM's MAC loop then runs at the FMA rate. NVRTC itself
  /// never contracts (--fmad=false), so nothing outside such loops changes.
  std::optional<std::string> fused_multiply_add(const Expr& a, const Expr& b, IRNodeKind kind, int lane);

  std::string binary(const Expr& a, const Expr& b, IRNodeKind kind, DType result, int lane);

  std::string load(const LoadNode* op, int lane);

  std::string call(const CallNode* op, int lane);

  // ---- vector memory access -----------------------------------------------------------------
  /// The built-in vector type ("float4") of an access that the rule of ir/vector_access.hpp makes
  /// one instruction and that has one; "" otherwise (then it is moved as raw bits, or per lane).
  static std::string vector_access_type(DType value_type, const VectorAccess& access);
  /// How an access of `value_type` to `buffer` is emitted: `access` (the rule of
  /// ir/vector_access.hpp), except that in local arrays only lanes with a built-in vector type
  /// become one access.
  VectorAccess emitted_access(const Var& buffer, DType value_type, const VectorAccess& access) const;
  /// Copies the pieces of a vector access between `to` and `from` (C pointers to the first lane)
  /// as raw bits (unsigned int, uint2, uint4): for lanes without a built-in vector type (float16,
  /// bfloat16, int8) and for more than 16 bytes.
  void copy_vector_pieces(const std::string& to, const std::string& from, const VectorAccess& access);

  /// Loads every vector load of `s`'s expressions that can be one access into a vector
  /// temporary first (not those under an if_then_else or a let, which may not be evaluated).
  void hoist_vector_loads(const std::vector<Expr>& exprs);

  // ---- statements ---------------------------------------------------------------------------
  void stmt(const Stmt& s);

  static std::string paren(const std::string& text);

  static std::string one_line(std::string text);

  void block(const Stmt& s);

  void let_stmt(const LetStmtNode* op);

  void store(const StoreNode* op);

  void allocate(const AllocateNode* op);

  void loop(const ForNode* op);

  static bool is_zero(const Expr& e);

  void evaluate(const Expr& value);

  void allreduce(const CallNode* call);
  void warp_intrinsic(const CallNode* call);

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
  /// Per-thread (local) arrays: vector accesses without a built-in vector type are not moved as
  /// raw bits in them (their alignment follows their size; the compiler keeps them in registers).
  std::unordered_set<const VarNode*> local_buffers_;
  /// The temporaries hoisted vector loads went to: a built-in vector (lane i is name.x, .y, ...)
  /// or an array (name[i]).
  struct VectorTemp {
    std::string name;
    bool array = false;
  };
  std::unordered_map<const LoadNode*, VectorTemp> vector_loads_;
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

}  // namespace loom::cuda::detail
