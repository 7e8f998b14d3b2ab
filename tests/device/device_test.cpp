// The CUDA kernels of the test suite run on a real GPU (Target::cuda()) and compared with the
// reference interpreter: what the simulator cannot prove (real concurrency of blocks, the
// memory model of the grid flags, NVRTC's and the driver's behaviour). Built only with
// -DLOOM_BUILD_GPU_CHECK=ON and run by scripts/gpu-check.sh; without a GPU it says why and
// exits 0, so it never decides CI, which has no GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "../cuda/cuda_test_util.hpp"
#include "../cuda/mma_cases.hpp"

#include <loom/backend/cuda/driver.hpp>
#include <loom/lib/gemm_device_timer.hpp>
#include <loom/lib/gpu_gemm.hpp>
#include <loom/lib/gpu_gemm_tuning.hpp>
#include <loom/lib/gpu_tensorized_gemm.hpp>
#include <loom/lib/streamk_gemm.hpp>
#include <loom/lib/streamk_tuning.hpp>
#include <loom/tune/database.hpp>
#include <loom/tune/measure.hpp>

using namespace loom;
using namespace loom::cuda_test;

namespace {

/// The largest |x - y| / (1 + |y|) over the elements.
template <typename T, typename U>
double worst_error(const Buffer<T>& x, const Buffer<U>& y) {
  REQUIRE(x.num_elements() == y.num_elements());
  double worst = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double a = static_cast<double>(x.at_flat(i)), b = static_cast<double>(y.at_flat(i));
    worst = std::max(worst, std::isfinite(a) ? std::abs(a - b) / (1 + std::abs(b)) : 1e30);
  }
  return worst;
}

/// C = A B in double from the operands' values `a_at(i, p)` and `b_at(p, j)`, row-major m x n: the
/// reference of every GEMM here. B is transposed first and the rows are shared among the host's
/// threads: a plain triple loop down B's columns took seconds per shape, and the whole file
/// minutes.
template <typename FA, typename FB>
std::vector<double> reference_product(int64_t m, int64_t n, int64_t k, FA a_at, FB b_at) {
  std::vector<double> a(m * k), bt(n * k), c(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) a[i * k + p] = a_at(i, p);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j) bt[j * k + p] = b_at(p, j);
  const int64_t threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (int64_t i = t; i < m; i += threads)
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t p = 0; p < k; ++p) s += a[i * k + p] * bt[j * k + p];
          c[i * n + j] = s;
        }
    });
  for (std::thread& t : pool) t.join();
  return c;
}

/// C = A B of row-major buffers, accumulated in double: the reference for GEMMs at sizes where
/// running the same kernel through the simulator, or the interpreter's loop nest, would be too slow.
template <typename T>
void reference_gemm(const Buffer<T>& a, const Buffer<T>& b, Buffer<float>& c) {
  const int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  const std::vector<double> ref = reference_product(
      m, n, k, [&](int64_t i, int64_t p) { return static_cast<double>(a(i, p)); },
      [&](int64_t p, int64_t j) { return static_cast<double>(b(p, j)); });
  for (int64_t i = 0; i < m * n; ++i) c.at_flat(i) = static_cast<float>(ref[i]);
}

/// NaN in every element, so that one the kernel does not write fails the comparison.
void poison(Buffer<float>& c) {
  for (int64_t i = 0; i < c.num_elements(); ++i) c.at_flat(i) = std::numeric_limits<float>::quiet_NaN();
}

/// Runs a two-buffer case (in, out) on the GPU and through the interpreter.
template <typename T>
void check_unary(const Case& c, int64_t n, double tolerance) {
  Kernel f = build(c.s, c.args, Target::cuda(), c.name);
  Buffer<T> a({n}), out({n}), expected({n});
  for (int64_t i = 0; i < n; ++i) a.at_flat(i) = static_cast<T>(static_cast<double>(i % 97) - 40);
  f(a, out);
  interpret(lower(c.s, c.args, c.name + "_reference"), {a, expected});
  CHECK(worst_error(out, expected) <= tolerance);
}

template <typename T>
void check_gemm_case(const Case& c, int64_t n, double tolerance) {
  Kernel f = build(c.s, c.args, Target::cuda(), c.name);
  Buffer<T> a({n, n}), b({n, n});
  Buffer<float> out({n, n}), expected({n, n});
  fill(a, 1);
  fill(b, 2);
  f(a, b, out);
  interpret(lower(c.s, c.args, c.name + "_reference"), {a, b, expected});
  CHECK(worst_error(out, expected) <= tolerance);
}

/// A 2-d tensor in device memory of cuMemAlloc (so 256-byte aligned), as a kDLCUDA DLTensor.
struct DeviceTensor {
  const runtime::cuda::Driver& d;
  std::vector<int64_t> shape;
  int element_bits;
  runtime::cuda::Driver::DevicePtr ptr = 0;
  DLTensor t{};
  DeviceTensor(const runtime::cuda::Driver& drv, std::vector<int64_t> s, int bits = 32)
      : d(drv), shape(std::move(s)), element_bits(bits) {
    d.check(d.mem_alloc(&ptr, bytes() + 64), "cuMemAlloc");
    t.data = reinterpret_cast<void*>(ptr);
    t.device = DLDevice{kDLCUDA, 0};
    t.ndim = 2;
    t.shape = shape.data();
    t.dtype = DLDataType{kDLFloat, static_cast<uint8_t>(bits), 1};
  }
  DeviceTensor(const DeviceTensor&) = delete;
  ~DeviceTensor() { d.mem_free(ptr); }
  size_t bytes() const { return static_cast<size_t>(shape[0] * shape[1] * element_bits / 8); }
};

/// CUDA streams through the driver library itself: Loom's Driver loads only what Loom calls.
struct UserStream {
  using Create = int (*)(void**, unsigned);
  using Destroy = int (*)(void*);
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  void* stream = nullptr;
  Destroy destroy = nullptr;
  UserStream() {
    REQUIRE(lib != nullptr);
    auto create = reinterpret_cast<Create>(dlsym(lib, "cuStreamCreate"));
    destroy = reinterpret_cast<Destroy>(dlsym(lib, "cuStreamDestroy_v2"));
    REQUIRE((create && destroy));
    REQUIRE(create(&stream, 1 /* CU_STREAM_NON_BLOCKING */) == 0);
  }
  UserStream(const UserStream&) = delete;
  ~UserStream() {
    if (stream) destroy(stream);
    dlclose(lib);
  }
};

}  // namespace

TEST_CASE("device: elementwise kernels of several dtypes, a size that is not a multiple of 128") {
  check_unary<float>(elementwise(1000, f32), 1000, 0);
  check_unary<double>(elementwise(1000, f64), 1000, 0);
  check_unary<int32_t>(elementwise(1000, i32), 1000, 0);
  check_unary<half>(elementwise(1000, f16), 1000, 0);
}

TEST_CASE("device: tiled GEMM (shared tiles, local accumulator), f32 and f16 inputs") {
  check_gemm_case<float>(tiled_gemm(250), 250, 1e-4);
  check_gemm_case<half>(tiled_gemm(250, 16, f16), 250, 1e-3);
}

TEST_CASE("device: the vthread GEMM") { check_gemm_case<float>(vthread_gemm(100), 100, 1e-4); }

TEST_CASE("device: a cross-thread row sum (warp shuffles)") {
  const Case c = row_sum(300, 75);
  Kernel f = build(c.s, c.args, Target::cuda(), c.name);
  Buffer<float> a({300, 75}), out({300}), expected({300});
  fill(a, 3);
  f(a, out);
  interpret(lower(c.s, c.args, "row_sum_reference"), {a, expected});
  CHECK(worst_error(out, expected) <= 1e-5);
}

namespace {

/// The mma kernel for input type T on the GPU and in the simulator: the same C, bit for bit, with
/// small integers (exact in every order of f32 additions), and within f32 rounding on random data.
template <typename T>
void check_mma_case(DType in, FragmentLoad load) {
  CAPTURE(in.str());
  CAPTURE(static_cast<int>(load));
  const LoweredFunc f = mma_kernel(in, load);
  Kernel gpu = build(f, Target::cuda());
  const int k = in == f32 ? 8 : 16;
  for (int data = 0; data < 2; ++data) {
    Buffer<T> a({16, k}), b({k, 8});
    if (data == 0) {
      fill_small_integers(a, 1);
      fill_small_integers(b, 2);
    } else {
      fill(a, 5);
      fill(b, 6);
    }
    Buffer<float> on_gpu({16, 8}), simulated({16, 8}), reference({16, 8});
    poison(on_gpu);
    gpu(a, b, on_gpu);
    simulate(f, {a, b, simulated});
    mma_reference(a, b, reference);
    if (data == 0) {
      for (int64_t i = 0; i < on_gpu.num_elements(); ++i) CHECK(on_gpu.at_flat(i) == simulated.at_flat(i));
      CHECK(worst_error(on_gpu, reference) == 0);
    } else {
      CHECK(worst_error(on_gpu, simulated) <= 1e-6);
    }
  }
}

}  // namespace

TEST_CASE("device: mma.sync and ldmatrix fragments on the GPU are those the simulator models") {
  check_mma_case<half>(f16, FragmentLoad::Scalar);
  check_mma_case<bfloat16>(bf16, FragmentLoad::Scalar);
  check_mma_case<float>(f32, FragmentLoad::Scalar);
  check_mma_case<half>(f16, FragmentLoad::Ldmatrix);
  check_mma_case<bfloat16>(bf16, FragmentLoad::Ldmatrix);
  check_mma_case<float>(f32, FragmentLoad::Ldmatrix);  // ldmatrix of 32-bit data (tf32)
  // The wrong layout is wrong on the GPU too (the tables are what make the test fail).
  const LoweredFunc wrong = mma_kernel(f16, FragmentLoad::WrongLayout);
  Buffer<half> a({16, 16}), b({16, 8});
  fill_small_integers(a, 1);
  fill_small_integers(b, 2);
  Buffer<float> c({16, 8}), reference({16, 8});
  build(wrong, Target::cuda())(a, b, c);
  mma_reference(a, b, reference);
  CHECK(worst_error(c, reference) > 0);
}

namespace {

/// A tensor-core GEMM's kernel `func` (lib::gpu_gemm's, or lib::streamk_gemm's with tensor cores)
/// on the GPU (called twice: the second call reuses the loaded module and must not see the first's
/// Stream-K flags), A and B random and shaped as stored; the largest |C - ref| / (1 + |ref|), ref
/// in double from the values the tensor core reads (tensor_core_value).
template <typename T>
double tensor_core_error(const LoweredFunc& func, int64_t m, int64_t n, int64_t k, lib::Layout a_layout,
                         lib::Layout b_layout, lib::Layout c_layout, bool tf32_round) {
  Kernel f = build(func, Target::cuda());
  const bool a_row = a_layout == lib::Layout::RowMajor, b_row = b_layout == lib::Layout::RowMajor;
  Buffer<T> a(a_row ? std::vector<int64_t>{m, k} : std::vector<int64_t>{k, m});
  Buffer<T> b(b_row ? std::vector<int64_t>{k, n} : std::vector<int64_t>{n, k});
  fill(a, 7);
  fill(b, 8);
  const bool c_row = c_layout == lib::Layout::RowMajor;
  Buffer<float> c(c_row ? std::vector<int64_t>{m, n} : std::vector<int64_t>{n, m});
  const std::vector<double> ref = reference_product(
      m, n, k, [&](int64_t i, int64_t p) { return tensor_core_value(a_row ? a(i, p) : a(p, i), tf32_round); },
      [&](int64_t p, int64_t j) { return tensor_core_value(b_row ? b(p, j) : b(j, p), tf32_round); });
  double worst = 0;
  for (int call = 0; call < 2; ++call) {
    poison(c);
    f(a, b, c);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const double s = ref[i * n + j], got = c_row ? c(i, j) : c(j, i);
        worst = std::max(worst, std::isfinite(got) ? std::abs(got - s) / (1 + std::abs(s)) : 1e30);
      }
  }
  return worst;
}

/// tensor_core_error of lib::gpu_gemm's kernel g.
template <typename T>
double gpu_gemm_error(const lib::GpuGemm& g) {
  return tensor_core_error<T>(g.func, g.m, g.n, g.k, g.a_layout, g.b_layout, g.c_layout, g.config.tf32_round);
}

/// tensor_core_error of lib::streamk_gemm's kernel g (C row-major), for its input type.
double streamk_mma_error(const lib::StreamKGemm& g) {
  const lib::GemmShape& s = g.shape;
  const lib::Layout c = lib::Layout::RowMajor;
  const bool round = g.config.tensor_cores->tf32_round;
  if (g.input == f16) return tensor_core_error<half>(g.func, s.m, s.n, s.k, g.a_layout, g.b_layout, c, round);
  if (g.input == bf16)
    return tensor_core_error<bfloat16>(g.func, s.m, s.n, s.k, g.a_layout, g.b_layout, c, round);
  return tensor_core_error<float>(g.func, s.m, s.n, s.k, g.a_layout, g.b_layout, c, round);
}

}  // namespace

TEST_CASE("device: the tensor-core GEMM (lib::gpu_gemm), f16, bf16 and tf32, every layout, odd shapes") {
  using lib::Layout;
  constexpr Layout R = Layout::RowMajor, C = Layout::ColMajor;
  struct Shape {
    int64_t m, n, k;
    DType t;
    Layout a = Layout::RowMajor, b = Layout::RowMajor, c = Layout::RowMajor;
  };
  for (const Shape s :
       {Shape{129, 257, 65, f16}, Shape{1000, 999, 37, f16}, Shape{136, 264, 96, f16},
        Shape{1, 4096, 4096, f16}, Shape{1000, 1100, 776, bf16}, Shape{1024, 1024, 1024, f16},
        // Column-major operands: ldmatrix.trans for A, untransposed for B; element copies where
        // the contiguous dimension is odd.
        Shape{136, 264, 96, f16, C, R}, Shape{136, 264, 96, f16, R, C}, Shape{1000, 1100, 776, bf16, C, C},
        Shape{129, 257, 65, f16, C, C},
        // tf32: ldmatrix of 32-bit data where k is contiguous, 32-bit shared loads where it is not.
        Shape{129, 257, 65, f32}, Shape{136, 264, 96, f32}, Shape{1000, 1100, 776, f32, C, R},
        Shape{1000, 1100, 776, f32, R, C}, Shape{1024, 1024, 1024, f32, C, C}, Shape{131, 250, 70, f32, C, C},
        // C column-major, and one operand by cp.async with the other by element copies.
        Shape{136, 264, 96, f16, R, R, C}, Shape{131, 250, 70, f32, C, R, C}, Shape{136, 263, 96, f16},
        Shape{137, 264, 96, bf16, C, C}}) {
    const lib::GpuGemm g = lib::gpu_gemm(s.m, s.n, s.k, s.t, {}, s.a, s.b, s.c);
    CAPTURE(g.describe());
    const double error = s.t == f16    ? gpu_gemm_error<half>(g)
                         : s.t == bf16 ? gpu_gemm_error<bfloat16>(g)
                                       : gpu_gemm_error<float>(g);
    // The tensor core's f32 sums are not rounded like a scalar FMA chain: at K = 4096 the H200 is
    // 1.3e-4 from the double reference here (and bit-identical to cuBLAS's GemmEx, see the bench).
    CHECK(error <= 1e-3);
  }
  // tf32 truncated (tf32_round off), against a reference from truncated values: at K = 776 rounding
  // and truncation differ by about 3e-3 relative, so each kernel matches only its own reference.
  lib::GpuGemmConfig truncating;
  truncating.tf32_round = false;
  CHECK(gpu_gemm_error<float>(lib::gpu_gemm(1000, 1100, 776, f32, truncating)) <= 1e-3);
}

TEST_CASE("device: lib's GPU tuners measure their best predictions on the GPU and record the times") {
  const std::string arch = runtime::cuda::driver().arch();
  if (arch != "sm_80" && arch != "sm_90") {
    MESSAGE("the performance model knows sm_80 and sm_90 only; this GPU is " << arch);
    return;
  }
  char tmpl[] = "/tmp/loom-device-tune-XXXXXX";
  REQUIRE(::mkdtemp(tmpl) != nullptr);
  const std::string database = std::string(tmpl) + "/tuning.jsonl";
  lib::GpuGemmTuneOptions o;
  o.block_m = {64, 128};
  o.block_n = {128};
  o.block_k = {0, 32};
  o.warp_m = {64};
  o.warp_n = {64};
  o.stages = {2, 3};
  o.measure_top = 4;
  o.database = database;
  const lib::GpuGemmTuneResult r =
      lib::tune_gpu_gemm(1000, 1100, 776, f16, arch, lib::Layout::RowMajor, lib::Layout::RowMajor, o);
  CAPTURE(r.measure_failure);
  CHECK(!r.device.empty());
  CHECK(r.default_measured_ms > 0);
  CHECK(r.measured >= 1);
  for (const lib::GpuGemmTuneCandidate& c : r.candidates) {
    CAPTURE(c.config.str());
    CHECK(c.measure_failure.empty());  // every candidate computes the default's C bit for bit
  }
  int measured_records = 0;
  for (const tune::Record& rec : tune::Database(database).read())
    measured_records += rec.target == lib::measured_gpu_target(arch, r.device) ? 1 : 0;
  CHECK(measured_records == r.measured + 1);  // the candidates timed and the default
  // The tuned configuration's kernel is right, and a later lookup returns it.
  CHECK(gpu_gemm_error<half>(lib::gpu_gemm(1000, 1100, 776, f16, r.best)) <= 1e-3);
  CHECK(
      lib::tuned_gpu_gemm_config(1000, 1100, 776, f16, arch, lib::Layout::RowMajor, lib::Layout::RowMajor, o)
          .str() == r.best.str());

  // The measured candidates come first, fastest first; best is the fastest of them or the default.
  for (size_t i = 1; i < r.candidates.size(); ++i)
    if (r.candidates[i].measured_ms > 0) CHECK(r.candidates[i - 1].measured_ms > 0);
  for (size_t i = 1; i < static_cast<size_t>(r.measured); ++i)
    CHECK(r.candidates[i - 1].measured_ms <= r.candidates[i].measured_ms);
  CHECK((r.best.str() == r.candidates.front().config.str() ||
         r.default_measured_ms <= r.candidates.front().measured_ms));

  // Stream-K at a K whose split sums are exact only with the values' fewer bits (K = 16384), and at
  // an odd shape: every decomposition computes the default's C.
  for (const auto& [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{128, 128, 16384}, {1000, 1100, 776}}) {
    CAPTURE(m);
    CAPTURE(k);
    lib::StreamKTuneOptions so;
    so.measure_top = 6;
    so.database = database;
    const lib::StreamKTuneResult sk =
        lib::tune_streamk_gemm(m, n, k, f16, arch, lib::Layout::RowMajor, lib::Layout::RowMajor, so);
    CAPTURE(sk.measure_failure);
    CHECK(sk.device == r.device);
    CHECK(sk.default_measured_ms > 0);
    CHECK(sk.measured >= 1);
    for (const lib::StreamKTuneCandidate& c : sk.candidates) {
      CAPTURE(lib::decomposition_name(c.config.decomposition));
      CAPTURE(c.config.split_k);
      CHECK(c.measure_failure.empty());
    }
    const lib::StreamKConfig tuned =
        lib::tuned_streamk_config(m, n, k, f16, arch, lib::Layout::RowMajor, lib::Layout::RowMajor, so);
    CHECK(tuned.decomposition == sk.best.decomposition);
    CHECK(tuned.blocks_per_sm == sk.best.blocks_per_sm);
  }

  // The SIMT loop's tiles (f32, exact): every candidate timed computes the default's C, and the
  // tuned kernel is right.
  lib::StreamKTuneOptions simt;
  simt.main_loop = lib::StreamKMainLoop::Simt;
  simt.decompositions = {lib::Decomposition::DataParallel, lib::Decomposition::StreamKHybrid};
  simt.measure_top = 4;
  simt.database = database;
  const lib::StreamKTuneResult st =
      lib::tune_streamk_gemm(1000, 1100, 776, f32, arch, lib::Layout::RowMajor, lib::Layout::RowMajor, simt);
  CAPTURE(st.measure_failure);
  CHECK(st.default_measured_ms > 0);
  CHECK(st.measured >= 1);
  for (const lib::StreamKTuneCandidate& c : st.candidates) CHECK(c.measure_failure.empty());
  lib::StreamKConfig chosen = lib::tuned_streamk_config(1000, 1100, 776, f32, arch, lib::Layout::RowMajor,
                                                        lib::Layout::RowMajor, simt);
  CHECK_FALSE(chosen.tensor_cores);
  CHECK(chosen.tile.bm == st.best.tile.bm);
  CHECK(chosen.thread_n == st.best.thread_n);
  {
    Kernel f = build(lib::streamk_gemm(1000, 1100, 776, f32, chosen).func, Target::cuda());
    Buffer<float> a({1000, 776}), b({776, 1100}), c({1000, 1100}), expected({1000, 1100});
    fill(a, 41);
    fill(b, 42);
    reference_gemm(a, b, expected);
    poison(c);
    f(a, b, c);
    CHECK(worst_error(c, expected) <= 1e-4);
  }
  std::filesystem::remove_all(tmpl);
}

TEST_CASE("device tuning in workers: a process that has not loaded the driver measures in forked workers") {
  // gpu-check.sh runs this case alone (step device_tuning_in_workers); after the cases above, this
  // process has loaded the driver and the tuners measure in it instead.
  if (runtime::cuda::driver_loaded()) {
    MESSAGE(
        "skipped: an earlier case loaded the CUDA driver; run this case alone (-tc='device tuning in "
        "workers*')");
    return;
  }
  const std::string arch = !lib::detail::gpu_present_for("sm_90").empty()   ? "sm_90"
                           : !lib::detail::gpu_present_for("sm_80").empty() ? "sm_80"
                                                                            : "";
  if (arch.empty()) {
    MESSAGE("the performance model knows sm_80 and sm_90 only, and this GPU is neither");
    return;
  }
  lib::GpuGemmTuneOptions o;
  o.block_m = {64, 128};
  o.block_n = {128};
  o.warp_m = {64};
  o.warp_n = {64};
  o.stages = {2, 3};
  o.measure_top = 3;
  o.database = "off";
  const lib::GpuGemmTuneResult r =
      lib::tune_gpu_gemm(1000, 1100, 776, f16, arch, lib::Layout::RowMajor, lib::Layout::RowMajor, o);
  CAPTURE(r.measure_failure);
  CHECK(r.measured_in == "worker processes");
  CHECK(r.default_measured_ms > 0);
  CHECK(r.measured >= 1);
  for (const lib::GpuGemmTuneCandidate& c : r.candidates) CHECK(c.measure_failure.empty());
  lib::StreamKTuneOptions so;
  so.measure_top = 4;
  so.database = "off";
  const lib::StreamKTuneResult sk =
      lib::tune_streamk_gemm(1000, 1100, 776, f16, arch, lib::Layout::RowMajor, lib::Layout::RowMajor, so);
  CAPTURE(sk.measure_failure);
  CHECK(sk.measured_in == "worker processes");
  CHECK(sk.default_measured_ms > 0);
  CHECK(sk.measured >= 1);
  for (const lib::StreamKTuneCandidate& c : sk.candidates) CHECK(c.measure_failure.empty());
  CHECK(!runtime::cuda::driver_loaded());  // the tuners left this process's CUDA untouched
  // The chosen configuration's kernel is right here.
  CHECK(gpu_gemm_error<half>(lib::gpu_gemm(1000, 1100, 776, f16, r.best)) <= 1e-3);
}

TEST_CASE("device: the TE GEMM tensorized onto tensor cores (lib::gpu_tensorized_gemm)") {
  struct Shape {
    int m, n, k;
    DType t;
    lib::Layout b;
    int stages;
  };
  for (const Shape s : {Shape{256, 384, 160, f16, lib::Layout::RowMajor, 3},
                        Shape{1024, 1024, 1024, f16, lib::Layout::RowMajor, 3},
                        Shape{512, 256, 512, bf16, lib::Layout::ColMajor, 4},
                        Shape{256, 256, 256, f16, lib::Layout::ColMajor, 0},
                        Shape{512, 512, 256, f32, lib::Layout::RowMajor, 3},
                        Shape{256, 512, 512, f32, lib::Layout::ColMajor, 3}}) {
    const std::string what = cat(s.m, "x", s.n, "x", s.k, " ", s.t.str(), ", ", s.stages, " stages");
    CAPTURE(what);
    lib::TensorizedGemmConfig config;
    config.stages = s.stages;
    const lib::TensorizedGemm g =
        lib::gpu_tensorized_gemm(s.m, s.n, s.k, s.t, config, lib::Layout::RowMajor, s.b);
    Kernel f = build(g.schedule, {g.A, g.B, g.C}, Target::cuda(), "tensorized_gemm");
    const bool kn = s.b == lib::Layout::RowMajor;
    auto run = [&](auto zero) {
      using T = decltype(zero);
      Buffer<T> a({s.m, s.k}), b(kn ? std::vector<int64_t>{s.k, s.n} : std::vector<int64_t>{s.n, s.k});
      fill(a, 5);
      fill(b, 6);
      Buffer<float> c({s.m, s.n});
      poison(c);
      f(a, b, c);
      const std::vector<double> ref = reference_product(
          s.m, s.n, s.k, [&](int64_t i, int64_t p) { return tensor_core_value(a(i, p)); },
          [&](int64_t p, int64_t j) { return tensor_core_value(kn ? b(p, j) : b(j, p)); });
      double worst = 0;
      for (int64_t i = 0; i < int64_t{s.m} * s.n; ++i) {
        const double got = c.at_flat(i);
        worst = std::max(worst, std::isfinite(got) ? std::abs(got - ref[i]) / (1 + std::abs(ref[i])) : 1e30);
      }
      return worst;
    };
    const double error = s.t == f16 ? run(half()) : s.t == bf16 ? run(bfloat16()) : run(0.0f);
    CHECK(error <= 1e-3);
    MESSAGE("gpu_tensorized_gemm " << what << ": " << f.last_device_ms() << " ms");
  }
}

TEST_CASE("device: tf32 operands' low 13 mantissa bits are ignored, as the simulator models") {
  Buffer<float> a({16, 8}), b({8, 8}), c({16, 8});
  for (int64_t i = 0; i < a.num_elements(); ++i) a.at_flat(i) = (i / 8 == i % 8) ? 1.0f + 1.0f / 4096 : 0.0f;
  fill_small_integers(b, 3);
  build(mma_kernel(f32, FragmentLoad::Scalar), Target::cuda())(a, b, c);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t j = 0; j < 8; ++j) CHECK(c(i, j) == 2 * b(i, j));
}

TEST_CASE("device: cvt.rna.tf32.f32 gives the bits the simulator models") {
  const LoweredFunc f = tf32_round_kernel();
  const std::vector<Tf32RoundCase>& cases = tf32_round_cases();
  Buffer<float> a({128}), on_gpu({128});
  for (int64_t i = 0; i < 128; ++i) a.at_flat(i) = bits_float(cases[i % cases.size()].in);
  build(f, Target::cuda())(a, on_gpu);
  for (int64_t i = 0; i < 128; ++i) {
    CAPTURE(i);
    CHECK(float_bits(on_gpu.at_flat(i)) == cases[i % cases.size()].out);
  }
}

TEST_CASE("device: Stream-K GEMM, every decomposition, f32 and f16, the grid sized by the driver") {
  for (DType t : {f32, f16}) {
    for (lib::Decomposition d : {lib::Decomposition::DataParallel, lib::Decomposition::SplitK,
                                 lib::Decomposition::StreamK, lib::Decomposition::StreamKHybrid}) {
      lib::StreamKConfig cfg;
      cfg.decomposition = d;
      lib::StreamKGemm g = lib::streamk_gemm(1000, 1100, 777, t, cfg);
      CAPTURE(g.describe().substr(0, 200));
      CHECK(g.residency.source == "driver");
      Kernel f = build(g.func, Target::cuda());
      Buffer<float> expected({1000, 1100});
      auto run = [&](auto a, auto b) {
        fill(a, 11);
        fill(b, 12);
        reference_gemm(a, b, expected);
        for (int launch = 0; launch < 3; ++launch) {  // flags and partials must reset per launch
          CAPTURE(launch);
          Buffer<float> c({1000, 1100});
          poison(c);
          f(a, b, c);
          CHECK(worst_error(c, expected) <= 1e-4);
          CHECK(f.last_device_ms() > 0);  // CUDA events around the launches, not a host clock
        }
      };
      if (t == f32)
        run(Buffer<float>({1000, 777}), Buffer<float>({777, 1100}));
      else
        run(Buffer<half>({1000, 777}), Buffer<half>({777, 1100}));
    }
  }
}

TEST_CASE(
    "device: Stream-K GEMM on tensor cores, every decomposition, f16, bf16 and tf32, the grid by the "
    "driver") {
  using lib::Layout;
  for (lib::Decomposition d : {lib::Decomposition::DataParallel, lib::Decomposition::SplitK,
                               lib::Decomposition::StreamK, lib::Decomposition::StreamKHybrid}) {
    for (DType t : {f16, bf16, f32}) {
      lib::StreamKConfig cfg;
      cfg.tensor_cores = lib::GpuGemmConfig{};
      cfg.decomposition = d;
      // Odd K and N: element copies of B for 16-bit inputs; A column-major for bf16.
      const lib::StreamKGemm g =
          lib::streamk_gemm(1000, 1100, 777, t, cfg, t == bf16 ? Layout::ColMajor : Layout::RowMajor);
      CAPTURE(g.describe().substr(0, 300));
      CHECK(g.residency.source == "driver");
      CHECK(streamk_mma_error(g) <= 1e-3);
    }
  }
}

// The tensor-core Stream-K kernel at a size the sanitizer runs in seconds: 2 x 2 tiles of 128x128
// over a grid of hundreds of blocks, so that Stream-K splits every tile over several of them.
TEST_CASE("device: Stream-K GEMM on tensor cores at a small size") {
  for (lib::Decomposition d : {lib::Decomposition::SplitK, lib::Decomposition::StreamK}) {
    lib::StreamKConfig cfg;
    cfg.tensor_cores = lib::GpuGemmConfig{};
    cfg.decomposition = d;
    const lib::StreamKGemm g = lib::streamk_gemm(150, 136, 1000, f16, cfg);
    CAPTURE(g.describe().substr(0, 300));
    CHECK(g.plan.split_tiles() > 0);
    CHECK(streamk_mma_error(g) <= 1e-3);
  }
}

// The same kernels at a size the sanitizer runs in seconds (scripts/gpu-check.sh runs memcheck,
// racecheck and synccheck over this case and not the one above): few tiles on a grid of hundreds
// of blocks, so most blocks have a short Stream-K share or none.
TEST_CASE("device: Stream-K GEMM at a small size, all four decompositions") {
  for (lib::Decomposition d : {lib::Decomposition::DataParallel, lib::Decomposition::SplitK,
                               lib::Decomposition::StreamK, lib::Decomposition::StreamKHybrid}) {
    lib::StreamKConfig cfg;
    cfg.decomposition = d;
    lib::StreamKGemm g = lib::streamk_gemm(150, 133, 301, f32, cfg);
    CAPTURE(g.describe().substr(0, 200));
    Kernel f = build(g.func, Target::cuda());
    Buffer<float> a({150, 301}), b({301, 133}), c({150, 133}), expected({150, 133});
    fill(a, 21);
    fill(b, 22);
    reference_gemm(a, b, expected);
    for (int launch = 0; launch < 2; ++launch) {
      poison(c);
      f(a, b, c);
      CHECK(worst_error(c, expected) <= 1e-4);
    }
  }
}

// Arguments already on the GPU (kDLCUDA DLTensors) are used in place: A and B on the device, C on
// the device or on the host, in one call; the result matches the host-memory call.
TEST_CASE("device: Stream-K GEMM on device-resident DLTensors, and mixed with host buffers") {
  const runtime::cuda::Driver& d = runtime::cuda::driver();
  const int64_t m = 300, n = 260, k = 170;
  lib::StreamKGemm g = lib::streamk_gemm(m, n, k, f32);
  Kernel f = build(g.func, Target::cuda());
  Buffer<float> a({m, k}), b({k, n}), expected({m, n}), c({m, n});
  fill(a, 31);
  fill(b, 32);
  f(a, b, expected);  // host buffers, copied each way
  DeviceTensor da(d, {m, k}), db(d, {k, n}), dc(d, {m, n});
  d.check(d.memcpy_htod(da.ptr, a.data(), da.bytes()), "copying A");
  d.check(d.memcpy_htod(db.ptr, b.data(), db.bytes()), "copying B");
  poison(c);
  d.check(d.memcpy_htod(dc.ptr, c.data(), dc.bytes()), "poisoning C");
  f(&da.t, &db.t, &dc.t);
  d.check(d.memcpy_dtoh(c.data(), dc.ptr, dc.bytes()), "copying C back");
  CHECK(worst_error(c, expected) == 0);  // the same kernel on the same data: bit for bit
  poison(c);
  f(&da.t, b, c);  // A on the device, B and C on the host
  CHECK(worst_error(c, expected) == 0);
}

// Kernel::set_cuda_stream (proven against a stand-in driver in tests/fake_cuda): on a real GPU a
// call on a non-blocking stream of the user's gives the default stream's result bit for bit, with
// host buffers and with device tensors; and a device tensor that is not 16-byte aligned is refused
// by a kernel whose cp.async copies assume it (E-ARG-ALIGNMENT), before anything runs.
TEST_CASE("device: a user's stream, and device memory the kernel's 16-byte copies cannot use") {
  const runtime::cuda::Driver& d = runtime::cuda::driver();
  const int64_t m = 200, n = 136, k = 72;  // cp.async: K and N multiples of 8
  lib::GpuGemm g = lib::gpu_gemm(m, n, k, f16);
  REQUIRE((g.a_copy_bytes == 16 && g.b_copy_bytes == 16));
  Kernel f = build(g.func, Target::cuda());
  Buffer<half> a({m, k}), b({k, n});
  fill(a, 41);
  fill(b, 42);
  Buffer<float> expected({m, n}), c({m, n});
  f(a, b, expected);
  UserStream user;
  f.set_cuda_stream(user.stream);
  poison(c);
  f(a, b, c);
  CHECK(worst_error(c, expected) == 0);
  DeviceTensor da(d, {m, k}, 16), db(d, {k, n}, 16), dc(d, {m, n});
  d.check(d.memcpy_htod(da.ptr, a.data(), da.bytes()), "copying A");
  d.check(d.memcpy_htod(db.ptr, b.data(), db.bytes()), "copying B");
  poison(c);
  d.check(d.memcpy_htod(dc.ptr, c.data(), dc.bytes()), "poisoning C");
  f(&da.t, &db.t, &dc.t);
  d.check(d.memcpy_dtoh(c.data(), dc.ptr, dc.bytes()), "copying C back");
  CHECK(worst_error(c, expected) == 0);
  f.set_cuda_stream(nullptr);
  DLTensor shifted = da.t;
  shifted.byte_offset = 2;  // one half further: aligned for a half, not for 16-byte copies
  CHECK_THROWS_WITH_AS(f(&shifted, &db.t, &dc.t), doctest::Contains("which is not aligned to 16 bytes"),
                       ArgumentError);
}

int main(int argc, char** argv) {
  // The GPU is looked for in a forked process, so that this one has not loaded the driver when its
  // first case runs ("device tuning in workers" needs that; the other cases load it).
  const tune::WorkerResult probe = tune::run_in_worker(
      [] {
        if (!runtime::cuda::driver_available()) return "!" + runtime::cuda::detail::driver_load().error;
        const runtime::cuda::Driver& d = runtime::cuda::driver();
        return d.arch() + " with " + std::to_string(d.multiprocessors) + " SMs";
      },
      120);
  if (probe.status != tune::WorkerResult::Status::Finished || probe.output.rfind('!', 0) == 0) {
    std::printf("loom device tests: no GPU here (%s); nothing to check\n",
                probe.output.empty() ? probe.detail.c_str() : probe.output.c_str() + 1);
    return 0;
  }
  // Line-buffered even into a log file, so that a step stopped by a timeout shows where it was.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  std::printf("loom device tests on %s\n", probe.output.c_str());
  doctest::Context context(argc, argv);
  return context.run();
}
