// Compiled expressions of the reference interpreter: small node objects whose types, slots and
// operators were resolved when the IR was compiled, so evaluating one is a virtual call and a few
// instructions. Every node yields one scalar lane, an int64 (integral types) or a double (floats).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "loom/interp/frame.hpp"
#include "loom/ir/dtype_arith.hpp"

namespace loom::interp {

// The interpreter computes with the dtype arithmetic of ir/dtype_arith.hpp throughout.
using namespace loom::arith;

template <typename V>
class CompiledExpr {
 public:
  virtual ~CompiledExpr() = default;
  virtual V eval(Frame& frame) const = 0;
};
template <typename V>
using ExprPtr = std::unique_ptr<const CompiledExpr<V>>;
using IntExprPtr = ExprPtr<int64_t>;
using FloatExprPtr = ExprPtr<double>;

template <typename V>
class Constant final : public CompiledExpr<V> {
 public:
  explicit Constant(V value) : value_(value) {}
  V eval(Frame&) const override { return value_; }

 private:
  V value_;
};

template <typename V>
class ReadSlot final : public CompiledExpr<V> {
 public:
  explicit ReadSlot(int slot) : slot_(slot) {}
  V eval(Frame& frame) const override { return frame.slots<V>()[slot_]; }

 private:
  int slot_;
};

/// A buffer variable used as a value (a handle): its address as an integer.
class BufferAddress final : public CompiledExpr<int64_t> {
 public:
  explicit BufferAddress(int slot) : slot_(slot) {}
  int64_t eval(Frame& frame) const override {
    return static_cast<int64_t>(reinterpret_cast<uintptr_t>(frame.buffers[slot_].data));
  }

 private:
  int slot_;
};

[[noreturn]] inline void throw_division_by_zero(const Expr& source) {
  throw Error(cat("integer division by zero in ", to_string(source), " (", source.dtype().str(),
                  "): the divisor evaluated to 0; guard the division or make sure its divisor cannot be 0"));
}

template <IRNodeKind Op>
class IntBinary final : public CompiledExpr<int64_t> {
 public:
  IntBinary(IntExprPtr a, IntExprPtr b, IntFormat format, Expr source)
      : a_(std::move(a)), b_(std::move(b)), format_(format), source_(std::move(source)) {}
  int64_t eval(Frame& frame) const override {
    int64_t x = a_->eval(frame), y = b_->eval(frame);
    if constexpr (is_division(Op)) {
      if (y == 0) throw_division_by_zero(source_);
    }
    return int_binary<Op>(x, y, format_);
  }

 private:
  IntExprPtr a_, b_;
  IntFormat format_;
  Expr source_;  // kept for the division-by-zero message
};

template <IRNodeKind Op, FloatFormat F>
class FloatBinary final : public CompiledExpr<double> {
 public:
  FloatBinary(FloatExprPtr a, FloatExprPtr b) : a_(std::move(a)), b_(std::move(b)) {}
  double eval(Frame& frame) const override { return float_binary<Op, F>(a_->eval(frame), b_->eval(frame)); }

 private:
  FloatExprPtr a_, b_;
};

template <IRNodeKind Op>
class FloatCompare final : public CompiledExpr<int64_t> {
 public:
  FloatCompare(FloatExprPtr a, FloatExprPtr b) : a_(std::move(a)), b_(std::move(b)) {}
  int64_t eval(Frame& frame) const override { return float_compare<Op>(a_->eval(frame), b_->eval(frame)); }

 private:
  FloatExprPtr a_, b_;
};

class LogicalNot final : public CompiledExpr<int64_t> {
 public:
  explicit LogicalNot(IntExprPtr a) : a_(std::move(a)) {}
  int64_t eval(Frame& frame) const override { return a_->eval(frame) == 0; }

 private:
  IntExprPtr a_;
};

/// Select: both branches are evaluated, as the IR node promises (so both must be in bounds).
template <typename V>
class EagerSelect final : public CompiledExpr<V> {
 public:
  EagerSelect(IntExprPtr c, ExprPtr<V> t, ExprPtr<V> f)
      : condition_(std::move(c)), true_value_(std::move(t)), false_value_(std::move(f)) {}
  V eval(Frame& frame) const override {
    int64_t c = condition_->eval(frame);
    V t = true_value_->eval(frame);
    V f = false_value_->eval(frame);
    return c ? t : f;
  }

 private:
  IntExprPtr condition_;
  ExprPtr<V> true_value_, false_value_;
};

/// if_then_else: only the chosen branch runs, so a padded read may sit in the other one.
template <typename V>
class LazySelect final : public CompiledExpr<V> {
 public:
  LazySelect(IntExprPtr c, ExprPtr<V> t, ExprPtr<V> f)
      : condition_(std::move(c)), true_value_(std::move(t)), false_value_(std::move(f)) {}
  V eval(Frame& frame) const override {
    return condition_->eval(frame) ? true_value_->eval(frame) : false_value_->eval(frame);
  }

 private:
  IntExprPtr condition_;
  ExprPtr<V> true_value_, false_value_;
};

/// let var = value in body, for one lane; `Bound` is the value's lane type.
template <typename Bound, typename V>
class LetIn final : public CompiledExpr<V> {
 public:
  LetIn(int slot, ExprPtr<Bound> value, ExprPtr<V> body)
      : slot_(slot), value_(std::move(value)), body_(std::move(body)) {}
  V eval(Frame& frame) const override {
    frame.slots<Bound>()[slot_] = value_->eval(frame);
    return body_->eval(frame);
  }

 private:
  int slot_;
  ExprPtr<Bound> value_;
  ExprPtr<V> body_;
};

// ---------------------------------------------------------------------------------------------
// Casts

class IntToInt final : public CompiledExpr<int64_t> {
 public:
  IntToInt(IntExprPtr a, IntFormat to) : a_(std::move(a)), to_(to) {}
  int64_t eval(Frame& frame) const override { return int_to_int(a_->eval(frame), to_); }

 private:
  IntExprPtr a_;
  IntFormat to_;
};

class FloatToInt final : public CompiledExpr<int64_t> {
 public:
  FloatToInt(FloatExprPtr a, IntFormat to) : a_(std::move(a)), to_(to) {}
  int64_t eval(Frame& frame) const override { return float_to_int(a_->eval(frame), to_); }

 private:
  FloatExprPtr a_;
  IntFormat to_;
};

template <FloatFormat F>
class IntToFloat final : public CompiledExpr<double> {
 public:
  IntToFloat(IntExprPtr a, bool source_is_u64) : a_(std::move(a)), source_is_u64_(source_is_u64) {}
  double eval(Frame& frame) const override { return int_to_float<F>(a_->eval(frame), source_is_u64_); }

 private:
  IntExprPtr a_;
  bool source_is_u64_;
};

template <FloatFormat F>
class FloatToFloat final : public CompiledExpr<double> {
 public:
  explicit FloatToFloat(FloatExprPtr a) : a_(std::move(a)) {}
  double eval(Frame& frame) const override { return round_double_to<F>(a_->eval(frame)); }

 private:
  FloatExprPtr a_;
};

/// reinterpret: the same bits seen as another type of the same width.
template <typename To, typename From>
class Reinterpret final : public CompiledExpr<To> {
 public:
  Reinterpret(ExprPtr<From> a, DType from, DType to) : a_(std::move(a)), from_(from), to_(to) {}
  To eval(Frame& frame) const override {
    From v = a_->eval(frame);
    uint64_t bits;
    if constexpr (std::is_same_v<From, double>) {
      bits = bits_of_float(v, float_format_of(from_));
    } else {
      bits = static_cast<uint64_t>(v);
    }
    if constexpr (std::is_same_v<To, double>) {
      return float_of_bits(bits, float_format_of(to_));
    } else {
      return IntFormat::of(to_).wrap(bits);
    }
  }

 private:
  ExprPtr<From> a_;
  DType from_, to_;
};

// ---------------------------------------------------------------------------------------------
// Vectors, scalarised: lane `lane` of ramp(base, stride, lanes) is base + lane * stride.

class IntRampLane final : public CompiledExpr<int64_t> {
 public:
  IntRampLane(IntExprPtr base, IntExprPtr stride, int lane, IntFormat format)
      : base_(std::move(base)),
        stride_(std::move(stride)),
        lane_(static_cast<uint64_t>(lane)),
        format_(format) {}
  int64_t eval(Frame& frame) const override {
    uint64_t base = static_cast<uint64_t>(base_->eval(frame));
    return format_.wrap(base + lane_ * static_cast<uint64_t>(stride_->eval(frame)));
  }

 private:
  IntExprPtr base_, stride_;
  uint64_t lane_;
  IntFormat format_;
};

template <FloatFormat F>
class FloatRampLane final : public CompiledExpr<double> {
 public:
  FloatRampLane(FloatExprPtr base, FloatExprPtr stride, int lane)
      : base_(std::move(base)), stride_(std::move(stride)), lane_(lane) {}
  double eval(Frame& frame) const override {
    double step = float_binary<IRNodeKind::Mul, F>(round_double_to<F>(lane_), stride_->eval(frame));
    return float_binary<IRNodeKind::Add, F>(base_->eval(frame), step);
  }

 private:
  FloatExprPtr base_, stride_;
  double lane_;
};

// ---------------------------------------------------------------------------------------------
// Memory

template <typename Codec>
class LoadLane final : public CompiledExpr<typename Codec::Value> {
 public:
  LoadLane(int slot, IntExprPtr index, AccessSite site, DType element)
      : slot_(slot), index_(std::move(index)), site_(std::move(site)), element_(element) {}
  typename Codec::Value eval(Frame& frame) const override {
    return load_element<Codec>(frame.buffers[slot_], index_->eval(frame), site_, element_);
  }

 private:
  int slot_;
  IntExprPtr index_;
  AccessSite site_;
  DType element_;
};

/// A masked lane reads nothing (so it may point anywhere) and yields 0.
template <typename V>
class PredicatedLoadLane final : public CompiledExpr<V> {
 public:
  PredicatedLoadLane(IntExprPtr predicate, ExprPtr<V> load)
      : predicate_(std::move(predicate)), load_(std::move(load)) {}
  V eval(Frame& frame) const override { return predicate_->eval(frame) ? load_->eval(frame) : V{0}; }

 private:
  IntExprPtr predicate_;
  ExprPtr<V> load_;
};

// ---------------------------------------------------------------------------------------------
// Math calls

class IntAbs final : public CompiledExpr<int64_t> {
 public:
  IntAbs(IntExprPtr a, IntFormat format) : a_(std::move(a)), format_(format) {}
  int64_t eval(Frame& frame) const override {
    int64_t v = a_->eval(frame);
    if (!format_.is_signed || v >= 0) return v;
    return format_.wrap(0 - static_cast<uint64_t>(v));  // abs(INT_MIN) wraps to INT_MIN, as in C
  }

 private:
  IntExprPtr a_;
  IntFormat format_;
};

/// The float and double versions of a one-argument libm function.
struct MathFunction1 {
  float (*in_float)(float);
  double (*in_double)(double);
};
struct MathFunction2 {
  float (*in_float)(float, float);
  double (*in_double)(double, double);
};

/// A math call computed in its argument's precision: float functions for float32 (and for the
/// 16-bit types, whose result is then rounded), double functions for float64.
template <FloatFormat F>
class FloatMath1 final : public CompiledExpr<double> {
 public:
  FloatMath1(FloatExprPtr a, MathFunction1 fn) : a_(std::move(a)), fn_(fn) {}
  double eval(Frame& frame) const override {
    double x = a_->eval(frame);
    if constexpr (F == FloatFormat::F64) {
      return fn_.in_double(x);
    } else {
      return FloatTraits<F>::round(fn_.in_float(static_cast<float>(x)));
    }
  }

 private:
  FloatExprPtr a_;
  MathFunction1 fn_;
};

template <FloatFormat F>
class FloatMath2 final : public CompiledExpr<double> {
 public:
  FloatMath2(FloatExprPtr a, FloatExprPtr b, MathFunction2 fn)
      : a_(std::move(a)), b_(std::move(b)), fn_(fn) {}
  double eval(Frame& frame) const override {
    double x = a_->eval(frame), y = b_->eval(frame);
    if constexpr (F == FloatFormat::F64) {
      return fn_.in_double(x, y);
    } else {
      return FloatTraits<F>::round(fn_.in_float(static_cast<float>(x), static_cast<float>(y)));
    }
  }

 private:
  FloatExprPtr a_, b_;
  MathFunction2 fn_;
};

}  // namespace loom::interp
