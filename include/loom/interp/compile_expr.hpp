// Compiler's expressions (interp/compiler_decl.hpp): integer and float trees per vector lane,
// binary nodes by template, loads through the frame's buffers or a kernel region's shared memory,
// lets, math and registered C functions, and the intrinsics the interpreter runs.
#pragma once

#include "loom/interp/compiler_decl.hpp"

namespace loom::interp {

inline void Compiler::not_lowered(const char* what) const {
  throw InternalError(cat("the interpreter was given kernel '", func_.name, "' with a ", what,
                          " node: the function was not lowered (run the lowering pipeline first)"));
}

template <typename V>
inline ExprPtr<V> Compiler::compile(const Expr& e, int lane) {
  if constexpr (std::is_same_v<V, double>) {
    return compile_float(e, lane);
  } else {
    return compile_int(e, lane);
  }
}

inline IntExprPtr Compiler::compile_int(const Expr& e, int lane) {
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

inline FloatExprPtr Compiler::compile_float(const Expr& e, int lane) {
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
    case IRNodeKind::FloorDiv: return compile_float_binary<IRNodeKind::FloorDiv>(e.as<FloorDivNode>(), lane);
    case IRNodeKind::FloorMod: return compile_float_binary<IRNodeKind::FloorMod>(e.as<FloorModNode>(), lane);
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

template <IRNodeKind Op>
inline IntExprPtr Compiler::compile_int_binary(const Expr& e, const Expr& a, const Expr& b, int lane) {
  DType operand = a.dtype();
  if (!operand.is_float()) {
    return std::make_unique<IntBinary<Op>>(compile_int(a, lane), compile_int(b, lane), IntFormat::of(operand),
                                           e);
  }
  if constexpr (BinaryNode<Op>::is_comparison) {
    return std::make_unique<FloatCompare<Op>>(compile_float(a, lane), compile_float(b, lane));
  } else {
    throw InternalError(
        cat("interpreter: ", kind_name(Op), " of floats ", to_string(e), " has an integer type"));
  }
}

template <IRNodeKind Op>
inline FloatExprPtr Compiler::compile_float_binary(const BinaryNode<Op>* op, int lane) {
  return with_float_format(op->dtype, [&](auto format) -> FloatExprPtr {
    return std::make_unique<FloatBinary<Op, decltype(format)::value>>(compile_float(op->a, lane),
                                                                      compile_float(op->b, lane));
  });
}

inline AccessSite Compiler::site_of(const Var& buffer, const Expr& index, bool is_store) const {
  return AccessSite{buffer_names_[static_cast<size_t>(buffer_slot(buffer))], index, is_store};
}

template <typename V>
inline ExprPtr<V> Compiler::compile_load(const LoadNode* op, int lane) {
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
      IntExprPtr index = compile_int(op->index, lane);
      AccessSite site = site_of(op->buffer, op->index, false);
      if (kernels_) {  // inside a kernel, the simulator may watch global memory too
        ExprPtr<V> global;
        if constexpr (std::is_same_v<V, double>) {
          global = kernels_->global_load_float(op, slot, index, site);
        } else {
          global = kernels_->global_load_int(op, slot, index, site);
        }
        if (global) return global;
      }
      return std::make_unique<LoadLane<Codec>>(slot, std::move(index), std::move(site), element);
    } else {
      throw InternalError("interpreter: load of mismatched value class");
    }
  });
  if (!op->predicate.defined()) return load;
  return std::make_unique<PredicatedLoadLane<V>>(compile_int(op->predicate, lane), std::move(load));
}

template <typename V>
inline ExprPtr<V> Compiler::compile_let(const LetNode* op, int lane) {
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

inline const std::unordered_map<std::string, MathFunction1>& Compiler::math_functions1() {
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

template <typename V>
inline ExprPtr<V> Compiler::compile_extern_c(const CallNode* op, int lane) {
  ExternCFunction fn = ExternCRegistry::global().get(op->name);
  if (fn.params.size() != op->args.size())
    throw Error(cat("extern C function '", op->name, "' takes ", fn.params.size(), " arguments but kernel '",
                    func_.name, "' calls it with ", op->args.size()));
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

inline void Compiler::unsupported_call(const CallNode* op) const {
  if (op->name == intrinsic::llvm_intrinsic) {
    const auto* which = op->args.empty() ? nullptr : op->args[0].as<StringImmNode>();
    throw Error(cat("the interpreter cannot run the LLVM intrinsic '", which ? which->value : "?",
                    "' in kernel '", func_.name,
                    "': build the kernel with the LLVM CPU backend (Target::cpu()), or tensorize with an "
                    "intrinsic whose body the interpreter runs (plain loads, arithmetic, stores)"));
  }
  if (op->name == intrinsic::lane_id)
    throw Error(
        cat("the interpreter cannot run ", op->name, "() in '", func_.name,
            "': it is the lane of a GPU thread in its warp, so it runs only inside the loops bound to "
            "blockIdx/threadIdx, on the GPU simulator (Target::cuda_sim()) or CUDA (Target::cuda())"));
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
inline ExprPtr<V> Compiler::compile_call(const CallNode* op, int lane) {
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
    if (name == intrinsic::lane_id && kernels_)
      if (IntExprPtr lane = kernels_->lane_id()) return lane;
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

}  // namespace loom::interp
