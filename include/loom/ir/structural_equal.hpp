// Structural equality of IR up to a consistent renaming of variables (alpha-equivalence): with
// structural_hash.hpp, the key comparison of Loom's in-memory and on-disk compiled-kernel caches.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "loom/ir/reduce.hpp"
#include "loom/ir/stmt.hpp"

namespace loom {
namespace detail {

// The fields of every node that structural equality and structural hashing look at, in the
// order both walk them. Listing them once is what keeps the two consistent (equal => same hash
// needs both to see the same fields in the same order, because variables are numbered by first
// encounter), and `structural_dispatch` below, generated from the X-macro lists, does not
// compile for a node kind that has no overload here.
//
// Not listed because the walkers handle them for every node: the node kind and an Expr's
// dtype. A Var has no fields: it is compared by where it occurs, never by its name.
// Binding sites (For, Let, LetStmt, Allocate, Reduce axes) come before the code they scope, so
// that variables are numbered from their definition when there is one.

inline auto structural_fields(const IntImmNode* op) { return std::tie(op->value); }
inline auto structural_fields(const FloatImmNode* op) { return std::tie(op->value); }
inline auto structural_fields(const StringImmNode* op) { return std::tie(op->value); }
inline auto structural_fields(const VarNode*) { return std::tuple<>(); }
template <IRNodeKind K>
auto structural_fields(const BinaryNode<K>* op) {
  return std::tie(op->a, op->b);
}
inline auto structural_fields(const NotNode* op) { return std::tie(op->a); }
inline auto structural_fields(const SelectNode* op) {
  return std::tie(op->condition, op->true_value, op->false_value);
}
inline auto structural_fields(const CastNode* op) { return std::tie(op->value); }
inline auto structural_fields(const LoadNode* op) { return std::tie(op->buffer, op->index, op->predicate); }
inline auto structural_fields(const RampNode* op) { return std::tie(op->base, op->stride, op->lanes); }
inline auto structural_fields(const BroadcastNode* op) { return std::tie(op->value, op->lanes); }
inline auto structural_fields(const CallNode* op) { return std::tie(op->name, op->call_kind, op->args); }
inline auto structural_fields(const LetNode* op) { return std::tie(op->var, op->value, op->body); }
inline auto structural_fields(const ReduceNode* op) {
  return std::tie(op->combiner, op->axis, op->source, op->condition, op->value_index);
}
inline auto structural_fields(const ProducerLoadNode* op) { return std::tie(op->producer, op->indices); }

inline auto structural_fields(const LetStmtNode* op) { return std::tie(op->var, op->value, op->body); }
inline auto structural_fields(const AttrStmtNode* op) {
  return std::tie(op->key, op->node, op->value, op->body);
}
inline auto structural_fields(const AssertStmtNode* op) {
  return std::tie(op->condition, op->message, op->body);
}
inline auto structural_fields(const StoreNode* op) {
  return std::tie(op->buffer, op->value, op->index, op->predicate);
}
inline auto structural_fields(const ProvideNode* op) {
  return std::tie(op->producer, op->indices, op->value);
}
inline auto structural_fields(const AllocateNode* op) {
  return std::tie(op->buffer, op->dtype, op->extents, op->scope, op->body);
}
inline auto structural_fields(const RealizeNode* op) {
  return std::tie(op->producer, op->bounds, op->scope, op->body);
}
inline auto structural_fields(const ForNode* op) {
  return std::tie(op->loop_var, op->min, op->extent, op->kind, op->thread_tag, op->annotations, op->body);
}
inline auto structural_fields(const IfThenElseNode* op) {
  return std::tie(op->condition, op->then_case, op->else_case);
}
inline auto structural_fields(const SeqNode* op) { return std::tie(op->seq); }
inline auto structural_fields(const EvaluateNode* op) { return std::tie(op->value); }
inline auto structural_fields(const BarrierNode* op) { return std::tie(op->scope); }
inline auto structural_fields(const PrefetchNode* op) {
  return std::tie(op->location, op->read_write, op->locality);
}

// Objects that are not IR nodes but hang off them.
inline auto structural_fields(const LoopAnnotation& a) { return std::tie(a.key, a.value); }
inline auto structural_fields(const Range& r) { return std::tie(r.min, r.extent); }
inline auto structural_fields(const IterVarNode* iv) {
  return std::tie(iv->var, iv->dom, iv->kind, iv->thread_tag);
}
inline auto structural_fields(const CommReducerNode* r) {
  return std::tie(r->lhs, r->rhs, r->result, r->identity, r->name);
}
// A producer (a TE tensor) is identified by what the generated code sees of it, not by its node.
inline auto structural_fields(const ProducerNode* p) {
  return std::tuple<const std::string&, DType, const std::vector<Expr>&>(
      p->producer_name(), p->producer_dtype(), p->producer_shape());
}

/// Calls f with `node` cast to the node struct of `kind`, for every expression and statement kind.
template <typename F>
decltype(auto) structural_dispatch(IRNodeKind kind, const Object* node, F&& f) {
  switch (kind) {
#define LOOM_STRUCTURAL_CASE(name, node_type) \
  case IRNodeKind::name: return f(static_cast<const node_type*>(node));
    LOOM_EXPR_NODES(LOOM_STRUCTURAL_CASE)
    LOOM_STMT_NODES(LOOM_STRUCTURAL_CASE)
#undef LOOM_STRUCTURAL_CASE
  }
  throw InternalError(cat("structural_dispatch: unknown node kind ", static_cast<int>(kind)));
}

}  // namespace detail

/// Compares several IR roots in one variable mapping, so that a function's parameters and its
/// body can be compared as a whole (equal(params_a, params_b) && equal(body_a, body_b)).
///
/// Variables match by position, not by name or identity: the first time a variable of `a` meets
/// one of `b` (at a binding site or, for a free variable, at its first use) the two are paired,
/// and every later occurrence of either must meet its partner (a bijection). This is TVM's
/// definition, and sound: a consistent renaming of every variable cannot change what a program
/// does. It is stricter than textbook alpha-equivalence where IR rebinds one Var object in two
/// places that the other IR binds to two objects; for a cache key that costs at most a miss.
///
/// After a comparison returns false the mapping is partial and every later call returns false.
class StructuralEqualChecker {
 public:
  bool equal(const Expr& a, const Expr& b) { return root(a, b); }
  bool equal(const Stmt& a, const Stmt& b) { return root(a, b); }
  bool equal(const std::vector<Expr>& a, const std::vector<Expr>& b) { return root(a, b); }
  bool equal(const std::vector<Stmt>& a, const std::vector<Stmt>& b) { return root(a, b); }
  bool equal(const Range& a, const Range& b) { return root(a, b); }

 private:
  // Only places pairs in buckets: hashing addresses is fine here, the result never depends on it.
  struct PairHash {
    std::size_t operator()(const std::pair<const Object*, const Object*>& p) const {
      std::size_t h = std::hash<const Object*>()(p.first);
      return h ^ (std::hash<const Object*>()(p.second) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2));
    }
  };

  std::unordered_map<const VarNode*, const VarNode*> a_to_b_, b_to_a_;
  // The maps hold raw pointers: keeping the variables alive stops a variable freed between two
  // roots from having its address reused by a different one that would then seem already seen.
  std::vector<Expr> keep_alive_;
  // Pairs of nodes already found equal in the current root. IR is a DAG; without this a shared
  // subtree is compared once per path to it. Cleared after each root for the same address-reuse
  // reason (nodes of one root are alive while it is walked).
  std::unordered_set<std::pair<const Object*, const Object*>, PairHash> equal_pairs_;
  bool failed_ = false;

  template <typename T>
  bool root(const T& a, const T& b) {
    if (failed_) return false;
    bool result = eq(a, b);
    equal_pairs_.clear();
    failed_ = !result;
    return result;
  }

  bool map_var(const VarNode* a, const VarNode* b) {
    auto ia = a_to_b_.find(a);
    auto ib = b_to_a_.find(b);
    if (ia != a_to_b_.end() || ib != b_to_a_.end()) {
      return ia != a_to_b_.end() && ib != b_to_a_.end() && ia->second == b && ib->second == a;
    }
    a_to_b_.emplace(a, b);
    b_to_a_.emplace(b, a);
    keep_alive_.push_back(Expr(Ref<const ExprNode>(a)));
    keep_alive_.push_back(Expr(Ref<const ExprNode>(b)));
    return true;
  }

  bool seen(const Object* a, const Object* b) const { return equal_pairs_.count({a, b}) != 0; }
  void remember(const Object* a, const Object* b) { equal_pairs_.insert({a, b}); }

  template <typename... Ts>
  bool eq_fields(const std::tuple<Ts...>& a, const std::tuple<Ts...>& b) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return (eq(std::get<I>(a), std::get<I>(b)) && ...);  // left to right, stops at the first difference
    }
    (std::index_sequence_for<Ts...>{});
  }

  bool eq_node(IRNodeKind kind, const Object* a, const Object* b) {
    if (seen(a, b)) return true;
    bool result = detail::structural_dispatch(kind, a, [&](const auto* na) {
      using Node = std::remove_cvref_t<decltype(*na)>;
      return eq_fields(detail::structural_fields(na), detail::structural_fields(static_cast<const Node*>(b)));
    });
    if (result) remember(a, b);
    return result;
  }

  bool eq(const Expr& a, const Expr& b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
    if (const VarNode* va = a.as<VarNode>()) return map_var(va, b.as<VarNode>());
    return eq_node(a.kind(), a.get(), b.get());
  }
  bool eq(const Stmt& a, const Stmt& b) {
    if (!a.defined() || !b.defined()) return a.defined() == b.defined();
    if (a.kind() != b.kind()) return false;
    return eq_node(a.kind(), a.get(), b.get());
  }

  // Objects referenced by nodes: null on both sides is equal, as for an undefined Expr.
  template <typename Node>
  bool eq_object(const Node* a, const Node* b) {
    if (!a || !b) return a == b;
    if (seen(a, b)) return true;
    bool result = eq_fields(detail::structural_fields(a), detail::structural_fields(b));
    if (result) remember(a, b);
    return result;
  }
  bool eq(const IterVar& a, const IterVar& b) { return eq_object(a.get(), b.get()); }
  bool eq(const CommReducer& a, const CommReducer& b) { return eq_object(a.get(), b.get()); }
  bool eq(const Producer& a, const Producer& b) { return eq_object(a.get(), b.get()); }
  bool eq(const Range& a, const Range& b) {
    return eq_fields(detail::structural_fields(a), detail::structural_fields(b));
  }
  bool eq(const LoopAnnotation& a, const LoopAnnotation& b) {
    return eq_fields(detail::structural_fields(a), detail::structural_fields(b));
  }

  template <typename T>
  bool eq(const std::vector<T>& a, const std::vector<T>& b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!eq(a[i], b[i])) return false;
    }
    return true;
  }

  bool eq(const std::string& a, const std::string& b) { return a == b; }
  bool eq(DType a, DType b) { return a == b; }
  bool eq(int64_t a, int64_t b) { return a == b; }
  bool eq(int a, int b) { return a == b; }
  // Bit patterns, not ==: -0.0 and 0.0 generate different code (1/x), and NaN must equal itself
  // or a kernel holding a NaN constant would never be found in the cache.
  bool eq(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }
  template <typename E>
  requires std::is_enum_v<E>
  bool eq(E a, E b) { return a == b; }
};

/// Structural equality as a functor, e.g. the KeyEqual of an unordered_map keyed on IR (with
/// StructuralHash). Each call compares in a fresh variable mapping.
struct StructuralEqual {
  bool operator()(const Expr& a, const Expr& b) const {
    return a.same_as(b) || StructuralEqualChecker().equal(a, b);
  }
  bool operator()(const Stmt& a, const Stmt& b) const {
    return a.same_as(b) || StructuralEqualChecker().equal(a, b);
  }
  bool operator()(const std::vector<Expr>& a, const std::vector<Expr>& b) const {
    return StructuralEqualChecker().equal(a, b);
  }
  bool operator()(const std::vector<Stmt>& a, const std::vector<Stmt>& b) const {
    return StructuralEqualChecker().equal(a, b);
  }
};

/// True when `a` and `b` are the same IR up to a consistent renaming of their variables.
inline bool structural_equal(const Expr& a, const Expr& b) { return StructuralEqual()(a, b); }
inline bool structural_equal(const Stmt& a, const Stmt& b) { return StructuralEqual()(a, b); }
/// Element-wise, in one variable mapping: a variable shared by two elements of `a` must meet
/// one variable shared by the same two elements of `b`.
inline bool structural_equal(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  return StructuralEqual()(a, b);
}
inline bool structural_equal(const std::vector<Stmt>& a, const std::vector<Stmt>& b) {
  return StructuralEqual()(a, b);
}

}  // namespace loom
