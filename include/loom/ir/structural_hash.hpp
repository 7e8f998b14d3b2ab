// Structural hashing of IR, consistent with structural_equal (equal => same hash) and identical
// across runs, processes and builds, so that it can key the on-disk kernel cache as well.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "loom/ir/structural_equal.hpp"

namespace loom {
namespace detail::shash {

// The fixed functions the hash is made of. They, the field lists in structural_equal.hpp and the
// tags below are part of the on-disk cache format: changing any of them changes every key, which
// the golden test in tests/ir/structural_equal_test.cpp reports. Nothing here depends on an
// address, on std::hash (implementation-defined) or on the iteration order of a container.

/// splitmix64's finalizer (Steele, Lea & Flood, 2014): a bijection on 64 bits with full avalanche.
constexpr uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// Folds `value` into `seed`. Rotating the seed first makes it order-sensitive (a, b != b, a);
/// the golden-ratio constant keeps a zero state from mapping to zero.
constexpr uint64_t combine(uint64_t seed, uint64_t value) {
  return mix((std::rotl(seed, 23) ^ value) + 0x9e3779b97f4a7c15ULL);
}

/// 64-bit FNV-1a over the bytes of `s`.
constexpr uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (char c : s) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

// Node kinds hash by name, not by enum value, so that adding a kind to the X-macro lists does
// not change the keys of IR that does not use it.
inline uint64_t kind_tag(IRNodeKind kind) {
  switch (kind) {
#define LOOM_SHASH_KIND_TAG(name, node)    \
  case IRNodeKind::name: {                 \
    constexpr uint64_t tag = fnv1a(#name); \
    return tag;                            \
  }
    LOOM_EXPR_NODES(LOOM_SHASH_KIND_TAG)
    LOOM_STMT_NODES(LOOM_SHASH_KIND_TAG)
#undef LOOM_SHASH_KIND_TAG
  }
  throw InternalError(cat("structural_hash: unknown node kind ", static_cast<int>(kind)));
}

inline constexpr uint64_t seed_tag = fnv1a("loom.structural_hash.v1");
inline constexpr uint64_t undefined_tag = fnv1a("<undefined>");
inline constexpr uint64_t vector_tag = fnv1a("vector");
inline constexpr uint64_t iter_var_tag = fnv1a("IterVar");
inline constexpr uint64_t comm_reducer_tag = fnv1a("CommReducer");
inline constexpr uint64_t producer_tag = fnv1a("Producer");
inline constexpr uint64_t range_tag = fnv1a("Range");
inline constexpr uint64_t annotation_tag = fnv1a("LoopAnnotation");

}  // namespace detail::shash

/// Hashes several IR roots (and other key parts) into one value, numbering variables across all
/// of them; the hashing counterpart of StructuralEqualChecker: when a checker finds a sequence of
/// `a` roots equal to a sequence of `b` roots, hashers fed those sequences give the same value.
///
/// A variable hashes as its dtype and the order in which the walk first meets it (0, 1, 2, ...),
/// never its name or address, so alpha-equivalent IR built in different processes hashes alike.
/// Enum fields (ForKind, CallKind, ...) hash by value: append new enumerators at the end.
class StructuralHasher {
 public:
  StructuralHasher& add(const Expr& e) { return root(e); }
  StructuralHasher& add(const Stmt& s) { return root(s); }
  StructuralHasher& add(const std::vector<Expr>& v) { return root(v); }
  StructuralHasher& add(const std::vector<Stmt>& v) { return root(v); }
  StructuralHasher& add(const Range& r) { return root(r); }
  /// Mixes a part of a cache key that is not IR into the value: a target, a format version.
  StructuralHasher& add_string(std::string_view s) {
    state_ = detail::shash::combine(state_, detail::shash::fnv1a(s));
    return *this;
  }
  StructuralHasher& add_u64(uint64_t v) {
    state_ = detail::shash::combine(state_, v);
    return *this;
  }
  uint64_t value() const { return state_; }

 private:
  uint64_t state_ = detail::shash::seed_tag;
  std::unordered_map<const VarNode*, uint64_t> var_index_;
  // Keeps numbered variables alive: a variable freed between two roots could otherwise have its
  // address reused by a new variable that would then inherit its number.
  std::vector<Expr> keep_alive_;
  // Hash of each node already hashed in the current root: IR is a DAG, and a node hashes the same
  // every time it is met (its variables are numbered on the first visit), so a shared subtree is
  // walked once. Cleared after each root for the same address-reuse reason.
  std::unordered_map<const Object*, uint64_t> memo_;

  template <typename T>
  StructuralHasher& root(const T& x) {
    state_ = detail::shash::combine(state_, h(x));
    memo_.clear();
    return *this;
  }

  template <typename... Ts>
  uint64_t h_fields(uint64_t seed, const std::tuple<Ts...>& fields) {
    std::apply([&](const auto&... f) { ((seed = detail::shash::combine(seed, h(f))), ...); }, fields);
    return seed;
  }

  template <typename Compute>
  uint64_t memoized(const Object* node, Compute&& compute) {
    if (auto it = memo_.find(node); it != memo_.end()) return it->second;
    uint64_t value = compute();
    memo_.emplace(node, value);
    return value;
  }

  uint64_t h_node(IRNodeKind kind, const Object* node, uint64_t seed) {
    return memoized(node, [&] {
      return detail::structural_dispatch(
          kind, node, [&](const auto* n) { return h_fields(seed, detail::structural_fields(n)); });
    });
  }

  uint64_t h(const Expr& e) {
    using namespace detail::shash;
    if (!e.defined()) return undefined_tag;
    uint64_t seed = combine(kind_tag(e.kind()), h(e.dtype()));
    if (const VarNode* var = e.as<VarNode>()) {
      auto [it, inserted] = var_index_.emplace(var, var_index_.size());
      if (inserted) keep_alive_.push_back(e);
      return combine(seed, it->second);
    }
    return h_node(e.kind(), e.get(), seed);
  }
  uint64_t h(const Stmt& s) {
    if (!s.defined()) return detail::shash::undefined_tag;
    return h_node(s.kind(), s.get(), detail::shash::kind_tag(s.kind()));
  }

  template <typename Node>
  uint64_t h_object(const Node* node, uint64_t tag) {
    if (!node) return detail::shash::undefined_tag;
    return memoized(node, [&] { return h_fields(tag, detail::structural_fields(node)); });
  }
  uint64_t h(const IterVar& iv) { return h_object(iv.get(), detail::shash::iter_var_tag); }
  uint64_t h(const CommReducer& r) { return h_object(r.get(), detail::shash::comm_reducer_tag); }
  uint64_t h(const Producer& p) { return h_object(p.get(), detail::shash::producer_tag); }
  uint64_t h(const Range& r) { return h_fields(detail::shash::range_tag, detail::structural_fields(r)); }
  uint64_t h(const LoopAnnotation& a) {
    return h_fields(detail::shash::annotation_tag, detail::structural_fields(a));
  }

  template <typename T>
  uint64_t h(const std::vector<T>& v) {
    uint64_t seed = detail::shash::combine(detail::shash::vector_tag, v.size());
    for (const T& x : v) seed = detail::shash::combine(seed, h(x));
    return seed;
  }

  uint64_t h(const std::string& s) { return detail::shash::fnv1a(s); }
  uint64_t h(DType t) {
    return (uint64_t{static_cast<uint8_t>(t.code)} << 24) | (uint64_t{t.bits} << 16) | uint64_t{t.lanes};
  }
  uint64_t h(int64_t v) { return static_cast<uint64_t>(v); }
  uint64_t h(int v) { return static_cast<uint64_t>(int64_t{v}); }
  uint64_t h(double v) { return std::bit_cast<uint64_t>(v); }  // as equality: -0.0 != 0.0, NaN == NaN
  template <typename E>
  requires std::is_enum_v<E> uint64_t h(E v) {
    return static_cast<uint64_t>(static_cast<std::underlying_type_t<E>>(v));
  }
};

/// Structural hash as a functor, e.g. the Hash of an unordered_map keyed on IR (with
/// StructuralEqual). Use structural_hash() for keys that must fit 64 bits on every platform.
struct StructuralHash {
  std::size_t operator()(const Expr& e) const {
    return static_cast<std::size_t>(StructuralHasher().add(e).value());
  }
  std::size_t operator()(const Stmt& s) const {
    return static_cast<std::size_t>(StructuralHasher().add(s).value());
  }
  std::size_t operator()(const std::vector<Expr>& v) const {
    return static_cast<std::size_t>(StructuralHasher().add(v).value());
  }
  std::size_t operator()(const std::vector<Stmt>& v) const {
    return static_cast<std::size_t>(StructuralHasher().add(v).value());
  }
};

/// A 64-bit hash of `e` that is the same for structurally equal IR, in every process and build.
inline uint64_t structural_hash(const Expr& e) { return StructuralHasher().add(e).value(); }
inline uint64_t structural_hash(const Stmt& s) { return StructuralHasher().add(s).value(); }
inline uint64_t structural_hash(const std::vector<Expr>& v) { return StructuralHasher().add(v).value(); }
inline uint64_t structural_hash(const std::vector<Stmt>& v) { return StructuralHasher().add(v).value(); }

}  // namespace loom
