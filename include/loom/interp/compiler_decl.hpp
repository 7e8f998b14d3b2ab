// Turns a lowered function's loop IR into the interpreter's compiled nodes, once: variables become
// frame slots, dtypes pick node templates, and vector expressions are split into one tree per lane.
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
      for (const Expr& e : layout) {
        for_each_expr(e, [&](const Expr& x) {
          if (const VarNode* v = x.as<VarNode>(); v && !is_bound(Var(Ref<const ExprNode>(v))))
            bind_param_scalar(Var(Ref<const ExprNode>(v)), out);
        });
      }
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

  [[noreturn]] void not_lowered(const char* what) const {
    throw InternalError(cat("the interpreter was given kernel '", func_.name, "' with a ", what,
                            " node: the function was not lowered (run the lowering pipeline first)"));
  }

  template <typename V>
  ExprPtr<V> compile(const Expr& e, int lane) {
    if constexpr (std::is_same_v<V, double>) {
      return compile_float(e, lane);
    } else {
      return compile_int(e, lane);
    }
  }

  IntExprPtr compile_int(const Expr& e, int lane) {
    internal_check(e.defined(), "interpreter: undefined expression");
    lane = lane_of(e, lane);
    DType t = e.dtype();
    if (t.is_float()) throw InternalError(cat("interpreter: ", to_string(e), " used as an integer"));
    switch (e.kind()) {
      case IRNodeKind::IntImm: return std::make_unique<Constant<int64_t>>(e.as<IntImmNode>()->value);
      case IRNodeKind::Var: {
        const VarBinding& b = lookup(e.as<VarNode>());
        if (b.kind == VarBinding::Kind::Buffer) return std::make_unique<BufferAddress>(b.slot);
        return std::make_unique<ReadSlot<int64_t>>(b.slot_of_lane(lane));
      }
#define LOOM_INT_BINARY(name, node) \
  case IRNodeKind::name:            \
    return compile_int_binary<IRNodeKind::name>(e, e.as<node>()->a, e.as<node>()->b, lane);
        LOOM_BINARY_EXPR_NODES(LOOM_INT_BINARY)
#undef LOOM_INT_BINARY
      case IRNodeKind::Not: return std::make_unique<LogicalNot>(compile_int(e.as<NotNode>()->a, lane));
      case IRNodeKind::Select: {
        const SelectNode* op = e.as<SelectNode>();
        return std::make_unique<EagerSelect<int64_t>>(compile_int(op->condition, lane),
                                                      compile_int(op->true_value, lane),
                                                      compile_int(op->false_value, lane));
      }
      case IRNodeKind::Cast: {
        const CastNode* op = e.as<CastNode>();
        IntFormat to = IntFormat::of(t);
        if (op->value.dtype().is_float())
          return std::make_unique<FloatToInt>(compile_float(op->value, lane), to);
        return std::make_unique<IntToInt>(compile_int(op->value, lane), to);
      }
      case IRNodeKind::Load: return compile_load<int64_t>(e.as<LoadNode>(), lane);
      case IRNodeKind::Ramp: {
        const RampNode* op = e.as<RampNode>();
        return std::make_unique<IntRampLane>(compile_int(op->base, 0), compile_int(op->stride, 0), lane,
                                             IntFormat::of(t));
      }
      case IRNodeKind::Broadcast: return compile_int(e.as<BroadcastNode>()->value, 0);
      case IRNodeKind::Call: return compile_call<int64_t>(e.as<CallNode>(), lane);
      case IRNodeKind::Let: return compile_let<int64_t>(e.as<LetNode>(), lane);
      case IRNodeKind::StringImm:
        throw InternalError(cat("interpreter: string ", to_string(e), " used as a value"));
      case IRNodeKind::Reduce: not_lowered("Reduce");
      case IRNodeKind::ProducerLoad: not_lowered("ProducerLoad");
      default: break;
    }
    throw InternalError(cat("interpreter: cannot evaluate ", to_string(e), " as an integer"));
  }

  FloatExprPtr compile_float(const Expr& e, int lane) {
    internal_check(e.defined(), "interpreter: undefined expression");
    lane = lane_of(e, lane);
    DType t = e.dtype();
    if (!t.is_float()) throw InternalError(cat("interpreter: ", to_string(e), " used as a float"));
    switch (e.kind()) {
      case IRNodeKind::FloatImm:
        return std::make_unique<Constant<double>>(
            round_double_to(e.as<FloatImmNode>()->value, float_format_of(t)));
      case IRNodeKind::Var:
        return std::make_unique<ReadSlot<double>>(lookup(e.as<VarNode>()).slot_of_lane(lane));
      case IRNodeKind::Add: return compile_float_binary<IRNodeKind::Add>(e.as<AddNode>(), lane);
      case IRNodeKind::Sub: return compile_float_binary<IRNodeKind::Sub>(e.as<SubNode>(), lane);
      case IRNodeKind::Mul: return compile_float_binary<IRNodeKind::Mul>(e.as<MulNode>(), lane);
      case IRNodeKind::Div: return compile_float_binary<IRNodeKind::Div>(e.as<DivNode>(), lane);
      case IRNodeKind::Mod: return compile_float_binary<IRNodeKind::Mod>(e.as<ModNode>(), lane);
      case IRNodeKind::FloorDiv:
        return compile_float_binary<IRNodeKind::FloorDiv>(e.as<FloorDivNode>(), lane);
      case IRNodeKind::FloorMod:
        return compile_float_binary<IRNodeKind::FloorMod>(e.as<FloorModNode>(), lane);
      case IRNodeKind::Min: return compile_float_binary<IRNodeKind::Min>(e.as<MinNode>(), lane);
      case IRNodeKind::Max: return compile_float_binary<IRNodeKind::Max>(e.as<MaxNode>(), lane);
      case IRNodeKind::Select: {
        const SelectNode* op = e.as<SelectNode>();
        return std::make_unique<EagerSelect<double>>(compile_int(op->condition, lane),
                                                     compile_float(op->true_value, lane),
                                                     compile_float(op->false_value, lane));
      }
      case IRNodeKind::Cast: {
        const CastNode* op = e.as<CastNode>();
        DType from = op->value.dtype();
        return with_float_format(t, [&](auto format) -> FloatExprPtr {
          constexpr FloatFormat F = decltype(format)::value;
          if (from.is_float()) return std::make_unique<FloatToFloat<F>>(compile_float(op->value, lane));
          return std::make_unique<IntToFloat<F>>(compile_int(op->value, lane), IntFormat::of(from).is_u64());
        });
      }
      case IRNodeKind::Load: return compile_load<double>(e.as<LoadNode>(), lane);
      case IRNodeKind::Ramp: {
        const RampNode* op = e.as<RampNode>();
        return with_float_format(t, [&](auto format) -> FloatExprPtr {
          return std::make_unique<FloatRampLane<decltype(format)::value>>(compile_float(op->base, 0),
                                                                          compile_float(op->stride, 0), lane);
        });
      }
      case IRNodeKind::Broadcast: return compile_float(e.as<BroadcastNode>()->value, 0);
      case IRNodeKind::Call: return compile_call<double>(e.as<CallNode>(), lane);
      case IRNodeKind::Let: return compile_let<double>(e.as<LetNode>(), lane);
      case IRNodeKind::Reduce: not_lowered("Reduce");
      case IRNodeKind::ProducerLoad: not_lowered("ProducerLoad");
      default: break;
    }
    throw InternalError(cat("interpreter: cannot evaluate ", to_string(e), " as a float"));
  }

  /// An integer-valued binary node: integer arithmetic, or a comparison of floats.
  template <IRNodeKind Op>
  IntExprPtr compile_int_binary(const Expr& e, const Expr& a, const Expr& b, int lane) {
    DType operand = a.dtype();
    if (!operand.is_float()) {
      return std::make_unique<IntBinary<Op>>(compile_int(a, lane), compile_int(b, lane),
                                             IntFormat::of(operand), e);
    }
    if constexpr (BinaryNode<Op>::is_comparison) {
      return std::make_unique<FloatCompare<Op>>(compile_float(a, lane), compile_float(b, lane));
    } else {
      throw InternalError(
          cat("interpreter: ", kind_name(Op), " of floats ", to_string(e), " has an integer type"));
    }
  }

  template <IRNodeKind Op>
  FloatExprPtr compile_float_binary(const BinaryNode<Op>* op, int lane) {
    return with_float_format(op->dtype, [&](auto format) -> FloatExprPtr {
      return std::make_unique<FloatBinary<Op, decltype(format)::value>>(compile_float(op->a, lane),
                                                                        compile_float(op->b, lane));
    });
  }

  AccessSite site_of(const Var& buffer, const Expr& index, bool is_store) const {
    return AccessSite{buffer_names_[static_cast<size_t>(buffer_slot(buffer))], index, is_store};
  }

  // -------------------------------------------------------------------------------------------
  // The rest is the Compiler's own.

 private:
  template <typename V>
  ExprPtr<V> compile_load(const LoadNode* op, int lane) {
    const int slot = buffer_slot(op->buffer);
    const int shared = lookup(op->buffer.get()).shared_id;
    const DType element = op->dtype.element_of();
    ExprPtr<V> load = with_codec(element, [&](auto codec) -> ExprPtr<V> {
      using Codec = decltype(codec);
      if constexpr (std::is_same_v<typename Codec::Value, V>) {
        if (shared >= 0) {  // inside a kernel: the simulator watches shared memory
          IntExprPtr index = compile_int(op->index, lane);
          AccessSite site = site_of(op->buffer, op->index, false);
          if constexpr (std::is_same_v<V, double>) {
            return kernels_->shared_load_float(op, slot, std::move(index), std::move(site), shared);
          } else {
            return kernels_->shared_load_int(op, slot, std::move(index), std::move(site), shared);
          }
        }
        return std::make_unique<LoadLane<Codec>>(slot, compile_int(op->index, lane),
                                                 site_of(op->buffer, op->index, false), element);
      } else {
        throw InternalError("interpreter: load of mismatched value class");
      }
    });
    if (!op->predicate.defined()) return load;
    return std::make_unique<PredicatedLoadLane<V>>(compile_int(op->predicate, lane), std::move(load));
  }

  template <typename V>
  ExprPtr<V> compile_let(const LetNode* op, int lane) {
    // The value is compiled before the variable is bound: it sees the enclosing binding.
    const int value_lane = lane_of(op->value, lane);
    VarBinding b;
    if (op->value.dtype().is_float()) {
      FloatExprPtr value = compile_float(op->value, value_lane);
      return with_binding(
          op->var, b,
          [&]() -> ExprPtr<V> {
            return std::make_unique<LetIn<double, V>>(b.slot, std::move(value), compile<V>(op->body, lane));
          },
          "", op->var.dtype().lanes > 1 ? value_lane : -1);
    }
    IntExprPtr value = compile_int(op->value, value_lane);
    return with_binding(
        op->var, b,
        [&]() -> ExprPtr<V> {
          return std::make_unique<LetIn<int64_t, V>>(b.slot, std::move(value), compile<V>(op->body, lane));
        },
        "", op->var.dtype().lanes > 1 ? value_lane : -1);
  }

  static const std::unordered_map<std::string, MathFunction1>& math_functions1() {
    static const std::unordered_map<std::string, MathFunction1> table = {
#define LOOM_MATH1(name) \
  {#name, {[](float x) { return std::name(x); }, [](double x) { return std::name(x); }}},
        LOOM_MATH1(exp) LOOM_MATH1(exp2) LOOM_MATH1(log) LOOM_MATH1(log2) LOOM_MATH1(log10) LOOM_MATH1(sqrt)
            LOOM_MATH1(sin) LOOM_MATH1(cos) LOOM_MATH1(tan) LOOM_MATH1(tanh) LOOM_MATH1(erf) LOOM_MATH1(floor)
                LOOM_MATH1(ceil) LOOM_MATH1(round) LOOM_MATH1(trunc)
#undef LOOM_MATH1
                    {"abs", {[](float x) { return std::fabs(x); }, [](double x) { return std::fabs(x); }}},
    };
    return table;
  }

  /// A call of a C function registered with register_extern_c, checked against its signature.
  template <typename V>
  ExprPtr<V> compile_extern_c(const CallNode* op, int lane) {
    ExternCFunction fn = ExternCRegistry::global().get(op->name);
    if (fn.params.size() != op->args.size())
      throw Error(cat("extern C function '", op->name, "' takes ", fn.params.size(),
                      " arguments but kernel '", func_.name, "' calls it with ", op->args.size()));
    std::vector<ExternCArgument> args;
    for (size_t i = 0; i < op->args.size(); ++i) {
      const Expr& a = op->args[i];
      ExternCArgument arg;
      if (fn.params[i].is_float()) {
        arg.as_float = compile_float(a.dtype().is_float() ? a : cast(fn.params[i], a), lane);
      } else {
        if (fn.params[i].is_handle() != a.dtype().is_handle())
          throw Error(cat("argument ", i, " of extern C function '", op->name, "' is ", fn.params[i].str(),
                          " but kernel '", func_.name, "' passes ", to_string(a), " of type ",
                          a.dtype().str()));
        arg.is_handle = fn.params[i].is_handle();
        arg.as_int = compile_int(a.dtype().is_float() ? cast(fn.params[i], a) : a, lane);
      }
      args.push_back(std::move(arg));
    }
    return std::make_unique<ExternCCall<V>>(std::move(fn), std::move(args));
  }

  [[noreturn]] void unsupported_call(const CallNode* op) const {
    if (is_grid_flag_call(op))
      throw Error(cat("the interpreter cannot run ", op->name, "(...) in '", func_.name,
                      "': grid flags hand data between the blocks of a GPU kernel, so the call must be a "
                      "statement (Evaluate) inside the loops bound to blockIdx/threadIdx; there the GPU "
                      "simulator (Target::cuda_sim()) and CUDA (Target::cuda()) run it"));
    throw Error(cat("the interpreter cannot run the call ", op->name, "(...) in kernel '", func_.name,
                    "': it knows if_then_else, likely, reinterpret, abs, pow, exp, exp2, log, log2, log10, "
                    "sqrt, sin, cos, tan, tanh, erf, floor, ceil, round, trunc, and loom.extern_stage "
                    "(as a statement)"));
  }

  template <typename V>
  ExprPtr<V> compile_call(const CallNode* op, int lane) {
    const std::string& name = op->name;
    auto arg_count = [&](size_t n) {
      internal_check(op->args.size() == n, "call ", name, " with ", op->args.size(), " arguments, expected ",
                     n);
    };
    if (name == intrinsic::likely) {
      arg_count(1);
      return compile<V>(op->args[0], lane);
    }
    if (name == intrinsic::if_then_else) {
      arg_count(3);
      return std::make_unique<LazySelect<V>>(compile_int(op->args[0], lane), compile<V>(op->args[1], lane),
                                             compile<V>(op->args[2], lane));
    }
    if (op->call_kind == CallKind::Extern) return compile_extern_c<V>(op, lane);
    if constexpr (std::is_same_v<V, int64_t>) {
      if (name == intrinsic::address_of) {
        arg_count(1);
        const auto* load = op->args[0].as<LoadNode>();
        internal_check(load != nullptr, "address_of takes a load");
        return std::make_unique<AddressOf>(buffer_slot(load->buffer), compile_int(load->index, lane),
                                           load->dtype.bytes());
      }
    }
    if (name == intrinsic::reinterpret) {
      arg_count(1);
      DType from = op->args[0].dtype();
      internal_check(from.bits == op->dtype.bits, "reinterpret from ", from.str(), " to ", op->dtype.str());
      if (from.is_float())
        return std::make_unique<Reinterpret<V, double>>(compile_float(op->args[0], lane), from, op->dtype);
      return std::make_unique<Reinterpret<V, int64_t>>(compile_int(op->args[0], lane), from, op->dtype);
    }
    if constexpr (std::is_same_v<V, int64_t>) {
      if (name == "abs") {
        arg_count(1);
        return std::make_unique<IntAbs>(compile_int(op->args[0], lane), IntFormat::of(op->dtype));
      }
    } else {
      if (name == "pow") {
        arg_count(2);
        MathFunction2 pow_fn{[](float x, float y) { return std::pow(x, y); },
                             [](double x, double y) { return std::pow(x, y); }};
        return with_float_format(op->dtype, [&](auto format) -> FloatExprPtr {
          return std::make_unique<FloatMath2<decltype(format)::value>>(
              compile_float(op->args[0], lane), compile_float(op->args[1], lane), pow_fn);
        });
      }
      auto it = math_functions1().find(name);
      if (it != math_functions1().end()) {
        arg_count(1);
        return with_float_format(op->dtype, [&](auto format) -> FloatExprPtr {
          return std::make_unique<FloatMath1<decltype(format)::value>>(compile_float(op->args[0], lane),
                                                                       it->second);
        });
      }
    }
    unsupported_call(op);
  }

  // -------------------------------------------------------------------------------------------
  // Statements

  StmtPtr compile_stmt(const Stmt& s) {
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
          internal_check(b.kind == VarBinding::Kind::Int, "loop variable '", op->loop_var.name(),
                         "' of type ", op->loop_var.dtype().str());
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

  StmtPtr compile_let_stmt(const LetStmtNode* op) {
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

  StmtPtr compile_store(const StoreNode* op) {
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

  StmtPtr compile_evaluate(const Expr& value) {
    if (const CallNode* call = value.as<CallNode>(); call && call->name == intrinsic::extern_stage)
      return compile_extern_stage(call);
    auto make = [&](auto value_tag) -> StmtPtr {
      using V = decltype(value_tag);
      std::vector<ExprPtr<V>> lanes;
      for (int i = 0; i < value.dtype().lanes; ++i) lanes.push_back(compile<V>(value, i));
      return std::make_unique<EvaluateLanes<V>>(std::move(lanes));
    };
    if (value.dtype().is_handle()) return std::make_unique<NoOp>();  // e.g. a bare string or buffer
    return value.dtype().is_float() ? make(double{}) : make(int64_t{});
  }

  StmtPtr compile_extern_stage(const CallNode* call) {
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

  /// The outermost loop bound to blockIdx/threadIdx and everything in it: one kernel launch.
  StmtPtr compile_kernel_region(const Stmt& region) {
    if (!kernels_)
      throw Error(cat("kernel '", func_.name,
                      "' has a GPU kernel region (a loop bound to blockIdx/threadIdx): "
                      "run it with interpret() or simulate() (loom/sim/interpreter.hpp), which hand kernel "
                      "regions to the GPU simulator"));
    return kernels_->compile_region(*this, region, num_kernels_++);
  }

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
