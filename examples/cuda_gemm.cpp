// A tiled GEMM for the GPU: shared-memory tiles of A and B (cache_read), a per-thread accumulator
// (cache_write "local"), 16x16 threads per block. Prints the CUDA C, compiles it with NVRTC when
// the toolkit is present, runs it on the GPU simulator (Target::cuda_sim) and checks the result.
#include <iostream>

#include <loom/runtime/build.hpp>
#include <loom/runtime/cuda_ptxas.hpp>

#include "example_util.hpp"

using namespace loom;

int main() {
  const int n = 128, tile = 16;
  Tensor A = placeholder({n, n}, f32, "A");
  Tensor B = placeholder({n, n}, f32, "B");
  IterVar k = reduce_axis(0, n, "k");
  Tensor C = compute(
      {n, n}, [&](Expr i, Expr j) { return sum(A(i, k) * B(k, j), {k}); }, "C");

  Schedule s = create_schedule(C);
  Tensor AS = s.cache_read(A, "shared", {C});
  Tensor BS = s.cache_read(B, "shared", {C});
  Tensor CL = s.cache_write(C, "local");
  auto [by, bx, ty, tx] = s[C].tile(C.axis(0), C.axis(1), tile, tile);
  s[C].bind(by, thread_axis("blockIdx.y"));
  s[C].bind(bx, thread_axis("blockIdx.x"));
  s[C].bind(ty, thread_axis("threadIdx.y"));
  s[C].bind(tx, thread_axis("threadIdx.x"));
  s[CL].compute_at(s[C], tx);
  auto [ko, ki] = s[CL].split(CL.reduce_axis(0), tile);
  // Each step of k.outer, the block's threads copy one 16x16 tile of A and of B to shared memory.
  for (const Tensor& t : {AS, BS}) {
    s[t].compute_at(s[CL], ko);
    s[t].bind(t.axis(0), thread_axis("threadIdx.y"));
    s[t].bind(t.axis(1), thread_axis("threadIdx.x"));
  }

  Kernel f = build(s, {A, B, C}, Target::cuda_sim("sm_80"), "gemm");
  std::cout << f.source() << std::endl;

  // NVRTC and ptxas, when this machine has the CUDA toolkit (no GPU needed).
  if (runtime::cuda::nvrtc()) {
    runtime::cuda::NvrtcOutput out = runtime::cuda::nvrtc_compile(f.source(), "gemm", "sm_80");
    std::cout << "NVRTC: " << out.ptx.size() << " bytes of PTX for sm_80\n";
    if (auto report = runtime::cuda::run_ptxas(out.ptx, "sm_80", "gemm_kernel0")) std::cout << report->text;
  } else {
    std::cout << "NVRTC not available (" << runtime::cuda::nvrtc_unavailable_reason() << "); skipping it\n";
  }

  Buffer<float> a({n, n}), b({n, n}), c({n, n}), expected({n, n});
  example::fill_random(a, 1);
  example::fill_random(b, 2);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int kk = 0; kk < n; ++kk) acc += a(i, kk) * b(kk, j);
      expected(i, j) = acc;
    }
  f(a, b, c);
  std::cout << f.sim_report().to_string() << "\n";
  example::expect_all_close(c, expected, "C on the GPU simulator");
  std::cout << "ok\n";
}
