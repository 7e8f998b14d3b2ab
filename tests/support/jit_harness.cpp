// The definitions of jit_harness.hpp: copying buffers, running the interpreter and the JIT side by
// side and comparing, random arguments. Compiled once: the interpreter's templates are heavy.
#include "jit_harness.hpp"

#include <loom/ir/dtype_arith.hpp>
#include <loom/runtime/shape_eval.hpp>
#include <loom/sim/interpreter.hpp>

#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <unordered_map>

namespace loom::test {

OwnedCopy copy_buffer(const BufferView& v) {
  std::vector<int64_t> strides = v.strides.empty() ? compact_strides(v.shape) : v.strides;
  int64_t begin = 0, end = 1;
  for (size_t d = 0; d < v.shape.size(); ++d) {
    if (v.shape[d] == 0) {
      begin = end = 0;
      break;
    }
    int64_t reach = (v.shape[d] - 1) * strides[d];
    (reach < 0 ? begin : end) += reach;
  }
  const int64_t size = v.dtype.bytes();
  const size_t bytes = static_cast<size_t>((end - begin) * size) + 64;
  std::shared_ptr<std::byte> storage(static_cast<std::byte*>(::operator new (bytes, std::align_val_t{64})),
                                     [](std::byte* p) { ::operator delete (p, std::align_val_t{64}); });
  std::memset(storage.get(), 0, bytes);
  if (end > begin)
    std::memcpy(storage.get(), static_cast<std::byte*>(v.data) + begin * size,
                static_cast<size_t>((end - begin) * size));
  BufferView copy(static_cast<void*>(storage.get() - begin * size), v.dtype, v.shape, strides);
  return OwnedCopy{storage, copy};
}

double element_value(const BufferView& v, int64_t i) {
  return arith::with_codec(v.dtype, [&](auto codec) -> double {
    using Codec = decltype(codec);
    typename Codec::Raw raw;
    std::memcpy(&raw, static_cast<const std::byte*>(v.data) + i * int64_t{sizeof(raw)}, sizeof(raw));
    return static_cast<double>(Codec::decode(raw));
  });
}

void set_element(const BufferView& v, int64_t i, double value) {
  arith::with_codec(v.dtype, [&](auto codec) {
    using Codec = decltype(codec);
    typename Codec::Value x;
    if constexpr (std::is_same_v<typename Codec::Value, double>) {
      x = arith::round_double_to(value, arith::float_format_of(v.dtype));
    } else {
      x = arith::float_to_int(value, arith::IntFormat::of(v.dtype));
    }
    typename Codec::Raw raw = Codec::encode(x);
    std::memcpy(static_cast<std::byte*>(v.data) + i * int64_t{sizeof(raw)}, &raw, sizeof(raw));
  });
}

namespace {

uint64_t element_bits(const BufferView& v, int64_t i) {
  uint64_t bits = 0;
  std::memcpy(&bits, static_cast<const std::byte*>(v.data) + i * v.dtype.bytes(),
              static_cast<size_t>(v.dtype.bytes()));
  return bits;
}

/// The flat offsets of every element of a view, in row-major order.
std::vector<int64_t> element_offsets(const BufferView& v) {
  std::vector<int64_t> strides = v.strides.empty() ? compact_strides(v.shape) : v.strides;
  std::vector<int64_t> out;
  if (v.num_elements() == 0) return out;
  std::vector<int64_t> index(v.shape.size(), 0);
  for (;;) {
    int64_t offset = 0;
    for (size_t d = 0; d < index.size(); ++d) offset += index[d] * strides[d];
    out.push_back(offset);
    size_t d = index.size();
    for (;;) {
      if (d == 0) return out;
      --d;
      if (++index[d] < v.shape[d]) break;
      index[d] = 0;
    }
  }
}

}  // namespace

OwnedArgs copy_arguments(const std::vector<KernelArg>& args) {
  OwnedArgs out;
  for (const KernelArg& a : args) {
    if (a.kind != KernelArg::Kind::Buffer || a.buffer.data == nullptr) {
      out.args.push_back(a);  // scalars, and null views that argument checks must reject
      continue;
    }
    out.storage.push_back(copy_buffer(a.buffer));
    out.args.emplace_back(out.storage.back().view);
  }
  return out;
}

void check_buffers_match(const LoweredFunc& f, const std::vector<KernelArg>& expected_args,
                         const std::vector<KernelArg>& actual_args, const JitCheckOptions& options) {
  for (size_t i = 0; i < expected_args.size(); ++i) {
    if (expected_args[i].kind != KernelArg::Kind::Buffer) continue;
    const BufferView& expected = expected_args[i].buffer;
    const BufferView& actual = actual_args.at(i).buffer;
    const std::string name =
        i < f.params.size() && f.params[i].kind == FuncParam::Kind::Buffer ? f.params[i].buffer.name : "?";
    int mismatches = 0;
    for (int64_t offset : element_offsets(expected)) {
      const double e = element_value(expected, offset), a = element_value(actual, offset);
      bool same;
      if (expected.dtype.is_float()) {
        const bool both_nan = std::isnan(e) && std::isnan(a);
        same = options.exact_floats
                   ? both_nan || element_bits(expected, offset) == element_bits(actual, offset)
                   : both_nan || e == a ||
                         std::abs(a - e) <=
                             options.relative_tolerance * std::abs(e) + options.absolute_tolerance;
      } else {
        same = element_bits(expected, offset) == element_bits(actual, offset);
      }
      if (!same && ++mismatches <= 5)
        FAIL_CHECK(name << " at offset " << offset << ": interpreter " << e << ", JIT " << a);
    }
    CHECK_MESSAGE(mismatches == 0, name << ": " << mismatches << " elements differ");
  }
}

Kernel check_jit_matches_interpreter(const LoweredFunc& f, const std::vector<KernelArg>& args,
                                     const JitCheckOptions& options) {
  OwnedArgs interp = copy_arguments(args), jit = copy_arguments(args);
  std::optional<std::string> interp_error, jit_error;
  try {
    interpret(f, interp.args);
  } catch (const Error& e) {
    interp_error = e.what();
  }
  Kernel k;
  try {
    k = build(f, options.target);  // a function the interpreter rejects may fail to compile
    k(jit.args);
  } catch (const Error& e) {
    jit_error = e.what();
  }
  INFO("kernel '" << f.name << "':\n" << f);
  REQUIRE_MESSAGE(interp_error.has_value() == jit_error.has_value(),
                  "interpreter: " << interp_error.value_or("ok") << "\nJIT: " << jit_error.value_or("ok"));
  if (interp_error) {
    CHECK(*jit_error == *interp_error);
    return k;
  }
  check_buffers_match(f, interp.args, jit.args, options);
  return k;
}

void fill_random_view(const BufferView& v, uint32_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t offset : element_offsets(v)) {
    double value = v.dtype.is_bool() ? static_cast<double>(rng() & 1) : dist(rng);
    set_element(v, offset, v.dtype.is_float() ? value : std::round(value));
  }
}

RandomArgs random_args(const LoweredFunc& f, uint32_t seed, const std::vector<int64_t>& sizes, double lo,
                       double hi) {
  std::unordered_map<const VarNode*, int64_t> values;
  for (size_t i = 0; i < sizes.size() && i < f.size_vars.size(); ++i) values[f.size_vars[i].get()] = sizes[i];
  RandomArgs out;
  for (const FuncParam& p : f.params) {
    if (p.kind == FuncParam::Kind::Scalar) {
      auto it = values.find(p.scalar.get());
      REQUIRE_MESSAGE(it != values.end(), "random_args: no value for scalar '" << p.scalar.name() << "'");
      out.args.emplace_back(it->second);
      continue;
    }
    std::vector<int64_t> shape;
    for (const Expr& e : p.buffer.shape) shape.push_back(detail::eval_shape_expr(e, values));
    BufferView view(nullptr, p.buffer.dtype, shape);
    const int64_t n = std::max<int64_t>(view.num_elements(), 1);
    std::shared_ptr<std::byte> storage(
        static_cast<std::byte*>(
            ::operator new (static_cast<size_t>(n * p.buffer.dtype.bytes()), std::align_val_t{64})),
        [](std::byte* q) { ::operator delete (q, std::align_val_t{64}); });
    view.data = storage.get();
    fill_random_view(view, seed++, lo, hi);
    out.storage.push_back(OwnedCopy{storage, view});
    out.args.emplace_back(view);
  }
  return out;
}

}  // namespace loom::test
