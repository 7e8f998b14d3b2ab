// Loom's GPU GEMMs on a real GPU against cuBLAS (scripts/gpu-check.sh runs it): the tensor-core
// GEMM (lib::gpu_gemm, f16 and tf32 inputs, row- and column-major A and B), the same main loop under
// Stream-K (lib::streamk_gemm with tensor cores, f16), the TE GEMM tensorized onto tensor cores
// (lib::gpu_tensorized_gemm, f16), the SIMT Stream-K GEMM (hybrid, and data-parallel with the same
// tile, grid sized by the driver's occupancy) and the shared-memory tiled GEMM, f32 and f16 inputs,
// square and skinny shapes (LOOM_GPU_GEMM_SWEEP=1: a sweep of mid-size f32 shapes over every
// decomposition, with the occupancy grid and one block per SM; LOOM_GPU_GEMM_ONLY=f16, tf32 or
// layouts: only the f16, the tf32 or the column-major tensor-core shapes; tc_sweep: tile choices;
// tuned: the tiles lib::tune_gpu_gemm chooses (the model's best predictions, timed on the GPU)
// against the default; streamk_tuned: tensor-core Stream-K's decomposition and grid tuned the same
// way against the default; streamk_simt_tuned: the SIMT Stream-K kernel's tile, decomposition and
// grid tuned the same way, f32, against its default; profile: lib::gpu_gemm at 4096^3 f16 alone,
// for a profiler). Prints
//   loom-bench gpu_mma_peak dtype=f16 device= ... tflops= peak_dense_tflops= ratio=<of that peak>
// first: what mma.sync m16n8k16 (Loom's warp intrinsic) reaches when nothing but it runs, the
// ceiling of a GEMM built on it; then
//   loom-bench gpu_gemm kernel=<name> dtype= m= n= k= layout=<A><B> (r/c: row-/column-major)
//     device=<sm_XY> peer=cublas-<version>:<routine>
//     loom_kernel_ms= peer_kernel_ms= loom_call_ms= loom_resident_call_ms= tflops= max_rel_err=
//     [peer_tf32_kernel_ms= ratio_tf32=] ratio=<peer/loom kernel>
// The peers: for f32, cublasSgemm in its default FP32 arithmetic (and, beside it, with TF32 tensor
// cores allowed); for f16, cublasGemmEx with f16 inputs and f32 accumulation and output (tensor
// cores); for lib::gpu_gemm on f32 inputs (tf32 tensor cores), cublasSgemm with TF32 tensor cores
// allowed (CUBLAS_TF32_TENSOR_OP_MATH). Column-major operands are passed to cuBLAS transposed
// (CUBLAS_OP_T), so that it computes the same product from the same memory. The kernel times are GPU time
// from CUDA events, the median of several runs: for Loom, Kernel::last_device_ms() (the launches of one call,
// without the copies of A, B and C that every call on host Buffers makes); for cuBLAS, one call on
// device-resident data. loom_call_ms is the whole call on host Buffers with their copies,
// loom_resident_call_ms the whole call on device-resident DLTensors (kDLCUDA, used in place), both by the
// host clock. max_rel_err compares Loom's C with the peer's (FP32 sgemm; TF32 sgemm for tf32; GemmEx for
// f16), relative to the largest |C|. Without a GPU or without cuBLAS it says so and exits 0.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <loom/backend/cuda/driver.hpp>
#include <loom/lib/gpu_gemm.hpp>
#include <loom/lib/gpu_gemm_tuning.hpp>
#include <loom/lib/gpu_tensorized_gemm.hpp>
#include <loom/lib/gpu_tiled_gemm.hpp>
#include <loom/lib/streamk_gemm.hpp>
#include <loom/lib/streamk_tuning.hpp>
#include <loom/loom.hpp>
#include <loom/te/ptx_intrinsics.hpp>

using namespace loom;
using Clock = std::chrono::steady_clock;

namespace {

/// The few cuBLAS entry points the bench calls, loaded with dlopen (no toolkit headers needed).
struct Cublas {
  using Handle = void*;
  int (*create)(Handle*) = nullptr;
  int (*destroy)(Handle) = nullptr;
  int (*version)(Handle, int*) = nullptr;
  int (*sgemm)(Handle, int, int, int, int, int, const float*, const float*, int, const float*, int,
               const float*, float*, int) = nullptr;
  int (*set_math_mode)(Handle, int) = nullptr;
  int (*gemm_ex)(Handle, int, int, int, int, int, const void*, const void*, int, int, const void*, int, int,
                 const void*, void*, int, int, int, int) = nullptr;
  // cublas_api.h's and library_types.h's enumerators that the bench passes.
  static constexpr int kDefaultMath = 0, kTf32TensorOpMath = 3;
  static constexpr int kR32F = 0, kR16F = 2, kCompute32F = 68, kGemmDefault = -1;
  static constexpr int kOpN = 0, kOpT = 1;
  Handle handle = nullptr;
  int version_number = 0;

  bool load(std::string& why) {
    void* lib = nullptr;
    for (const char* name :
         {"libcublas.so", "libcublas.so.13", "libcublas.so.12", "/usr/local/cuda/lib64/libcublas.so"})
      if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
    if (!lib) {
      why = "libcublas.so not found (install the CUDA toolkit's cuBLAS or put it on LD_LIBRARY_PATH)";
      return false;
    }
    create = reinterpret_cast<decltype(create)>(dlsym(lib, "cublasCreate_v2"));
    destroy = reinterpret_cast<decltype(destroy)>(dlsym(lib, "cublasDestroy_v2"));
    version = reinterpret_cast<decltype(version)>(dlsym(lib, "cublasGetVersion_v2"));
    sgemm = reinterpret_cast<decltype(sgemm)>(dlsym(lib, "cublasSgemm_v2"));
    set_math_mode = reinterpret_cast<decltype(set_math_mode)>(dlsym(lib, "cublasSetMathMode"));
    gemm_ex = reinterpret_cast<decltype(gemm_ex)>(dlsym(lib, "cublasGemmEx"));
    if (!create || !destroy || !version || !sgemm || !set_math_mode || !gemm_ex || create(&handle) != 0) {
      why = "cuBLAS could not be initialised";
      return false;
    }
    version(handle, &version_number);
    return true;
  }
};

std::string fixed3(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", v);
  return text;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

constexpr int kRepeats = 7;

template <typename T>
void fill(Buffer<T>& b, unsigned seed) {
  for (int64_t i = 0; i < b.num_elements(); ++i)
    b.at_flat(i) = static_cast<T>(static_cast<float>((i * 2654435761u + seed) % 1000) / 1000.0f - 0.5f);
}

/// The median GPU time of `run` (CUDA events) over kRepeats runs after a warm-up.
template <typename F>
double event_median_ms(const runtime::cuda::Driver& d, F&& run, const char* what) {
  std::vector<double> times;
  for (int r = 0; r <= kRepeats; ++r) {
    runtime::cuda::DeviceTimer timer(d);
    if (run() != 0) throw Error(cat(what, " failed"));
    const std::optional<double> ms = timer.elapsed_ms();
    if (!ms) throw Error(cat("timing ", what, " with CUDA events failed"));
    if (r > 0) times.push_back(*ms);
  }
  return median(times);
}

/// One Loom GEMM to time: a Stream-K decomposition and grid, the tiled GEMM, lib::gpu_gemm or the
/// tensorized TE GEMM.
struct Variant {
  lib::Decomposition decomposition = lib::Decomposition::StreamKHybrid;
  int blocks_per_sm = 0;  // 0: the driver's occupancy
  bool tiled = false;
  bool tensor_cores = false;          // lib::gpu_gemm (mma.sync, ldmatrix, cp.async): f16, or f32 as tf32
  lib::GpuGemmConfig tc{};            // its tiles and stages
  bool streamk_tensor_cores = false;  // lib::streamk_gemm on gpu_gemm's main loop (tc's tiles)
  bool tensorized = false;            // lib::gpu_tensorized_gemm: the TE GEMM tensorized (row-major)
  int split_k = 0;                    // for split-K: the parts of each tile's K range (0: automatic)
  std::optional<lib::StreamKSimtTile> simt_tile =
      std::nullopt;  // the SIMT Stream-K kernel's tile (unset: the default)
};

/// C (m x n) = A B, A and B stored as `a` and `b` say (column-major: lib::gpu_gemm only).
struct Shape {
  int64_t m, n, k;
  lib::Layout a = lib::Layout::RowMajor, b = lib::Layout::RowMajor;
};

/// Times cuBLAS and each variant on one shape, inputs of type T (float or half), C in f32; prints
/// one loom-bench line per variant. The peer for f32 is cublasSgemm (FP32 arithmetic), the TF32
/// tensor-core sgemm printed beside it; for lib::gpu_gemm on f32 (tf32) the TF32 sgemm is the peer.
/// For f16 it is cublasGemmEx (f16 in, f32 accumulate and out: tensor cores).
template <typename T>
void bench_shape(const runtime::cuda::Driver& d, Cublas& cublas, const Shape s,
                 const std::vector<Variant>& variants) {
  constexpr bool is_f16 = std::is_same_v<T, half>;
  const DType input = is_f16 ? f16 : f32;
  const bool a_row = s.a == lib::Layout::RowMajor, b_row = s.b == lib::Layout::RowMajor;
  std::vector<int64_t> shape_a = a_row ? std::vector<int64_t>{s.m, s.k} : std::vector<int64_t>{s.k, s.m};
  std::vector<int64_t> shape_b = b_row ? std::vector<int64_t>{s.k, s.n} : std::vector<int64_t>{s.n, s.k};
  std::vector<int64_t> shape_c{s.m, s.n};
  Buffer<T> a(shape_a), b(shape_b);
  Buffer<float> c({s.m, s.n});
  fill(a, 1);
  fill(b, 2);
  // cuBLAS on device-resident copies: row-major C = A B is column-major C^T = B^T A^T. A row-major
  // operand read column-major is its transpose, as the formula needs; a column-major one is passed
  // with CUBLAS_OP_T.
  runtime::cuda::Driver::DevicePtr da = 0, db = 0, dc = 0;
  const size_t bytes_a = sizeof(T) * a.num_elements(), bytes_b = sizeof(T) * b.num_elements(),
               bytes_c = sizeof(float) * c.num_elements();
  d.check(d.mem_alloc(&da, bytes_a), "cuMemAlloc");
  d.check(d.mem_alloc(&db, bytes_b), "cuMemAlloc");
  d.check(d.mem_alloc(&dc, bytes_c), "cuMemAlloc");
  const float one = 1, zero = 0;
  d.check(d.memcpy_htod(da, a.data(), bytes_a), "copying A");
  d.check(d.memcpy_htod(db, b.data(), bytes_b), "copying B");
  const int m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  const int op_a = a_row ? Cublas::kOpN : Cublas::kOpT, op_b = b_row ? Cublas::kOpN : Cublas::kOpT;
  const int lda = a_row ? k : m, ldb = b_row ? n : k;
  const auto* pa = reinterpret_cast<const void*>(da);
  const auto* pb = reinterpret_cast<const void*>(db);
  auto* pc = reinterpret_cast<void*>(dc);
  double peer_kernel_ms = 0, tf32_kernel_ms = 0;
  std::string peer;
  Buffer<float> expected({s.m, s.n}), expected_tf32({s.m, s.n});
  if constexpr (is_f16) {
    peer = cat("cublas-", cublas.version_number, ":gemmex_f16_f32acc");
    peer_kernel_ms = event_median_ms(
        d,
        [&] {
          return cublas.gemm_ex(cublas.handle, op_b, op_a, n, m, k, &one, pb, Cublas::kR16F, ldb, pa,
                                Cublas::kR16F, lda, &zero, pc, Cublas::kR32F, n, Cublas::kCompute32F,
                                Cublas::kGemmDefault);
        },
        "cublasGemmEx");
  } else {
    peer = cat("cublas-", cublas.version_number, ":sgemm");
    auto sgemm = [&] {
      return cublas.sgemm(cublas.handle, op_b, op_a, n, m, k, &one, static_cast<const float*>(pb), ldb,
                          static_cast<const float*>(pa), lda, &zero, static_cast<float*>(pc), n);
    };
    cublas.set_math_mode(cublas.handle, Cublas::kTf32TensorOpMath);
    tf32_kernel_ms = event_median_ms(d, sgemm, "cublasSgemm (TF32)");
    d.check(d.memcpy_dtoh(expected_tf32.data(), dc, bytes_c), "copying cuBLAS's TF32 C");
    cublas.set_math_mode(cublas.handle, Cublas::kDefaultMath);
    peer_kernel_ms = event_median_ms(d, sgemm, "cublasSgemm");  // last: C holds the FP32 result
  }
  d.check(d.memcpy_dtoh(expected.data(), dc, bytes_c), "copying cuBLAS's C");
  // The same device memory as DLTensors, for Loom calls without copies.
  auto on_device = [](runtime::cuda::Driver::DevicePtr ptr, std::vector<int64_t>& shape) {
    DLTensor t{};
    t.data = reinterpret_cast<void*>(ptr);
    t.device = DLDevice{kDLCUDA, 0};
    t.ndim = 2;
    t.shape = shape.data();
    t.dtype = DLDataType{kDLFloat, 32, 1};
    return t;
  };
  DLTensor ta = on_device(da, shape_a), tb = on_device(db, shape_b), tc = on_device(dc, shape_c);
  ta.dtype = tb.dtype = DLDataType{kDLFloat, static_cast<uint8_t>(8 * sizeof(T)), 1};

  for (const Variant& v : variants) {
    Kernel f;
    std::string name;
    if (!v.tensor_cores && (!a_row || !b_row))
      throw Error("bench_gpu_gemm: column-major operands are for lib::gpu_gemm variants only");
    if (v.tensor_cores) {
      lib::GpuGemm g = lib::gpu_gemm(s.m, s.n, s.k, input, v.tc, s.a, s.b);
      f = build(g.func, Target::cuda());
      name = cat("gpu_gemm_", g.config.block_m, "x", g.config.block_n, "x", g.config.block_k, "_warp",
                 g.config.warp_m, "x", g.config.warp_n, "_", g.config.stages, "stage",
                 g.a_copy_bytes == 16 && g.b_copy_bytes == 16
                     ? std::string("_cp_async")
                     : cat("_copies_A", g.a_copy_bytes, "_B", g.b_copy_bytes),
                 is_f16 || g.config.tf32_round ? "" : "_tf32_truncated");
    } else if (v.tensorized) {
      const lib::TensorizedGemmConfig config;
      const lib::TensorizedGemm t = lib::gpu_tensorized_gemm(static_cast<int>(s.m), static_cast<int>(s.n),
                                                             static_cast<int>(s.k), input, config);
      f = build(t.schedule, {t.A, t.B, t.C}, Target::cuda(), "tensorized_gemm");
      name = cat("tensorized_", config.block_m, "x", config.block_n, "_warp", config.warp_m, "x",
                 config.warp_n, "_", config.stages, "stage");
    } else if (v.tiled) {
      lib::TiledGemm t = lib::gpu_tiled_gemm(static_cast<int>(s.n), 16, input);
      f = build(t.schedule, {t.A, t.B, t.C}, Target::cuda(), "tiled_gemm");
      name = "tiled_16";
    } else {
      lib::StreamKConfig config;
      config.decomposition = v.decomposition;
      config.blocks_per_sm = v.blocks_per_sm;
      config.split_k = v.split_k;
      if (v.streamk_tensor_cores) config.tensor_cores = v.tc;
      if (v.simt_tile) {
        config.tile = v.simt_tile->tile;
        config.thread_m = v.simt_tile->thread_m;
        config.thread_n = v.simt_tile->thread_n;
      }
      lib::StreamKGemm g = lib::streamk_gemm(s.m, s.n, s.k, input, config);
      f = build(g.func, Target::cuda());
      name = cat("streamk_", v.streamk_tensor_cores ? "mma_" : "",
                 v.simt_tile ? cat(config.tile.bm, "x", config.tile.bn, "x", config.tile.bk, "_",
                                   config.thread_m, "x", config.thread_n, "_")
                             : "",
                 lib::decomposition_name(v.decomposition),
                 v.decomposition == lib::Decomposition::SplitK ? cat("_", v.split_k) : "", "_", g.config.sms,
                 "x", g.config.blocks_per_sm, "_", g.residency.source);
      for (char& ch : name)
        if (ch == ' ') ch = '_';
    }
    std::vector<double> kernel_times, call_times;
    for (int r = 0; r <= kRepeats; ++r) {
      for (int64_t i = 0; i < c.num_elements(); ++i) c.at_flat(i) = std::nanf("");
      const auto start = Clock::now();
      f(a, b, c);
      const double call_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (r == 0) continue;  // warm-up: module load, first touch
      kernel_times.push_back(f.last_device_ms());
      call_times.push_back(call_ms);
    }
    // lib::gpu_gemm on f32 inputs is a tf32 GEMM: its peer is cuBLAS's TF32 sgemm.
    const bool tf32_peer = v.tensor_cores && !is_f16;
    const Buffer<float>& peer_c = tf32_peer ? expected_tf32 : expected;
    double max_rel = 0, scale = 0;
    for (int64_t i = 0; i < c.num_elements(); ++i)
      scale = std::max<double>(scale, std::fabs(peer_c.at_flat(i)));
    for (int64_t i = 0; i < c.num_elements(); ++i) {
      const double diff = std::fabs(static_cast<double>(c.at_flat(i)) - peer_c.at_flat(i));
      max_rel = std::isnan(diff) ? INFINITY : std::max(max_rel, diff / std::max(scale, 1e-30));
    }
    std::vector<double> resident_times;
    for (int r = 0; r <= kRepeats; ++r) {
      const auto start = Clock::now();
      f(&ta, &tb, &tc);
      if (r > 0)
        resident_times.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    }
    const double ms = median(kernel_times);
    const std::string tf32 = is_f16 || tf32_peer ? ""
                                                 : cat(" peer_tf32_kernel_ms=", fixed3(tf32_kernel_ms),
                                                       " ratio_tf32=", fixed3(tf32_kernel_ms / ms));
    const double peer_ms = tf32_peer ? tf32_kernel_ms : peer_kernel_ms;
    const std::string peer_name = tf32_peer ? cat("cublas-", cublas.version_number, ":sgemm_tf32") : peer;
    std::printf(
        "loom-bench gpu_gemm kernel=%s dtype=%s m=%lld n=%lld k=%lld layout=%c%c device=%s peer=%s "
        "loom_kernel_ms=%.3f peer_kernel_ms=%.3f loom_call_ms=%.3f loom_resident_call_ms=%.3f tflops=%.2f "
        "max_rel_err=%.1e%s ratio=%.3f\n",
        name.c_str(), tf32_peer ? "tf32" : input.str().c_str(), static_cast<long long>(s.m),
        static_cast<long long>(s.n), static_cast<long long>(s.k), a_row ? 'r' : 'c', b_row ? 'r' : 'c',
        d.arch().c_str(), peer_name.c_str(), ms, peer_ms, median(call_times), median(resident_times),
        2.0 * s.m * s.n * s.k / (ms * 1e9), max_rel, tf32.c_str(), peer_ms / ms);
    std::fflush(stdout);
  }
  d.mem_free(da);
  d.mem_free(db);
  d.mem_free(dc);
}

/// Tensor-core throughput of mma.sync m16n8k16 f16 -> f32 through Loom's warp intrinsic: every
/// warp of 8 blocks per SM issues `iters` x 4 independent mma on register fragments. The peak it
/// is compared with is the dense f16 tensor rate: SMs x the maximum SM clock x flops per clock
/// and SM (4096 on sm_90, 2048 on sm_80 and sm_86/89 data-center parts: the published H100/A100
/// figures divided by their SMs and boost clocks).
void bench_mma_peak(const runtime::cuda::Driver& d) {
  const int iters = 4096, threads = 128, blocks = d.multiprocessors * 8;
  Var bx("bx", i32), tx("tx", i32), it("it", i32), j("j", i32), out("out", handle_type);
  Var af("a_frag", handle_type), bf("b_frag", handle_type), acc("acc", handle_type);
  std::vector<Stmt> body;
  for (int i = 0; i < 8; ++i)
    body.push_back(StoreNode::make(af, cast(f16, cast(f32, tx % 7 + i) * make_const(f32, 0.0625)), Expr(i)));
  for (int i = 0; i < 4; ++i) body.push_back(StoreNode::make(bf, make_const(f16, 0.001), Expr(i)));
  for (int i = 0; i < 16; ++i) body.push_back(StoreNode::make(acc, make_const(f32, 0.0), Expr(i)));
  Stmt mma = warp_intrinsic_call(
      ptx::mma_f16, {{acc, f32, j * 4}, {af, f16, Expr(0)}, {bf, f16, Expr(0)}, {acc, f32, j * 4}});
  mma = ForNode::make(j, 0, 4, ForKind::Unrolled, mma);
  body.push_back(ForNode::make(it, 0, iters, ForKind::Serial, mma));
  body.push_back(StoreNode::make(out,
                                 LoadNode::make(f32, acc, Expr(0)) + LoadNode::make(f32, acc, Expr(5)) +
                                     LoadNode::make(f32, acc, Expr(10)) + LoadNode::make(f32, acc, Expr(15)),
                                 bx * threads + tx));
  Stmt k = SeqNode::make(body);
  k = AllocateNode::make(acc, f32, {Expr(16)}, scope::local, k);
  k = AllocateNode::make(bf, f16, {Expr(4)}, scope::local, k);
  k = AllocateNode::make(af, f16, {Expr(8)}, scope::local, k);
  k = ForNode::make(tx, 0, threads, ForKind::ThreadBinding, k, thread_tag::threadIdx_x);
  k = ForNode::make(bx, 0, blocks, ForKind::ThreadBinding, k, thread_tag::blockIdx_x);
  LoweredFunc f;
  f.name = "mma_peak";
  FuncParam p;
  p.buffer = BufferParam{"out", out, f32, {Expr(blocks * threads)}, {Expr(1)}};
  f.params.push_back(p);
  f.body = k;
  Kernel kernel = build(lower_from(std::move(f), Phase::Loops), Target::cuda());
  Buffer<float> o({static_cast<int64_t>(blocks) * threads});
  std::vector<double> times;
  for (int r = 0; r <= kRepeats; ++r) {
    kernel(o);
    if (r > 0) times.push_back(kernel.last_device_ms());
  }
  const double ms = median(times);
  const double flops = 2.0 * 16 * 8 * 16 * 4 * iters * (threads / 32) * blocks;
  int clock_khz = 0;
  d.device_get_attribute(&clock_khz, 13 /* CU_DEVICE_ATTRIBUTE_CLOCK_RATE */, d.device);
  const int per_sm_clock = d.cc_major >= 9 ? 4096 : 2048;
  const double peak = d.multiprocessors * (clock_khz * 1e3) * per_sm_clock / 1e12;
  const double tflops = flops / (ms * 1e-3) / 1e12;
  std::printf(
      "loom-bench gpu_mma_peak dtype=f16 device=%s sms=%d clock_mhz=%d warps=%d mma_per_warp=%d "
      "kernel_ms=%.3f "
      "tflops=%.1f peak_dense_tflops=%.1f peak_source=sms*clock*%d ratio=%.3f\n",
      d.arch().c_str(), d.multiprocessors, clock_khz / 1000, blocks * threads / 32, 4 * iters, ms, tflops,
      peak, per_sm_clock, tflops / peak);
  std::fflush(stdout);
}

}  // namespace

int main() {
  if (!runtime::cuda::driver_available()) {
    std::printf("loom-bench gpu_gemm skipped: no GPU (%s)\n",
                runtime::cuda::detail::driver_load().error.c_str());
    return 0;
  }
  Cublas cublas;
  std::string why;
  if (!cublas.load(why)) {
    std::printf("loom-bench gpu_gemm skipped: %s\n", why.c_str());
    return 0;
  }
  const runtime::cuda::Driver& d = runtime::cuda::driver();
  bench_mma_peak(d);
  using lib::Decomposition;
  if (const char* sweep = std::getenv("LOOM_GPU_GEMM_SWEEP"); sweep && std::string(sweep) == "1") {
    // Which decomposition and grid win where: small and mid-size shapes whose tile counts fall
    // below, near and above one wave of the grid, the Stream-K kernels with the grid the driver's
    // occupancy allows and with one block per SM.
    std::vector<Variant> variants;
    for (Decomposition dec : {Decomposition::DataParallel, Decomposition::StreamKHybrid,
                              Decomposition::StreamK, Decomposition::SplitK})
      for (int per_sm : {0, 1}) variants.push_back({dec, per_sm, false});
    for (const Shape s :
         {Shape{512, 512, 4096}, Shape{768, 768, 768}, Shape{1024, 1024, 2048}, Shape{1536, 1536, 1536},
          Shape{1920, 1920, 1024}, Shape{2304, 2304, 512}, Shape{3072, 3072, 3072}, Shape{256, 4096, 8192},
          Shape{4160, 4160, 256}, Shape{700, 3000, 5000}})
      bench_shape<float>(d, cublas, s, variants);
    return 0;
  }
  const char* only = std::getenv("LOOM_GPU_GEMM_ONLY");  // "f16", "tf32", "layouts": those shapes only
  if (only && std::string(only) == "tc_sweep") {
    // lib::gpu_gemm's block, warp and stage choices at two large shapes.
    auto config = [](int bm, int bn, int bk, int wm, int wn, int stages) {
      lib::GpuGemmConfig c;
      c.block_m = bm, c.block_n = bn, c.block_k = bk, c.warp_m = wm, c.warp_n = wn, c.stages = stages;
      return c;
    };
    std::vector<Variant> variants;
    for (const lib::GpuGemmConfig& c :
         {config(128, 128, 32, 64, 64, 3), config(128, 128, 32, 64, 64, 4), config(128, 128, 64, 64, 64, 3),
          config(128, 256, 32, 64, 64, 3), config(256, 128, 32, 64, 64, 3), config(128, 256, 64, 64, 64, 3),
          config(128, 128, 32, 32, 64, 4), config(64, 128, 32, 32, 64, 4), config(128, 128, 64, 64, 32, 3)})
      variants.push_back({Decomposition::DataParallel, 0, false, true, c});
    for (const Shape s : {Shape{4096, 4096, 4096}, Shape{8192, 8192, 8192}})
      bench_shape<half>(d, cublas, s, variants);
    return 0;
  }
  if (only && std::string(only) == "profile") {
    // One kernel at one shape, for a profiler: lib::gpu_gemm's default at 4096^3 f16 (its kernel's
    // name starts with gpu_gemm_float16; the first launch is the warm-up).
    bench_shape<half>(d, cublas, Shape{4096, 4096, 4096}, {{Decomposition::DataParallel, 0, false, true}});
    return 0;
  }
  if (only && std::string(only) == "tuned") {
    // lib::tune_gpu_gemm at the tuner table's shapes (docs/gpu-gemm-model.md): the model ranks every
    // candidate, the GPU times its best 8 and the default (when the GPU is an sm_80 or sm_90). The
    // line names the model's choice and the measured one; then both are timed against the default and
    // cuBLAS. The tuner runs here, with ptxas: about 45 s per shape, plus the measurements.
    lib::GpuGemmTuneOptions options;
    options.database = "off";
    const std::string arch = d.arch() == "sm_80" ? "sm_80" : "sm_90";  // the GPUs the model knows
    for (const Shape s : {Shape{4096, 4096, 4096}, Shape{1024, 1024, 1024}, Shape{4096, 4096, 512},
                          Shape{8192, 8192, 1024}}) {
      const lib::GpuGemmTuneResult r = lib::tune_gpu_gemm(s.m, s.n, s.k, f16, arch, s.a, s.b, options);
      const lib::GpuGemmTuneCandidate* predicted = nullptr;  // the model's first choice
      double best_measured_ms = 0;
      for (const lib::GpuGemmTuneCandidate& c : r.candidates) {
        if (!c.skipped.empty()) continue;
        if (!predicted || c.prediction.seconds < predicted->prediction.seconds) predicted = &c;
        if (c.measured_ms > 0 && (best_measured_ms == 0 || c.measured_ms < best_measured_ms))
          best_measured_ms = c.measured_ms;
      }
      std::printf(
          "loom-bench gpu_gemm_tuned m=%lld n=%lld k=%lld arch=%s device=%s predicted_config=%s "
          "tuned_config=%s measured=%d default_measured_ms=%.4f best_measured_ms=%.4f "
          "predicted_default_ms=%.4f predicted_tuned_ms=%.4f measure_failure=\"%s\"\n",
          static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k), arch.c_str(),
          r.device.c_str(), predicted ? predicted->config.str().c_str() : "", r.best.str().c_str(),
          r.measured, r.default_measured_ms, best_measured_ms, r.default_prediction.seconds * 1e3,
          predicted ? predicted->prediction.seconds * 1e3 : 0.0, r.measure_failure.c_str());
      std::vector<Variant> variants = {{Decomposition::DataParallel, 0, false, true}};
      if (predicted) variants.push_back({Decomposition::DataParallel, 0, false, true, predicted->config});
      variants.push_back({Decomposition::DataParallel, 0, false, true, r.best});
      bench_shape<half>(d, cublas, s, variants);
    }
    return 0;
  }
  if (only && (std::string(only) == "streamk_tuned" || std::string(only) == "streamk_simt_tuned")) {
    // Stream-K's decomposition and grid as lib::tune_streamk_gemm chooses them (the model ranks, the
    // GPU times the best 8 and the default) at the shapes of bench_streamk_tune: on tensor cores (f16)
    // against the default (the hybrid on the occupancy grid) and gpu_gemm; or the SIMT loop's tile
    // too (streamk_simt_tuned: f32, exact) against its default.
    const bool simt = std::string(only) == "streamk_simt_tuned";
    lib::StreamKTuneOptions options;
    options.database = "off";
    if (simt) options.main_loop = lib::StreamKMainLoop::Simt;
    const std::string arch = d.arch() == "sm_80" ? "sm_80" : "sm_90";
    for (const Shape s : {Shape{1024, 1024, 1024}, Shape{1024, 1024, 8192}, Shape{2048, 2048, 2048},
                          Shape{3072, 3072, 4096}, Shape{4096, 4096, 4096}, Shape{1000, 999, 37}}) {
      const lib::StreamKTuneResult r =
          lib::tune_streamk_gemm(s.m, s.n, s.k, simt ? f32 : f16, arch, s.a, s.b, options);
      const lib::StreamKConfig& best = r.best;
      const std::string tile = best.tensor_cores ? best.tensor_cores->str()
                                                 : cat(best.tile.bm, "x", best.tile.bn, "x", best.tile.bk,
                                                       "/", best.thread_m, "x", best.thread_n);
      std::printf(
          "loom-bench %s m=%lld n=%lld k=%lld arch=%s device=%s tuned=%s tile=%s split_k=%d "
          "blocks_per_sm=%d measured=%d default_measured_ms=%.4f predicted_default_ms=%.4f "
          "predicted_tuned_ms=%.4f measure_failure=\"%s\"\n",
          only, static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k),
          arch.c_str(), r.device.c_str(), lib::decomposition_name(best.decomposition), tile.c_str(),
          best.split_k, best.blocks_per_sm, r.measured, r.default_measured_ms,
          r.default_prediction.seconds * 1e3, r.best_prediction.seconds * 1e3, r.measure_failure.c_str());
      Variant tuned{best.decomposition, best.blocks_per_sm};
      tuned.split_k = best.split_k;
      if (simt) {
        tuned.simt_tile = lib::StreamKSimtTile{best.tile, best.thread_m, best.thread_n};
        bench_shape<float>(d, cublas, s, {{Decomposition::StreamKHybrid, 0, false}, tuned});
        continue;
      }
      Variant standard{Decomposition::StreamKHybrid};
      standard.streamk_tensor_cores = true;
      tuned.streamk_tensor_cores = true;
      tuned.tc = *best.tensor_cores;
      bench_shape<half>(d, cublas, s, {{Decomposition::DataParallel, 0, false, true}, standard, tuned});
    }
    return 0;
  }
  const std::string only_shapes = only ? only : "";
  const bool f32_shapes = only_shapes.empty();
  const bool f16_shapes = only_shapes.empty() || only_shapes == "f16";
  for (const Shape s : {Shape{1024, 1024, 1024}, Shape{2048, 2048, 2048}, Shape{4096, 4096, 4096},
                        Shape{1000, 1000, 1000}, Shape{1024, 1024, 8192}, Shape{4096, 11008, 4096}}) {
    if (!f32_shapes) break;
    std::vector<Variant> variants = {{Decomposition::StreamKHybrid, 0, false},
                                     {Decomposition::DataParallel, 0, false}};
    if (s.m == s.n && s.n == s.k) variants.push_back({Decomposition::DataParallel, 0, true});
    bench_shape<float>(d, cublas, s, variants);
  }
  // f16 inputs (f32 accumulation) against cuBLAS on tensor cores: lib::gpu_gemm (mma.sync), the
  // same main loop under Stream-K, the tensorized TE GEMM, and the SIMT Stream-K and tiled kernels.
  for (const Shape s : {Shape{2048, 2048, 2048}, Shape{4096, 4096, 4096}, Shape{4096, 11008, 4096},
                        Shape{8192, 8192, 8192}, Shape{1000, 999, 37}}) {
    if (!f16_shapes) break;
    std::vector<Variant> variants = {{Decomposition::DataParallel, 0, false, true}};
    // The same main loop under Stream-K (hybrid), and the TE GEMM tensorized (tiles that divide).
    Variant streamk_mma{Decomposition::StreamKHybrid};
    streamk_mma.streamk_tensor_cores = true;
    variants.push_back(streamk_mma);
    if (s.m % 128 == 0 && s.n % 128 == 0 && s.k % 32 == 0) {
      Variant tensorized;
      tensorized.tensorized = true;
      variants.push_back(tensorized);
    }
    if (s.k < 8192 && s.k % 8 == 0)
      variants.insert(variants.end(),
                      {{Decomposition::StreamKHybrid, 0, false}, {Decomposition::DataParallel, 0, false}});
    if (s.m == s.n && s.n == s.k && s.k <= 4096) variants.push_back({Decomposition::DataParallel, 0, true});
    bench_shape<half>(d, cublas, s, variants);
  }
  // f32 inputs on tf32 tensor cores (lib::gpu_gemm, inputs rounded to tf32 as cuBLAS rounds them,
  // and truncated: what the rounding costs) against cuBLAS's TF32 sgemm.
  const Variant tensor_cores{Decomposition::DataParallel, 0, false, true};
  Variant truncating = tensor_cores;
  truncating.tc.tf32_round = false;
  if (only_shapes.empty() || only_shapes == "tf32")
    for (const Shape s :
         {Shape{2048, 2048, 2048}, Shape{4096, 4096, 4096}, Shape{8192, 8192, 8192}, Shape{1000, 999, 37}})
      bench_shape<float>(d, cublas, s, {tensor_cores, truncating});
  // Column-major A and B (ldmatrix.trans, shared loads for tf32) against cuBLAS on the same memory.
  if (only_shapes.empty() || only_shapes == "layouts") {
    using lib::Layout;
    for (const auto& [a, b] :
         {std::pair{Layout::ColMajor, Layout::RowMajor}, std::pair{Layout::RowMajor, Layout::ColMajor},
          std::pair{Layout::ColMajor, Layout::ColMajor}}) {
      bench_shape<half>(d, cublas, Shape{4096, 4096, 4096, a, b}, {tensor_cores});
      bench_shape<float>(d, cublas, Shape{4096, 4096, 4096, a, b}, {tensor_cores});
    }
  }
  return 0;
}
