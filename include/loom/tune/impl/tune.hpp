// The definitions of tune/tune.hpp: knob discovery, one set of random inputs for every candidate,
// the default configuration's outputs as the reference, and the loop over the Searcher's batches:
// schedule functions called one at a time (user code need not be thread-safe), builds in parallel,
// checks and timings one at a time (in a worker process unless isolation is off).
#pragma once

#include "loom/support/config.hpp"
LOOM_IMPLEMENTATION_FILE("loom/tune/tune.hpp");

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "loom/backend/build.hpp"
#include "loom/ir/half.hpp"
#include "loom/ir/structural_hash.hpp"
#include "loom/runtime/thread_pool.hpp"
#include "loom/support/cpu_info.hpp"
#include "loom/tune/cost_model.hpp"
#include "loom/tune/ir_features.hpp"
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

/// Whether x matches the reference y: within `tolerance` relative to 1 + |y| (at least the
/// rounding of a 16-bit float type, whose results change with the order of a reduction), or both
/// NaN, or the same infinity.
inline bool matches(double x, double y, DType t, double tolerance) {
  if (t == f16) tolerance = std::max(tolerance, 1e-2);
  if (t == bf16) tolerance = std::max(tolerance, 5e-2);
  return x == y || (std::isnan(x) && std::isnan(y)) || std::abs(x - y) <= tolerance * (1 + std::abs(y));
}

/// The first output element that differs from the reference, described.
inline std::string first_mismatch(const std::vector<ArgBuffer>& got,
                                  const std::vector<std::vector<double>>& ref, double tolerance) {
  size_t o = 0;
  for (const ArgBuffer& b : got) {
    if (!b.output) continue;
    const std::vector<double>& r = ref[o++];
    for (int64_t i = 0; i < b.view.num_elements(); ++i) {
      const double x = element(b.view, i), y = r[static_cast<size_t>(i)];
      if (!matches(x, y, b.view.dtype, tolerance))
        return cat("output element ", i, " is ", x, " where the default configuration gives ", y);
    }
  }
  return "";
}

/// Sets every output element to `value` (integer types get -77 for a NaN).
inline void fill_outputs(std::vector<ArgBuffer>& buffers, double value) {
  for (ArgBuffer& b : buffers)
    if (b.output)
      for (int64_t i = 0; i < b.view.num_elements(); ++i)
        set_element(b.view, i, b.view.dtype.is_float() || !std::isnan(value) ? value : -77.0);
}

/// The outputs' values, in order.
inline std::vector<std::vector<double>> output_values(const std::vector<ArgBuffer>& buffers) {
  std::vector<std::vector<double>> out;
  for (const ArgBuffer& b : buffers)
    if (b.output) {
      std::vector<double> values(static_cast<size_t>(b.view.num_elements()));
      for (int64_t i = 0; i < b.view.num_elements(); ++i) values[static_cast<size_t>(i)] = element(b.view, i);
      out.push_back(std::move(values));
    }
  return out;
}

/// A trial's outcome as one line of text: what the worker process reports of the configuration it
/// checked and timed, and what the processes of a distributed search tell each other (the knobs
/// are not sent: every process knows which configurations a batch holds).
inline std::string encode_trial(const Trial& t) {
  std::string detail = t.detail;
  std::replace(detail.begin(), detail.end(), '\n', ' ');
  char head[160];
  std::snprintf(head, sizeof head, "%d %.17g %d %d %.17g %d ", static_cast<int>(t.outcome), t.ms,
                t.timing.samples, t.timing.rejected, t.timing.spread, t.timing.cut_short ? 1 : 0);
  return head + detail + "\n";
}

/// Reads encode_trial's line (a trailing newline or not) into `t`; false when it cannot be read.
inline bool decode_trial(std::string line, Trial& t) {
  if (!line.empty() && line.back() == '\n') line.pop_back();
  int outcome = 0, cut = 0, used = 0;
  if (std::sscanf(line.c_str(), "%d %lf %d %d %lf %d %n", &outcome, &t.ms, &t.timing.samples,
                  &t.timing.rejected, &t.timing.spread, &cut, &used) < 6 ||
      outcome < 0 || outcome > static_cast<int>(Trial::Outcome::TimedOut))
    return false;
  t.outcome = static_cast<Trial::Outcome>(outcome);
  t.timing.ms = t.ms;
  t.timing.cut_short = cut != 0;
  t.detail = line.substr(static_cast<size_t>(used));
  return true;
}

/// Builds the kernels of a batch's candidates on `threads` threads; a build that Loom refuses
/// marks its trial Invalid. Any other exception is rethrown here, after every thread has joined.
inline void build_batch(const std::vector<std::optional<Candidate>>& candidates, const Options& options,
                        int threads, std::vector<Kernel>& kernels, std::vector<Trial>& trials) {
  std::atomic<size_t> next{0};
  std::exception_ptr failure;
  std::mutex failure_mutex;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < candidates.size();) {
      if (!candidates[i]) continue;
      try {
        kernels[i] = build(candidates[i]->schedule, candidates[i]->args, options.target, options.name);
      } catch (const Error& e) {
        trials[i].outcome = Trial::Outcome::Invalid;
        trials[i].detail = e.what();
      } catch (...) {
        std::lock_guard<std::mutex> lock(failure_mutex);
        if (!failure) failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  try {
    for (int t = 1; t < std::min<int>(threads, static_cast<int>(candidates.size())); ++t)
      helpers.emplace_back(work);
  } catch (const std::system_error&) {
    // No more threads to be had: the ones started, and this one, build the rest.
  }
  work();
  for (std::thread& t : helpers) t.join();
  if (failure) std::rethrow_exception(failure);
}

/// Times the finalists' kernels against each other in alternating rounds (each keeps its fastest
/// sample), in one worker; their times as text, one per finalist, or "" when that failed.
inline std::string time_finalists(const CandidateFunction& candidate, const Options& options,
                                  const std::vector<Assignment>& finalists,
                                  const std::vector<KernelArg>& call_args, bool isolate,
                                  double time_limit_s) {
  try {
    std::vector<Kernel> kernels;
    for (const Assignment& knobs : finalists) {
      Config cfg(knobs);
      Candidate c = candidate(cfg);
      kernels.push_back(build(c.schedule, c.args, options.target, options.name));  // a kernel-cache hit
    }
    auto time_all = [&]() -> std::string {
      // One sample of each finalist per round, in turn, so that all see the same moments of the
      // machine; the fastest sample of each counts (what slows a sample down is not the kernel).
      std::vector<double> best(kernels.size(), 1e300);
      for (const Kernel& k : kernels) k(call_args);  // warm-up
      const int rounds = std::max(options.final_rounds, 1) * std::max(options.repeats, 1);
      for (int round = 0; round < rounds; ++round)
        for (size_t i = 0; i < kernels.size(); ++i)
          best[i] = std::min(best[i], sample_ms([&] { kernels[i](call_args); }, options.min_sample_ms));
      std::string out;
      for (double ms : best) out += cat(ms, " ");
      return out;
    };
    if (!isolate) return time_all();
    const WorkerResult w = run_in_worker(time_all, time_limit_s * static_cast<double>(kernels.size()));
    return w.status == WorkerResult::Status::Finished ? w.output : "";
  } catch (const std::exception&) {
    return "";  // the search's result stands
  }
}

/// The final rounds: the default and the search's fastest few (not those cut short), timed again
/// against each other (time_finalists). The fastest replaces the search's best, unless the
/// default is within min_gain of it. `record(knobs, ms, chosen)` is called for each finalist.
/// When the final timing fails, the search's result stands.
template <typename Record>
void final_rounds(const CandidateFunction& candidate, const Options& options, Result& result,
                  const Assignment& default_knobs, Record&& record, const std::vector<KernelArg>& call_args,
                  bool isolate, double time_limit_s) {
  std::vector<const Trial*> measured;
  for (const Trial& t : result.trials)
    if (t.outcome == Trial::Outcome::Measured && !t.timing.cut_short) measured.push_back(&t);
  std::sort(measured.begin(), measured.end(), [](const Trial* a, const Trial* b) { return a->ms < b->ms; });
  std::vector<Assignment> finalists;
  for (const Trial* t : measured)
    if (t->knobs == default_knobs) finalists.push_back(t->knobs);
  int others = 0;
  for (size_t i = 0; i < measured.size() && others < options.finalists; ++i)
    if (measured[i]->knobs != default_knobs) finalists.push_back(measured[i]->knobs), ++others;
  if (options.finalists <= 0 || finalists.size() < 2) return;
  // One process times the finals (times from different machines do not compare); the others
  // learn the outcome from it.
  const Distribution& dist = options.distribution;
  std::string times;
  if (dist.rank == 0) times = time_finalists(candidate, options, finalists, call_args, isolate, time_limit_s);
  if (dist.size > 1) times = dist.all_gather(times).at(0);
  std::vector<std::pair<Assignment, double>> finals;
  const char* p = times.c_str();
  for (const Assignment& knobs : finalists) {
    char* end = nullptr;
    const double ms = std::strtod(p, &end);
    if (end == p) return;  // the final timing failed: the search's result stands
    p = end;
    finals.emplace_back(knobs, ms);
  }
  result.finals = finals;
  auto fastest = std::min_element(finals.begin(), finals.end(),
                                  [](const auto& a, const auto& b) { return a.second < b.second; });
  // The default stays unless the fastest beats it by more than min_gain.
  if (finals.front().first == default_knobs) {
    result.default_ms = finals.front().second;
    if (fastest->second > finals.front().second * (1 - options.min_gain)) fastest = finals.begin();
  }
  result.best = fastest->first;
  result.best_ms = fastest->second;
  for (const auto& [knobs, ms] : finals) record(knobs, ms, knobs == result.best);
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
  return lowered_func_key(lower(create_schedule(outputs), args, "workload"));
}

LOOM_DECL std::string lowered_func_key(const LoweredFunc& f) {
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

LOOM_DECL bool tuning_requested() {
  const char* env = std::getenv("LOOM_TUNE");
  return env && *env && std::string(env) != "0";
}

LOOM_DECL Result tune(const std::vector<LowerArg>& args, const ScheduleFunction& schedule,
                      const Options& options) {
  return tune([&](Config& cfg) { return Candidate{schedule(cfg), args}; }, options);
}

LOOM_DECL Result tune(const CandidateFunction& candidate, const Options& options) {
  const auto started = std::chrono::steady_clock::now();
  Result result;
  const Distribution& dist = options.distribution;
  if (dist.size < 1 || dist.rank < 0 || dist.rank >= dist.size || (dist.size > 1 && !dist.all_gather))
    throw Error(
        cat("tune: the distribution says process ", dist.rank, " of ", dist.size,
            (dist.size > 1 && !dist.all_gather) ? " but has no all_gather" : "",
            "; give rank in [0, size) and an all_gather (tune/mpi.hpp's mpi_distribution() makes one)"));
  // Distributed: every process calls this at the same points with its failure ("": none); when any
  // failed, every process throws the first failure, so that none waits for the others forever.
  auto agree = [&](const std::string& failure) {
    if (dist.size == 1) return;
    const std::vector<std::string> all = dist.all_gather(failure);
    for (int r = 0; r < dist.size; ++r)
      if (!all.at(static_cast<size_t>(r)).empty())
        throw Error(
            cat("tune: process ", r, " of the distributed search failed: ", all[static_cast<size_t>(r)]));
  };
  // Runs `work` here; distributed, a failure is shared with every process (agree) instead.
  auto together = [&](const std::function<void()>& work) {
    if (dist.size == 1) return work();
    std::string failure;
    try {
      work();
    } catch (const std::exception& e) {
      failure = *e.what() ? e.what() : "an exception";
    } catch (...) {
      failure = "an exception that is not a std::exception";
    }
    agree(failure);
  };

  Config discover;
  std::optional<Candidate> first;
  std::optional<Kernel> reference;
  std::vector<detail::ArgBuffer> buffers;
  std::vector<KernelArg> call_args;
  std::vector<std::vector<double>> expected;
  double poison = 0, reference_ms = 0;
  together([&] {
    first = candidate(discover);
    result.workload = workload_key(first->args);
    result.space = discover.knobs();
    for (const Knob& k : result.space) {
      result.space_size *= static_cast<int64_t>(k.options.size());
      if (result.space_size > (int64_t{1} << 40))
        throw Error(
            cat("tune: the search space has more than 2^40 configurations; give the knobs fewer options"));
    }
    // The default configuration: its outputs are the reference every candidate must reproduce.
    reference = build(first->schedule, first->args, options.target, options.name);
    buffers = detail::make_arguments(reference->lowered(), first->args, options.seed);
    call_args = detail::kernel_args(buffers);
    // Outputs start as zeros, then as NaN (integers: -77), so that a configuration that skips
    // writes cannot pass where the right value happens to be zero. A default whose outputs differ
    // between the two starts reads or leaves some of its outputs: then every candidate starts
    // from zeros, as the reference did.
    detail::fill_outputs(buffers, 0.0);
    (*reference)(call_args);
    expected = detail::output_values(buffers);
    detail::fill_outputs(buffers, std::nan(""));
    (*reference)(call_args);
    poison = detail::first_mismatch(buffers, expected, 0.0).empty() ? std::nan("") : 0.0;
    // Warm the machine up (caches, page mappings, the thread pool, the clock frequency) on the
    // default kernel before timing anything: else the first candidate measured, the default, pays
    // for it and every other looks faster than it is.
    reference_ms = time_calls([&] { (*reference)(call_args); }, options.repeats, options.min_sample_ms).ms;
  });

  // CUDA keeps a device context that a fork()ed child cannot use: device kernels run here.
  const bool isolate = options.isolate && options.target.kind() != TargetKind::CUDA;
  // The time limit grows with the kernel: a configuration within give_up_factor of the default
  // is timed fully (two calls, then up to three times `repeats` samples).
  const double slowest_ms = std::max(options.give_up_factor, 1.0) * reference_ms;
  const double time_limit_s =
      options.time_limit_s <= 0
          ? 0
          : std::max(options.time_limit_s,
                     1.5e-3 * (2 * slowest_ms + 3.0 * std::max(options.repeats, 1) *
                                                    std::max(options.min_sample_ms, slowest_ms)));

  const Database db(options.database == "off" || dist.rank != 0 ? std::string() : options.database);
  const bool record = options.database != "off" && dist.rank == 0;
  Record base;
  base.workload = result.workload;
  base.name = options.name;
  base.target = options.target.str();
  base.cpu = cpu_model();
  base.threads = runtime::ThreadPool::global().num_threads();
  base.cores = static_cast<int>(std::thread::hardware_concurrency());
  base.l1d_bytes = CpuCacheInfo::host().l1d_bytes;
  base.l2_bytes = CpuCacheInfo::host().l2_bytes;
  base.l3_bytes = CpuCacheInfo::host().l3_bytes;
  // Distributed, a record that cannot be written is reported, not thrown: process 0 alone writes,
  // and the others would wait for it forever.
  auto append = [&](const Assignment& knobs, double ms, bool confirmed) {
    if (!record) return;
    Record r = base;
    r.knobs = knobs;
    r.ms = ms;
    r.confirmed = confirmed;
    if (dist.size == 1) return db.append(r);
    try {
      db.append(r);
    } catch (const Error& e) {
      std::fprintf(stderr, "loom::tune: %s (the search goes on)\n", e.what());
    }
  };

  // Checks one candidate's outputs against the reference, then times it: run in the worker.
  // A hopeless configuration (its first call give_up_ms or longer) is not timed further.
  auto check_and_time = [&](const Kernel& k, double give_up_ms) -> std::string {
    detail::fill_outputs(buffers, poison);
    const auto start = std::chrono::steady_clock::now();
    k(call_args);
    const double first_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    Trial t;
    t.detail = detail::first_mismatch(buffers, expected, options.tolerance);
    if (!t.detail.empty()) {
      t.outcome = Trial::Outcome::Wrong;
    } else if (give_up_ms > 0 && first_ms > give_up_ms) {
      t.timing.ms = first_ms;
      t.timing.samples = 1;
      t.timing.cut_short = true;
    } else {
      t.timing = time_calls([&] { k(call_args); }, options.repeats, options.min_sample_ms);
    }
    t.ms = t.timing.ms;
    return detail::encode_trial(t);
  };
  // The outcome the check reported, into the batch's trial (whose knobs it keeps).
  auto take_report = [](const std::string& report, Trial& trial) {
    if (!detail::decode_trial(report, trial)) {
      trial.outcome = Trial::Outcome::Crashed;
      trial.detail = cat("the worker's report could not be read: '", report, "'");
    }
  };

  const int threads = options.compile_threads > 0
                          ? options.compile_threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  int batch_size = 2 * threads;
  int pool_threads = runtime::ThreadPool::global().num_threads();  // for the IR features
  if (dist.size > 1) {
    // Every process must search the same space the same way, in batches of one size (the
    // largest any process asks for): else a batch's outcomes would reach other configurations.
    std::string space;
    for (const Knob& k : result.space) {
      space += k.name + ":";
      for (int64_t o : k.options) space += cat(o, ",");
      space += ";";
    }
    const std::string fingerprint =
        cat(result.workload, " ", space, " ", strategy_name(options.strategy), " ", options.max_trials, " ",
            options.seed, " ", options.finalists, " ", options.final_rounds, " ", options.min_gain, " ",
            cost_learner_setting());
    // The features the search ranks by count process 0's threads, whatever this machine has.
    const std::vector<std::string> all =
        dist.all_gather(cat(batch_size, " ", pool_threads, " ", fingerprint));
    pool_threads = std::atoi(all.at(0).substr(all.at(0).find(' ') + 1).c_str());
    for (int r = 0; r < dist.size; ++r) {
      const std::string& theirs = all.at(static_cast<size_t>(r));
      const size_t gap = theirs.find(' ', theirs.find(' ') + 1);
      batch_size = std::max(batch_size, std::atoi(theirs.c_str()));
      if (gap == std::string::npos || theirs.substr(gap + 1) != fingerprint)
        throw Error(cat("tune: process ", r,
                        " of the distributed search tunes another workload, space or options "
                        "than process ",
                        dist.rank, "; every process must call tune() with the same ones"));
    }
  }

  Searcher searcher(result.space, result.space_size, options.strategy, std::max(options.max_trials, 1),
                    options.seed);
  result.strategy = searcher.strategy();
  if (result.strategy == Strategy::Evolutionary && options.ir_features)
    // The cost model also sees what each configuration's lowered function counts (a lowering, no
    // build): loop iterations, stores and their vector share, the parallel loop's balance.
    searcher.set_featurizer([&](const Assignment& knobs) -> std::optional<std::vector<double>> {
      try {
        Config cfg(knobs);
        Candidate c = candidate(cfg);
        return ir_features(lower(c.schedule, c.args, options.name), pool_threads).vector();
      } catch (const Error&) {
        return std::nullopt;
      }
    });
  const Assignment default_knobs = discover.assignment();
  bool have_best = false;
  for (std::vector<Proposal> batch; !(batch = searcher.next_batch(batch_size)).empty();) {
    // Distributed: this process takes every size-th configuration of the batch.
    auto mine = [&](size_t i) { return static_cast<int>(i % static_cast<size_t>(dist.size)) == dist.rank; };
    std::vector<Trial> trials(batch.size());
    for (size_t i = 0; i < batch.size(); ++i) {
      trials[i].knobs = batch[i].knobs;
      trials[i].predicted_ms = batch[i].predicted_ms;
    }
    // Not below 2 ms: a first call also pays for page faults and the worker's threads starting,
    // which can dwarf a kernel of microseconds; a kernel that fast is cheap to time fully anyway.
    const double give_up_ms =
        options.give_up_factor > 0
            ? std::max(2.0, options.give_up_factor *
                                (have_best ? std::min(reference_ms, result.best_ms) : reference_ms))
            : 0;
    together([&] {
      // The schedule functions, one at a time: user code need not be thread-safe.
      std::vector<std::optional<Candidate>> candidates(batch.size());
      for (size_t i = 0; i < batch.size(); ++i) {
        if (!mine(i)) continue;
        try {
          Config cfg(batch[i].knobs);
          candidates[i] = candidate(cfg);
        } catch (const Error& e) {
          trials[i].outcome = Trial::Outcome::Invalid;
          trials[i].detail = e.what();
        }
      }
      std::vector<Kernel> kernels(batch.size());
      auto phase = std::chrono::steady_clock::now();
      detail::build_batch(candidates, options, threads, kernels, trials);
      const auto built = std::chrono::steady_clock::now();
      result.build_seconds += std::chrono::duration<double>(built - phase).count();
      // Checks and timings, one at a time: two at once would disturb each other's timing.
      for (size_t i = 0; i < batch.size(); ++i) {
        Trial& trial = trials[i];
        if (!candidates[i] || trial.outcome != Trial::Outcome::Measured) continue;
        try {
          detail::require_same_parameters(reference->lowered(), kernels[i].lowered());
          if (!isolate) {
            take_report(check_and_time(kernels[i], give_up_ms), trial);
          } else {
            const WorkerResult w =
                run_in_worker([&] { return check_and_time(kernels[i], give_up_ms); }, time_limit_s);
            if (w.status == WorkerResult::Status::Finished) {
              take_report(w.output, trial);
            } else {
              trial.outcome = w.status == WorkerResult::Status::Threw      ? Trial::Outcome::Invalid
                              : w.status == WorkerResult::Status::TimedOut ? Trial::Outcome::TimedOut
                                                                           : Trial::Outcome::Crashed;
              trial.detail = w.detail;
            }
          }
        } catch (const Error& e) {
          trial.outcome = Trial::Outcome::Invalid;
          trial.detail = e.what();
        }
        kernels[i] = Kernel();  // the machine code stays in the kernel cache
      }
      result.measure_seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - built).count();
    });
    if (dist.size > 1) {
      // Every process learns every outcome, in batch order, so all follow the same search.
      std::string report;
      for (size_t i = 0; i < batch.size(); ++i)
        if (mine(i)) report += detail::encode_trial(trials[i]);
      const std::vector<std::string> reports = dist.all_gather(report);
      for (int rank = 0; rank < dist.size; ++rank) {
        size_t pos = 0;
        for (size_t i = static_cast<size_t>(rank); i < batch.size(); i += static_cast<size_t>(dist.size)) {
          const std::string& all = reports.at(static_cast<size_t>(rank));
          const size_t end = all.find('\n', pos);
          if (end == std::string::npos)
            throw Error(
                cat("tune: process ", rank,
                    " of the distributed search reported fewer outcomes than its share of the batch"));
          if (!detail::decode_trial(all.substr(pos, end - pos), trials[i]))
            throw Error(cat("tune: process ", rank,
                            " of the distributed search sent a report that cannot be read: '",
                            all.substr(pos, end - pos), "'"));
          pos = end + 1;
        }
      }
    }
    for (Trial& trial : trials) {
      switch (trial.outcome) {
        case Trial::Outcome::Measured: {
          ++result.measured;
          if (trial.knobs == default_knobs) result.default_ms = trial.ms;
          if (!have_best || trial.ms < result.best_ms)
            result.best = trial.knobs, result.best_ms = trial.ms, have_best = true;
          append(trial.knobs, trial.ms, false);
          break;
        }
        case Trial::Outcome::Invalid: ++result.invalid; break;
        case Trial::Outcome::Wrong: ++result.wrong; break;
        case Trial::Outcome::Crashed: ++result.crashed; break;
        case Trial::Outcome::TimedOut: ++result.timed_out; break;
      }
      searcher.observe(trial.knobs, trial.outcome == Trial::Outcome::Measured
                                        ? std::optional<double>(trial.ms)
                                        : std::nullopt);
      result.trials.push_back(std::move(trial));
    }
  }
  if (!have_best) result.best = default_knobs;
  const auto finals_started = std::chrono::steady_clock::now();
  detail::final_rounds(candidate, options, result, default_knobs, append, call_args, isolate, time_limit_s);
  const auto finished = std::chrono::steady_clock::now();
  result.measure_seconds += std::chrono::duration<double>(finished - finals_started).count();
  result.seconds = std::chrono::duration<double>(finished - started).count();
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
