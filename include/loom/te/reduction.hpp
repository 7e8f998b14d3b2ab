// Reductions: reduce_axis(), the built-in reducers sum/min/max/prod, and comm_reducer() for
// user-defined (also multi-value, argmax-like) commutative reductions.
#pragma once

#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "loom/ir/reduce.hpp"
#include "loom/ir/simplify.hpp"
#include "loom/te/tensor.hpp"

namespace loom {

/// A reduction axis over [begin, end). One reduce axis may be used by several computes.
inline IterVar reduce_axis(Expr begin, Expr end, std::string name = "rv") {
  Expr extent = simplify(end - begin);
  if (const int64_t* e = as_const_int(extent); e && *e <= 0)
    throw Error(cat("reduce_axis '", name, "' is empty: [", to_string(begin), ", ", to_string(end),
                    "); a reduction axis needs end > begin"));
  return IterVar(Range(begin, extent), Var(std::move(name), begin.dtype(), /*reduce_axis=*/true),
                 IterVarKind::CommReduce);
}
/// A reduction axis over `range` (min, extent); throws loom::Error when the extent is a constant <= 0.
inline IterVar reduce_axis(Range range, std::string name = "rv") {
  return reduce_axis(range.min, range.min + range.extent, std::move(name));
}

/// The largest and smallest finite values of a type, used as identities of min and max.
inline Expr max_value(DType t) {
  if (t.is_float()) {
    double v = t.bits == 64    ? std::numeric_limits<double>::max()
               : t.bits == 32  ? double(std::numeric_limits<float>::max())
               : t.is_bfloat() ? 3.38953139e38
                               : 65504.0;
    return make_const(t, v);
  }
  if (t.is_bool()) return make_int_const(t, 1);
  if (t.is_uint()) return make_int_const(t, t.bits == 64 ? -1 : int64_t((uint64_t{1} << t.bits) - 1));
  return make_int_const(
      t, t.bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (t.bits - 1)) - 1);
}
/// The smallest finite value of `t` (the lowest float, not -inf; 0 for unsigned and bool).
inline Expr min_value(DType t) {
  if (t.is_float()) return make_const(t, -*as_const_float(max_value(t)));
  if (t.is_uint() || t.is_bool()) return make_int_const(t, 0);
  return make_int_const(t,
                        t.bits == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t{1} << (t.bits - 1)));
}

/// A commutative, associative reduction: combine(lhs, rhs) and its identity, per value type.
class Reducer {
 public:
  /// Combines two tuples of values (one Expr per reduced value) into one; must be commutative and
  /// associative.
  using Combine =
      std::function<std::vector<Expr>(const std::vector<Expr>& lhs, const std::vector<Expr>& rhs)>;
  /// The identity values for the given value types (0 for sum, the largest value for min).
  using Identity = std::function<std::vector<Expr>(const std::vector<DType>& types)>;

  /// A reducer named `name` (the name messages and the IR printer use).
  Reducer(Combine combine, Identity identity, std::string name)
      : combine_(std::move(combine)), identity_(std::move(identity)), name_(std::move(name)) {}

  /// Reduces one value over `axis`, counting only points where `where` holds.
  Expr operator()(Expr source, std::vector<IterVar> axis, Expr where = Expr()) const {
    return make({std::move(source)}, std::move(axis), std::move(where)).at(0);
  }
  /// Reduces a tuple of values together (argmax); returns one Reduce per value, for a
  /// multi-output compute.
  std::vector<Expr> operator()(std::vector<Expr> sources, std::vector<IterVar> axis,
                               Expr where = Expr()) const {
    return make(std::move(sources), std::move(axis), std::move(where));
  }

  /// The reducer's name.
  const std::string& name() const { return name_; }

 private:
  std::vector<Expr> make(std::vector<Expr> sources, std::vector<IterVar> axis, Expr where) const {
    if (axis.empty())
      throw Error(cat(name_, "(): no reduce axes given; list the axes to reduce over, e.g. ", name_,
                      "(A(i, k), {k})"));
    for (const IterVar& iv : axis) {
      if (!iv.defined() || iv.kind() != IterVarKind::CommReduce)
        throw Error(cat(name_, "(): axis '", iv.defined() ? iv.name() : std::string("?"),
                        "' is not a reduce axis; create reduction axes with reduce_axis(begin, end, name)"));
    }
    std::vector<DType> types;
    std::vector<Var> lhs, rhs;
    for (size_t i = 0; i < sources.size(); ++i) {
      if (!sources[i].defined()) throw Error(cat(name_, "(): the value to reduce is undefined"));
      types.push_back(sources[i].dtype());
      // Appended, not `"x" + std::to_string(i)`: GCC 12 warns spuriously on that form.
      std::string index = std::to_string(i), x = "x", y = "y";
      lhs.push_back(Var(x += index, sources[i].dtype()));
      rhs.push_back(Var(y += index, sources[i].dtype()));
    }
    std::vector<Expr> result =
        combine_(std::vector<Expr>(lhs.begin(), lhs.end()), std::vector<Expr>(rhs.begin(), rhs.end()));
    std::vector<Expr> identity = identity_(types);
    if (result.size() != sources.size() || identity.size() != sources.size())
      throw Error(cat("reducer '", name_, "' combines ", result.size(), " values with ", identity.size(),
                      " identities but was given ", sources.size(), " values to reduce"));
    for (size_t i = 0; i < sources.size(); ++i) {
      result[i] = cast(types[i], result[i]);
      identity[i] = cast(types[i], identity[i]);
    }
    if (!where.defined()) where = Expr(true);
    if (!where.dtype().is_bool()) throw Error(cat(name_, "(): the 'where' condition must be boolean"));
    CommReducer combiner = make_ref<CommReducerNode>(lhs, rhs, result, identity, name_);
    std::vector<Expr> out;
    for (size_t i = 0; i < sources.size(); ++i)
      out.push_back(ReduceNode::make(combiner, sources, axis, where, static_cast<int>(i)));
    return out;
  }

  Combine combine_;
  Identity identity_;
  std::string name_;
};

/// A single-value reducer from a binary combiner and an identity per type.
inline Reducer comm_reducer(std::function<Expr(Expr, Expr)> combine, std::function<Expr(DType)> identity,
                            std::string name = "reduce") {
  return Reducer([combine](const std::vector<Expr>& l,
                           const std::vector<Expr>& r) { return std::vector<Expr>{combine(l[0], r[0])}; },
                 [identity](const std::vector<DType>& t) { return std::vector<Expr>{identity(t[0])}; },
                 std::move(name));
}
/// A multi-value reducer (e.g. argmax over (index, value) pairs).
inline Reducer comm_reducer(Reducer::Combine combine, Reducer::Identity identity, std::string name) {
  return Reducer(std::move(combine), std::move(identity), std::move(name));
}

/// The built-in Reducer objects: reducers::sum()(A(i, k), {k}) is sum(A(i, k), {k}).
namespace reducers {
/// The built-in reducers, shared: sum (identity 0), prod (1), min (the type's largest value),
/// max (the type's smallest value).
/// @{
inline const Reducer& sum() {
  static const Reducer r =
      comm_reducer([](Expr a, Expr b) { return a + b; }, [](DType t) { return make_zero(t); }, "sum");
  return r;
}
inline const Reducer& prod() {
  static const Reducer r = comm_reducer([](Expr a, Expr b) { return a * b; },
                                        [](DType t) { return make_int_const(t, 1); }, "prod");
  return r;
}
inline const Reducer& min() {
  static const Reducer r = comm_reducer([](Expr a, Expr b) { return loom::min(a, b); },
                                        [](DType t) { return max_value(t); }, "min");
  return r;
}
inline const Reducer& max() {
  static const Reducer r = comm_reducer([](Expr a, Expr b) { return loom::max(a, b); },
                                        [](DType t) { return min_value(t); }, "max");
  return r;
}
/// @}
}  // namespace reducers

/// The sum of `source` over the reduce axes `axis` where `where` holds (everywhere by default),
/// for the body of a compute: compute({n}, [&](Var i) { return sum(A(i, k), {k}); }). Throws loom::Error
/// when an axis is not a reduce axis or `where` is not bool.
inline Expr sum(Expr source, std::vector<IterVar> axis, Expr where = Expr()) {
  return reducers::sum()(std::move(source), std::move(axis), std::move(where));
}
/// The product of `source` over the reduce axes `axis`, as sum().
inline Expr prod(Expr source, std::vector<IterVar> axis, Expr where = Expr()) {
  return reducers::prod()(std::move(source), std::move(axis), std::move(where));
}
/// min over reduce axes (the binary min(a, b) of ir/op.hpp is a different overload).
inline Expr min(Expr source, std::vector<IterVar> axis, Expr where = Expr()) {
  return reducers::min()(std::move(source), std::move(axis), std::move(where));
}
/// max over reduce axes, as sum() (the binary max(a, b) of ir/op.hpp is a different overload).
inline Expr max(Expr source, std::vector<IterVar> axis, Expr where = Expr()) {
  return reducers::max()(std::move(source), std::move(axis), std::move(where));
}

}  // namespace loom
