// Expression nodes of the loop IR and the Expr/Var handles that users hold.
// Nodes are immutable and shared; `make` factories check types (user-facing operators with
// type promotion live in ir/op.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "loom/ir/dtype.hpp"
#include "loom/ir/node_kinds.hpp"
#include "loom/support/object.hpp"

namespace loom {

/// The base of every expression node: its IRNodeKind (for Expr::as<T>()) and its result DType.
/// Nodes are immutable and shared through Expr handles; build them with the node classes' make().
class ExprNode : public Object {
 public:
  /// Called by the node classes' constructors; `k` must be the derived class's node_kind.
  ExprNode(IRNodeKind k, DType t) : kind(k), dtype(t) {}
  /// The node's class, for Expr::as<T>() and switches over node kinds.
  const IRNodeKind kind;
  /// The type of the expression's value.
  const DType dtype;
};

class Var;

/// A handle to an immutable expression node. Converts implicitly from C++ numbers.
class Expr {
 public:
  Expr() = default;
  /// Wraps a node, or a C++ number as a constant: int is int32, int64_t int64, float and double float32 (see
  /// below), bool a bool; binary operators convert constants to the other operand's type.
  /// @{
  Expr(Ref<const ExprNode> node) : node_(std::move(node)) {}
  Expr(int value);
  Expr(int64_t value);
  Expr(float value);
  Expr(double value);
  Expr(bool value);
  /// @}

  /// Node access: defined() is false for a default-constructed Expr, which every other accessor but get() and
  /// same_as() dereferences. same_as() compares node identity, not structure (see ir/structural_equal.hpp).
  /// @{
  bool defined() const { return static_cast<bool>(node_); }
  const ExprNode* get() const { return node_.get(); }
  const ExprNode* operator->() const { return node_.get(); }
  DType dtype() const { return node_->dtype; }
  IRNodeKind kind() const { return node_->kind; }
  bool same_as(const Expr& other) const { return node_.same_as(other.node_); }
  /// @}

  /// The node as T when it is one, otherwise nullptr.
  template <typename T>
  const T* as() const {
    if (node_ && node_->kind == T::node_kind) return static_cast<const T*>(node_.get());
    return nullptr;
  }

 private:
  Ref<const ExprNode> node_;
};

/// Hashes an Expr by node identity, for unordered containers keyed by the node (pair with ExprSameAs).
struct ExprHash {
  /// The node's address, hashed.
  std::size_t operator()(const Expr& e) const { return std::hash<const void*>()(e.get()); }
};
/// Compares two Exprs by node identity (Expr::same_as), the equality that goes with ExprHash.
struct ExprSameAs {
  /// True when `a` and `b` hold the same node.
  bool operator()(const Expr& a, const Expr& b) const { return a.same_as(b); }
};

// ---------------------------------------------------------------------------------------------
// Immediates and variables

/// An integer or bool constant. `value` is sign-extended for signed types and zero-extended (the bit pattern)
/// for unsigned ones, normalised to the type's width by make().
class IntImmNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::IntImm;  ///< The kind as<T>() looks for.
  /// Stores `v` as given; make() is the factory that normalises it to the width of `t`.
  IntImmNode(DType t, int64_t v) : ExprNode(node_kind, t), value(v) {}
  /// The value; for uint64 the bit pattern.
  const int64_t value;  // for uint64 the bit pattern
  /// A constant of type `t` (an integer or bool type), `v` truncated to its width.
  static Expr make(DType t, int64_t v);
};

/// A floating-point constant of type `t` (float16, bfloat16, float32 or float64); `value` is kept as a
/// double.
class FloatImmNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::FloatImm;  ///< The kind as<T>() looks for.
  /// Stores `v` as given; prefer make().
  FloatImmNode(DType t, double v) : ExprNode(node_kind, t), value(v) {}
  /// The value, in double precision whatever the type.
  const double value;
  /// A constant of float type `t` holding `v`.
  static Expr make(DType t, double v) { return Expr(make_ref<FloatImmNode>(t, v)); }
};

/// A string constant, of handle type: the name argument of extern and intrinsic calls.
class StringImmNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::StringImm;  ///< The kind as<T>() looks for.
  /// Stores `v`; prefer make().
  explicit StringImmNode(std::string v) : ExprNode(node_kind, handle_type), value(std::move(v)) {}
  /// The characters.
  const std::string value;
  /// A string constant holding `v`.
  static Expr make(std::string v) { return Expr(make_ref<StringImmNode>(std::move(v))); }
};

/// The node behind a Var: its name (for printing only; identity is the node) and whether it is a reduce axis.
class VarNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Var;  ///< The kind as<T>() looks for.
  /// Prefer constructing a Var, which makes this node.
  VarNode(std::string n, DType t, bool reduce)
      : ExprNode(node_kind, t), name(std::move(n)), is_reduce_axis(reduce) {}
  /// The name, for printing only.
  const std::string name;
  /// Set for the variable of a reduce_axis, so a use outside its reduction can be reported.
  const bool is_reduce_axis;
};

/// A named variable: a loop counter, a symbolic extent, a buffer's data pointer (handle type).
/// Two Vars are the same variable only when they are the same node, whatever their names.
class Var : public Expr {
 public:
  Var() = default;
  /// A new variable named `name` (names need not be unique) of type `t`, int32 by default;
  /// `reduce_axis` marks the variable of a reduce_axis().
  explicit Var(std::string name, DType t = i32, bool reduce_axis = false)
      : Expr(make_ref<VarNode>(std::move(name), t, reduce_axis)) {}
  /// Wraps an existing VarNode; `node` must be one (no check).
  explicit Var(Ref<const ExprNode> node) : Expr(std::move(node)) {}
  /// The VarNode, and its name.
  /// @{
  const VarNode* get() const { return static_cast<const VarNode*>(Expr::get()); }
  const VarNode* operator->() const { return get(); }
  const std::string& name() const { return get()->name; }
  /// @}
  /// A fresh variable of the same type with another name.
  Var copy_with_name(const std::string& name) const { return Var(name, dtype(), get()->is_reduce_axis); }
};

inline Expr IntImmNode::make(DType t, int64_t v) {
  // Normalise the stored value to the type's width so that equal constants compare equal.
  if (t.bits < 64 && t.code == TypeCode::Int) {
    int shift = 64 - t.bits;
    v = static_cast<int64_t>(static_cast<uint64_t>(v) << shift) >> shift;
  } else if (t.bits < 64 && t.code == TypeCode::UInt) {
    v = static_cast<int64_t>(static_cast<uint64_t>(v) & ((uint64_t{1} << t.bits) - 1));
  }
  return Expr(make_ref<IntImmNode>(t, v));
}

inline Expr::Expr(int value) : Expr(IntImmNode::make(i32, value)) {}
inline Expr::Expr(int64_t value) : Expr(IntImmNode::make(i64, value)) {}
inline Expr::Expr(float value) : Expr(FloatImmNode::make(f32, value)) {}
// A C++ double literal is float32, as a Python float is in TVM; binary operators adapt
// immediates to the other operand's type, so `x * 0.1` with x:float64 keeps full precision.
inline Expr::Expr(double value) : Expr(FloatImmNode::make(f32, value)) {}
inline Expr::Expr(bool value) : Expr(IntImmNode::make(boolean, value ? 1 : 0)) {}

// ---------------------------------------------------------------------------------------------
// Arithmetic, comparison and logic

/// A binary operation, one class per IRNodeKind K (AddNode, LTNode, ... below): operands `a` and `b` of
/// the same type; comparisons and logical operators give bool with the operands' lanes, the rest the operand
/// type.
template <IRNodeKind K>
class BinaryNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = K;  ///< The kind as<T>() looks for.
  /// True for EQ, NE, LT, LE, GT, GE, whose result is bool.
  static constexpr bool is_comparison = K == IRNodeKind::EQ || K == IRNodeKind::NE || K == IRNodeKind::LT ||
                                        K == IRNodeKind::LE || K == IRNodeKind::GT || K == IRNodeKind::GE;
  /// True for And and Or, whose operands and result are bool.
  static constexpr bool is_logical = K == IRNodeKind::And || K == IRNodeKind::Or;
  /// True for the bitwise operations and shifts, which take integer operands only.
  static constexpr bool is_bitwise = K == IRNodeKind::BitwiseAnd || K == IRNodeKind::BitwiseOr ||
                                     K == IRNodeKind::BitwiseXor || K == IRNodeKind::ShiftLeft ||
                                     K == IRNodeKind::ShiftRight;
  /// Stores the operands; prefer make(), which checks them and computes the result type.
  BinaryNode(DType t, Expr a_, Expr b_) : ExprNode(K, t), a(std::move(a_)), b(std::move(b_)) {}
  /// The left and right operands, of the same type.
  /// @{
  const Expr a, b;
  /// @}

  /// Builds the node; both operands must already have the same type (see ir/op.hpp).
  static Expr make(Expr a, Expr b) {
    internal_check(a.defined() && b.defined(), "undefined operand of ", kind_name(K));
    internal_check(a.dtype() == b.dtype(), kind_name(K), " of mismatched types ", a.dtype().str(), " and ",
                   b.dtype().str());
    // ir/bitwise_op.hpp gives users the error; a pass that builds these nodes must check too.
    if constexpr (is_bitwise)
      internal_check(a.dtype().is_int() || a.dtype().is_uint(), kind_name(K), " of non-integer type ",
                     a.dtype().str());
    DType t = (is_comparison || is_logical) ? boolean.with_lanes(a.dtype().lanes) : a.dtype();
    return Expr(make_ref<BinaryNode>(t, std::move(a), std::move(b)));
  }
};

/// The binary operation nodes, one per IRNodeKind. Users build them with the operators and functions of
/// ir/op.hpp (+, <, &&, min, floordiv, ...), which promote operand types first.
/// @{
using AddNode = BinaryNode<IRNodeKind::Add>;
using SubNode = BinaryNode<IRNodeKind::Sub>;
using MulNode = BinaryNode<IRNodeKind::Mul>;
/// Truncating division (C semantics) for integers, IEEE division for floats.
using DivNode = BinaryNode<IRNodeKind::Div>;
/// Truncating remainder (C semantics).
using ModNode = BinaryNode<IRNodeKind::Mod>;
/// Division rounding toward negative infinity; the index arithmetic of splits uses it.
using FloorDivNode = BinaryNode<IRNodeKind::FloorDiv>;
using FloorModNode = BinaryNode<IRNodeKind::FloorMod>;
using MinNode = BinaryNode<IRNodeKind::Min>;
using MaxNode = BinaryNode<IRNodeKind::Max>;
using EQNode = BinaryNode<IRNodeKind::EQ>;
using NENode = BinaryNode<IRNodeKind::NE>;
using LTNode = BinaryNode<IRNodeKind::LT>;
using LENode = BinaryNode<IRNodeKind::LE>;
using GTNode = BinaryNode<IRNodeKind::GT>;
using GENode = BinaryNode<IRNodeKind::GE>;
using AndNode = BinaryNode<IRNodeKind::And>;
using OrNode = BinaryNode<IRNodeKind::Or>;
/// Bitwise operations on int8..int64 and uint8..uint64 (not bool, not floats). Shifts use the
/// amount modulo the bit width (b & (bits - 1)), in every backend; ShiftRight is arithmetic for
/// signed types and logical for unsigned ones. Semantics: int_math::bitwise (ir/int_math.hpp).
using BitwiseAndNode = BinaryNode<IRNodeKind::BitwiseAnd>;
using BitwiseOrNode = BinaryNode<IRNodeKind::BitwiseOr>;
using BitwiseXorNode = BinaryNode<IRNodeKind::BitwiseXor>;
using ShiftLeftNode = BinaryNode<IRNodeKind::ShiftLeft>;
using ShiftRightNode = BinaryNode<IRNodeKind::ShiftRight>;
/// @}

/// Logical negation of a bool expression (the `!` of ir/op.hpp).
class NotNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Not;  ///< The kind as<T>() looks for.
  /// Stores the operand; prefer make().
  explicit NotNode(Expr a_) : ExprNode(node_kind, a_.dtype()), a(std::move(a_)) {}
  /// The bool operand.
  const Expr a;
  /// `!a`; `a` must be bool (an internal check, not a user error).
  static Expr make(Expr a) {
    internal_check(a.dtype().is_bool(), "logical not of non-bool ", a.dtype().str());
    return Expr(make_ref<NotNode>(std::move(a)));
  }
};

/// `condition ? true_value : false_value`, evaluating both branches (see intrinsic::if_then_else for the lazy
/// one).
class SelectNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Select;  ///< The kind as<T>() looks for.
  /// Stores the operands; prefer make().
  SelectNode(Expr c, Expr t, Expr f)
      : ExprNode(node_kind, t.dtype()),
        condition(std::move(c)),
        true_value(std::move(t)),
        false_value(std::move(f)) {}
  /// The bool condition and the two values, of the node's type.
  /// @{
  const Expr condition, true_value, false_value;
  /// @}
  /// The select of `t` or `f` by the bool `c`; `t` and `f` must have the same type.
  static Expr make(Expr c, Expr t, Expr f) {
    internal_check(c.dtype().is_bool(), "select condition is not bool");
    internal_check(t.dtype() == f.dtype(), "select branches of different types ", t.dtype().str(), " and ",
                   f.dtype().str());
    return Expr(make_ref<SelectNode>(std::move(c), std::move(t), std::move(f)));
  }
};

/// A conversion of `value` to another element type with the same lane count (C conversion rules;
/// float to int truncates).
class CastNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Cast;  ///< The kind as<T>() looks for.
  /// Stores the operand; prefer make(), or loom::cast() in ir/op.hpp, which checks user input.
  CastNode(DType t, Expr v) : ExprNode(node_kind, t), value(std::move(v)) {}
  /// The value converted.
  const Expr value;
  /// The conversion of `v` to `t`; the lane counts must agree.
  static Expr make(DType t, Expr v) {
    internal_check(t.lanes == v.dtype().lanes, "cast changes lanes");
    return Expr(make_ref<CastNode>(t, std::move(v)));
  }
};

/// A read of flat memory: buffer[index], after storage flattening. A vector index (a Ramp)
/// makes a vector load; `predicate`, when defined, masks lanes.
class LoadNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Load;  ///< The kind as<T>() looks for.
  /// Stores the operands; prefer make().
  LoadNode(DType t, Var b, Expr i, Expr p)
      : ExprNode(node_kind, t), buffer(std::move(b)), index(std::move(i)), predicate(std::move(p)) {}
  /// The buffer variable (a handle), the element index (a Ramp for vector loads) and the lane mask
  /// (undefined: all lanes).
  /// @{
  const Var buffer;
  const Expr index;
  const Expr predicate;
  /// @}
  /// A load of `element` values at `index` (scalar or Ramp); the result has the index's lanes.
  static Expr make(DType element, Var buffer, Expr index, Expr predicate = Expr()) {
    DType t = element.with_lanes(index.dtype().lanes);
    return Expr(make_ref<LoadNode>(t, std::move(buffer), std::move(index), std::move(predicate)));
  }
};

/// The vector base, base+stride, ..., base+(lanes-1)*stride.
class RampNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Ramp;  ///< The kind as<T>() looks for.
  /// Stores the operands; prefer make().
  RampNode(Expr b, Expr s, int l)
      : ExprNode(node_kind, b.dtype().with_lanes(l)), base(std::move(b)), stride(std::move(s)), lanes(l) {}
  /// The first element, the step between lanes, and the lane count.
  /// @{
  const Expr base, stride;
  const int lanes;
  /// @}
  /// The vector `base + i * stride` for i in [0, lanes); `base` and `stride` are scalars of the same type.
  static Expr make(Expr base, Expr stride, int lanes) {
    internal_check(base.dtype().is_scalar() && stride.dtype() == base.dtype(), "bad ramp");
    return Expr(make_ref<RampNode>(std::move(base), std::move(stride), lanes));
  }
};

/// A scalar `value` repeated in `lanes` lanes.
class BroadcastNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Broadcast;  ///< The kind as<T>() looks for.
  /// Stores the operands; prefer make().
  BroadcastNode(Expr v, int l)
      : ExprNode(node_kind, v.dtype().with_lanes(l)), value(std::move(v)), lanes(l) {}
  /// The scalar repeated, and the lane count.
  /// @{
  const Expr value;
  const int lanes;
  /// @}
  /// `value` (a scalar) in every one of `lanes` lanes.
  static Expr make(Expr value, int lanes) {
    internal_check(value.dtype().is_scalar(), "broadcast of a vector");
    return Expr(make_ref<BroadcastNode>(std::move(value), lanes));
  }
};

/// What a CallNode calls, which tells passes whether they may duplicate, reorder or drop it.
enum class CallKind : uint8_t {
  PureIntrinsic,  ///< math and loom builtins without side effects (exp, if_then_else, likely)
  Intrinsic,      ///< loom builtins with side effects (prefetch, extern stage calls)
  Extern,         ///< a C function the generated code links against
};

/// A call of an intrinsic or extern function `name` with `args`; see namespace intrinsic for the names
/// the passes and backends know, and extern_c.hpp for calls of C functions.
class CallNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Call;  ///< The kind as<T>() looks for.
  /// Stores the operands; prefer make().
  CallNode(DType t, std::string n, std::vector<Expr> a, CallKind k)
      : ExprNode(node_kind, t), name(std::move(n)), args(std::move(a)), call_kind(k) {}
  /// The function or intrinsic name, the arguments, and what kind of call it is.
  /// @{
  const std::string name;
  const std::vector<Expr> args;
  const CallKind call_kind;
  /// @}
  /// A call of `name` returning `t`; pure by default (see CallKind).
  static Expr make(DType t, std::string name, std::vector<Expr> args,
                   CallKind kind = CallKind::PureIntrinsic) {
    return Expr(make_ref<CallNode>(t, std::move(name), std::move(args), kind));
  }
  /// True for a PureIntrinsic: no side effects, so passes may duplicate or drop the call.
  bool is_pure() const { return call_kind == CallKind::PureIntrinsic; }
};

/// `let var = value in body`: binds `var` for the evaluation of `body`, the node's value.
class LetNode : public ExprNode {
 public:
  static constexpr IRNodeKind node_kind = IRNodeKind::Let;  ///< The kind as<T>() looks for.
  /// Stores the operands; prefer make().
  LetNode(Var v, Expr val, Expr b)
      : ExprNode(node_kind, b.dtype()), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  /// The variable bound, its value, and the expression evaluated with the binding.
  /// @{
  const Var var;
  const Expr value, body;
  /// @}
  /// `body` with `var` bound to `value`; the result has body's type.
  static Expr make(Var var, Expr value, Expr body) {
    return Expr(make_ref<LetNode>(std::move(var), std::move(value), std::move(body)));
  }
};

/// Names of the intrinsics the lowering passes and backends agree on.
namespace intrinsic {
/// The intrinsic names: if_then_else(c, a, b) is a select that evaluates only the taken branch;
/// extern_stage calls an extern operation's C function; reinterpret reinterprets a value's bits as another
/// type.
/// @{
inline constexpr const char* if_then_else = "if_then_else";  ///< lazily evaluated select
inline constexpr const char* likely = "likely";              ///< a guard that is usually true
inline constexpr const char* address_of = "address_of";      ///< address of a Load
inline constexpr const char* extern_stage = "loom.extern_stage";
inline constexpr const char* reinterpret = "reinterpret";
/// @}
/// A call of an LLVM intrinsic by name (CPU backend only): args are the intrinsic's name and the CPU
/// features it needs (both StringImm), then its operands; see call_llvm_intrinsic().
inline constexpr const char* llvm_intrinsic = "loom.llvm_intrinsic";
}  // namespace intrinsic

}  // namespace loom
