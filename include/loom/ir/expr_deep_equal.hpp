// expr_deep_equal: do two expressions compute the same value by the same tree? Unlike
// structural_equal (equality up to renaming, for cache keys), a variable only equals itself:
// the simplifier uses this to recognise like terms, where x and y must never match.
#pragma once

#include <bit>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "loom/ir/structural_equal.hpp"

namespace loom {
namespace deep_equal_detail {

inline bool equal(const Expr& a, const Expr& b);

// Fields of the nodes, as listed once for structural equality (detail::structural_fields).
inline bool equal(const std::string& a, const std::string& b) { return a == b; }
inline bool equal(DType a, DType b) { return a == b; }
inline bool equal(int64_t a, int64_t b) { return a == b; }
inline bool equal(int a, int b) { return a == b; }
inline bool equal(double a, double b) { return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b); }
template <typename E>
requires std::is_enum_v<E>
bool equal(E a, E b) { return a == b; }
// Objects hanging off expressions (reduction axes, reducers, tensors) match by identity.
inline bool equal(const IterVar& a, const IterVar& b) { return a.same_as(b); }
inline bool equal(const CommReducer& a, const CommReducer& b) { return a.same_as(b); }
inline bool equal(const Producer& a, const Producer& b) { return a.same_as(b); }
inline bool equal(const Var& a, const Var& b) { return a.same_as(b); }
template <typename T>
bool equal(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!equal(a[i], b[i])) return false;
  }
  return true;
}

template <typename... Ts>
bool equal_fields(const std::tuple<Ts...>& a, const std::tuple<Ts...>& b) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return (equal(std::get<I>(a), std::get<I>(b)) && ...);
  }
  (std::index_sequence_for<Ts...>{});
}

inline bool equal(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined()) return false;
  if (a.kind() != b.kind() || a.dtype() != b.dtype()) return false;
  if (a.as<VarNode>()) return false;  // distinct variable nodes are distinct variables
  return detail::structural_dispatch(a.kind(), a.get(), [&](const auto* na) -> bool {
    using Node = std::remove_cvref_t<decltype(*na)>;
    if constexpr (std::is_base_of_v<ExprNode, Node>) {
      return equal_fields(detail::structural_fields(na),
                          detail::structural_fields(static_cast<const Node*>(b.get())));
    } else {
      return false;  // a statement kind: unreachable for an Expr
    }
  });
}

}  // namespace deep_equal_detail

/// True when a and b are the same expression tree over the same variables.
inline bool expr_deep_equal(const Expr& a, const Expr& b) { return deep_equal_detail::equal(a, b); }

}  // namespace loom
