// Timing GEMM kernels on the CUDA GPU that is present, for lib's GPU tuners (lib::tune_gpu_gemm,
// lib::tune_streamk_gemm): A and B are filled once, in device memory, with multiples of 1/64 in
// [-1, 1]. Every product of two of them is a multiple of 2^-12 held exactly in f32, and so is every
// partial sum below 4096 in magnitude, so every correct configuration gives the reference's C bit
// for bit, whatever order it sums in (split-K, Stream-K fixups, other tiles). Each kernel is built
// for Target::cuda(), run once on a C full of NaN and compared with the reference (the first kernel
// measured, the default configuration), then timed: the median device time (CUDA events) of
// several calls. Internal to lib/impl/gpu_gemm_tuning.hpp and lib/impl/streamk_tuning.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "loom/backend/build.hpp"
#include "loom/backend/cuda/driver.hpp"
#include "loom/ir/half.hpp"
#include "loom/lib/matrix_layout.hpp"
#include "loom/lower/lowered_func.hpp"
#include "loom/runtime/buffer.hpp"
#include "loom/runtime/kernel.hpp"

namespace loom::lib::detail {

/// The name of the GPU present when it is one of `arch` ("sm_90"); empty when there is no GPU or
/// it is of another architecture (its timings would not be `arch`'s).
inline std::string gpu_present_for(const std::string& arch) {
  if (!runtime::cuda::driver_available()) return "";
  const runtime::cuda::Driver& d = runtime::cuda::driver();
  if (d.arch() != arch) return "";
  return d.name.empty() ? d.arch() : d.name;
}

/// One kernel's measurement: its median device time, or why it has none.
struct GemmDeviceTiming {
  double ms = 0;
  std::string failure;  // empty when measured
};

/// A, B and C of one GEMM problem in the GPU's memory, and the reference C.
class GemmDeviceTimer {
 public:
  /// A as stored by `a_layout` (m x k or k x m), B by `b_layout` (k x n or n x k), of `input`
  /// (f16, bf16 or f32); C m x n f32.
  GemmDeviceTimer(int64_t m, int64_t n, int64_t k, DType input, Layout a_layout, Layout b_layout)
      : driver_(runtime::cuda::driver()), input_(input) {
    shape_a_ = a_layout == Layout::RowMajor ? std::vector<int64_t>{m, k} : std::vector<int64_t>{k, m};
    shape_b_ = b_layout == Layout::RowMajor ? std::vector<int64_t>{k, n} : std::vector<int64_t>{n, k};
    shape_c_ = {m, n};
    c_elements_ = static_cast<size_t>(m * n);
    a_ = upload(m * k, 1);
    b_ = upload(k * n, 2);
    driver_.check(driver_.mem_alloc(&c_, sizeof(float) * c_elements_), "cuMemAlloc of C");
  }
  ~GemmDeviceTimer() {
    for (runtime::cuda::Driver::DevicePtr p : {a_, b_, c_})
      if (p) driver_.mem_free(p);
  }
  GemmDeviceTimer(const GemmDeviceTimer&) = delete;
  GemmDeviceTimer& operator=(const GemmDeviceTimer&) = delete;

  /// Builds `func` (parameters A, B, C as the constructor says), runs it once and compares its C
  /// with the reference (the first kernel measured gives it, and must give finite values), then
  /// returns the median device time of `repeats` calls. Never throws: a kernel that does not build,
  /// fails, or computes another C gets a failure instead of a time.
  GemmDeviceTiming measure(const LoweredFunc& func, int repeats = 5) {
    GemmDeviceTiming t;
    try {
      const Kernel kernel = build(func, Target::cuda());
      const std::vector<KernelArg> args = {on_device(a_, input_, shape_a_), on_device(b_, input_, shape_b_),
                                           on_device(c_, f32, shape_c_)};
      std::vector<float> c(c_elements_, std::numeric_limits<float>::quiet_NaN());
      driver_.check(driver_.memcpy_htod(c_, c.data(), sizeof(float) * c.size()), "copying C");
      kernel(args);
      driver_.check(driver_.memcpy_dtoh(c.data(), c_, sizeof(float) * c.size()), "copying C back");
      if (reference_.empty()) {
        if (!std::all_of(c.begin(), c.end(), [](float v) { return std::isfinite(v); })) {
          t.failure = "the reference (the first kernel measured) left C with values that are not finite";
          return t;
        }
        reference_ = std::move(c);
      } else {
        for (size_t i = 0; i < c.size(); ++i)
          if (!(c[i] == reference_[i])) {
            t.failure = cat("wrong result: C[", i / shape_c_[1], "][", i % shape_c_[1], "] = ", c[i],
                            " where the reference computes ", reference_[i]);
            return t;
          }
      }
      std::vector<double> times;
      for (int r = 0; r < std::max(repeats, 1); ++r) {
        kernel(args);
        times.push_back(kernel.last_device_ms());
      }
      std::sort(times.begin(), times.end());
      t.ms = times[times.size() / 2];
    } catch (const Error& e) {
      t.failure = e.what();
    }
    return t;
  }

 private:
  /// `count` values (i * 2654435761 + seed) mod 129 - 64, over 64, as `input_`, copied to the GPU.
  runtime::cuda::Driver::DevicePtr upload(int64_t count, uint32_t seed) {
    std::vector<float> values(static_cast<size_t>(count));
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<float>(static_cast<int>((i * 2654435761u + seed) % 129) - 64) / 64.0f;
    std::vector<unsigned char> bytes(values.size() * static_cast<size_t>(input_.bytes()));
    for (size_t i = 0; i < values.size(); ++i) {
      if (input_ == f32) {
        std::memcpy(&bytes[4 * i], &values[i], 4);
      } else {
        const uint16_t bits = input_ == f16 ? half(values[i]).bits : bfloat16(values[i]).bits;
        std::memcpy(&bytes[2 * i], &bits, 2);
      }
    }
    runtime::cuda::Driver::DevicePtr p = 0;
    driver_.check(driver_.mem_alloc(&p, bytes.size()), "cuMemAlloc of an operand");
    driver_.check(driver_.memcpy_htod(p, bytes.data(), bytes.size()), "copying an operand");
    return p;
  }

  static KernelArg on_device(runtime::cuda::Driver::DevicePtr p, DType dtype,
                             const std::vector<int64_t>& shape) {
    KernelArg arg(BufferView(reinterpret_cast<void*>(p), dtype, shape, {}));
    arg.device = ArgDevice{2, 0};  // kDLCUDA, device 0: used in place, not copied
    return arg;
  }

  const runtime::cuda::Driver& driver_;
  DType input_;
  std::vector<int64_t> shape_a_, shape_b_, shape_c_;
  size_t c_elements_ = 0;
  runtime::cuda::Driver::DevicePtr a_ = 0, b_ = 0, c_ = 0;
  std::vector<float> reference_;
};

/// What measure_ranked did: the device, the default's time, how many candidates it timed.
struct MeasuredRanking {
  std::string device;     // empty: nothing measured (no GPU of the architecture, or measure_top 0)
  double default_ms = 0;  // the default configuration's median device time
  std::string failure;    // why nothing was measured although a GPU was present
  int measured = 0;       // candidates timed
};

/// Measures, on the GPU present when it is one of `arch`, the default configuration (`default_func`:
/// the reference C) and the first `top` of `ranked` (fastest predicted first; `func_of(candidate)`
/// gives a candidate's kernel), setting each one's measured_ms or measure_failure, then orders
/// `ranked` by measured time, the measured ones first and the others after them in their predicted
/// order. With no GPU of `arch`, or `top` 0, changes nothing.
template <typename Candidate, typename FuncOf>
MeasuredRanking measure_ranked(int64_t m, int64_t n, int64_t k, DType input, Layout a_layout, Layout b_layout,
                               const std::string& arch, int top, const LoweredFunc& default_func,
                               std::vector<Candidate>& ranked, FuncOf&& func_of) {
  MeasuredRanking out;
  if (top <= 0) return out;
  out.device = gpu_present_for(arch);
  if (out.device.empty()) return out;
  try {
    GemmDeviceTimer timer(m, n, k, input, a_layout, b_layout);
    const GemmDeviceTiming reference = timer.measure(default_func);
    if (!reference.failure.empty()) {
      out.failure = cat("the default configuration could not be measured: ", reference.failure);
      return out;
    }
    out.default_ms = reference.ms;
    const size_t count = std::min(ranked.size(), static_cast<size_t>(top));
    for (size_t i = 0; i < count; ++i) {
      Candidate& c = ranked[i];
      LoweredFunc f;
      try {
        f = func_of(c);
      } catch (const Error& e) {
        c.measure_failure = e.what();
        continue;
      }
      const GemmDeviceTiming t = timer.measure(f);
      c.measured_ms = t.ms;
      c.measure_failure = t.failure;
      out.measured += t.failure.empty() ? 1 : 0;
    }
  } catch (const Error& e) {
    out.failure = e.what();  // the operands could not be allocated or copied
    return out;
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Candidate& a, const Candidate& b) {
    const bool a_timed = a.measured_ms > 0, b_timed = b.measured_ms > 0;
    if (a_timed != b_timed) return a_timed;
    return a_timed && a.measured_ms < b.measured_ms;
  });
  return out;
}

}  // namespace loom::lib::detail
