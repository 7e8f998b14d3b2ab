// KernelEmitter's expressions (kernel_emitter.hpp): C operators with the interpreter's semantics,
// fused multiply-adds inside fp_contract loops, casts and half/bfloat16 conversions, intrinsic
// calls, and vector loads and stores hoisted into aligned vector types.
#pragma once

#include "loom/codegen/cuda/kernel_emitter.hpp"

namespace loom::cuda::detail {

inline std::string KernelEmitter::emit(const Expr& e, int lane) {
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

inline std::optional<std::string> KernelEmitter::fused_multiply_add(const Expr& a, const Expr& b,
                                                                    IRNodeKind kind, int lane) {
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

inline std::string KernelEmitter::binary(const Expr& a, const Expr& b, IRNodeKind kind, DType result,
                                         int lane) {
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
    case IRNodeKind::BitwiseAnd: text = op("&"); break;
    case IRNodeKind::BitwiseOr: text = op("|"); break;
    case IRNodeKind::BitwiseXor: text = op("^"); break;
    case IRNodeKind::ShiftLeft:
    case IRNodeKind::ShiftRight: {
      // The amount modulo the width (ir/int_math.hpp), which C leaves undefined past it; a
      // constant amount is always in range (ir/bitwise_op.hpp checks it).
      const int64_t* c = as_const_int(b);
      const std::string amount = c && *c >= 0 && *c < t.bits ? cat(*c) : cat("(", y, " & ", t.bits - 1, ")");
      if (kind == IRNodeKind::ShiftRight) {
        text = cat("(", x, " >> ", amount, ")");  // arithmetic for signed C types, logical for unsigned
      } else if (t.is_int()) {
        // Shifting a negative value left is undefined in C++17: shift its unsigned bits instead.
        const DType u(TypeCode::UInt, t.bits);
        text = cat("((", c_type(u), ")", x, " << ", amount, ")");
        if (!promotes_in_c(result)) text = cat("((", c_type(result), ")", text, ")");
      } else {
        text = cat("(", x, " << ", amount, ")");
      }
      break;
    }
    default: throw InternalError("CUDA codegen: unknown binary operator");
  }
  if (half) return convert(text, f32, t);
  // C computes narrow integers in int; the IR wraps at their width.
  if (promotes_in_c(result)) return cat("((", c_type(result), ")", text, ")");
  return text;
}

inline std::string KernelEmitter::load(const LoadNode* op, int lane) {
  if (auto it = vector_loads_.find(op); it != vector_loads_.end() && lane >= 0)
    return it->second.array ? cat(it->second.name, "[", lane, "]")
                            : cat(it->second.name, ".", vector_field(lane));
  std::string text = cat(name_of(op->buffer), "[", emit(op->index, lane), "]");
  if (op->predicate.defined())
    text = cat("(", emit(op->predicate, lane), " ? ", text, " : ",
               emit(make_zero(op->dtype.element_of()), -1), ")");
  return text;
}

inline std::string KernelEmitter::call(const CallNode* op, int lane) {
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
  if (name == loom::intrinsic::lane_id) {
    helpers_.insert("lane_id");
    return "loom_lane_id()";
  }
  if (is_grid_flag_call(op)) {
    helpers_.insert("grid_flags");
    return grid_flag_call_text(op, arg(0), arg(1), arg(2));
  }
  if (name == loom::intrinsic::llvm_intrinsic) {
    const auto* which = op->args.empty() ? nullptr : op->args[0].as<StringImmNode>();
    fail(cat(
        "it calls the LLVM CPU intrinsic '", which ? which->value : "?",
        "', which only the CPU backend compiles; tensorize GPU stages with GPU intrinsics (mma.sync, ...)"));
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
             "address_of, loom.lane_id, abs, pow, exp, exp2, log, log2, log10, sqrt, sin, cos, tan, tanh, "
             "erf, floor, ceil, round, trunc"));
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

inline std::string KernelEmitter::vector_access_type(DType value_type, const VectorAccess& access) {
  if (!access.vector || access.pieces != 1) return "";
  return vector_type(value_type.element_of(), value_type.lanes);
}

inline VectorAccess KernelEmitter::emitted_access(const Var& buffer, DType value_type,
                                                  const VectorAccess& access) const {
  if (!access.vector || !local_buffers_.count(buffer.get()) ||
      !vector_access_type(value_type, access).empty())
    return access;
  return VectorAccess{value_type.lanes, value_type.element_of().bytes(), false, 1};
}

inline void KernelEmitter::copy_vector_pieces(const std::string& to, const std::string& from,
                                              const VectorAccess& access) {
  const char* bits = access.bytes == 16 ? "uint4" : access.bytes == 8 ? "uint2" : "unsigned int";
  for (int p = 0; p < access.pieces; ++p) {
    const std::string offset = p == 0 ? "" : cat(" + ", p * access.lanes_per_piece);
    line(cat("*reinterpret_cast<", bits, "*>(", to, offset, ") = *reinterpret_cast<const ", bits, "*>(", from,
             offset, ");"));
  }
}

inline void KernelEmitter::hoist_vector_loads(const std::vector<Expr>& exprs) {
  for (const HoistedLoad& hoisted : hoistable_loads(exprs)) {
    const LoadNode* op = hoisted.load;
    if (vector_loads_.count(op)) continue;
    const VectorAccess access = emitted_access(op->buffer, op->dtype, hoisted.access);
    if (!access.vector) continue;
    note_alignment(op->buffer, access.bytes);
    const std::string address = cat(name_of(op->buffer), " + ", emit(op->index.as<RampNode>()->base, -1));
    std::string name = fresh(op->buffer.name() + "_v");
    const std::string type = vector_access_type(op->dtype, access);
    if (hoisted.guards.empty() && !access.guarded && !type.empty()) {
      line(cat("const ", type, " ", name, " = *reinterpret_cast<const ", type, "*>(", address, ");"));
      vector_loads_[op] = VectorTemp{name, false};
      continue;
    }
    // The guards of the if_then_else branches it is in and its own predicate, all lane 0's: the
    // same for all lanes. Where they are off, zeros, as a guarded load gives.
    std::string condition;
    for (const Expr& g : hoisted.guards)
      condition += (condition.empty() ? "" : " && ") + paren(emit(g, g.dtype().is_vector() ? 0 : -1));
    if (access.guarded) condition += (condition.empty() ? "" : " && ") + paren(emit(op->predicate, 0));
    const bool guarded = !condition.empty();
    const std::string zeros = guarded ? " = {}" : "";
    if (!type.empty()) {
      line(cat(type, " ", name, zeros, ";"));
    } else {
      line(cat("alignas(", access.bytes, ") ", c_type(op->dtype), " ", name, "[", op->dtype.lanes, "]", zeros,
               ";"));
    }
    if (guarded) {
      line(cat("if (", condition, ") {"));
      ++indent_;
    }
    if (!type.empty()) {
      line(cat(name, " = *reinterpret_cast<const ", type, "*>(", address, ");"));
    } else {
      copy_vector_pieces(name, address, access);
    }
    if (guarded) {
      --indent_;
      line("}");
    }
    vector_loads_[op] = VectorTemp{name, type.empty()};
  }
}

}  // namespace loom::cuda::detail
