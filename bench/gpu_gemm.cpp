// Loom's GPU GEMMs on a real GPU against cuBLAS (scripts/gpu-check.sh runs it): the Stream-K GEMM
// (hybrid, grid sized by the driver's occupancy) and the shared-memory tiled GEMM, f32, square
// and skinny shapes. Prints
//   loom-bench gpu_gemm kernel=<name> m= n= k= device=<sm_XY> peer=cublas-<version>:sgemm
//     includes_host_copies=1 loom_ms= peer_ms= peer_kernel_ms= tflops= ratio=<peer_ms/loom_ms>
// Both sides are timed with their host copies (A and B to the GPU, C back), because a Loom
// Kernel call on Target::cuda() copies its Buffers on every call (a device-resident buffer is
// not there yet); peer_kernel_ms is cuBLAS's sgemm alone, to show what the copies cost. Without
// a GPU or without cuBLAS it says so and exits 0.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <loom/backend/cuda/driver.hpp>
#include <loom/lib/gpu_tiled_gemm.hpp>
#include <loom/lib/streamk_gemm.hpp>
#include <loom/loom.hpp>

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
    if (!create || !destroy || !version || !sgemm || create(&handle) != 0) {
      why = "cuBLAS could not be initialised";
      return false;
    }
    version(handle, &version_number);
    return true;
  }
};

template <typename F>
double best_ms(F&& call, int repeats) {
  call();  // warm-up: module load, first-touch
  double best = 1e30;
  for (int r = 0; r < repeats; ++r) {
    const auto start = Clock::now();
    call();
    best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return best;
}

void fill(Buffer<float>& b, unsigned seed) {
  for (int64_t i = 0; i < b.num_elements(); ++i)
    b.at_flat(i) = static_cast<float>((i * 2654435761u + seed) % 1000) / 1000.0f - 0.5f;
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
  const std::string peer = cat("cublas-", cublas.version_number, ":sgemm");
  struct Shape {
    int64_t m, n, k;
  };
  for (const Shape s : {Shape{1024, 1024, 1024}, Shape{2048, 2048, 2048}, Shape{4096, 4096, 4096},
                        Shape{1000, 1000, 1000}, Shape{1024, 1024, 8192}, Shape{4096, 11008, 4096}}) {
    Buffer<float> a({s.m, s.k}), b({s.k, s.n}), c({s.m, s.n});
    fill(a, 1);
    fill(b, 2);
    // cuBLAS with the same copies: row-major C = A B is column-major C^T = B^T A^T.
    runtime::cuda::Driver::DevicePtr da = 0, db = 0, dc = 0;
    const size_t bytes_a = sizeof(float) * a.num_elements(), bytes_b = sizeof(float) * b.num_elements(),
                 bytes_c = sizeof(float) * c.num_elements();
    d.check(d.mem_alloc(&da, bytes_a), "cuMemAlloc");
    d.check(d.mem_alloc(&db, bytes_b), "cuMemAlloc");
    d.check(d.mem_alloc(&dc, bytes_c), "cuMemAlloc");
    const float one = 1, zero = 0;
    auto sgemm = [&] {
      cublas.sgemm(cublas.handle, 0, 0, static_cast<int>(s.n), static_cast<int>(s.m), static_cast<int>(s.k),
                   &one, reinterpret_cast<const float*>(db), static_cast<int>(s.n),
                   reinterpret_cast<const float*>(da), static_cast<int>(s.k), &zero,
                   reinterpret_cast<float*>(dc), static_cast<int>(s.n));
    };
    const double peer_ms = best_ms(
        [&] {
          d.memcpy_htod(da, a.data(), bytes_a);
          d.memcpy_htod(db, b.data(), bytes_b);
          sgemm();
          d.memcpy_dtoh(c.data(), dc, bytes_c);
          d.ctx_synchronize();
        },
        5);
    const double peer_kernel_ms = best_ms(
        [&] {
          sgemm();
          d.ctx_synchronize();
        },
        5);
    d.mem_free(da);
    d.mem_free(db);
    d.mem_free(dc);

    auto report = [&](const std::string& kernel, Kernel& f) {
      const double ms = best_ms([&] { f(a, b, c); }, 5);
      std::printf(
          "loom-bench gpu_gemm kernel=%s m=%lld n=%lld k=%lld device=%s peer=%s includes_host_copies=1 "
          "loom_ms=%.3f peer_ms=%.3f peer_kernel_ms=%.3f tflops=%.2f ratio=%.3f\n",
          kernel.c_str(), static_cast<long long>(s.m), static_cast<long long>(s.n),
          static_cast<long long>(s.k), d.arch().c_str(), peer.c_str(), ms, peer_ms, peer_kernel_ms,
          2.0 * s.m * s.n * s.k / (ms * 1e9), peer_ms / ms);
      std::fflush(stdout);
    };
    lib::StreamKGemm g = lib::streamk_gemm(s.m, s.n, s.k, f32);
    Kernel streamk = build(g.func, Target::cuda());
    report(cat("streamk_hybrid_", g.config.sms, "x", g.config.blocks_per_sm), streamk);
    if (s.m == s.n && s.n == s.k) {
      lib::TiledGemm t = lib::gpu_tiled_gemm(static_cast<int>(s.n), 16, f32);
      Kernel tiled = build(t.schedule, {t.A, t.B, t.C}, Target::cuda(), "tiled_gemm");
      report("tiled_16", tiled);
    }
  }
  return 0;
}
