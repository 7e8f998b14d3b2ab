// Range (min, extent) and IterVar: a named iteration domain, the axis of a computation or a
// loop created by a schedule (split, fuse), or a hardware thread index ("threadIdx.x").
#pragma once

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "loom/ir/expr.hpp"
#include "loom/ir/op.hpp"

namespace loom {

/// The half-open interval [min, min + extent).
struct Range {
  /// The first value.
  Expr min;
  /// The number of values.
  Expr extent;
  Range() = default;
  /// The range [mn, mn + ext).
  Range(Expr mn, Expr ext) : min(std::move(mn)), extent(std::move(ext)) {}
  /// False for a default-constructed Range (an axis whose bounds are not inferred yet).
  bool defined() const { return min.defined(); }
};

/// The role of an IterVar: what a schedule may do with the axis and how lowering treats its loop.
enum class IterVarKind : uint8_t {
  DataPar,      ///< a data-parallel axis of a compute
  CommReduce,   ///< a reduction axis (commutative, associative)
  Ordered,      ///< a sequential axis (the time axis of a scan)
  ThreadIndex,  ///< a hardware thread or block index, or a virtual thread
  Opaque,       ///< an axis with no known semantics (extern stages)
};

/// The name of an IterVarKind as the IR printer and messages write it.
inline const char* iter_var_kind_name(IterVarKind k) {
  switch (k) {
    case IterVarKind::DataPar: return "DataPar";
    case IterVarKind::CommReduce: return "CommReduce";
    case IterVarKind::Ordered: return "Ordered";
    case IterVarKind::ThreadIndex: return "ThreadIndex";
    case IterVarKind::Opaque: return "Opaque";
  }
  return "?";
}

/// The node behind an IterVar: its domain, its variable, its kind and, for thread axes, its thread tag.
class IterVarNode : public Object {
 public:
  /// Stores the fields; build axes through IterVar, compute() and reduce_axis().
  IterVarNode(Range d, Var v, IterVarKind k, std::string tag)
      : dom(std::move(d)), var(std::move(v)), kind(k), thread_tag(std::move(tag)) {}
  const Range dom;  ///< undefined for axes created by split/fuse until bounds are inferred
  /// The loop variable the axis binds; use it (or the IterVar) in expressions.
  const Var var;
  /// The axis's role.
  const IterVarKind kind;
  const std::string thread_tag;  ///< "threadIdx.x", "blockIdx.y", "vthread", or empty
};

/// A handle to an axis: a named iteration domain (a compute's axis, a reduce axis, a loop made by split
/// or fuse, a thread index). Copies share the axis; identity is the node (same_as).
class IterVar {
 public:
  IterVar() = default;
  /// Wraps an existing node.
  explicit IterVar(Ref<const IterVarNode> node) : node_(std::move(node)) {}
  /// A new axis over `dom` with loop variable `var`; `thread_tag` for ThreadIndex axes ("threadIdx.x").
  IterVar(Range dom, Var var, IterVarKind kind, std::string thread_tag = "")
      : node_(make_ref<IterVarNode>(std::move(dom), std::move(var), kind, std::move(thread_tag))) {}

  /// Accessors: defined() is false for a default-constructed IterVar; var() is the loop variable,
  /// dom() the domain (undefined until bounds are inferred for split and fuse results), name() the variable's
  /// name, kind() the role; is_reduce() is true for a CommReduce axis.
  /// @{
  bool defined() const { return static_cast<bool>(node_); }
  const IterVarNode* get() const { return node_.get(); }
  const IterVarNode* operator->() const { return node_.get(); }
  const Var& var() const { return node_->var; }
  const Range& dom() const { return node_->dom; }
  const std::string& name() const { return node_->var.name(); }
  IterVarKind kind() const { return node_->kind; }
  bool is_reduce() const { return node_->kind == IterVarKind::CommReduce; }
  /// @}
  /// Use an IterVar wherever an expression is expected: it stands for its variable.
  operator Expr() const { return node_->var; }
  /// Handle identity: the same axis, not merely an axis with the same name or range.
  bool same_as(const IterVar& other) const { return node_.same_as(other.node_); }
  /// Comparisons compare the axes' values, as in TVM: `k == l` in a `where` builds an EQ node.
  /// They return Expr, which does not convert to bool, so a handle comparison written by mistake
  /// (`if (a == b)`, std::find over IterVars) fails to compile instead of silently becoming a
  /// constant condition. Use same_as, IterVarSameAs(Fn), IterVarHash or IterVarLess for identity.
  /// Value comparisons: each builds a bool Expr of the two axes' variables.
  /// @{
  friend Expr operator==(const IterVar& a, const IterVar& b) { return a.var() == b.var(); }
  friend Expr operator!=(const IterVar& a, const IterVar& b) { return a.var() != b.var(); }
  friend Expr operator<(const IterVar& a, const IterVar& b) { return a.var() < b.var(); }
  friend Expr operator<=(const IterVar& a, const IterVar& b) { return a.var() <= b.var(); }
  friend Expr operator>(const IterVar& a, const IterVar& b) { return a.var() > b.var(); }
  friend Expr operator>=(const IterVar& a, const IterVar& b) { return a.var() >= b.var(); }
  /// @}

 private:
  Ref<const IterVarNode> node_;
};

// Containers of IterVars key on handle identity; name these functors explicitly, since the
// comparison operators of IterVar build expressions (`k == l` is an EQ node, as in TVM).

/// Hashes an IterVar by handle identity, for unordered containers (with IterVarSameAs).
struct IterVarHash {
  /// The node's address, hashed.
  std::size_t operator()(const IterVar& iv) const { return std::hash<const void*>()(iv.get()); }
};
/// Compares two IterVars by handle identity (IterVar::same_as), the equality for IterVarHash.
struct IterVarSameAs {
  /// True when `a` and `b` are the same axis.
  bool operator()(const IterVar& a, const IterVar& b) const { return a.same_as(b); }
};
/// Orders IterVars by node address, for std::map and std::set keyed by axis.
struct IterVarLess {
  /// Orders by node address.
  bool operator()(const IterVar& a, const IterVar& b) const {
    return std::less<const void*>()(a.get(), b.get());
  }
};
/// Are two lists of IterVars the same handles in the same order (e.g. a stage's loops)?
inline bool same_iter_vars(const std::vector<IterVar>& a, const std::vector<IterVar>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), IterVarSameAs());
}
/// A predicate for std::find_if and friends: is this the same handle as `iv`?
struct IterVarSameAsFn {
  /// The axis to look for.
  IterVar iv;
  /// True when `other` is the same axis as `iv`.
  bool operator()(const IterVar& other) const { return other.same_as(iv); }
};

}  // namespace loom
