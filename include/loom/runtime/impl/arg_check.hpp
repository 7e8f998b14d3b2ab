// The definition of bind_arguments (runtime/arg_check.hpp): every check of a call's arguments
// against the lowered function's parameters, with the message that names the fix.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/runtime/arg_check.hpp");

#include <algorithm>
#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "loom/ir/printer.hpp"
#include "loom/ir/visitor.hpp"
#include "loom/runtime/arg_check.hpp"
#include "loom/runtime/shape_eval.hpp"
#include "loom/support/error.hpp"

namespace loom {

namespace detail {

/// The C++ element type a user would hold data of `t` in, for "how to fix it" hints.
inline std::string cpp_type_name(DType t) {
  if (t == f32) return "float";
  if (t == f64) return "double";
  if (t == f16) return "loom::half";
  if (t == bf16) return "loom::bfloat16";
  if (t == boolean) return "bool";
  if (t.is_integral()) return (t.is_int() ? "int" : "uint") + std::to_string(t.bits) + "_t";
  return t.str();
}

/// "a, b, c", or "[a, b, c]" with brackets.
template <typename T>
std::string join(const std::vector<T>& items, bool brackets = true) {
  std::ostringstream os;
  if (brackets) os << "[";
  for (size_t i = 0; i < items.size(); ++i) os << (i ? ", " : "") << items[i];
  if (brackets) os << "]";
  return os.str();
}

/// Checks one call's arguments; see bind_arguments.
class ArgumentBinder {
 public:
  ArgumentBinder(const LoweredFunc& f, const std::vector<KernelArg>& args, bool accept_cuda_memory)
      : f_(f), args_(args), accept_cuda_memory_(accept_cuda_memory) {}

  BoundArgs bind() {
    check_count();
    // Pass 1: everything per argument, binding sizes from bare-variable dimensions and scalars.
    for (size_t i = 0; i < f_.params.size(); ++i) {
      const FuncParam& p = f_.params[i];
      if (p.kind == FuncParam::Kind::Buffer) {
        check_buffer_kind(p.buffer, args_[i]);
      } else {
        bind_scalar(p.scalar, args_[i]);
      }
    }
    for (const Var& v : f_.size_vars) {
      if (!values_.count(v.get())) unbound(v.get());
    }
    // Pass 2: dimensions and strides that are expressions, now that every size is known.
    for (size_t i = 0; i < f_.params.size(); ++i) {
      if (f_.params[i].kind != FuncParam::Kind::Buffer) continue;
      check_buffer_layout(f_.params[i].buffer, args_[i].buffer);
      out_.buffers[f_.params[i].buffer.data.get()].on_cuda_device = args_[i].device.type == kDLPackCUDA;
    }
    // Pass 3: what the computation reads of each input lies inside the buffer given for it.
    check_input_reads();
    out_.scalars = values_;
    return std::move(out_);
  }

 private:
  std::string kernel() const { return cat("kernel '", f_.name, "'"); }
  static std::string param_name(const FuncParam& p) {
    return p.kind == FuncParam::Kind::Buffer ? p.buffer.name : p.scalar.name();
  }

  void check_count() const {
    if (args_.size() == f_.params.size()) return;
    std::vector<std::string> names;
    for (const FuncParam& p : f_.params) names.push_back(param_name(p));
    throw ArgumentError(cat(kernel(), " takes ", f_.params.size(), " argument",
                            f_.params.size() == 1 ? "" : "s", " (", join(names, false),
                            ") but was called with ", args_.size(),
                            ": pass one argument per parameter, in this order"));
  }

  [[noreturn]] void unbound(const VarNode* v) const {
    throw ArgumentError(cat("extent variable '", v->name, "' of ", kernel(),
                            " is unbound at call time: pass a buffer whose shape has '", v->name,
                            "' as a dimension, or pass '", v->name, "' itself as a scalar argument"));
  }

  /// Where a size came from, spelled out only for a message: a call that succeeds formats no text
  /// (string formatting was most of a small kernel's 2 us call).
  struct Place {
    const std::string* param = nullptr;  // the argument's name
    int64_t dim = -1;                    // its dimension, or -1 for a scalar argument
    std::string str() const {
      return dim < 0 ? cat("argument '", *param, "'") : cat("dimension ", dim, " of argument '", *param, "'");
    }
    std::string source() const {
      return dim < 0 ? cat("argument '", *param, "'") : cat("argument '", *param, "' (dimension ", dim, ")");
    }
  };

  /// Binds v to value on first sight; later sightings must agree.
  void bind_or_compare(const Var& v, int64_t value, const Place& where) {
    check_fits_type(v, value, where);
    auto [it, inserted] = values_.emplace(v.get(), value);
    if (inserted) {
      sources_[v.get()] = where;
      return;
    }
    if (it->second != value) {
      throw ArgumentError(cat(where.str(), " is ", value, ", but '", v.name(), "' is already ", it->second,
                              " from ", sources_[v.get()].source(), " in the call of ", kernel(),
                              ": pass arguments that agree on '", v.name(), "'"));
    }
  }

  /// A value must fit the variable's type (a 2^32 extent cannot become an int32 'n').
  void check_fits_type(const Var& v, int64_t value, const Place& where) const {
    DType t = v.dtype();
    if (!t.is_integral() || t.bits == 64) return;
    int64_t lo = t.is_int() ? -(int64_t{1} << (t.bits - 1)) : 0;
    int64_t hi = t.is_int() ? (int64_t{1} << (t.bits - 1)) - 1 : (int64_t{1} << t.bits) - 1;
    if (value < lo || value > hi)
      throw ArgumentError(cat(where.str(), " of ", kernel(), " is ", value, ", which does not fit '",
                              v.name(), "' (", t.str(), ", range ", lo, " to ", hi,
                              "): use smaller data or a kernel built with ", t.with_bits(64).str(),
                              " sizes"));
  }

  /// The indices `r` reads with this call's sizes, min to max; nullopt when they cannot be
  /// evaluated (a division by zero: no point is computed for these sizes).
  std::optional<std::pair<int64_t, int64_t>> indices_of(const InputRead& r) const {
    try {
      return std::pair{eval_shape_expr(r.min, values_), eval_shape_expr(r.max, values_)};
    } catch (const UnboundVariable&) {
      return std::nullopt;  // variables the call does not bind (none that lower() records)
    } catch (const ArgumentError&) {
      return std::nullopt;
    }
  }

  /// Every read of an input lies in [0, extent) of the buffer given for it. Each range is
  /// evaluated once; a read with an empty dimension reads nothing, whatever its other ranges.
  void check_input_reads() const {
    const std::vector<InputRead>& reads = f_.input_reads;
    std::vector<std::optional<std::pair<int64_t, int64_t>>> ranges;
    for (const InputRead& r : reads) ranges.push_back(indices_of(r));
    auto same_read = [](const InputRead& a, const InputRead& b) {
      return a.param == b.param && a.reader == b.reader && a.access == b.access;
    };
    for (size_t i = 0; i < reads.size(); ++i) {
      bool empty = false;
      for (size_t j = 0; j < reads.size(); ++j)
        if (same_read(reads[i], reads[j]) && ranges[j] && ranges[j]->first > ranges[j]->second) empty = true;
      if (ranges[i] && !empty) check_input_read(reads[i], ranges[i]->first, ranges[i]->second);
    }
  }

  /// One read's indices lo to hi (a non-empty range) against the extent of the buffer given.
  void check_input_read(const InputRead& r, int64_t lo, int64_t hi) const {
    const std::string& name = f_.params.at(r.param).buffer.name;
    const int64_t extent = args_.at(r.param).buffer.shape.at(static_cast<size_t>(r.dim));
    if (lo >= 0 && hi < extent) return;
    const std::string what =
        cat("argument '", name, "' of ", kernel(), ": stage '", r.reader, "' reads ", r.access,
            ", which along dimension ", r.dim, " reaches indices ", lo, " to ", hi);
    if (lo < 0)
      throw ArgumentError(cat(what, ", before the start of '", name,
                              "': guard the read with if_then_else (e.g. if_then_else(i >= 1, A(i - 1), 0)) "
                              "or change its index"));
    if (hi >= extent)
      throw ArgumentError(cat(what, ", but dimension ", r.dim, " of '", name, "' has extent ", extent,
                              " (indices 0 to ", extent - 1, "): pass a larger '", name, "' (at least ",
                              hi + 1, " along dimension ", r.dim, "), or compute '", r.reader,
                              "' over fewer points"));
  }

  void bind_scalar(const Var& v, const KernelArg& arg) {
    const Place where{&v.get()->name, -1};
    DType t = v.dtype();
    if (arg.kind == KernelArg::Kind::Buffer) {
      throw ArgumentError(cat(where.str(), " of ", kernel(), " is a scalar (", t.str(),
                              ") but a buffer was passed: pass a ",
                              t.is_float() ? "floating-point" : "integer", " value"));
    }
    if (t.is_float()) {
      double value =
          arg.kind == KernelArg::Kind::Float ? arg.float_value : static_cast<double>(arg.int_value);
      out_.float_scalars[v.get()] = value;
      return;
    }
    if (arg.kind == KernelArg::Kind::Float) {
      throw ArgumentError(cat(where.str(), " of ", kernel(), " is an integer (", t.str(),
                              ") but the floating-point value ", arg.float_value,
                              " was passed: pass an integer"));
    }
    bind_or_compare(v, arg.int_value, where);
  }

  void check_buffer_kind(const BufferParam& p, const KernelArg& arg) {
    auto where = [&] { return cat("argument '", p.name, "' of ", kernel()); };
    if (!arg.invalid.empty()) throw ArgumentError(cat(where(), " ", arg.invalid));
    if (arg.kind == KernelArg::Kind::Buffer && !arg.device.host_accessible()) {
      if (!accept_cuda_memory_)
        throw ArgumentError(cat(where(), " is in memory of DLPack device type ", arg.device.type, " (id ",
                                arg.device.id,
                                "), which the CPU cannot access: copy it to host memory first"));
      if (arg.device.type != kDLPackCUDA)
        throw ArgumentError(cat(where(), " is in memory of DLPack device type ", arg.device.type, " (id ",
                                arg.device.id,
                                "); a kernel built for Target::cuda() takes host memory or CUDA ",
                                "device memory (kDLCUDA): copy it to one of them first"));
      if (arg.device.id != 0)
        throw ArgumentError(cat(where(), " is in the memory of CUDA device ", arg.device.id,
                                "; Loom runs kernels on device 0: pass memory of device 0 or host memory"));
    }
    if (arg.kind != KernelArg::Kind::Buffer) {
      throw ArgumentError(cat(where(), " is a buffer of ", p.dtype.str(),
                              " but a scalar was passed: pass a loom::Buffer<", cpp_type_name(p.dtype),
                              "> or a loom::BufferView"));
    }
    const BufferView& view = arg.buffer;
    if (view.dtype != p.dtype) {
      throw ArgumentError(cat(where(), " has ", view.dtype.str(), " elements but the kernel expects ",
                              p.dtype.str(), ": pass a loom::Buffer<", cpp_type_name(p.dtype),
                              "> (convert the data first)"));
    }
    if (view.rank() != static_cast<int>(p.shape.size())) {
      throw ArgumentError(cat(where(), " has ", view.rank(), " dimension", view.rank() == 1 ? "" : "s",
                              " but the kernel expects ", p.shape.size(), " (shape ", shape_text(p),
                              "): pass a ", p.shape.size(), "-dimensional buffer"));
    }
    if (view.data == nullptr) {
      throw ArgumentError(cat(where(), " has a null data pointer: allocate its memory (e.g. loom::Buffer<",
                              cpp_type_name(p.dtype), ">) before the call"));
    }
    if (!view.strides.empty() && view.strides.size() != view.shape.size()) {
      throw ArgumentError(cat(where(), " has ", view.shape.size(), " dimensions but ", view.strides.size(),
                              " strides: give one stride per dimension (or none for row-major)"));
    }
    for (size_t d = 0; d < p.shape.size(); ++d) {
      int64_t given = view.shape[d];
      if (given < 0) {
        throw ArgumentError(cat("dimension ", d, " of argument '", p.name, "' is negative (", given,
                                ") in the call of ", kernel(), ": shapes must be >= 0"));
      }
      if (const VarNode* v = p.shape[d].as<VarNode>()) {
        bind_or_compare(Var(Ref<const ExprNode>(v)), given, Place{&p.name, static_cast<int64_t>(d)});
      }
    }
  }

  void check_buffer_layout(const BufferParam& p, const BufferView& view) {
    std::vector<int64_t> strides = view.strides.empty() ? compact_strides(view.shape) : view.strides;
    for (size_t d = 0; d < p.shape.size(); ++d) {
      if (p.shape[d].as<VarNode>()) continue;  // checked in pass 1
      int64_t expected = evaluate(p.shape[d]);
      if (view.shape[d] != expected) {
        // "expects 6", or "expects (n + 2) = 8 (with n = 6)" when the dimension is an expression.
        const std::string expectation =
            p.shape[d].as<IntImmNode>()
                ? std::to_string(expected)
                : cat(to_string(p.shape[d]), " = ", expected, bindings_text(p.shape[d]));
        throw ArgumentError(cat("dimension ", d, " of argument '", p.name, "' is ", view.shape[d], ", but ",
                                kernel(), " expects ", expectation, ": pass a buffer of shape ",
                                shape_text(p)));
      }
    }
    std::vector<int64_t> expected_strides;
    if (p.strides.empty()) {
      expected_strides = compact_strides(view.shape);
    } else {
      for (const Expr& s : p.strides) expected_strides.push_back(evaluate(s));
    }
    for (size_t d = 0; d < expected_strides.size(); ++d) {
      // The stride of a dimension of extent 1 is never multiplied by a non-zero index.
      if (view.shape[d] == 1 || strides[d] == expected_strides[d]) continue;
      bool compact = expected_strides == compact_strides(view.shape);
      throw ArgumentError(cat(
          "argument '", p.name, "' of ", kernel(), " has strides ", join(strides), " but the kernel expects ",
          join(expected_strides), " (dimension ", d, " has stride ", strides[d], ", expected ",
          expected_strides[d], "): pass a buffer laid out with strides ", join(expected_strides),
          compact ? " (a compact row-major copy of this one: a kernel lowered from tensors "
                    "takes its arguments compact)"
                  : ""));
    }
    BoundBuffer bound{view.data, view.dtype, 0, 1};
    for (size_t d = 0; d < view.shape.size(); ++d) {
      if (view.shape[d] == 0) {
        bound.begin = bound.end = 0;
        break;
      }
      int64_t reach = (view.shape[d] - 1) * strides[d];
      (reach < 0 ? bound.begin : bound.end) += reach;
    }
    check_index_range(p, view, bound);
    out_.buffers[p.data.get()] = bound;
  }

  /// Flat indices are computed in the type of the buffer's sizes (int32 unless they are int64): an
  /// element beyond that type's range would wrap around to another address, so such a call is
  /// refused before anything runs (the interpreter, the JIT and the simulator alike).
  void check_index_range(const BufferParam& p, const BufferView& view, const BoundBuffer& b) const {
    int bits = 0;
    for (const Expr& e : p.shape) bits = std::max(bits, static_cast<int>(e.dtype().bits));
    for (const Expr& e : p.strides) bits = std::max(bits, static_cast<int>(e.dtype().bits));
    if (bits == 0 || bits >= 64 || b.begin == b.end) return;
    const int64_t limit = (int64_t{1} << (bits - 1)) - 1;
    if (b.end - 1 <= limit && b.begin >= -limit - 1) return;
    throw ArgumentError(cat("argument '", p.name, "' of ", kernel(), " has shape ", join(view.shape),
                            ", whose elements reach flat index ", b.end - 1 > limit ? b.end - 1 : b.begin,
                            ", beyond the ", limit, " that the kernel's int", bits,
                            " index arithmetic can address: build the kernel with int64 sizes (e.g. "
                            "size_var(\"n\", i64)) for buffers this large, or pass smaller pieces"));
  }

  int64_t evaluate(const Expr& e) const {
    try {
      return eval_shape_expr(e, values_);
    } catch (const UnboundVariable& u) {
      unbound(u.var);
    }
  }

  /// " (with n = 8, m = 3)" for the variables an expression mentions.
  std::string bindings_text(const Expr& e) const {
    std::vector<std::string> parts;
    for_each_expr(e, [&](const Expr& x) {
      if (const VarNode* v = x.as<VarNode>()) {
        auto it = values_.find(v);
        std::string part =
            cat(v->name, " = ", it == values_.end() ? std::string("?") : std::to_string(it->second));
        if (std::find(parts.begin(), parts.end(), part) == parts.end()) parts.push_back(part);
      }
    });
    if (parts.empty()) return "";
    std::string text = " (with ";
    for (size_t i = 0; i < parts.size(); ++i) text += (i ? ", " : "") + parts[i];
    return text + ")";
  }

  static std::string shape_text(const BufferParam& p) {
    std::vector<std::string> dims;
    for (const Expr& e : p.shape) dims.push_back(to_string(e));
    return join(dims);
  }

  static constexpr int kDLPackCUDA = 2;  // DLPack's kDLCUDA, without needing dlpack.h here

  const LoweredFunc& f_;
  const std::vector<KernelArg>& args_;
  bool accept_cuda_memory_ = false;
  std::unordered_map<const VarNode*, int64_t> values_;
  std::unordered_map<const VarNode*, Place> sources_;  // which argument bound each size
  BoundArgs out_;
};

}  // namespace detail

LOOM_DECL BoundArgs bind_arguments(const LoweredFunc& f, const std::vector<KernelArg>& args,
                                   bool accept_cuda_memory) {
  return detail::ArgumentBinder(f, args, accept_cuda_memory).bind();
}

}  // namespace loom
