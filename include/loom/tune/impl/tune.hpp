// The definitions of tune/tune.hpp: knob discovery, the candidates (all, or a seeded sample), one
// set of random inputs for every candidate, the default configuration's outputs as the reference,
// and timing by the median of samples that each last at least min_sample_ms.
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/tune/tune.hpp");

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "loom/backend/build.hpp"
#include "loom/ir/half.hpp"
#include "loom/ir/structural_hash.hpp"
#include "loom/runtime/thread_pool.hpp"
#include "loom/tune/tune.hpp"

namespace loom::tune {

namespace detail {

/// One argument's memory, 64-byte aligned, with the view a call takes.
struct ArgBuffer {
  std::unique_ptr<void, void (*)(void*)> memory{nullptr, std::free};
  BufferView view;
  bool output = false;
};

inline double element(const BufferView& v, int64_t i) {
  const DType t = v.dtype;
  if (t == f32) return static_cast<const float*>(v.data)[i];
  if (t == f64) return static_cast<const double*>(v.data)[i];
  if (t == f16) return half_bits_to_float(static_cast<const uint16_t*>(v.data)[i]);
  if (t == bf16) return bfloat16_bits_to_float(static_cast<const uint16_t*>(v.data)[i]);
  if (t == i8) return static_cast<const int8_t*>(v.data)[i];
  if (t == u8) return static_cast<const uint8_t*>(v.data)[i];
  if (t == i32) return static_cast<const int32_t*>(v.data)[i];
  if (t == i64) return static_cast<double>(static_cast<const int64_t*>(v.data)[i]);
  return 0;
}

inline void set_element(const BufferView& v, int64_t i, double x) {
  const DType t = v.dtype;
  if (t == f32) static_cast<float*>(v.data)[i] = static_cast<float>(x);
  if (t == f64) static_cast<double*>(v.data)[i] = x;
  if (t == f16) static_cast<uint16_t*>(v.data)[i] = float_to_half_bits(static_cast<float>(x));
  if (t == bf16) static_cast<uint16_t*>(v.data)[i] = float_to_bfloat16_bits(static_cast<float>(x));
  if (t == i8) static_cast<int8_t*>(v.data)[i] = static_cast<int8_t>(x);
  if (t == u8) static_cast<uint8_t*>(v.data)[i] = static_cast<uint8_t>(x);
  if (t == i32) static_cast<int32_t*>(v.data)[i] = static_cast<int32_t>(x);
  if (t == i64) static_cast<int64_t*>(v.data)[i] = static_cast<int64_t>(x);
}

/// Buffers for the parameters of `f` (lowered with `args`; constant shapes only): the inputs
/// random in [-1, 1] (integers in [-8, 8]), the outputs (the computed tensors) zero.
inline std::vector<ArgBuffer> make_arguments(const LoweredFunc& f, const std::vector<LowerArg>& args,
                                             uint32_t seed) {
  std::vector<ArgBuffer> out;
  for (const FuncParam& p : f.params) {
    if (p.kind != FuncParam::Kind::Buffer)
      throw Error(cat("tune: the kernel takes the scalar '", p.scalar.name(),
                      "'; tuning takes tensors of constant shape only (tune one workload per size)"));
    const DType t = p.buffer.dtype;
    if (!(t == f32 || t == f64 || t == f16 || t == bf16 || t == i8 || t == u8 || t == i32 || t == i64))
      throw Error(cat("tune: argument '", p.buffer.name, "' has type ", t.str(),
                      ", which the tuner cannot fill with random data yet"));
    std::vector<int64_t> shape;
    for (const Expr& e : p.buffer.shape) {
      const int64_t* n = as_const_int(e);
      if (!n)
        throw Error(cat("tune: argument '", p.buffer.name, "' has the symbolic extent ", to_string(e),
                        "; tuning needs constant shapes (tune one workload per size)"));
      shape.push_back(*n);
    }
    ArgBuffer a;
    int64_t count = 1;
    for (int64_t n : shape) count *= n;
    const size_t bytes =
        (static_cast<size_t>(std::max<int64_t>(count, 1)) * (t.bits / 8 ? t.bits / 8 : 1) + 63) / 64 * 64;
    a.memory.reset(std::aligned_alloc(64, bytes));
    std::fill_n(static_cast<char*>(a.memory.get()), bytes, 0);
    a.view = BufferView(a.memory.get(), t, shape);
    const LowerArg& arg = args.at(out.size());
    a.output = arg.tensor.defined() && arg.tensor.op()->kind != OpKind::Placeholder;
    out.push_back(std::move(a));
  }
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  for (ArgBuffer& b : out)
    if (!b.output)
      for (int64_t i = 0; i < b.view.num_elements(); ++i) {
        const double x = uniform(rng);
        set_element(b.view, i, b.view.dtype.is_float() ? x : std::round(x * 8));
      }
  return out;
}

inline std::vector<KernelArg> kernel_args(const std::vector<ArgBuffer>& buffers) {
  std::vector<KernelArg> out;
  for (const ArgBuffer& b : buffers) out.emplace_back(b.view);
  return out;
}

/// The configurations to measure: all of them, or `max` drawn without repeats (the default first).
inline std::vector<Assignment> candidates(const std::vector<Knob>& space, int64_t size, int max,
                                          uint32_t seed) {
  auto nth = [&](int64_t index) {
    Assignment a;
    for (const Knob& k : space) {
      const int64_t n = static_cast<int64_t>(k.options.size());
      a[k.name] = k.options[static_cast<size_t>(index % n)];
      index /= n;
    }
    return a;
  };
  std::vector<int64_t> picked;
  if (size <= max) {
    for (int64_t i = 0; i < size; ++i) picked.push_back(i);
  } else {
    std::mt19937_64 rng(seed);
    picked.push_back(0);
    while (static_cast<int>(picked.size()) < max) {
      const int64_t i = static_cast<int64_t>(rng() % static_cast<uint64_t>(size));
      if (std::find(picked.begin(), picked.end(), i) == picked.end()) picked.push_back(i);
    }
  }
  std::vector<Assignment> out;
  for (int64_t i : picked) out.push_back(nth(i));
  return out;
}

/// The median of `repeats` samples, each the mean time of as many calls as last min_ms.
inline double median_ms(const Kernel& k, const std::vector<KernelArg>& args, int repeats, double min_ms) {
  using Clock = std::chrono::steady_clock;
  k(args);  // warm-up
  std::vector<double> samples;
  for (int r = 0; r < std::max(repeats, 1); ++r) {
    int calls = 0;
    const auto start = Clock::now();
    double elapsed = 0;
    do {
      k(args);
      ++calls;
      elapsed = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    } while (elapsed < min_ms);
    samples.push_back(elapsed / calls);
  }
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

/// The first output element that differs from the reference by more than `tolerance`, described.
inline std::string first_mismatch(const std::vector<ArgBuffer>& got,
                                  const std::vector<std::vector<double>>& ref, double tolerance) {
  size_t o = 0;
  for (const ArgBuffer& b : got) {
    if (!b.output) continue;
    const std::vector<double>& r = ref[o++];
    for (int64_t i = 0; i < b.view.num_elements(); ++i) {
      const double x = element(b.view, i), y = r[static_cast<size_t>(i)];
      if (!(std::abs(x - y) <= tolerance * (1 + std::abs(y))))
        return cat("output element ", i, " is ", x, " where the default configuration gives ", y);
    }
  }
  return "";
}

/// A candidate that brings its own tensors must take what the default configuration's kernel
/// takes: the tuner calls every candidate with the same buffers.
inline void require_same_parameters(const LoweredFunc& reference, const LoweredFunc& f) {
  bool same = reference.params.size() == f.params.size();
  for (size_t i = 0; same && i < f.params.size(); ++i) {
    const FuncParam &a = reference.params[i], &b = f.params[i];
    same = a.kind == b.kind && a.kind == FuncParam::Kind::Buffer && a.buffer.dtype == b.buffer.dtype &&
           a.buffer.shape.size() == b.buffer.shape.size();
    for (size_t d = 0; same && d < a.buffer.shape.size(); ++d) {
      const int64_t *x = as_const_int(a.buffer.shape[d]), *y = as_const_int(b.buffer.shape[d]);
      same = x && y && *x == *y;
    }
  }
  if (!same)
    throw Error(cat("tune: a configuration's kernel '", f.name,
                    "' takes other arguments (shapes or dtypes) than the default configuration's; every "
                    "configuration must compute the same workload"));
}

}  // namespace detail

LOOM_DECL std::string workload_key(const std::vector<LowerArg>& args) {
  std::vector<Tensor> outputs;
  for (const LowerArg& a : args)
    if (a.tensor.defined() && a.tensor.op()->kind != OpKind::Placeholder) outputs.push_back(a.tensor);
  if (outputs.empty()) throw Error("tune: the arguments hold no computed tensor (no output to tune)");
  LoweredFunc f = lower(create_schedule(outputs), args, "workload");
  uint64_t h = structural_hash(f.body);
  // The parameters' types and shapes, which the body names only through their buffers.
  for (const FuncParam& p : f.params) {
    std::string sig = p.kind == FuncParam::Kind::Buffer ? p.buffer.dtype.str() : p.scalar.dtype().str();
    if (p.kind == FuncParam::Kind::Buffer)
      for (const Expr& e : p.buffer.shape) sig += "," + to_string(e);
    for (char c : sig) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

LOOM_DECL Result tune(const std::vector<LowerArg>& args, const ScheduleFunction& schedule,
                      const Options& options) {
  return tune([&](Config& cfg) { return Candidate{schedule(cfg), args}; }, options);
}

LOOM_DECL Result tune(const CandidateFunction& candidate, const Options& options) {
  Result result;
  Config discover;
  Candidate first = candidate(discover);
  const std::vector<LowerArg>& args = first.args;
  result.workload = workload_key(args);
  Schedule default_schedule = first.schedule;
  result.space = discover.knobs();
  for (const Knob& k : result.space) {
    result.space_size *= static_cast<int64_t>(k.options.size());
    if (result.space_size > (int64_t{1} << 40))
      throw Error(
          cat("tune: the search space has more than 2^40 configurations; give the knobs fewer options"));
  }

  // The default configuration: its outputs are the reference every candidate must reproduce.
  Kernel reference = build(default_schedule, args, options.target, options.name);
  std::vector<detail::ArgBuffer> buffers = detail::make_arguments(reference.lowered(), args, options.seed);
  const std::vector<KernelArg> call_args = detail::kernel_args(buffers);
  reference(call_args);
  std::vector<std::vector<double>> expected;
  for (const detail::ArgBuffer& b : buffers)
    if (b.output) {
      std::vector<double> values(static_cast<size_t>(b.view.num_elements()));
      for (int64_t i = 0; i < b.view.num_elements(); ++i)
        values[static_cast<size_t>(i)] = detail::element(b.view, i);
      expected.push_back(std::move(values));
    }

  // Warm the machine up (caches, page mappings, the thread pool, the clock frequency) on the
  // default kernel before timing anything: else the first candidate measured, the default, pays
  // for it and every other looks faster than it is.
  (void)detail::median_ms(reference, call_args, options.repeats, options.min_sample_ms);

  const Database db(options.database == "off" ? std::string() : options.database);
  const bool record = options.database != "off";
  Record base;
  base.workload = result.workload;
  base.name = options.name;
  base.target = options.target.str();
  base.cpu = cpu_model();
  base.threads = runtime::ThreadPool::global().num_threads();

  bool have_best = false;
  for (const Assignment& knobs :
       detail::candidates(result.space, result.space_size, std::max(options.max_trials, 1), options.seed)) {
    Trial trial;
    trial.knobs = knobs;
    try {
      Config cfg(knobs);
      Candidate c = candidate(cfg);
      Kernel k = build(c.schedule, c.args, options.target, options.name);
      detail::require_same_parameters(reference.lowered(), k.lowered());
      for (detail::ArgBuffer& b : buffers)
        if (b.output)
          std::fill_n(static_cast<char*>(b.memory.get()), b.view.num_elements() * b.view.dtype.bits / 8, 0);
      k(call_args);
      trial.detail = detail::first_mismatch(buffers, expected, options.tolerance);
      if (!trial.detail.empty()) {
        trial.outcome = Trial::Outcome::Wrong;
      } else {
        trial.ms = detail::median_ms(k, call_args, options.repeats, options.min_sample_ms);
      }
    } catch (const Error& e) {
      trial.outcome = Trial::Outcome::Invalid;
      trial.detail = e.what();
    }
    if (trial.outcome == Trial::Outcome::Measured) {
      ++result.measured;
      if (knobs == discover.assignment()) result.default_ms = trial.ms;
      if (!have_best || trial.ms < result.best_ms)
        result.best = knobs, result.best_ms = trial.ms, have_best = true;
      if (record) {
        Record r = base;
        r.knobs = knobs;
        r.ms = trial.ms;
        db.append(r);
      }
    } else {
      ++(trial.outcome == Trial::Outcome::Invalid ? result.invalid : result.wrong);
    }
    result.trials.push_back(std::move(trial));
  }
  if (!have_best) result.best = discover.assignment();
  return result;
}

LOOM_DECL std::optional<Assignment> best_knobs(const std::string& workload, const Target& target,
                                               const std::string& database) {
  std::optional<Record> best = Database(database).best(workload, target.str());
  if (!best) return std::nullopt;
  return best->knobs;
}

LOOM_DECL std::optional<Schedule> apply_best(const std::vector<LowerArg>& args,
                                             const ScheduleFunction& schedule, const Target& target,
                                             const std::string& database) {
  std::optional<Assignment> knobs = best_knobs(workload_key(args), target, database);
  if (!knobs) return std::nullopt;
  Config cfg(*knobs);
  return schedule(cfg);
}

}  // namespace loom::tune
