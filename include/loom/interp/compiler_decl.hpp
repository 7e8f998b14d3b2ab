// The interpreter's Compiler, declared: it turns a lowered function's loop IR into compiled nodes,
// once: variables become frame slots, dtypes pick node templates, and vector expressions are split
// into one tree per lane. This file keeps the frame slots and scopes; expressions are compiled in
// compile_expr.hpp, statements in compile_stmt.hpp (interp/compiler.hpp includes all three).
// Kernel regions (loops bound to blockIdx/threadIdx) are handed to a KernelRegionCompiler: the GPU
// simulator (sim/kernel_compiler.hpp) is the one Loom has; the interpreter itself knows no GPU.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/interp/extern_c_call.hpp"
#include "loom/interp/stmt_nodes.hpp"
#include "loom/ir/extern_call.hpp"
#include "loom/ir/free_vars.hpp"
#include "loom/ir/gpu_vocabulary.hpp"
#include "loom/ir/grid_flags.hpp"
#include "loom/ir/reduce.hpp"
#include "loom/ir/stmt.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/lower/lowered_func.hpp"

namespace loom::interp {

/// Where a variable lives in the frame.
struct VarBinding {
  enum class Kind { Int, Float, Buffer };
  Kind kind = Kind::Int;
  int slot = 0;
  int lanes = 1;
  int only_lane = -1;  // >= 0: a per-lane binding (vector let inside one lane's tree) of that lane
  int shared_id = -1;  // >= 0: a shared buffer of the kernel region, numbered by its compiler

  int slot_of_lane(int lane) const {
    if (only_lane >= 0) {
      internal_check(lane == only_lane, "interpreter: lane ", lane, " of a binding made for lane ",
                     only_lane);
      return slot;
    }
    return slot + (lanes > 1 ? lane : 0);
  }
};

/// The compiled program and the frame layout it needs.
struct CompiledBody {
  StmtPtr body;
  int num_ints = 0;
  int num_floats = 0;
  int num_buffers = 0;
  /// Slots of the function's parameters and size variables, which a run fills from BoundArgs.
  std::vector<std::pair<const VarNode*, int>> int_params, float_params, buffer_params;
  /// Kernel regions (loops bound to blockIdx/threadIdx) run on the GPU simulator, which needs a
  /// sim::Session in the frame.
  bool has_kernels = false;
};

class Compiler;

/// Compiles the kernel regions of a program: each outermost loop bound to blockIdx/threadIdx with
/// everything in it, and the loads from the shared buffers it allocates. It builds on the host
/// Compiler's slots and expressions (the public part of Compiler below).
class KernelRegionCompiler {
 public:
  virtual ~KernelRegionCompiler() = default;
  /// One kernel launch; `index` numbers the program's kernel regions from 0.
  virtual StmtPtr compile_region(Compiler& host, const Stmt& region, int index) = 0;
  /// A load of lane `lane` of `op` from shared buffer `shared` (Compiler::set_shared_id) of the
  /// region being compiled; `slot` is the buffer's frame slot, `index` the compiled flat index.
  virtual IntExprPtr shared_load_int(const LoadNode* op, int slot, IntExprPtr index, AccessSite site,
                                     int shared) = 0;
  virtual FloatExprPtr shared_load_float(const LoadNode* op, int slot, IntExprPtr index, AccessSite site,
                                         int shared) = 0;
  /// A load of lane `lane` of `op` from a buffer that is not shared: inside a kernel region, from
  /// global memory (the simulator's clock counts its sectors); null elsewhere (an ordinary load).
  /// `index` is the compiled flat index, taken only when the result is not null.
  virtual IntExprPtr global_load_int(const LoadNode*, int /*slot*/, IntExprPtr& /*index*/,
                                     const AccessSite&) {
    return nullptr;
  }
  virtual FloatExprPtr global_load_float(const LoadNode*, int /*slot*/, IntExprPtr& /*index*/,
                                         const AccessSite&) {
    return nullptr;
  }
  /// loom.lane_id(): inside a kernel region, the lane of the simulated thread evaluating it; null
  /// elsewhere (an error: a host has no lanes).
  virtual IntExprPtr lane_id() { return nullptr; }
};

/// Compiles one LoweredFunc. Vector expressions are compiled lane by lane: no IR node moves
/// values across lanes, so lane i of an expression depends only on lane i of its vector operands
/// and on its scalar operands, and each lane becomes an ordinary scalar tree. A kernel region's
/// statements are compiled by the KernelRegionCompiler (the simulator's turns them into warp-wide
/// statements over the same expressions); without one, a kernel region is an error.
class Compiler {
 public:
  explicit Compiler(const LoweredFunc& f, KernelRegionCompiler* kernels = nullptr)
      : func_(f), kernels_(kernels) {}

  CompiledBody compile() {
    CompiledBody out;
    for (const FuncParam& p : func_.params) {
      if (p.kind == FuncParam::Kind::Buffer) {
        VarBinding b = bind(p.buffer.data, p.buffer.name);
        out.buffer_params.emplace_back(p.buffer.data.get(), b.slot);
      } else {
        bind_param_scalar(p.scalar, out);
      }
    }
    for (const Var& v : func_.size_vars) {
      if (!is_bound(v)) bind_param_scalar(v, out);
    }
    // Variables of buffer shapes and strides are bound (or rejected) by every checked call, so
    // the body may use them even when the lowering did not list them in size_vars.
    for (const FuncParam& p : func_.params) {
      if (p.kind != FuncParam::Kind::Buffer) continue;
      std::vector<Expr> layout = p.buffer.shape;
      layout.insert(layout.end(), p.buffer.strides.begin(), p.buffer.strides.end());
      // Handles too: one in a shape is malformed, and bind_param_scalar reports it.
      for (const Expr& e : layout)
        for (const Var& v : free_vars(e, {.handles = true}))
          if (!is_bound(v)) bind_param_scalar(v, out);
    }
    out.body = func_.body.defined() ? compile_stmt(func_.body) : StmtPtr(new NoOp());
    out.num_ints = num_ints_;
    out.num_floats = num_floats_;
    out.num_buffers = num_buffers_;
    out.has_kernels = num_kernels_ > 0;
    *layout_ = FrameLayout{num_ints_, num_floats_, num_buffers_};
    return out;
  }

  // -------------------------------------------------------------------------------------------
  // The building blocks a KernelRegionCompiler compiles a region with: scopes, frame slots and
  // expressions are shared between host code and kernels.

  const std::string& name() const { return func_.name; }

  /// The frame sizes of the whole program: filled in when compile() ends, before any run.
  std::shared_ptr<const FrameLayout> frame_layout() const { return layout_; }

  /// The next number of a shared buffer (unique in the program).
  int next_shared_buffer_id() { return num_shared_buffers_++; }

  /// Marks the innermost binding of buffer variable v as shared buffer `id` of the kernel region
  /// being compiled: loads from it are compiled by the KernelRegionCompiler.
  void set_shared_id(const Var& v, int id) { scope_[v.get()].back().shared_id = id; }

  const std::string& buffer_name(int slot) const { return buffer_names_[static_cast<size_t>(slot)]; }

  /// A fresh slot for v (a new one even when v is already bound: shadowing stays correct).
  VarBinding bind(const Var& v, const std::string& buffer_name = "", int only_lane = -1) {
    DType t = v.dtype();
    VarBinding b;
    b.lanes = t.lanes;
    b.only_lane = only_lane;
    int width = only_lane >= 0 ? 1 : t.lanes;
    if (t.is_handle()) {
      b.kind = VarBinding::Kind::Buffer;
      b.slot = num_buffers_++;
      buffer_names_.push_back(buffer_name.empty() ? v.name() : buffer_name);
    } else if (t.is_float()) {
      b.kind = VarBinding::Kind::Float;
      b.slot = num_floats_;
      num_floats_ += width;
    } else {
      b.kind = VarBinding::Kind::Int;
      b.slot = num_ints_;
      num_ints_ += width;
    }
    scope_[v.get()].push_back(b);
    return b;
  }
  void unbind(const Var& v) { scope_[v.get()].pop_back(); }

  /// Runs fn() with v bound to a fresh slot; returns what fn returns.
  template <typename Fn>
  auto with_binding(const Var& v, VarBinding& binding, Fn&& fn, const std::string& buffer_name = "",
                    int only_lane = -1) {
    binding = bind(v, buffer_name, only_lane);
    struct Unbind {
      Compiler* self;
      const Var& var;
      ~Unbind() { self->unbind(var); }
    } unbind_on_exit{this, v};
    return fn();
  }

  const VarBinding& lookup(const VarNode* v) const {
    auto it = scope_.find(v);
    if (it == scope_.end() || it->second.empty()) {
      throw Error(cat("kernel '", func_.name, "' uses variable '", v->name,
                      "' outside any loop, let or allocation that defines it, and it is neither a parameter "
                      "nor a size variable of the kernel; the lowering left it unbound"));
    }
    return it->second.back();
  }

  bool is_bound(const Var& v) const {
    auto it = scope_.find(v.get());
    return it != scope_.end() && !it->second.empty();
  }

  void bind_param_scalar(const Var& v, CompiledBody& out) {
    VarBinding b = bind(v);
    internal_check(v.dtype().is_scalar() && !v.dtype().is_handle(), "scalar parameter '", v.name(),
                   "' of type ", v.dtype().str());
    (b.kind == VarBinding::Kind::Float ? out.float_params : out.int_params).emplace_back(v.get(), b.slot);
  }

  int buffer_slot(const Var& buffer) const {
    const VarBinding& b = lookup(buffer.get());
    if (b.kind != VarBinding::Kind::Buffer)
      throw InternalError(
          cat("'", buffer.name(), "' is used as a buffer but has type ", buffer.dtype().str()));
    return b.slot;
  }

  // -------------------------------------------------------------------------------------------
  // Expressions

  static int lane_of(const Expr& e, int lane) { return e.dtype().lanes > 1 ? lane : 0; }

  [[noreturn]] void not_lowered(const char* what) const;

  template <typename V>
  ExprPtr<V> compile(const Expr& e, int lane);

  IntExprPtr compile_int(const Expr& e, int lane);

  FloatExprPtr compile_float(const Expr& e, int lane);

  /// An integer-valued binary node: integer arithmetic, or a comparison of floats.
  template <IRNodeKind Op>
  IntExprPtr compile_int_binary(const Expr& e, const Expr& a, const Expr& b, int lane);

  template <IRNodeKind Op>
  FloatExprPtr compile_float_binary(const BinaryNode<Op>* op, int lane);

  AccessSite site_of(const Var& buffer, const Expr& index, bool is_store) const;

  // -------------------------------------------------------------------------------------------
  // The rest is the Compiler's own.

 private:
  template <typename V>
  ExprPtr<V> compile_load(const LoadNode* op, int lane);

  template <typename V>
  ExprPtr<V> compile_let(const LetNode* op, int lane);

  static const std::unordered_map<std::string, MathFunction1>& math_functions1();

  /// A call of a C function registered with register_extern_c, checked against its signature.
  template <typename V>
  ExprPtr<V> compile_extern_c(const CallNode* op, int lane);

  [[noreturn]] void unsupported_call(const CallNode* op) const;

  template <typename V>
  ExprPtr<V> compile_call(const CallNode* op, int lane);

  // -------------------------------------------------------------------------------------------
  // Statements

  StmtPtr compile_stmt(const Stmt& s);

  StmtPtr compile_let_stmt(const LetStmtNode* op);

  StmtPtr compile_store(const StoreNode* op);

  StmtPtr compile_evaluate(const Expr& value);

  StmtPtr compile_extern_stage(const CallNode* call);
  StmtPtr compile_amx_tile_product(const CallNode* call);

  /// The outermost loop bound to blockIdx/threadIdx and everything in it: one kernel launch.
  StmtPtr compile_kernel_region(const Stmt& region);

  const LoweredFunc& func_;
  KernelRegionCompiler* kernels_;
  std::unordered_map<const VarNode*, std::vector<VarBinding>> scope_;
  std::vector<std::string> buffer_names_;  // by buffer slot, for error messages
  int num_ints_ = 0, num_floats_ = 0, num_buffers_ = 0;
  // Kernel regions: how many so far, their shared buffers, and the frame sizes every launch
  // needs (filled in when compile() ends).
  int num_kernels_ = 0, num_shared_buffers_ = 0;
  std::shared_ptr<FrameLayout> layout_ = std::make_shared<FrameLayout>();
};

}  // namespace loom::interp
