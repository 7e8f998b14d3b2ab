// Timing GEMM kernels on the CUDA GPU that is present, for lib's GPU tuners (lib::tune_gpu_gemm,
// lib::tune_streamk_gemm). A and B are filled once, in device memory, with multiples of 2^-q in
// [-1, 1], q chosen from K (6 up to K = 4096, fewer bits beyond) so that every product is an integer
// multiple of 2^-2q and every partial sum of K of them stays below 2^24 such units: exact in f32.
// Every correct configuration then gives the same C as the reference, whatever order it sums in
// (split-K, Stream-K's fixups, other tiles), up to K = 2^24. The reference is the default
// configuration's C, itself checked exactly on the host at 256 entries. Each kernel is built for
// Target::cuda(), run once on a C full of NaN and compared, timed (the median device time of at
// least five calls and 20 ms, CUDA events behind the launches), and compared again. The measuring
// runs in forked worker processes (tune/worker_queue.hpp) while the calling process has not loaded
// the CUDA driver: a kernel that faults or hangs then costs its own measurement, not the tuning run
// or the caller's CUDA context. Internal to lib/impl/gpu_gemm_tuning.hpp and lib/impl/streamk_tuning.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "loom/backend/build.hpp"
#include "loom/backend/cuda/driver.hpp"
#include "loom/ir/half.hpp"
#include "loom/lib/matrix_layout.hpp"
#include "loom/lower/lowered_func.hpp"
#include "loom/runtime/buffer.hpp"
#include "loom/runtime/kernel.hpp"
#include "loom/tune/config.hpp"
#include "loom/tune/measure.hpp"
#include "loom/tune/worker_queue.hpp"

namespace loom::lib::detail {

/// The GPU present, as "<arch>\n<name>" ("sm_90\nNVIDIA H100 80GB HBM3"); empty when there is none.
/// Loads the driver into this process.
inline std::string gpu_identity_here() {
  if (!runtime::cuda::driver_available()) return "";
  const runtime::cuda::Driver& d = runtime::cuda::driver();
  return d.arch() + "\n" + (d.name.empty() ? d.arch() : d.name);
}

/// A probe's answer, kept once a probe has given one. A probe that crashed, hung, threw (a driver
/// error that may pass: out of memory, a device busy in exclusive mode) or could not start says
/// nothing lasting about the GPU: the next call asks again, and only after `attempts` such failures
/// is the answer "none".
class ProbeCache {
 public:
  explicit ProbeCache(int attempts = 3) : attempts_(attempts) {}
  std::string get(const std::function<tune::WorkerResult()>& probe) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (answer_) return *answer_;
    tune::WorkerResult r;
    try {
      r = probe();
    } catch (const std::exception& e) {  // no worker started (fork refused)
      r.status = tune::WorkerResult::Status::Crashed;
      r.detail = e.what();
    }
    if (r.status == tune::WorkerResult::Status::Finished)
      answer_ = r.output;
    else if (++failures_ >= attempts_)
      answer_ = "";
    return answer_.value_or("");
  }
  int failures() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return failures_;
  }

 private:
  mutable std::mutex mutex_;
  std::optional<std::string> answer_;
  int failures_ = 0;
  const int attempts_;
};

/// gpu_identity_here's answer without loading the driver into this process when it has not loaded
/// it yet: a forked worker is asked (ProbeCache: until one answers), so that later workers can still
/// use CUDA (runtime::cuda::driver_loaded()).
inline std::string gpu_identity() {
  if (runtime::cuda::driver_loaded()) return gpu_identity_here();
  static ProbeCache cache;
  return cache.get([] { return tune::run_in_worker(gpu_identity_here, 60); });
}

/// The GPU's name in `identity` (gpu_identity's) when it is one of `arch` ("sm_90"); empty when there
/// is no GPU or it is of another architecture (its timings would not be `arch`'s).
inline std::string gpu_name_if(const std::string& identity, const std::string& arch) {
  const size_t newline = identity.find('\n');
  if (newline == std::string::npos || identity.substr(0, newline) != arch) return "";
  return identity.substr(newline + 1);
}

/// The name of the GPU present when it is one of `arch`; empty otherwise. Does not load the driver
/// into a process that has not loaded it (gpu_identity).
inline std::string gpu_present_for(const std::string& arch) { return gpu_name_if(gpu_identity(), arch); }

/// One kernel's measurement: its median device time, or why it has none.
struct GemmDeviceTiming {
  double ms = 0;
  std::string failure;  // empty when measured
};

/// Device memory freed when it goes out of scope.
class DeviceAllocation {
 public:
  DeviceAllocation(const runtime::cuda::Driver& d, size_t bytes, const char* what) : driver_(d) {
    driver_.check(driver_.mem_alloc(&ptr_, bytes), cat("cuMemAlloc of ", what));
  }
  ~DeviceAllocation() {
    if (ptr_) driver_.mem_free(ptr_);
  }
  DeviceAllocation(const DeviceAllocation&) = delete;
  DeviceAllocation& operator=(const DeviceAllocation&) = delete;
  runtime::cuda::Driver::DevicePtr get() const { return ptr_; }

 private:
  const runtime::cuda::Driver& driver_;
  runtime::cuda::Driver::DevicePtr ptr_ = 0;
};

/// A, B and C of one GEMM problem in the GPU's memory, and the reference C.
class GemmDeviceTimer {
 public:
  /// A as stored by `a_layout` (m x k or k x m), B by `b_layout` (k x n or n x k), of `input`
  /// (f16, bf16 or f32); C m x n f32.
  GemmDeviceTimer(int64_t m, int64_t n, int64_t k, DType input, Layout a_layout, Layout b_layout)
      : driver_(runtime::cuda::driver()),
        m_(m),
        n_(n),
        k_(k),
        input_(input),
        a_layout_(a_layout),
        b_layout_(b_layout),
        a_values_(integers(m * k, 1)),
        b_values_(integers(k * n, 2)),
        a_(driver_, a_values_.size() * static_cast<size_t>(input.bytes()), "A"),
        b_(driver_, b_values_.size() * static_cast<size_t>(input.bytes()), "B"),
        c_(driver_, sizeof(float) * static_cast<size_t>(m * n), "C") {
    upload(a_values_, a_);
    upload(b_values_, b_);
  }

  /// Whether the sums are exact (K times the largest product stays below 2^24 units): then C must
  /// equal the reference exactly, else within 1e-5 of its largest magnitude.
  bool exact() const { return k_ * unit() * unit() <= (int64_t{1} << 24); }

  /// Builds `func` (parameters A, B, C as the constructor says), runs it once and compares its C
  /// with the reference (the first kernel measured gives it, checked on the host), times it, and
  /// compares C again. Never throws: a kernel that does not build, fails, or computes another C
  /// gets a failure instead of a time.
  GemmDeviceTiming measure(const LoweredFunc& func) {
    GemmDeviceTiming t;
    try {
      const Kernel kernel = build(func, Target::cuda());
      const std::vector<KernelArg> args = {on_device(a_.get(), input_, a_shape()),
                                           on_device(b_.get(), input_, b_shape()),
                                           on_device(c_.get(), f32, {m_, n_})};
      std::vector<float> c(static_cast<size_t>(m_ * n_), std::numeric_limits<float>::quiet_NaN());
      driver_.check(driver_.memcpy_htod(c_.get(), c.data(), sizeof(float) * c.size()), "copying C");
      kernel(args);
      if (reference_.empty()) {
        t.failure = adopt_reference();
        if (!t.failure.empty()) return t;
      } else if (t.failure = differs_from_reference("its first call"); !t.failure.empty()) {
        return t;
      }
      std::vector<double> times;
      double total = 0;
      while (times.size() < 5 || (total < 20 && times.size() < 200)) {
        kernel(args);
        times.push_back(kernel.last_device_ms());
        total += times.back();
      }
      std::sort(times.begin(), times.end());
      t.ms = times[times.size() / 2];
      t.failure = differs_from_reference("its timed calls");
      if (!t.failure.empty()) t.ms = 0;
    } catch (const std::exception& e) {
      t.failure = e.what();
      t.ms = 0;
    }
    return t;
  }

  /// After a failure: whether the CUDA context is lost (a kernel faulted), so nothing more can run.
  bool context_lost() const { return driver_.ctx_synchronize() != 0; }

 private:
  /// 2^q, the values' denominator: the largest power of two up to 64 with K 2^2q <= 2^24.
  int64_t unit() const {
    int64_t u = 64;
    while (u > 1 && k_ * u * u > (int64_t{1} << 24)) u /= 2;
    return u;
  }

  /// `count` integers in [-unit, unit], from a hash of their index (values are these over unit).
  std::vector<int32_t> integers(int64_t count, uint64_t seed) const {
    std::vector<int32_t> v(static_cast<size_t>(count));
    const int64_t u = unit();
    for (size_t i = 0; i < v.size(); ++i) {
      uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ull + seed;  // splitmix64's finalizer
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      z ^= z >> 31;
      v[i] = static_cast<int32_t>(static_cast<int64_t>(z % static_cast<uint64_t>(2 * u + 1)) - u);
    }
    return v;
  }

  std::vector<int64_t> a_shape() const {
    return a_layout_ == Layout::RowMajor ? std::vector<int64_t>{m_, k_} : std::vector<int64_t>{k_, m_};
  }
  std::vector<int64_t> b_shape() const {
    return b_layout_ == Layout::RowMajor ? std::vector<int64_t>{k_, n_} : std::vector<int64_t>{n_, k_};
  }

  /// The integers as `input_` values (over unit(), exact in f16, bf16 and f32), copied to `to`.
  void upload(const std::vector<int32_t>& integers, const DeviceAllocation& to) const {
    const float scale = 1.0f / static_cast<float>(unit());
    std::vector<unsigned char> bytes(integers.size() * static_cast<size_t>(input_.bytes()));
    for (size_t i = 0; i < integers.size(); ++i) {
      const float value = static_cast<float>(integers[i]) * scale;
      if (input_ == f32) {
        std::memcpy(&bytes[4 * i], &value, 4);
      } else {
        const uint16_t bits = input_ == f16 ? half(value).bits : bfloat16(value).bits;
        std::memcpy(&bytes[2 * i], &bits, 2);
      }
    }
    driver_.check(driver_.memcpy_htod(to.get(), bytes.data(), bytes.size()), "copying an operand");
  }

  std::vector<float> download_c() const {
    std::vector<float> c(static_cast<size_t>(m_ * n_));
    driver_.check(driver_.memcpy_dtoh(c.data(), c_.get(), sizeof(float) * c.size()), "copying C back");
    return c;
  }

  /// C[i][j] exactly, from the host's integers.
  double exact_entry(int64_t i, int64_t j) const {
    int64_t sum = 0;
    for (int64_t kk = 0; kk < k_; ++kk) {
      const int64_t a =
          a_values_[static_cast<size_t>(a_layout_ == Layout::RowMajor ? i * k_ + kk : kk * m_ + i)];
      const int64_t b =
          b_values_[static_cast<size_t>(b_layout_ == Layout::RowMajor ? kk * n_ + j : j * k_ + kk)];
      sum += a * b;
    }
    return static_cast<double>(sum) / static_cast<double>(unit() * unit());
  }

  /// Takes C as the reference once 256 of its entries (the corners among them) match the host's
  /// exact values; returns why not otherwise.
  std::string adopt_reference() {
    std::vector<float> c = download_c();
    for (int s = 0; s < 256; ++s) {
      const int64_t i = s < 2 ? (s == 0 ? 0 : m_ - 1) : (s * 2654435761ll) % m_;
      const int64_t j = s < 2 ? (s == 0 ? 0 : n_ - 1) : (s * 40503ll + 17) % n_;
      const double want = exact_entry(i, j), got = c[static_cast<size_t>(i * n_ + j)];
      if (!(std::fabs(got - want) <= (exact() ? 0.0 : 1e-5 * (1 + std::fabs(want)))))
        return cat("the reference (the default configuration) computes C[", i, "][", j, "] = ", got,
                   " where ", want, " is right");
    }
    reference_ = std::move(c);
    scale_ = 0;
    for (float v : reference_) scale_ = std::max(scale_, static_cast<double>(std::fabs(v)));
    return "";
  }

  /// Why C differs from the reference after `when` ("" when it does not).
  std::string differs_from_reference(const char* when) const {
    const std::vector<float> c = download_c();
    const double tolerance = exact() ? 0.0 : 1e-5 * scale_;
    for (size_t i = 0; i < c.size(); ++i)
      if (!(std::fabs(static_cast<double>(c[i]) - reference_[i]) <= tolerance))
        return cat("wrong result after ", when, ": C[", static_cast<int64_t>(i) / n_, "][",
                   static_cast<int64_t>(i) % n_, "] = ", c[i], " where the reference computes ",
                   reference_[i]);
    return "";
  }

  static KernelArg on_device(runtime::cuda::Driver::DevicePtr p, DType dtype,
                             const std::vector<int64_t>& shape) {
    KernelArg arg(BufferView(reinterpret_cast<void*>(p), dtype, shape, {}));
    arg.device = ArgDevice{2, 0};  // kDLCUDA, device 0: used in place, not copied
    return arg;
  }

  const runtime::cuda::Driver& driver_;
  int64_t m_, n_, k_;
  DType input_;
  Layout a_layout_, b_layout_;
  std::vector<int32_t> a_values_, b_values_;
  DeviceAllocation a_, b_, c_;
  std::vector<float> reference_;
  double scale_ = 0;
};

/// What measure_ranked_with did: the device, the default's time, how many candidates it timed.
struct MeasuredRanking {
  std::string device;              // empty: nothing measured (no GPU of the architecture, or measure_top 0)
  double default_ms = 0;           // the default configuration's median device time
  std::string failure;             // why measuring stopped early or never started although a GPU was present
  int measured = 0;                // candidates timed
  std::string measured_in;         // where: kInWorkers, or this process and why (empty: nothing measured)
  tune::Assignment default_knobs;  // the default's knobs as built where it was measured
};

/// MeasuredRanking::measured_in (and the tuners' results') when forked workers measured.
inline constexpr const char* kInWorkers = "worker processes";

/// How long a worker may take to set up (load the driver, place the operands, build and measure the
/// default) and then to build and measure each candidate, in seconds; a kernel that hangs (a
/// Stream-K fixup that waits for a flag never set) is killed with its worker after this.
inline constexpr double kWorkerTimeLimitS = 120;

/// `v` in text that std::stod reads back as the same double (a worker's times cross a pipe).
inline std::string exact_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

/// Knobs as one line of text ("name=value name=value"), and back: they cross the worker's pipe.
/// @{
inline std::string knobs_text(const tune::Assignment& knobs) {
  std::string text;
  for (const auto& [name, value] : knobs) text += cat(text.empty() ? "" : " ", name, "=", value);
  return text;
}
inline tune::Assignment knobs_from_text(const std::string& text) {
  tune::Assignment knobs;
  std::istringstream in(text);
  for (std::string word; in >> word;)
    if (const size_t eq = word.find('='); eq != std::string::npos)
      knobs[word.substr(0, eq)] = std::stoll(word.substr(eq + 1));
  return knobs;
}
/// @}

/// Orders `ranked` by measured time: the measured ones first, fastest first, the others after them
/// in their predicted order.
template <typename Candidate>
void order_by_measured_time(std::vector<Candidate>& ranked) {
  std::stable_sort(ranked.begin(), ranked.end(), [](const Candidate& a, const Candidate& b) {
    const bool a_timed = a.measured_ms > 0, b_timed = b.measured_ms > 0;
    if (a_timed != b_timed) return a_timed;
    return a_timed && a.measured_ms < b.measured_ms;
  });
}

/// Measures with `timer` (GemmDeviceTimer's interface: measure(func), context_lost()) the default
/// configuration (`default_func`: the reference) and the first `top` of `ranked` (fastest
/// predicted first; `func_of(candidate)` gives a candidate's kernel), setting each one's
/// measured_ms or measure_failure, then orders `ranked` by measured time: the measured ones first,
/// the others after them in their predicted order. Stops, saying why, when a failure left the CUDA
/// context unusable.
template <typename Timer, typename Candidate, typename FuncOf>
void measure_ranked_with(Timer& timer, int top, const LoweredFunc& default_func,
                         std::vector<Candidate>& ranked, FuncOf&& func_of, MeasuredRanking& out) {
  const GemmDeviceTiming reference = timer.measure(default_func);
  if (!reference.failure.empty()) {
    out.failure = cat("the default configuration could not be measured: ", reference.failure);
    return;
  }
  out.default_ms = reference.ms;
  const size_t count = std::min(ranked.size(), static_cast<size_t>(std::max(top, 0)));
  for (size_t i = 0; i < count; ++i) {
    Candidate& c = ranked[i];
    LoweredFunc f;
    try {
      f = func_of(c);
    } catch (const std::exception& e) {
      c.measure_failure = e.what();
      continue;
    }
    const GemmDeviceTiming t = timer.measure(f);
    c.measured_ms = t.ms;
    c.measure_failure = t.failure;
    out.measured += t.failure.empty() ? 1 : 0;
    if (!t.failure.empty() && timer.context_lost()) {
      out.failure = cat("measuring stopped: candidate ", i + 1, " left the CUDA context unusable (",
                        t.failure, "); this process cannot use the GPU any more");
      break;
    }
  }
  order_by_measured_time(ranked);
}

/// measure_ranked_with's work done in worker processes (tune::run_queue_in_workers): each worker
/// calls `make_timer()` (which returns the device's name and a timer, or an empty name and no timer
/// when no GPU of the architecture is present), makes the default with `default_of()` (its kernel
/// and knobs, built for the GPU there), measures it (the reference), then the candidates in order. A
/// candidate whose kernel crashes or hangs its worker, or loses its CUDA context (the worker retires), is
/// charged alone; a fresh worker measures the default again and goes on with the next. Nothing here touches
/// the GPU from this process. Then orders `ranked` as measure_ranked_with does.
template <typename MakeTimer, typename DefaultOf, typename Candidate, typename FuncOf>
void measure_ranked_in_workers(MakeTimer&& make_timer, int top, DefaultOf&& default_of,
                               std::vector<Candidate>& ranked, FuncOf&& func_of, MeasuredRanking& out,
                               double time_limit_s = kWorkerTimeLimitS) {
  const int count = static_cast<int>(std::min(ranked.size(), static_cast<size_t>(std::max(top, 0))));
  const tune::WorkerQueueResult q = tune::run_queue_in_workers(
      count,
      [&]() -> tune::WorkerSession {
        auto made = make_timer();
        if (made.first.empty()) return {};
        auto timer = std::shared_ptr<std::remove_reference_t<decltype(*made.second)>>(std::move(made.second));
        const auto [default_func, default_knobs] = default_of();
        const GemmDeviceTiming reference = timer->measure(default_func);
        if (!reference.failure.empty())
          throw Error(cat("the default configuration could not be measured: ", reference.failure));
        tune::WorkerSession session;
        session.started = cat(made.first, "\n", exact_text(reference.ms), "\n", knobs_text(default_knobs));
        session.run = [&ranked, &func_of, timer](int item, bool& retire) {
          const GemmDeviceTiming t = timer->measure(func_of(ranked[static_cast<size_t>(item)]));
          if (t.failure.empty()) return exact_text(t.ms);
          retire = timer->context_lost();  // a faulted kernel's context serves no one after it
          throw Error(t.failure);
        };
        return session;
      },
      time_limit_s);
  if (!q.setup_failure.empty()) out.measured_in = kInWorkers;
  if (q.started.empty() || q.started.front().empty()) {  // no GPU of the architecture, or no setup
    out.failure = q.setup_failure;
    return;
  }
  out.measured_in = kInWorkers;
  std::istringstream first(q.started.front());
  std::string ms, knobs;
  std::getline(first, out.device);
  std::getline(first, ms);
  std::getline(first, knobs);
  out.default_ms = std::stod(ms);
  out.default_knobs = knobs_from_text(knobs);
  for (size_t i = 0; i < q.items.size(); ++i) {
    const tune::WorkerResult& r = q.items[i];
    Candidate& c = ranked[i];
    if (r.status == tune::WorkerResult::Status::Finished) {
      c.measured_ms = std::stod(r.output);
      ++out.measured;
    } else {
      c.measure_failure = r.status == tune::WorkerResult::Status::Threw
                              ? r.detail
                              : cat("the worker process measuring it failed: ", r.detail);
    }
  }
  if (!q.setup_failure.empty())
    out.failure = cat("measuring stopped after candidate ", q.items.size(),
                      ": a fresh worker could not set up: ", q.setup_failure);
  order_by_measured_time(ranked);
}

/// measure_ranked_with on the GPU present, when it is one of `arch` and `top` is positive (else
/// nothing is measured and `ranked` is unchanged): in worker processes (measure_ranked_in_workers)
/// while this process has not loaded the CUDA driver, else here, where a kernel that faults ends
/// the measuring (and this process's use of the GPU) and one that hangs hangs the tuner.
/// `default_of()` makes the default's kernel and knobs where it is measured (a loom::Error it throws
/// becomes the failure); `func_of(candidate)` a candidate's kernel. Never throws.
template <typename DefaultOf, typename Candidate, typename FuncOf>
MeasuredRanking measure_ranked(int64_t m, int64_t n, int64_t k, DType input, Layout a_layout, Layout b_layout,
                               const std::string& arch, int top, DefaultOf&& default_of,
                               std::vector<Candidate>& ranked, FuncOf&& func_of) {
  MeasuredRanking out;
  if (top <= 0) return out;
  if (!runtime::cuda::driver_loaded()) {
    auto make_timer = [&]() -> std::pair<std::string, std::unique_ptr<GemmDeviceTimer>> {
      std::string device = gpu_name_if(gpu_identity_here(), arch);  // loads the driver in the worker
      if (device.empty()) return {};
      try {
        return {device, std::make_unique<GemmDeviceTimer>(m, n, k, input, a_layout, b_layout)};
      } catch (const std::exception& e) {
        throw Error(cat("the operands could not be placed on the GPU: ", e.what()));
      }
    };
    try {
      measure_ranked_in_workers(make_timer, top, default_of, ranked, func_of, out);
    } catch (const Error& e) {  // no pipe or no process for a worker
      out.failure = e.what();
    }
    // A GPU of the architecture on which nothing could be measured is still the device tried.
    if (out.device.empty() && !out.failure.empty()) out.device = gpu_present_for(arch);
    return out;
  }
  out.device = gpu_present_for(arch);
  if (out.device.empty()) return out;
  out.measured_in =
      "this process (it had loaded the CUDA driver before tuning, and a process forked from it "
      "cannot use CUDA): a candidate that faults ends the measuring, one that hangs hangs the tuner";
  LoweredFunc default_func;
  try {
    std::tie(default_func, out.default_knobs) = default_of();
  } catch (const Error& e) {
    out.failure = e.what();
    return out;
  }
  try {
    GemmDeviceTimer timer(m, n, k, input, a_layout, b_layout);
    measure_ranked_with(timer, top, default_func, ranked, func_of, out);
  } catch (const std::exception& e) {
    out.failure = cat("the operands could not be placed on the GPU: ", e.what());
  }
  return out;
}

/// What the measurements decide: the measured times to record (the default's first, under
/// `default_knobs`), and which configuration is the fastest: the first of `ranked` when it was
/// measured faster than the default (`use_first`), else the default (also when every candidate
/// failed). Nothing to record when the default was not measured.
struct MeasuredChoice {
  std::vector<std::pair<tune::Assignment, double>> times;  // knobs, seconds
  bool use_first = false;
};

template <typename Candidate, typename KnobsOf>
MeasuredChoice choose_measured(const MeasuredRanking& measured, const tune::Assignment& default_knobs,
                               const std::vector<Candidate>& ranked, KnobsOf&& knobs_of) {
  MeasuredChoice choice;
  if (measured.default_ms <= 0) return choice;
  choice.times.emplace_back(default_knobs, measured.default_ms * 1e-3);
  for (const Candidate& c : ranked)
    if (c.measured_ms > 0) choice.times.emplace_back(knobs_of(c), c.measured_ms * 1e-3);
  choice.use_first =
      !ranked.empty() && ranked.front().measured_ms > 0 && ranked.front().measured_ms < measured.default_ms;
  return choice;
}

}  // namespace loom::lib::detail
