// exp, log, tanh, erf on float vectors, and on double vectors: Loom's inline
// polynomials (codegen/llvm/vector_math.hpp, vector_math_f64.hpp) against glibc's vector math library
// (libmvec's AVX-512 entry points, loaded with dlopen: the strongest peer on a Linux machine without
// MKL's VML) and against scalar libm in a loop. One thread each, 2^22 floats or 2^21 doubles; prints
// per function
//   loom-bench vector_math fn=exp dtype=f32 ... peer=glibc-<ver>-libmvec:avx512 peer_ms= ratio=
//   (ratio = peer time / Loom time), with the largest ulp error of each over a sample of every 257th
// float bit pattern (for double: 2^21 inputs spread over each function's interesting ranges, against
// long double references). LOOM_VECTOR_MATH_EXHAUSTIVE=1 checks Loom on every float, compiled for this CPU
// and for baseline x86-64 without FMA (libmvec stays on the sample): about 14 minutes on 2 cores.
#include <loom/loom.hpp>
#include <loom/tune/measure.hpp>

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace loom;

namespace {

struct MathFn {
  const char* name;
  Expr (*make)(Expr);
  double (*reference)(double);
  float (*scalar)(float);
  const char* libmvec_symbol;  // the AVX-512 variant, 16 floats in a zmm register
  float lo, hi;                // the timed inputs are uniform in [lo, hi]
};

const MathFn kFns[] = {
    {"exp", [](Expr x) { return loom::exp(x); }, [](double x) { return std::exp(x); },
     [](float x) { return ::expf(x); }, "_ZGVeN16v_expf", -80.0f, 80.0f},
    {"log", [](Expr x) { return loom::log(x); }, [](double x) { return std::log(x); },
     [](float x) { return ::logf(x); }, "_ZGVeN16v_logf", 1e-30f, 1e30f},
    {"tanh", [](Expr x) { return loom::tanh(x); }, [](double x) { return std::tanh(x); },
     [](float x) { return ::tanhf(x); }, "_ZGVeN16v_tanhf", -5.0f, 5.0f},
    {"erf", [](Expr x) { return loom::erf(x); }, [](double x) { return std::erf(x); },
     [](float x) { return ::erff(x); }, "_ZGVeN16v_erff", -4.0f, 4.0f},
};

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

/// |got - want| in units of the float spacing at want rounded to float (2^-149 below FLT_MIN).
double ulp_error(float got, double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  const float rounded = static_cast<float>(want);
  if (std::isinf(rounded)) return got == rounded ? 0 : INFINITY;
  const uint32_t exponent_bits = to_bits(rounded) & 0x7f800000u;
  const double ulp = exponent_bits == 0 ? 0x1p-149 : static_cast<double>(from_bits(exponent_bits)) * 0x1p-23;
  return std::fabs(static_cast<double>(got) - want) / ulp;
}

/// Fills y[0, count) with the function of x[0, count) (count is a multiple of 16).
using Compute = std::function<void(float* x, float* y, int64_t count)>;
struct UlpResult {
  double worst = 0;
  float at = 0;
};

/// The largest ulp error of each of `computes` over every `stride`-th float bit pattern, in chunks
/// of 2^24 whose double references are computed once for all of them, on every core.
std::vector<UlpResult> max_ulp(const MathFn& fn, uint64_t stride, const std::vector<Compute>& computes) {
  const int64_t chunk = int64_t{1} << 24;
  std::vector<float> x(chunk), y(chunk);
  std::vector<double> want(chunk);
  std::vector<UlpResult> results(computes.size());
  uint64_t next = 0;
  while (next < (uint64_t{1} << 32)) {
    int64_t count = 0;
    for (; count < chunk && next < (uint64_t{1} << 32); ++count, next += stride)
      x[count] = from_bits(static_cast<uint32_t>(next));
    const int64_t padded = (count + 15) / 16 * 16;
    std::fill(x.begin() + count, x.begin() + padded, 1.0f);
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t i = 0; i < count; ++i) want[i] = fn.reference(x[i]);
    for (size_t c = 0; c < computes.size(); ++c) {
      computes[c](x.data(), y.data(), padded);
      double worst = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static) reduction(max : worst)
#endif
      for (int64_t i = 0; i < count; ++i) worst = std::max(worst, ulp_error(y[i], want[i]));
      if (worst > results[c].worst) {
        results[c].worst = worst;
        for (int64_t i = 0; i < count; ++i)
          if (ulp_error(y[i], want[i]) == worst) {
            results[c].at = x[i];
            break;
          }
      }
    }
  }
  return results;
}

/// Elements per block in the in-cache timing (`cached_n`, `loom_cached_ms`, `peer_cached_ms`):
/// 256 KiB of floats in and 256 KiB out, which stay in L2 on current x86 cores; the double timing
/// takes half as many elements, the same bytes. The line's `ratio` is the peer's in-cache time over
/// Loom's, the math's own cost; `stream_ratio` compares the streaming times, which may both be the
/// memory's.
constexpr int64_t kCachedN = int64_t{1} << 16;

/// Best time of `n / block` calls of `one_block`: the in-cache timing of `n` elements.
double cached_ms(int64_t n, int64_t block, int rounds, const std::function<void()>& one_block) {
  return tune::best_ms(
      [&] {
        for (int64_t b = 0; b < n / block; ++b) one_block();
      },
      rounds);
}

/// Y = make(X) over n elements of `dtype`, in vectors of one 512-bit register (16 floats, 8 doubles)
/// with a scalar remainder.
Kernel build_elementwise(Expr (*make)(Expr), int64_t n, DType dtype, const Target& target,
                         const std::string& name) {
  Tensor X = placeholder({n}, dtype, "X");
  Tensor Y = compute(
      {n}, [&](Expr i) { return make(X(i)); }, "Y");
  Schedule s = create_schedule(Y);
  auto [outer, inner] = s[Y].split(Y.axis(0), 64 / dtype.bytes());
  s[Y].vectorize(inner);
  return build(s, {X, Y}, target, name);
}

Kernel build_fn(const MathFn& fn, int64_t n, const Target& target) {
  return build_elementwise(fn.make, n, f32, target, std::string("bench_") + fn.name);
}

#ifdef __AVX512F__
using VectorFn = __m512 (*)(__m512);
void run_libmvec(VectorFn f, const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) _mm512_storeu_ps(y + i, f(_mm512_loadu_ps(x + i)));
}
#endif

/// Double: the functions with polynomials, their long double references, and
/// libmvec's 8-lane AVX-512 variants.
struct MathFn64 {
  const char* name;
  Expr (*make)(Expr);
  long double (*reference)(long double);
  double (*scalar)(double);
  const char* libmvec_symbol;
};

const MathFn64 kFns64[] = {
    {"exp", [](Expr x) { return loom::exp(x); }, [](long double x) { return ::expl(x); },
     [](double x) { return std::exp(x); }, "_ZGVeN8v_exp"},
    {"log", [](Expr x) { return loom::log(x); }, [](long double x) { return ::logl(x); },
     [](double x) { return std::log(x); }, "_ZGVeN8v_log"},
    {"tanh", [](Expr x) { return loom::tanh(x); }, [](long double x) { return ::tanhl(x); },
     [](double x) { return std::tanh(x); }, "_ZGVeN8v_tanh"},
    {"erf", [](Expr x) { return loom::erf(x); }, [](long double x) { return ::erfl(x); },
     [](double x) { return std::erf(x); }, "_ZGVeN8v_erf"},
};

/// |got - want| in units of the double spacing at want rounded to double (2^-1074 below DBL_MIN).
double ulp_error64(double got, long double want) {
  if (std::isnan(want)) return std::isnan(got) ? 0 : INFINITY;
  const double rounded = static_cast<double>(want);
  if (std::isinf(rounded)) return got == rounded ? 0 : INFINITY;
  // The spacing in want's own binade (not in that of want rounded, which may be the next one up).
  const int exponent = want == 0 ? -1022 : std::max(static_cast<int>(std::ilogb(std::fabs(want))), -1022);
  return static_cast<double>(std::fabs(static_cast<long double>(got) - want) /
                             std::ldexp(1.0L, exponent - 52));
}

/// 2^21 inputs for `fn`: a third uniform over its range, a third over [-1, 1] (log: [0.5, 2]), a
/// third of magnitudes spread over decades (log: 1 + tiny, and every exponent).
std::vector<double> inputs64(const std::string& fn, int64_t n) {
  std::vector<double> x(n);
  uint64_t state = 12345;
  auto uniform = [&](double lo, double hi) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * static_cast<double>(state >> 11) * 0x1p-53;
  };
  for (int64_t i = 0; i < n; ++i) {
    const int part = static_cast<int>(i % 3);
    if (fn == "log") {
      x[i] = part == 0   ? std::pow(10.0, uniform(-307, 308))
             : part == 1 ? uniform(0.5, 2)
                         : 1 + std::ldexp(uniform(-1, 1), -static_cast<int>(uniform(0, 50)));
    } else {
      const double range = fn == "exp" ? 745 : fn == "erf" ? 6 : 20;
      x[i] = part == 0   ? uniform(-range, range)
             : part == 1 ? uniform(-1, 1)
                         : std::ldexp(uniform(-1, 1), -static_cast<int>(uniform(0, 60)));
    }
  }
  return x;
}

#ifdef __AVX512F__
using VectorFn64 = __m512d (*)(__m512d);
void run_libmvec64(VectorFn64 f, const double* x, double* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) _mm512_storeu_pd(y + i, f(_mm512_loadu_pd(x + i)));
}
#endif

/// The double functions: time and ulp error of Loom, scalar libm and libmvec on the same inputs.
void bench_f64(void* libmvec, const std::string& peer, bool quick, int rounds) {
  const int64_t n = quick ? int64_t{1} << 15 : int64_t{1} << 21;
  for (const MathFn64& fn : kFns64) {
    const std::vector<double> x = inputs64(fn.name, n);
    std::vector<double> y(n);
    std::vector<long double> want(n);
    for (int64_t i = 0; i < n; ++i) want[i] = fn.reference(x[i]);
    auto worst = [&](const std::vector<double>& got) {
      double w = 0;
      for (int64_t i = 0; i < n; ++i) w = std::max(w, ulp_error64(got[i], want[i]));
      return w;
    };
    auto build_f64 = [&](int64_t size) {
      return build_elementwise(fn.make, size, f64, Target::cpu(), std::string("bench_f64_") + fn.name);
    };
    Kernel loom = build_f64(n);
    Buffer<double> in({n}), out({n});
    std::memcpy(in.data(), x.data(), n * sizeof(double));
    const double loom_ms = tune::best_ms([&] { loom(in, out); }, rounds);
    const int64_t cached_n = std::min(kCachedN / 2, n);  // the same bytes as the float blocks
    Kernel loom_cached = build_f64(cached_n);
    const double loom_cached_ms = cached_ms(n, cached_n, rounds, [&] {
      loom_cached(BufferView(in.data(), f64, {cached_n}), BufferView(out.data(), f64, {cached_n}));
    });
    std::memcpy(y.data(), out.data(), n * sizeof(double));
    const double loom_ulp = worst(y);
    const double scalar_ms = tune::best_ms(
        [&] {
          for (int64_t i = 0; i < n; ++i) y[i] = fn.scalar(x[i]);
        },
        rounds);
    const double scalar_ulp = worst(y);
    std::printf(
        "loom-bench vector_math fn=%s dtype=f64 n=%lld threads=1 loom_ms=%.3f loom_gelems=%.3f "
        "loom_max_ulp=%.3f scalar_libm_ms=%.3f scalar_libm_max_ulp=%.3f scalar_ratio=%.3f cached_n=%lld "
        "loom_cached_ms=%.3f",
        fn.name, static_cast<long long>(n), loom_ms, n / loom_ms / 1e6, loom_ulp, scalar_ms, scalar_ulp,
        scalar_ms / loom_ms, static_cast<long long>(cached_n), loom_cached_ms);
#ifdef __AVX512F__
    if (auto f = libmvec ? reinterpret_cast<VectorFn64>(dlsym(libmvec, fn.libmvec_symbol)) : nullptr) {
      const double peer_ms = tune::best_ms([&] { run_libmvec64(f, x.data(), y.data(), n); }, rounds);
      const double peer_ulp = worst(y);
      const double peer_cached_ms =
          cached_ms(n, cached_n, rounds, [&] { run_libmvec64(f, x.data(), y.data(), cached_n); });
      std::printf(" peer=%s peer_ms=%.3f peer_max_ulp=%.3f stream_ratio=%.3f peer_cached_ms=%.3f ratio=%.3f",
                  peer.c_str(), peer_ms, peer_ulp, peer_ms / loom_ms, peer_cached_ms,
                  peer_cached_ms / loom_cached_ms);
    }
#endif
    std::printf("\n");
    std::fflush(stdout);
  }
}

}  // namespace

int main() {
  const bool quick = std::getenv("LOOM_BENCH_QUICK") != nullptr;
  const bool exhaustive = std::getenv("LOOM_VECTOR_MATH_EXHAUSTIVE") != nullptr;
  const int64_t n = quick ? int64_t{1} << 16 : int64_t{1} << 22;
  const int rounds = quick ? 3 : 15;
  const uint64_t stride = exhaustive ? 1 : quick ? 65537 : 257;
  void* libmvec = nullptr;
#ifdef __AVX512F__
  libmvec = dlopen("libmvec.so.1", RTLD_NOW);
#endif
  const std::string peer = std::string("glibc-") + gnu_get_libc_version() + "-libmvec:avx512";
  if (!libmvec) std::printf("vector_math: no libmvec peer (not loaded, or this build has no AVX-512)\n");

  std::vector<float> x(n), y(n);
  for (const MathFn& fn : kFns) {
    uint32_t state = 12345;
    for (float& v : x) {
      state = state * 1664525u + 1013904223u;
      const float u = static_cast<float>(state >> 8) / 16777216.0f;
      // log's inputs are spread over decades, the others uniformly.
      v = std::string(fn.name) == "log" ? std::pow(10.0f, -30.0f + 60.0f * u) : fn.lo + (fn.hi - fn.lo) * u;
    }
    Buffer<float> in({n}), out({n});
    std::memcpy(in.data(), x.data(), n * sizeof(float));
    Kernel loom = build_fn(fn, n, Target::cpu());
    const double loom_ms = tune::best_ms([&] { loom(in, out); }, rounds);
    const double scalar_ms = tune::best_ms(
        [&] {
          for (int64_t i = 0; i < n; ++i) y[i] = fn.scalar(x[i]);
        },
        rounds);
    // The same count of elements as kCachedN-element blocks that stay in L2, where the math's own
    // cost shows (the streaming time above can be the memory's: 32 MiB in and out).
    Kernel loom_cached = build_fn(fn, kCachedN, Target::cpu());
    const double loom_cached_ms = cached_ms(n, kCachedN, rounds, [&] {
      loom_cached(BufferView(in.data(), f32, {kCachedN}), BufferView(out.data(), f32, {kCachedN}));
    });

    Kernel loom_chunk = build_fn(fn, int64_t{1} << 24, Target::cpu());
    Kernel baseline_chunk = build_fn(fn, int64_t{1} << 24, Target::cpu("x86-64"));
    auto via = [](Kernel& k) {
      return [&k](float* px, float* py, int64_t count) {
        const int64_t size = int64_t{1} << 24;
        std::fill(px + count, px + size, 1.0f);
        k(BufferView(px, f32, {size}), BufferView(py, f32, {size}));
      };
    };
    std::vector<Compute> computes = {via(loom_chunk)};
    if (exhaustive) computes.push_back(via(baseline_chunk));
    const std::vector<UlpResult> ulp = max_ulp(fn, stride, computes);

    std::printf(
        "loom-bench vector_math fn=%s dtype=f32 n=%lld threads=1 inputs=[%g,%g] loom_ms=%.3f "
        "loom_gelems=%.3f "
        "loom_max_ulp=%.3f loom_max_ulp_at=%a",
        fn.name, static_cast<long long>(n), fn.lo, fn.hi, loom_ms, n / loom_ms / 1e6, ulp[0].worst,
        ulp[0].at);
    if (exhaustive) std::printf(" baseline_x86_64_max_ulp=%.3f at=%a", ulp[1].worst, ulp[1].at);
    std::printf(
        " loom_ulp_sample=every_%llu_bit_pattern scalar_libm_ms=%.3f scalar_ratio=%.3f cached_n=%lld "
        "loom_cached_ms=%.3f",
        static_cast<unsigned long long>(stride), scalar_ms, scalar_ms / loom_ms,
        static_cast<long long>(kCachedN), loom_cached_ms);
#ifdef __AVX512F__
    if (auto f = libmvec ? reinterpret_cast<VectorFn>(dlsym(libmvec, fn.libmvec_symbol)) : nullptr) {
      const double peer_ms = tune::best_ms([&] { run_libmvec(f, x.data(), y.data(), n); }, rounds);
      const double peer_cached_ms =
          cached_ms(n, kCachedN, rounds, [&] { run_libmvec(f, x.data(), y.data(), kCachedN); });
      // libmvec's error on the sample only, even in the exhaustive run (glibc documents its bounds).
      const double peer_ulp =
          max_ulp(fn, exhaustive ? 257 : stride,
                  {[f](float* px, float* py, int64_t count) { run_libmvec(f, px, py, count); }})[0]
              .worst;
      std::printf(" peer=%s peer_ms=%.3f peer_max_ulp=%.3f stream_ratio=%.3f peer_cached_ms=%.3f ratio=%.3f",
                  peer.c_str(), peer_ms, peer_ulp, peer_ms / loom_ms, peer_cached_ms,
                  peer_cached_ms / loom_cached_ms);
    }
#endif
    std::printf("\n");
    std::fflush(stdout);
  }
  bench_f64(libmvec, peer, quick, rounds);
  if (libmvec) dlclose(libmvec);
  return 0;
}
